// clone(2) and clone3(2) for threads (CLONE_VM|CLONE_THREAD). New processes
// (fork) come with the process issue.
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/kernel.h"
#include "sentry/syscalls/table.h"

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

// The flags of a thread as glibc's pthread_create passes them.
constexpr uint64_t kThreadRequired =
    CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD;
constexpr uint64_t kThreadAllowed =
    kThreadRequired | CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
    CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | CLONE_DETACHED;

// The flags of a fork(2)-like clone.
constexpr uint64_t kForkAllowed = CLONE_SETTLS | CLONE_PARENT_SETTID |
                                  CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID;

// The registers a new task starts with: the caller's, returning 0 from the
// call, on `stack` and with `tls` as FS base when the flags ask for them.
// The FPU state is inherited, so the platform must load it.
KResult<platform::CpuState> ChildCpu(Task& t, uint64_t flags, uint64_t stack,
                                     uint64_t tls) {
  platform::CpuState cpu = t.cpu();
  cpu.regs.rax = 0;
  if (stack != 0) cpu.regs.rsp = stack;
  if (flags & CLONE_SETTLS) {
    if (tls >= 0x7ffffffff000) return kEPERM;
    cpu.regs.fs_base = tls;
  }
  cpu.fp_changed = true;
  return cpu;
}

// The TID writes CLONE_PARENT_SETTID / CLONE_CHILD_SETTID ask for (the
// latter into the child's memory: copy-on-write for a process, shared for a
// thread), then runs the child. Faults in these writes are ignored, as Linux
// does.
uint64_t StartChild(Task& t, kernel::Task* child, uint64_t flags,
                    uint64_t parent_tid, uint64_t child_tid) {
  const uint32_t tid = static_cast<uint32_t>(child->tid());
  if (flags & CLONE_PARENT_SETTID) {
    (void)t.CopyOutObj<uint32_t>(parent_tid, tid);
  }
  if (flags & CLONE_CHILD_SETTID) {
    (void)child->CopyOutObj<uint32_t>(child_tid, tid);
  }
  if (flags & CLONE_CHILD_CLEARTID) child->set_clear_child_tid(child_tid);
  t.kernel().Start(child);
  return uint64_t{tid};
}

// A new process: a copy-on-write copy of the caller's.
KResult<uint64_t> DoFork(Task& t, uint64_t flags, uint64_t stack,
                         uint64_t parent_tid, uint64_t child_tid, uint64_t tls,
                         uint64_t exit_signal) {
  if (exit_signal > abi::kNumSignals) return kEINVAL;
  // vfork (CLONE_VM|CLONE_VFORK), shared FD tables and namespaces: later.
  if ((flags & ~kForkAllowed) != 0) return kENOSYS;
  TRY(platform::CpuState cpu, ChildCpu(t, flags, stack, tls));
  TRY(kernel::Task * child, t.kernel().Fork(t, std::move(cpu)));
  return StartChild(t, child, flags, parent_tid, child_tid);
}

// fork(2).
SyscallResult Fork(Task& t) { return DoFork(t, 0, 0, 0, 0, 0, SIGCHLD); }

KResult<uint64_t> DoClone(Task& t, uint64_t flags, uint64_t stack,
                          uint64_t parent_tid, uint64_t child_tid, uint64_t tls,
                          uint64_t exit_signal) {
  // Linux's consistency checks (kernel/fork.c copy_process).
  if ((flags & (CLONE_NEWNS | CLONE_FS)) == (CLONE_NEWNS | CLONE_FS)) {
    return kEINVAL;
  }
  if ((flags & CLONE_THREAD) && !(flags & CLONE_SIGHAND)) return kEINVAL;
  if ((flags & CLONE_SIGHAND) && !(flags & CLONE_VM)) return kEINVAL;
  if (!(flags & CLONE_THREAD))
    return DoFork(t, flags, stack, parent_tid, child_tid, tls, exit_signal);
  if ((flags & kThreadRequired) != kThreadRequired ||
      (flags & ~kThreadAllowed) != 0 || exit_signal != 0) {
    return kEINVAL;
  }
  TRY(platform::CpuState cpu, ChildCpu(t, flags, stack, tls));
  TRY(kernel::Task * child, t.kernel().NewThread(t, std::move(cpu)));
  return StartChild(t, child, flags, parent_tid, child_tid);
}

// clone(2) (x86-64 argument order: flags, stack, parent_tid, child_tid,
// tls).
SyscallResult Clone(Task& t, Flags flags, UserAddr stack, UserAddr parent_tid,
                    UserAddr child_tid, UserAddr tls) {
  // The low byte is the exit signal; Linux ignores it for threads.
  uint64_t f = flags.v & ~uint64_t{0xff};
  uint64_t exit_signal = (f & CLONE_THREAD) ? 0 : flags.v & 0xff;
  return DoClone(t, f, stack.addr, parent_tid.addr, child_tid.addr, tls.addr,
                 exit_signal);
}

// clone3(2).
SyscallResult Clone3(Task& t, UserAddr uargs, uint64_t size) {
  if (size < kCloneArgsSizeVer0 || size > 4096) return kEINVAL;
  CloneArgs a = {};
  TRY_VOID(t.CopyInFull(uargs.addr, &a, std::min(size, sizeof(a))));
  // Bytes beyond what this kernel knows must be zero.
  for (uint64_t off = sizeof(a); off < size; ++off) {
    TRY(uint8_t b, t.CopyInObj<uint8_t>(uargs.addr + off));
    if (b != 0) return kE2BIG;
  }
  if (a.set_tid != 0 || a.set_tid_size != 0 || a.cgroup != 0) return kEINVAL;
  if ((a.stack == 0) != (a.stack_size == 0)) return kEINVAL;
  uint64_t sp = a.stack != 0 ? a.stack + a.stack_size : 0;
  return DoClone(t, a.flags, sp, a.parent_tid, a.child_tid, a.tls,
                 a.exit_signal);
}

}  // namespace

void RegisterCloneSyscalls(SyscallTable& t) {
  using namespace abi;  // NOLINT: nr::
  constexpr const char* kNote =
      "threads (glibc's CLONE_VM|CLONE_THREAD set) and fork-like clones; "
      "vfork, CLONE_VM without a thread, namespaces, pidfds ENOSYS";
  t.Partial<&Clone>(nr::clone, kNote);
  t.Partial<&Clone3>(nr::clone3, kNote);
  t.Partial<&Fork>(nr::fork, "no SIGCHLD delivery to the parent yet");
}

}  // namespace sandbox::syscalls
