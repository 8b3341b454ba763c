// The scheduler calls: sched_setscheduler, sched_getscheduler,
// sched_setparam, sched_getparam, sched_get_priority_min/max,
// sched_rr_get_interval, sched_setaffinity, sched_getaffinity. Policies,
// priorities and CPU masks are recorded per task (sentry/kernel/sched.h)
// with Linux's checks and reported back; the host schedules the Sentry's
// threads as it likes. The sandbox's CPUs are those the Sentry may run on.
#include "sentry/kernel/sched.h"

#include <sched.h>
#include <sys/resource.h>

#include <memory>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/kernel.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {
namespace {

constexpr int kResetOnFork = 0x40000000;  // SCHED_RESET_ON_FORK
constexpr int kSetparamPolicy = -1;       // SETPARAM_POLICY
// The kernel's cpumask is 8 bytes here (nr_cpu_ids <= 64).
constexpr size_t kMaskSize = 8;
// RR_TIMESLICE (100 ms) and one tick (HZ=250) for the fair classes.
constexpr int64_t kRrTimesliceNs = 100 * 1000000LL;
constexpr int64_t kFairSliceNs = 4 * 1000000LL;

// The CPUs of the sandbox: the host CPUs the Sentry may use (bit i: CPU
// i), at least CPU 0.
uint64_t SandboxCpus() {
  cpu_set_t set;
  uint64_t bits = 0;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int i = 0; i < 64; ++i) {
      if (CPU_ISSET(i, &set)) bits |= uint64_t{1} << i;
    }
  }
  return bits != 0 ? bits : 1;
}

// find_process_by_pid(): 0 is the caller; else the thread with that TID.
KResult<std::shared_ptr<kernel::Task>> FindTask(Task& t, int32_t pid) {
  if (pid == 0) return t.shared_from_this();
  std::shared_ptr<kernel::Task> p = t.kernel().root_pid_namespace().Lookup(pid);
  if (p == nullptr) return kESRCH;
  return p;
}

// check_same_owner(): the caller's euid is the target's uid or euid.
bool SameOwner(Task& t, kernel::Task& p) {
  if (&p == &t) return true;
  std::shared_ptr<const kernel::Credentials> pc = p.CredsRef();
  return t.creds().euid == pc->euid || t.creds().euid == pc->ruid;
}

// __sched_setscheduler(): `policy` is kSetparamPolicy to keep the policy.
SyscallResult SetScheduler(Task& t, int32_t pid, int policy,
                           UserPtr<sched_param> param) {
  if (param.null() || pid < 0) return kEINVAL;
  TRY(sched_param sp, param.CopyIn(t));
  TRY(std::shared_ptr<kernel::Task> p, FindTask(t, pid));
  const kernel::SchedAttr old = p->sched().Get();
  bool reset_on_fork;
  if (policy == kSetparamPolicy) {
    policy = old.policy;
    reset_on_fork = old.reset_on_fork;
  } else {
    reset_on_fork = (policy & kResetOnFork) != 0;
    policy &= ~kResetOnFork;
    if (!kernel::IsValidPolicy(policy)) return kEINVAL;
  }
  // sched_attr's priority is unsigned: a negative one is out of range.
  const uint32_t prio = static_cast<uint32_t>(sp.sched_priority);
  if (prio > kernel::kMaxRtPrio - 1) return kEINVAL;
  // SCHED_DEADLINE needs sched_setattr's runtime and deadline.
  if (policy == kernel::kSchedDeadline) return kEINVAL;
  if (kernel::IsRtPolicy(policy) != (prio != 0)) return kEINVAL;
  if (!t.creds().HasCapability(kernel::kCapSysNice)) {
    if (kernel::IsRtPolicy(policy)) {
      const uint64_t rlim = p->thread_group().GetLimit(RLIMIT_RTPRIO).rlim_cur;
      if (policy != old.policy && rlim == 0) return kEPERM;
      if (prio > static_cast<uint32_t>(old.rt_priority) && prio > rlim) {
        return kEPERM;
      }
    }
    // Leaving SCHED_IDLE is as raising the nice value from 20.
    if (old.policy == SCHED_IDLE && policy != SCHED_IDLE &&
        static_cast<uint64_t>(20 - old.nice) >
            p->thread_group().GetLimit(RLIMIT_NICE).rlim_cur) {
      return kEPERM;
    }
    if (!SameOwner(t, *p)) return kEPERM;
    if (old.reset_on_fork && !reset_on_fork) return kEPERM;
  }
  kernel::SchedAttr next = old;
  next.policy = policy;
  next.rt_priority = static_cast<int>(prio);
  next.reset_on_fork = reset_on_fork;
  p->sched().Set(next);
  return uint64_t{0};
}

// sched_setscheduler(2).
SyscallResult SchedSetscheduler(Task& t, int32_t pid, int32_t policy,
                                UserPtr<sched_param> param) {
  if (policy < 0) return kEINVAL;
  return SetScheduler(t, pid, policy, param);
}

// sched_setparam(2).
SyscallResult SchedSetparam(Task& t, int32_t pid, UserPtr<sched_param> param) {
  return SetScheduler(t, pid, kSetparamPolicy, param);
}

// sched_getscheduler(2): the policy, with SCHED_RESET_ON_FORK if set.
SyscallResult SchedGetscheduler(Task& t, int32_t pid) {
  if (pid < 0) return kEINVAL;
  TRY(std::shared_ptr<kernel::Task> p, FindTask(t, pid));
  const kernel::SchedAttr a = p->sched().Get();
  return static_cast<uint64_t>(a.policy | (a.reset_on_fork ? kResetOnFork : 0));
}

// sched_getparam(2): the rt priority (0 for the fair classes).
SyscallResult SchedGetparam(Task& t, int32_t pid, UserPtr<sched_param> param) {
  if (param.null() || pid < 0) return kEINVAL;
  TRY(std::shared_ptr<kernel::Task> p, FindTask(t, pid));
  const kernel::SchedAttr a = p->sched().Get();
  sched_param sp = {};
  sp.sched_priority = kernel::IsRtPolicy(a.policy) ? a.rt_priority : 0;
  TRY_VOID(param.CopyOut(t, sp));
  return uint64_t{0};
}

// sched_get_priority_max(2), sched_get_priority_min(2).
SyscallResult SchedGetPriorityMax(Task& t, int32_t policy) {
  (void)t;
  if (kernel::IsRtPolicy(policy)) return uint64_t{kernel::kMaxRtPrio - 1};
  if (kernel::IsFairPolicy(policy) || policy == kernel::kSchedDeadline) {
    return uint64_t{0};
  }
  return kEINVAL;
}
SyscallResult SchedGetPriorityMin(Task& t, int32_t policy) {
  (void)t;
  if (kernel::IsRtPolicy(policy)) return uint64_t{1};
  if (kernel::IsFairPolicy(policy) || policy == kernel::kSchedDeadline) {
    return uint64_t{0};
  }
  return kEINVAL;
}

// sched_rr_get_interval(2): RR's time slice, 0 for FIFO, a tick for the
// fair classes.
SyscallResult SchedRrGetInterval(Task& t, int32_t pid,
                                 UserPtr<abi::Timespec> tp) {
  if (pid < 0) return kEINVAL;
  TRY(std::shared_ptr<kernel::Task> p, FindTask(t, pid));
  const int policy = p->sched().Get().policy;
  const int64_t ns = policy == SCHED_RR     ? kRrTimesliceNs
                     : policy == SCHED_FIFO ? 0
                                            : kFairSliceNs;
  TRY_VOID(tp.CopyOut(t, abi::Timespec{ns / 1000000000, ns % 1000000000}));
  return uint64_t{0};
}

// sched_setaffinity(2): a shorter mask is zero-extended, a longer one cut
// to the kernel's size; the mask must intersect the sandbox's CPUs
// (EINVAL); EPERM for another owner's task without CAP_SYS_NICE.
SyscallResult SchedSetaffinity(Task& t, int32_t pid, uint32_t len,
                               UserAddr mask) {
  uint64_t bits = 0;
  TRY_VOID(t.CopyInFull(mask.addr, &bits, std::min<size_t>(len, kMaskSize)));
  TRY(std::shared_ptr<kernel::Task> p, FindTask(t, pid));
  if (!SameOwner(t, *p) && !t.creds().HasCapability(kernel::kCapSysNice)) {
    return kEPERM;
  }
  const uint64_t allowed = bits & SandboxCpus();
  if (allowed == 0) return kEINVAL;
  p->sched().SetAffinity(allowed);
  return uint64_t{0};
}

// sched_getaffinity(2): the task's mask (every CPU of the sandbox until it
// sets one); returns the kernel's mask size.
SyscallResult SchedGetaffinity(Task& t, int32_t pid, uint32_t len,
                               UserAddr mask) {
  if (len < kMaskSize || len % sizeof(uint64_t) != 0) return kEINVAL;
  TRY(std::shared_ptr<kernel::Task> p, FindTask(t, pid));
  const uint64_t set = p->sched().Get().affinity;
  const uint64_t bits = set != 0 ? set & SandboxCpus() : SandboxCpus();
  TRY_VOID(t.CopyOutObj<uint64_t>(mask.addr, bits != 0 ? bits : SandboxCpus()));
  return uint64_t{kMaskSize};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(SchedSetscheduler);
SANDBOX_SYSCALL_HANDLER(SchedGetscheduler);
SANDBOX_SYSCALL_HANDLER(SchedSetparam);
SANDBOX_SYSCALL_HANDLER(SchedGetparam);
SANDBOX_SYSCALL_HANDLER(SchedGetPriorityMax);
SANDBOX_SYSCALL_HANDLER(SchedGetPriorityMin);
SANDBOX_SYSCALL_HANDLER(SchedRrGetInterval);
SANDBOX_SYSCALL_HANDLER(SchedSetaffinity);
SANDBOX_SYSCALL_HANDLER(SchedGetaffinity);

}  // namespace sandbox::syscalls
