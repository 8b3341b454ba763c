// Process groups and sessions: setpgid(2), setsid(2), getpgid(2),
// getsid(2) (Kernel methods; kernel.h documents them).
//
// Changes are serialized by Kernel::job_control_mu_ (Linux's tasklist_lock,
// held for writing by setpgid and setsid); readers load the atomics. A fork
// copies its creator's IDs without it, so a fork racing with its creator's
// setsid may leave the child in the old group, as if it ran first.
#include <memory>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"

namespace sandbox::kernel {
namespace {

// The process that `pid` names (any of its threads' TIDs, a zombie's
// PID), as find_task_by_vpid + its thread group.
std::shared_ptr<ThreadGroup> FindProcess(PidNamespace& ns, ThreadId pid) {
  std::shared_ptr<Task> task = ns.Lookup(pid);
  return task != nullptr ? task->thread_group_ref() : nullptr;
}

// Whether some process (alive or a zombie) has process group `pgid` in
// session `sid` (sid < 0: any session).
bool GroupExists(PidNamespace& ns, ThreadId pgid, ThreadId sid) {
  for (ThreadId tid : ns.Tids()) {
    std::shared_ptr<Task> task = ns.Lookup(tid);
    if (task == nullptr) continue;
    ThreadGroup& tg = task->thread_group();
    if (tg.pgid() == pgid && (sid < 0 || tg.sid() == sid)) return true;
  }
  return false;
}

}  // namespace

KResult<ThreadId> Kernel::ProcessGroupOf(Task& caller, ThreadId pid,
                                         bool session) {
  std::shared_ptr<ThreadGroup> tg = caller.thread_group_ref();
  if (pid != 0) {
    tg = pid > 0 ? FindProcess(root_pidns_, pid) : nullptr;
    if (tg == nullptr) return kESRCH;
  }
  return session ? tg->sid() : tg->pgid();
}

KResult<void> Kernel::SetProcessGroup(Task& caller, ThreadId pid,
                                      ThreadId pgid) {
  ThreadGroup& self = caller.thread_group();
  if (pid == 0) pid = self.tgid();
  if (pgid == 0) pgid = pid;
  if (pgid < 0) return kEINVAL;
  absl::MutexLock l(&job_control_mu_);
  std::shared_ptr<Task> task = pid > 0 ? root_pidns_.Lookup(pid) : nullptr;
  if (task == nullptr) return kESRCH;
  ThreadGroup& p = task->thread_group();
  if (p.tgid() != pid) return kEINVAL;  // not a thread-group leader
  if (p.parent() == &self) {
    if (p.sid() != self.sid()) return kEPERM;
    if (p.did_exec()) return kEACCES;
  } else if (&p != &self) {
    return kESRCH;
  }
  if (p.sid() == p.tgid()) return kEPERM;  // a session leader
  if (pgid != pid && !GroupExists(root_pidns_, pgid, self.sid())) {
    return kEPERM;
  }
  p.set_pgid_sid(pgid, p.sid());
  return OkResult();
}

KResult<ThreadId> Kernel::NewSession(Task& caller) {
  ThreadGroup& self = caller.thread_group();
  absl::MutexLock l(&job_control_mu_);
  const ThreadId id = self.tgid();
  if (GroupExists(root_pidns_, id, -1)) return kEPERM;
  self.set_pgid_sid(id, id);
  return id;
}

}  // namespace sandbox::kernel
