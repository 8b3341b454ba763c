// Process syscalls: IDs, exit, thread bookkeeping, limits, uname, sysinfo,
// arch_prctl.
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/identity.h"

namespace sandbox::syscalls {
namespace {

using kernel::ExitStatus;

// getpid(2).
SyscallResult Getpid(Task& t) {
  return static_cast<uint64_t>(t.thread_group().tgid());
}

// gettid(2).
SyscallResult Gettid(Task& t) { return static_cast<uint64_t>(t.tid()); }

// getppid(2): 0 for init, whose parent is outside the sandbox.
SyscallResult Getppid(Task& t) {
  std::shared_ptr<kernel::ThreadGroup> parent = t.thread_group().parent_ref();
  return static_cast<uint64_t>(parent != nullptr ? parent->tgid() : 0);
}

// exit(2): ends the calling thread; the last thread's status is the
// process's.
SyscallResult Exit(Task& t, int32_t status) {
  t.ExitThread(status & 0xff);
  return uint64_t{0};
}

// exit_group(2).
SyscallResult ExitGroup(Task& t, int32_t status) {
  t.thread_group().ExitGroup(ExitStatus::Exited(status));
  return uint64_t{0};
}

// set_tid_address(2).
SyscallResult SetTidAddress(Task& t, UserAddr tidptr) {
  t.set_clear_child_tid(tidptr.addr);
  return static_cast<uint64_t>(t.tid());
}

// set_robust_list(2): recorded; robust futexes are walked when futexes
// exist.
SyscallResult SetRobustList(Task& t, UserAddr head, uint64_t len) {
  if (len != abi::kRobustListHeadSize) return kEINVAL;
  t.set_robust_list(head.addr);
  return uint64_t{0};
}

KResult<uint64_t> DoPrlimit(Task& t, int32_t pid, int32_t resource,
                            UserPtr<abi::Rlimit64> new_limit,
                            UserPtr<abi::Rlimit64> old_limit) {
  if (resource < 0 || resource >= abi::kRlimNlimits) return kEINVAL;
  // Only this process until the PID namespace holds others to look up.
  if (pid != 0 && pid != t.thread_group().tgid()) return kESRCH;
  kernel::ThreadGroup& tg = t.thread_group();
  abi::Rlimit64 old = tg.GetLimit(resource);
  if (!new_limit.null()) {
    TRY(abi::Rlimit64 lim, new_limit.CopyIn(t));
    TRY(old, tg.SetLimit(resource, lim,
                         t.creds().HasCapability(kernel::kCapSysResource)));
  }
  if (!old_limit.null()) TRY_VOID(old_limit.CopyOut(t, old));
  return uint64_t{0};
}

// prlimit64(2).
SyscallResult Prlimit64(Task& t, int32_t pid, int32_t resource,
                        UserPtr<abi::Rlimit64> new_limit,
                        UserPtr<abi::Rlimit64> old_limit) {
  return DoPrlimit(t, pid, resource, new_limit, old_limit);
}

// getrlimit(2).
SyscallResult Getrlimit(Task& t, int32_t resource,
                        UserPtr<abi::Rlimit64> old_limit) {
  if (resource < 0 || resource >= abi::kRlimNlimits) return kEINVAL;
  return old_limit.CopyOut(t, t.thread_group().GetLimit(resource)).ok()
             ? SyscallResult(uint64_t{0})
             : SyscallResult(kEFAULT);
}

// setrlimit(2).
SyscallResult Setrlimit(Task& t, int32_t resource,
                        UserPtr<abi::Rlimit64> new_limit) {
  return DoPrlimit(t, 0, resource, new_limit, UserPtr<abi::Rlimit64>{0});
}

void CopyField(char (&dst)[abi::kUtsLen], const std::string& src) {
  size_t n = std::min(src.size(), abi::kUtsLen - 1);
  memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

// uname(2).
SyscallResult Uname(Task& t, UserPtr<abi::Utsname> buf) {
  const kernel::KernelOptions& o = t.kernel().options();
  abi::Utsname u = {};
  CopyField(u.sysname, "Linux");
  CopyField(u.nodename, t.kernel().uts().hostname());
  CopyField(u.release, o.release);
  CopyField(u.version, o.version);
  CopyField(u.machine, "x86_64");
  CopyField(u.domainname, t.kernel().uts().domainname());
  TRY_VOID(buf.CopyOut(t, u));
  return uint64_t{0};
}

// sysinfo(2): uptime, process count and memory (--memory, as
// /proc/meminfo) are the sandbox's; loads are 0.
SyscallResult Sysinfo(Task& t, UserPtr<abi::Sysinfo> buf) {
  abi::Sysinfo si = {};
  si.uptime = t.kernel().UptimeNs() / 1000000000;
  const kernel::Kernel::MemoryFigures m = t.kernel().Memory();
  si.totalram = m.total;
  si.freeram = m.free;
  si.procs = static_cast<uint16_t>(
      std::min<size_t>(t.kernel().TaskCount(), UINT16_MAX));
  si.mem_unit = 1;
  TRY_VOID(buf.CopyOut(t, si));
  return uint64_t{0};
}

// arch_prctl(2).
SyscallResult ArchPrctl(Task& t, int32_t code, UserAddr addr) {
  user_regs_struct& regs = t.cpu().regs;
  switch (code) {
    case abi::kArchSetFs:
      // Linux: EPERM for an address outside user space.
      if (addr.addr >= 0x7ffffffff000) return kEPERM;
      regs.fs_base = addr.addr;
      return uint64_t{0};
    case abi::kArchGetFs:
      TRY_VOID(t.CopyOutObj<uint64_t>(addr.addr, regs.fs_base));
      return uint64_t{0};
    case abi::kArchSetGs:
    case abi::kArchGetGs:
      // The platform does not carry gs_base across switches yet.
      return kEINVAL;
    case abi::kArchGetCpuid:
      return uint64_t{1};  // CPUID is available (emulated).
    case abi::kArchSetCpuid:
      return kENODEV;  // No CPUID faulting control for the guest.
    default:
      return kEINVAL;
  }
}

// umask(2).
SyscallResult Umask(Task& t, uint32_t mask) {
  return uint64_t{t.fs().SwapUmask(mask)};
}

// prctl(2).
SyscallResult Prctl(Task& t, int32_t option, uint64_t arg2, uint64_t arg3,
                    uint64_t arg4, uint64_t arg5) {
  switch (option) {
    case PR_SET_PDEATHSIG:
      if (arg2 > abi::kNumSignals) return kEINVAL;
      t.set_pdeathsig(static_cast<int>(arg2));
      return uint64_t{0};
    case PR_GET_PDEATHSIG:
      TRY_VOID(t.CopyOutObj<int32_t>(arg2, t.pdeathsig()));
      return uint64_t{0};
    case PR_GET_DUMPABLE:
      return static_cast<uint64_t>(t.thread_group().dumpable());
    case PR_SET_DUMPABLE:
      if (arg2 > 1) return kEINVAL;
      t.thread_group().set_dumpable(static_cast<int>(arg2));
      return uint64_t{0};
    case PR_SET_NAME: {
      char name[16] = {};
      // Up to 16 bytes; a shorter string stops at its NUL.
      TRY(size_t n, t.CopyIn(arg2, name, sizeof(name)));
      (void)n;
      name[15] = '\0';
      t.set_name(name);
      return uint64_t{0};
    }
    case PR_GET_NAME: {
      char name[16] = {};
      memcpy(name, t.name().data(), std::min<size_t>(t.name().size(), 15));
      TRY_VOID(t.CopyOutFull(arg2, name, sizeof(name)));
      return uint64_t{0};
    }
    case PR_SET_NO_NEW_PRIVS:
      if (arg2 != 1 || arg3 != 0 || arg4 != 0 || arg5 != 0) return kEINVAL;
      t.set_no_new_privs();
      return uint64_t{0};
    case PR_GET_NO_NEW_PRIVS:
      if (arg2 != 0 || arg3 != 0 || arg4 != 0 || arg5 != 0) return kEINVAL;
      return uint64_t{t.no_new_privs() ? 1u : 0u};
    case PR_CAPBSET_READ:
    case PR_CAPBSET_DROP:
    case PR_CAP_AMBIENT:
    case PR_GET_KEEPCAPS:
    case PR_SET_KEEPCAPS:
    case PR_GET_SECUREBITS:
    case PR_SET_SECUREBITS:
      return CapabilityPrctl(t, option, arg2, arg3, arg4, arg5);
    default:
      return kEINVAL;
  }
}

// ---- Process groups and sessions (the kernel's: job_control.cc). ----

// getpgid(2), getsid(2), getpgrp(2).
KResult<uint64_t> GroupOf(Task& t, int32_t pid, bool session) {
  TRY(kernel::ThreadId id, t.kernel().ProcessGroupOf(t, pid, session));
  return static_cast<uint64_t>(id);
}
SyscallResult Getpgrp(Task& t) { return GroupOf(t, 0, false); }
SyscallResult Getpgid(Task& t, int32_t pid) { return GroupOf(t, pid, false); }
SyscallResult Getsid(Task& t, int32_t pid) { return GroupOf(t, pid, true); }

// setpgid(2).
SyscallResult Setpgid(Task& t, int32_t pid, int32_t pgid) {
  TRY_VOID(t.kernel().SetProcessGroup(t, pid, pgid));
  return uint64_t{0};
}

// setsid(2).
SyscallResult Setsid(Task& t) {
  TRY(kernel::ThreadId id, t.kernel().NewSession(t));
  return static_cast<uint64_t>(id);
}

// ---- wait4, waitid. ----

// wait4's and waitid's options beyond the selection, into `o`.
void WaitFlags(uint64_t options, kernel::ThreadGroup::WaitOptions* o) {
  o->nohang = options & WNOHANG;
  o->nowait = options & WNOWAIT;
  o->exited = options & WEXITED;
  o->wall = options & __WALL;
  o->wclone = options & __WCLONE;
  o->stopped = options & WSTOPPED;  // == WUNTRACED
  o->continued = options & WCONTINUED;
  o->nothread = options & __WNOTHREAD;
}

// wait4(2): exited and killed children; WUNTRACED reports a group stop
// (status 0x7f | sig << 8) and WCONTINUED a continue (0xffff), each once.
// __WNOTHREAD: only the children the calling thread created. rusage is
// zeroed (no accounting).
SyscallResult Wait4(Task& t, int32_t pid, UserPtr<int32_t> wstatus,
                    Flags options, UserPtr<struct rusage> rusage) {
  constexpr uint64_t kKnown =
      WNOHANG | WUNTRACED | WCONTINUED | __WNOTHREAD | __WCLONE | __WALL;
  if (options.v & ~kKnown) return kEINVAL;
  if (pid == INT32_MIN) return kESRCH;  // -INT_MIN is undefined
  using Type = kernel::ThreadGroup::WaitOptions::Type;
  kernel::ThreadGroup::WaitOptions o;
  WaitFlags(options.v | WEXITED, &o);
  if (pid > 0) {
    o.type = Type::kPid;
    o.id = pid;
  } else if (pid == 0) {
    o.type = Type::kPgid;
    o.id = t.thread_group().pgid();
  } else if (pid < -1) {
    o.type = Type::kPgid;
    o.id = -pid;
  }
  TRY(kernel::ThreadGroup::Reaped r, t.thread_group().WaitChild(t, o));
  if (r.tgid == 0) return uint64_t{0};  // WNOHANG, none ready.
  if (!wstatus.null()) TRY_VOID(wstatus.CopyOut(t, r.WaitStatus()));
  if (!rusage.null()) {
    TRY_VOID(rusage.CopyOut(
        t, kernel::MakeRusage(r.usage.times, r.usage.maxrss_kb)));
  }
  return static_cast<uint64_t>(r.tgid);
}

// waitid(2): P_ALL, P_PID, P_PGID; P_PIDFD is EBADF (no pidfds exist).
// The siginfo's signo, errno, code, pid, uid and status are written (all
// zero with WNOHANG and no child ready), as Linux; rusage is zeroed.
SyscallResult Waitid(Task& t, int32_t which, int32_t id, UserAddr infop,
                     Flags options, UserPtr<struct rusage> rusage) {
  constexpr uint64_t kKnown = WNOHANG | WNOWAIT | WEXITED | WSTOPPED |
                              WCONTINUED | __WNOTHREAD | __WCLONE | __WALL;
  if (options.v & ~kKnown) return kEINVAL;
  if (!(options.v & (WEXITED | WSTOPPED | WCONTINUED))) return kEINVAL;
  using Type = kernel::ThreadGroup::WaitOptions::Type;
  kernel::ThreadGroup::WaitOptions o;
  WaitFlags(options.v, &o);
  switch (which) {
    case P_ALL:
      break;
    case P_PID:
      if (id <= 0) return kEINVAL;
      o.type = Type::kPid;
      o.id = id;
      break;
    case P_PGID:
      if (id < 0) return kEINVAL;
      o.type = Type::kPgid;
      o.id = id != 0 ? id : t.thread_group().pgid();
      break;
    case P_PIDFD:
      if (id < 0) return kEINVAL;
      return kEBADF;
    default:
      return kEINVAL;
  }
  TRY(kernel::ThreadGroup::Reaped r, t.thread_group().WaitChild(t, o));
  if (r.tgid != 0 && !rusage.null()) {
    TRY_VOID(rusage.CopyOut(
        t, kernel::MakeRusage(r.usage.times, r.usage.maxrss_kb)));
  }
  if (infop.addr == 0) return uint64_t{0};
  // si_signo, si_errno, si_code, then the _sigchld fields si_pid, si_uid,
  // si_status at offsets 16, 20, 24.
  int32_t head[3] = {r.tgid != 0 ? SIGCHLD : 0, 0, 0};
  int32_t chld[3] = {r.tgid, static_cast<int32_t>(r.uid), 0};
  if (r.tgid != 0 && r.cld == CLD_STOPPED) {
    head[2] = CLD_STOPPED;
    chld[2] = r.stop_signo;
  } else if (r.tgid != 0 && r.cld == CLD_CONTINUED) {
    head[2] = CLD_CONTINUED;
    chld[2] = SIGCONT;
  } else if (r.tgid != 0) {
    if (r.status.signo == 0) {
      head[2] = CLD_EXITED;
      chld[2] = r.status.code;
    } else {
      head[2] = r.status.core ? CLD_DUMPED : CLD_KILLED;
      chld[2] = r.status.signo;
    }
  }
  TRY_VOID(t.CopyOutFull(infop.addr, head, sizeof(head)));
  TRY_VOID(t.CopyOutFull(infop.addr + 16, chld, sizeof(chld)));
  return uint64_t{0};
}

// getrusage(2): the times and max RSS of sentry/kernel/cpu_clock.h.
SyscallResult Getrusage(Task& t, int32_t who, UserPtr<struct rusage> usage) {
  if (who != RUSAGE_SELF && who != RUSAGE_CHILDREN && who != RUSAGE_THREAD) {
    return kEINVAL;
  }
  TRY_VOID(usage.CopyOut(t, kernel::RusageOf(t, who)));
  return uint64_t{0};
}

// sched_yield(2).
SyscallResult SchedYield(Task&) { return uint64_t{0}; }

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Getpid);
SANDBOX_SYSCALL_HANDLER(Gettid);
SANDBOX_SYSCALL_HANDLER(Getppid);
SANDBOX_SYSCALL_HANDLER(Exit);
SANDBOX_SYSCALL_HANDLER(ExitGroup);
SANDBOX_SYSCALL_HANDLER(SetTidAddress);
SANDBOX_SYSCALL_HANDLER(SetRobustList);
SANDBOX_SYSCALL_HANDLER(Prlimit64);
SANDBOX_SYSCALL_HANDLER(Getrlimit);
SANDBOX_SYSCALL_HANDLER(Setrlimit);
SANDBOX_SYSCALL_HANDLER(Uname);
SANDBOX_SYSCALL_HANDLER(Sysinfo);
SANDBOX_SYSCALL_HANDLER(ArchPrctl);
SANDBOX_SYSCALL_HANDLER(SchedYield);
SANDBOX_SYSCALL_HANDLER(Umask);
SANDBOX_SYSCALL_HANDLER(Prctl);
SANDBOX_SYSCALL_HANDLER(Getpgrp);
SANDBOX_SYSCALL_HANDLER(Getpgid);
SANDBOX_SYSCALL_HANDLER(Getsid);
SANDBOX_SYSCALL_HANDLER(Setpgid);
SANDBOX_SYSCALL_HANDLER(Setsid);
SANDBOX_SYSCALL_HANDLER(Wait4);
SANDBOX_SYSCALL_HANDLER(Waitid);
SANDBOX_SYSCALL_HANDLER(Getrusage);

}  // namespace sandbox::syscalls
