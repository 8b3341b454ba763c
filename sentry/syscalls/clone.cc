// clone(2), clone3(2), fork(2), vfork(2): threads and processes (Linux's
// kernel/fork.c argument checks; the kernel side is Kernel::NewThread and
// Kernel::Fork, the vfork wait kernel::VforkCompletion).
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/kernel.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {
namespace {

// struct clone_args (linux/sched.h), CLONE_ARGS_SIZE_VER2.
struct CloneArgs {
  uint64_t flags;
  uint64_t pidfd;
  uint64_t child_tid;
  uint64_t parent_tid;
  uint64_t exit_signal;
  uint64_t stack;
  uint64_t stack_size;
  uint64_t tls;
  uint64_t set_tid;
  uint64_t set_tid_size;
  uint64_t cgroup;
};
static_assert(sizeof(CloneArgs) == 88);
constexpr size_t kCloneArgsSizeVer0 = 64;

// CSIGNAL: the exit signal's byte of a legacy clone's flags.
constexpr uint64_t kCsignal = 0xff;
// clone3's flags beyond the legacy 32 bits.
constexpr uint64_t kCloneClearSighand = 0x100000000ULL;
constexpr uint64_t kCloneIntoCgroup = 0x200000000ULL;
constexpr uint64_t kCloneNamespaces =
    CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME;
// What this kernel does, for threads and processes alike. CLONE_PTRACE
// and CLONE_UNTRACED are no-ops without ptrace, CLONE_SYSVSEM without
// SysV semaphore undo lists, CLONE_IO without I/O contexts; Linux ignores
// CLONE_DETACHED. Not here: namespaces, pidfds, cgroups, and CLONE_SIGHAND
// without CLONE_THREAD (handler tables shared between processes): ENOSYS.
constexpr uint64_t kSupported =
    CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
    CLONE_VFORK | CLONE_PARENT | CLONE_PTRACE | CLONE_UNTRACED | CLONE_SYSVSEM |
    CLONE_IO | CLONE_DETACHED | CLONE_SETTLS | CLONE_PARENT_SETTID |
    CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | kCloneClearSighand;

// The top of user space (TASK_SIZE_MAX): TLS and clone3 stacks must lie
// below it.
constexpr uint64_t kTaskSize = 0x7ffffffff000;

// The registers a new task starts with: the caller's, returning 0 from the
// call, on `stack` and with `tls` as FS base when the flags ask for them.
// The FPU state is inherited, so the platform must load it.
KResult<platform::CpuState> ChildCpu(Task& t, uint64_t flags, uint64_t stack,
                                     uint64_t tls) {
  platform::CpuState cpu = t.cpu();
  cpu.regs.rax = 0;
  if (stack != 0) cpu.regs.rsp = stack;
  if (flags & CLONE_SETTLS) {
    if (tls >= kTaskSize) return kEPERM;
    cpu.regs.fs_base = tls;
  }
  cpu.fp_changed = true;
  return cpu;
}

// The TID writes CLONE_PARENT_SETTID / CLONE_CHILD_SETTID ask for (the
// latter into the child's memory: copy-on-write for a process, shared for a
// thread), then runs the child. Faults in these writes are ignored, as Linux
// does.
uint64_t StartChild(Task& t, kernel::Task* child,
                    std::unique_ptr<kernel::TaskThread> thread, uint64_t flags,
                    uint64_t parent_tid, uint64_t child_tid) {
  const uint32_t tid = static_cast<uint32_t>(child->tid());
  if (flags & CLONE_PARENT_SETTID) {
    (void)t.CopyOutObj<uint32_t>(parent_tid, tid);
  }
  if (flags & CLONE_CHILD_SETTID) {
    (void)child->CopyOutObj<uint32_t>(child_tid, tid);
  }
  if (flags & CLONE_CHILD_CLEARTID) child->set_clear_child_tid(child_tid);
  t.kernel().Start(child, std::move(thread));
  return uint64_t{tid};
}

// kernel_clone after the argument checks: a thread (CLONE_THREAD) or a
// process (a copy-on-write copy of the caller's, or with CLONE_VM its
// address space shared), started; with CLONE_VFORK the caller then waits
// until the child execs or exits.
KResult<uint64_t> StartClone(Task& t, uint64_t flags, uint64_t stack,
                             uint64_t parent_tid, uint64_t child_tid,
                             uint64_t tls, int exit_signal) {
  if ((flags & ~kSupported) != 0) return kENOSYS;
  if ((flags & CLONE_SIGHAND) && !(flags & CLONE_THREAD)) return kENOSYS;
  TRY(platform::CpuState cpu, ChildCpu(t, flags, stack, tls));
  // The child's host thread first: a host that cannot make one (EAGAIN from
  // its clone, no FD for its eventfd) fails this clone with nothing made.
  TRY(std::unique_ptr<kernel::TaskThread> thread, kernel::TaskThread::Create());
  kernel::Task* child;
  if (flags & CLONE_THREAD) {
    TRY(child, t.kernel().NewThread(t, std::move(cpu)));
    if (!(flags & CLONE_FILES)) child->UnshareFdTable();
    if (!(flags & CLONE_FS)) child->UnshareFs();
  } else {
    kernel::ForkOptions opts;
    opts.share_mm = flags & CLONE_VM;
    opts.share_files = flags & CLONE_FILES;
    opts.share_fs = flags & CLONE_FS;
    opts.sibling = flags & CLONE_PARENT;
    opts.exit_signal = exit_signal;
    TRY(child, t.kernel().Fork(t, std::move(cpu), opts));
    // flush_signal_handlers(p, 0): caught signals go back to SIG_DFL,
    // ignored ones stay ignored; every flag set and mask is cleared.
    if (flags & kCloneClearSighand) {
      child->thread_group().FlushSignalHandlers(/*force_default=*/false);
    }
  }
  std::shared_ptr<kernel::VforkCompletion> vfork;
  if (flags & CLONE_VFORK) {
    vfork = std::make_shared<kernel::VforkCompletion>();
    child->set_vfork_done(vfork);
  }
  uint64_t tid =
      StartChild(t, child, std::move(thread), flags, parent_tid, child_tid);
  // wait_for_vfork_done: killable; a kill ends the caller anyway, so what
  // it returns then does not matter.
  if (vfork != nullptr) vfork->Wait(t);
  return tid;
}

// fork(2).
SyscallResult Fork(Task& t) { return StartClone(t, 0, 0, 0, 0, 0, SIGCHLD); }

// vfork(2): clone(CLONE_VFORK | CLONE_VM | SIGCHLD).
SyscallResult Vfork(Task& t) {
  return StartClone(t, CLONE_VFORK | CLONE_VM, 0, 0, 0, 0, SIGCHLD);
}

// copy_process's consistency checks, in Linux's order, then the clone.
KResult<uint64_t> DoClone(Task& t, uint64_t flags, uint64_t stack,
                          uint64_t parent_tid, uint64_t child_tid, uint64_t tls,
                          int exit_signal) {
  if ((flags & (CLONE_NEWNS | CLONE_FS)) == (CLONE_NEWNS | CLONE_FS)) {
    return kEINVAL;
  }
  if ((flags & (CLONE_NEWUSER | CLONE_FS)) == (CLONE_NEWUSER | CLONE_FS)) {
    return kEINVAL;
  }
  // Threads share signal handlers, and handlers need one address space.
  if ((flags & CLONE_THREAD) && !(flags & CLONE_SIGHAND)) return kEINVAL;
  if ((flags & CLONE_SIGHAND) && !(flags & CLONE_VM)) return kEINVAL;
  // init (SIGNAL_UNKILLABLE) cannot make siblings: it has no parent here.
  if ((flags & CLONE_PARENT) && t.thread_group().parent() == nullptr) {
    return kEINVAL;
  }
  if ((flags & CLONE_THREAD) && (flags & (CLONE_NEWUSER | CLONE_NEWPID))) {
    return kEINVAL;
  }
  if ((flags & CLONE_PIDFD) && (flags & CLONE_DETACHED)) {
    return kEINVAL;
  }
  if (flags & (kCloneNamespaces | CLONE_PIDFD | kCloneIntoCgroup)) {
    return kENOSYS;
  }
  // A thread reports to no one; a CLONE_PARENT child takes its creator's
  // exit signal (Kernel::Fork).
  if (flags & CLONE_THREAD) exit_signal = 0;
  return StartClone(t, flags, stack, parent_tid, child_tid, tls, exit_signal);
}

// clone(2) (x86-64 argument order: flags, stack, parent_tid, child_tid,
// tls). Only the low 32 bits of `flags` count; their low byte is the exit
// signal (not checked: an invalid one sends nothing, as Linux's
// do_notify_parent).
SyscallResult Clone(Task& t, Flags flags, UserAddr stack, UserAddr parent_tid,
                    UserAddr child_tid, UserAddr tls) {
  const uint64_t f = flags.v & 0xffffffffULL;
  // Legacy clone returns a pidfd through parent_tid, so both cannot be
  // asked for at once.
  if ((f & CLONE_PIDFD) && (f & CLONE_PARENT_SETTID)) return kEINVAL;
  return DoClone(t, f & ~kCsignal, stack.addr, parent_tid.addr, child_tid.addr,
                 tls.addr, static_cast<int>(f & kCsignal));
}

// clone3(2): copy_clone_args_from_user, then clone3_args_valid.
SyscallResult Clone3(Task& t, UserAddr uargs, uint64_t size) {
  if (size > 4096) return kE2BIG;
  if (size < kCloneArgsSizeVer0) return kEINVAL;
  CloneArgs a = {};
  TRY_VOID(t.CopyInFull(uargs.addr, &a, std::min(size, sizeof(a))));
  // Bytes beyond what this kernel knows must be zero (copy_struct_from_user).
  for (uint64_t off = sizeof(a); off < size; ++off) {
    TRY(uint8_t b, t.CopyInObj<uint8_t>(uargs.addr + off));
    if (b != 0) return kE2BIG;
  }
  if (a.set_tid_size > 32) return kEINVAL;  // MAX_PID_NS_LEVEL
  if ((a.set_tid == 0) != (a.set_tid_size == 0)) return kEINVAL;
  if ((a.exit_signal & ~kCsignal) != 0 ||
      a.exit_signal > static_cast<uint64_t>(abi::kNumSignals)) {
    return kEINVAL;
  }
  if ((a.flags & kCloneIntoCgroup) &&
      (a.cgroup > INT32_MAX || size < sizeof(CloneArgs))) {
    return kEINVAL;
  }
  // clone3_args_valid.
  if (a.flags & ~(0xffffffffULL | kCloneClearSighand | kCloneIntoCgroup)) {
    return kEINVAL;
  }
  if (a.flags & (CLONE_DETACHED | kCsignal)) return kEINVAL;
  if ((a.flags & CLONE_SIGHAND) && (a.flags & kCloneClearSighand)) {
    return kEINVAL;
  }
  if ((a.flags & (CLONE_THREAD | CLONE_PARENT)) && a.exit_signal != 0) {
    return kEINVAL;
  }
  // clone3_stack_valid: both or neither, and inside user space.
  if ((a.stack == 0) != (a.stack_size == 0)) return kEINVAL;
  if (a.stack != 0 &&
      (a.stack_size > kTaskSize || a.stack > kTaskSize - a.stack_size)) {
    return kEINVAL;
  }
  // Choosing the child's TID (checkpoint/restore) is not supported.
  if (a.set_tid != 0) return kEINVAL;
  uint64_t sp = a.stack != 0 ? a.stack + a.stack_size : 0;
  return DoClone(t, a.flags, sp, a.parent_tid, a.child_tid, a.tls,
                 static_cast<int>(a.exit_signal));
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Clone);
SANDBOX_SYSCALL_HANDLER(Clone3);
SANDBOX_SYSCALL_HANDLER(Fork);
SANDBOX_SYSCALL_HANDLER(Vfork);

}  // namespace sandbox::syscalls
