// getpriority(2), setpriority(2): nice values per thread, process group or
// user, recorded in each task's sched attributes (sentry/kernel/sched.h;
// they do not change how the host schedules the Sentry's threads).
// PRIO_PROCESS names one thread (by TID, as Linux), PRIO_PGRP every thread
// of the group's processes, PRIO_USER every thread whose real uid is `who`.
#include <sys/resource.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/sched.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {
namespace {

// The tasks `which`/`who` name (zombies included, as Linux's pid lookups).
std::vector<std::shared_ptr<kernel::Task>> Targets(Task& t, int32_t which,
                                                   int32_t who) {
  std::vector<std::shared_ptr<kernel::Task>> out;
  kernel::PidNamespace& ns = t.kernel().root_pid_namespace();
  if (which == PRIO_PROCESS) {
    if (who == 0) {
      out.push_back(t.shared_from_this());
    } else if (std::shared_ptr<kernel::Task> p = ns.Lookup(who)) {
      out.push_back(std::move(p));
    }
    return out;
  }
  const int64_t pgid = which == PRIO_PGRP && who == 0
                           ? t.thread_group().pgid()
                           : static_cast<int64_t>(who);
  const uint32_t uid = which == PRIO_USER && who == 0
                           ? t.creds().ruid
                           : static_cast<uint32_t>(who);
  for (kernel::ThreadId tid : ns.Tids()) {
    std::shared_ptr<kernel::Task> p = ns.Lookup(tid);
    if (p == nullptr || p->tid() != tid) continue;  // a PID naming a leader
    const bool match = which == PRIO_PGRP ? p->thread_group().pgid() == pgid
                       : p.get() == &t    ? t.creds().ruid == uid
                                          : p->CredsRef()->ruid == uid;
    if (match) out.push_back(std::move(p));
  }
  return out;
}

// can_nice(): lowering to `nice` needs RLIMIT_NICE >= 20 - nice (of the
// target) or CAP_SYS_NICE.
bool CanNice(Task& t, kernel::Task& p, int nice) {
  return static_cast<uint64_t>(20 - nice) <=
             p.thread_group().GetLimit(RLIMIT_NICE).rlim_cur ||
         t.creds().HasCapability(kernel::kCapSysNice);
}

// getpriority(2): the highest priority among the targets as 20 - nice
// (1..40; the C library turns it back into a nice value).
SyscallResult Getpriority(Task& t, int32_t which, int32_t who) {
  if (which < PRIO_PROCESS || which > PRIO_USER) return kEINVAL;
  int best = 0;
  for (const auto& p : Targets(t, which, who)) {
    best = std::max(best, 20 - p->sched().Get().nice);
  }
  if (best == 0) return kESRCH;
  return static_cast<uint64_t>(best);
}

// setpriority(2): `nice` clamped to -20..19; for each target, EPERM unless
// the caller's euid is the target's uid or euid (or CAP_SYS_NICE), EACCES
// to lower it beyond RLIMIT_NICE (set_one_prio). The last error wins, as
// Linux; ESRCH if nothing matched.
SyscallResult Setpriority(Task& t, int32_t which, int32_t who, int32_t nice) {
  if (which < PRIO_PROCESS || which > PRIO_USER) return kEINVAL;
  nice = std::clamp(nice, kernel::kMinNice, kernel::kMaxNice);
  std::vector<std::shared_ptr<kernel::Task>> targets = Targets(t, which, who);
  if (targets.empty()) return kESRCH;
  const kernel::Credentials& me = t.creds();
  Errno error(0);
  for (const auto& p : targets) {
    std::shared_ptr<const kernel::Credentials> pc = p->CredsRef();
    if (pc->ruid != me.euid && pc->euid != me.euid &&
        !me.HasCapability(kernel::kCapSysNice)) {
      error = kEPERM;
      continue;
    }
    if (nice < p->sched().Get().nice && !CanNice(t, *p, nice)) {
      error = kEACCES;
      continue;
    }
    p->sched().SetNice(nice);
  }
  if (error.number() != 0) return error;
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Getpriority);
SANDBOX_SYSCALL_HANDLER(Setpriority);

}  // namespace sandbox::syscalls
