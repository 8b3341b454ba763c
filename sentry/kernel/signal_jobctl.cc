// Job control: Linux's do_signal_stop, task_participate_group_stop and
// is_current_pgrp_orphaned (kernel/signal.c, kernel/exit.c). signal.h has
// the design; SIGCONT's send side is in signal_send.cc (prepare_signal).
//
// Locking: every job-control field (ThreadGroup::JobControl, the stop bits
// in TaskSignals) is guarded by the thread group's signal_mu(). A stopped
// task sleeps in signal_mu().Await, so SIGCONT (which clears `stopped`),
// ExitGroup (exiting) and DeThread (exec_survivor), all under signal_mu(),
// wake it.
#include <signal.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"

namespace sandbox::kernel {

bool DoSignalStop(Task& t, int signo) {
  ThreadGroup& tg = t.thread_group();
  TaskSignals& ts = t.signals();
  int notify_signo = 0;
  {
    absl::MutexLock l(&tg.signal_mu());
    ThreadGroup::JobControl& j = tg.JobControlLocked();
    if (!ts.stop_pending) {
      // No group stop in progress: start one, unless SIGCONT came between
      // the dequeue and now (it clears stop_dequeued), or the group is
      // exiting or exec'ing.
      if (signo == 0 || !ts.stop_dequeued || tg.exiting() ||
          tg.KilledByExec(&t)) {
        return false;
      }
      // A second stop while already stopped does not report again.
      if (!j.stop_stopped) j.group_exit_code = signo;
      j.group_stop_count = 0;
      ts.stop_pending = ts.stop_consume = true;
      ++j.group_stop_count;
      for (Task* o : tg.TasksLocked()) {
        if (o == &t) continue;
        TaskSignals& os = o->signals();
        // task_set_jobctl_pending fails for an exiting task; a task still
        // stopped from an earlier stop (only possible under ptrace on
        // Linux) is not asked again.
        if (os.stopped || os.exiting) continue;
        os.stop_pending = os.stop_consume = true;
        ++j.group_stop_count;
        o->Interrupt();  // signal_wake_up
      }
    }
    // task_participate_group_stop.
    const bool consume = ts.stop_consume;
    ts.stop_pending = ts.stop_consume = ts.stop_dequeued = false;
    if (consume) {
      if (j.group_stop_count > 0) --j.group_stop_count;
      if (j.group_stop_count == 0 && !j.stop_stopped) {
        // signal_set_stop_flags(SIGNAL_STOP_STOPPED): a fresh stop.
        j.stop_stopped = true;
        j.stop_continued = false;
        j.cld_notify = 0;
        notify_signo = j.group_exit_code;
      }
    }
    ts.stopped = true;
  }
  if (notify_signo != 0) NotifyParentCldStop(t, CLD_STOPPED, notify_signo);
  {
    absl::MutexLock l(&tg.signal_mu());
    auto resumed = [&t, &tg,
                    &ts]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(tg.signal_mu()) {
      return !ts.stopped || tg.exiting() || tg.KilledByExec(&t);
    };
    tg.signal_mu().Await(absl::Condition(&resumed));
    ts.stopped = false;
  }
  return true;
}

bool ProcessGroupOrphaned(Task& t) {
  ThreadGroup& self = t.thread_group();
  const ThreadId pgid = self.pgid();
  PidNamespace& ns = t.kernel().root_pid_namespace();
  std::vector<const ThreadGroup*> seen;
  for (ThreadId tid : ns.Tids()) {
    std::shared_ptr<Task> k = ns.Lookup(tid);
    if (k == nullptr) continue;
    ThreadGroup& g = k->thread_group();
    if (g.pgid() != pgid) continue;
    if (std::find(seen.begin(), seen.end(), &g) != seen.end()) continue;
    seen.push_back(&g);
    // A zombie does not count; nor does a member whose parent is outside
    // the sandbox (the sandbox's init).
    if (g.dead()) continue;
    std::shared_ptr<ThreadGroup> p = g.parent_ref();
    if (p == nullptr) continue;
    if (p->pgid() != pgid && p->sid() == g.sid()) return false;
  }
  return true;
}

bool TaskStopped(Task& t) {
  ThreadGroup& tg = t.thread_group();
  absl::MutexLock l(&tg.signal_mu());
  return t.signals().stopped;
}

}  // namespace sandbox::kernel
