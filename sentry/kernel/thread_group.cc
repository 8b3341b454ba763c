#include "sentry/kernel/thread_group.h"

#include <signal.h>

#include <algorithm>

#include "platform/sleep_state.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/log.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/fd_table.h"

namespace sandbox::kernel {

ThreadGroup::ThreadGroup(Kernel& kernel, ThreadGroup* parent,
                         std::string exe_path, LimitSet limits)
    : kernel_(kernel),
      parent_(parent),
      exe_path_(std::move(exe_path)),
      limits_(limits) {
  if (parent != nullptr) parent_weak_ = parent->weak_from_this();
}

std::shared_ptr<ThreadGroup> ThreadGroup::parent_ref() const {
  absl::MutexLock l(&parent_mu_);
  return parent_weak_.lock();
}

void ThreadGroup::set_parent(std::shared_ptr<ThreadGroup> p) {
  absl::MutexLock l(&parent_mu_);
  parent_.store(p.get(), std::memory_order_release);
  parent_weak_ = p;
}

std::string ThreadGroup::exe_path() const {
  absl::MutexLock l(&mu_);
  return exe_path_;
}

void ThreadGroup::set_exe_path(std::string path) {
  did_exec_.store(true, std::memory_order_relaxed);  // only execve sets it
  absl::MutexLock l(&mu_);
  exe_path_ = std::move(path);
}

vfs::VirtualDentry ThreadGroup::exe_file() const {
  absl::MutexLock l(&mu_);
  return exe_file_;
}

void ThreadGroup::set_exe_file(vfs::VirtualDentry vd) {
  vfs::VirtualDentry old;
  absl::MutexLock l(&mu_);
  old = std::move(exe_file_);  // released after mu_ (destructor order)
  exe_file_ = std::move(vd);
}

abi::Rlimit64 ThreadGroup::GetLimit(int resource) const {
  absl::MutexLock l(&mu_);
  return limits_.Get(resource);
}

KResult<abi::Rlimit64> ThreadGroup::SetLimit(int resource,
                                             const abi::Rlimit64& lim,
                                             bool privileged) {
  if (resource < 0 || resource >= abi::kRlimNlimits) return kEINVAL;
  if (lim.rlim_cur > lim.rlim_max) return kEINVAL;
  if (resource == RLIMIT_NOFILE && lim.rlim_max > vfs::FdTable::kNrOpen) {
    return kEPERM;
  }
  absl::MutexLock l(&mu_);
  abi::Rlimit64 old = limits_.limits[resource];
  if (lim.rlim_max > old.rlim_max && !privileged) return kEPERM;
  limits_.limits[resource] = lim;
  return old;
}

abi::KernelSigaction ThreadGroup::GetAction(int sig) const {
  absl::MutexLock l(&mu_);
  return actions_[sig];
}

void ThreadGroup::SetAction(int sig, const abi::KernelSigaction& act) {
  absl::MutexLock l(&mu_);
  actions_[sig] = act;
}

void ThreadGroup::SignalDefaultAction(int sig) {
  if (!ValidSignal(sig)) return;
  // Raised by the kernel for the current task (SIGPIPE), else for the
  // process (a signal from outside the sandbox).
  Task* cur = Task::Current();
  if (cur != nullptr && &cur->thread_group() == this) {
    (void)SendSignalToTask(*cur, UserSignalInfo(sig, SI_USER, cur));
  } else {
    (void)SendSignalToGroup(*this, UserSignalInfo(sig, SI_USER, nullptr));
  }
}

void ThreadGroup::AddTask(Task* task) {
  absl::MutexLock l(&mu_);
  if (tasks_.empty() && tgid() == 0) {
    tgid_.store(task->tid(), std::memory_order_relaxed);
  }
  tasks_.push_back(task);
}

size_t ThreadGroup::TaskCount() const {
  absl::MutexLock l(&mu_);
  return tasks_.size();
}

std::vector<Task*> ThreadGroup::Tasks() const {
  absl::MutexLock l(&mu_);
  return tasks_;
}

std::vector<std::shared_ptr<Task>> ThreadGroup::TaskRefs() const {
  std::vector<std::shared_ptr<Task>> out;
  absl::MutexLock l(&mu_);
  out.reserve(tasks_.size());
  // A task in tasks_ has not finished its run loop: its host thread
  // still holds it.
  for (Task* t : tasks_) out.push_back(t->shared_from_this());
  return out;
}

void ThreadGroup::ExitGroup(ExitStatus status) {
  absl::MutexLock l(&mu_);
  if (!exit_status_.has_value()) exit_status_ = status;
  exiting_.store(true, std::memory_order_release);
  for (Task* t : tasks_) t->Interrupt();
}

bool ThreadGroup::DeThread(Task& self) {
  const ThreadId leader = tgid();
  {
    absl::MutexLock l(&mu_);
    if (exiting()) return false;
    if (tasks_.size() > 1) {
      // The leader's TID is ours from now on: its exit must not free it.
      if (self.tid() != leader)
        kernel_.root_pid_namespace().Reassign(leader, self.shared_from_this());
      exec_survivor_.store(&self, std::memory_order_release);
      for (Task* t : tasks_) {
        if (t != &self) t->Interrupt();
      }
      // TaskExited (under mu_) removes each one; ExitGroup sets exiting_.
      auto alone = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return tasks_.size() == 1 || exiting();
      };
      {
        // de_thread waits TASK_KILLABLE: /proc shows D.
        platform::ScopedSleep sleeping(platform::SleepState::kUninterruptible);
        mu_.Await(absl::Condition(&alone));
      }
      exec_survivor_.store(nullptr, std::memory_order_release);
      if (tasks_.size() != 1) return false;
    }
  }
  if (self.tid() != leader) {
    // Reassign was done above unless the leader had already exited (then
    // its TID was released and is free to take again).
    PidNamespace& ns = kernel_.root_pid_namespace();
    ns.Reassign(leader, self.shared_from_this());
    ns.ReleaseIf(self.tid(), &self);
    self.set_tid(leader);
  }
  return !exiting();
}

void ThreadGroup::TaskExited(Task* task, int code) {
  std::vector<std::shared_ptr<ThreadGroup>> orphans;
  vfs::VirtualDentry exe;
  {
    absl::MutexLock l(&mu_);
    tasks_.erase(std::remove(tasks_.begin(), tasks_.end(), task), tasks_.end());
    if (!tasks_.empty()) {
      // forget_original_parent within the process: the exiting thread's
      // children go to the first live thread (find_alive_thread).
      const ThreadId heir = tasks_.front()->tid();
      for (auto& c : children_) {
        if (c->creator_tid() == task->tid()) c->set_creator_tid(heir);
      }
      return;
    }
    if (!exit_status_.has_value()) exit_status_ = ExitStatus::Exited(code);
    exiting_.store(true, std::memory_order_release);
    dead_ = true;
    exe = std::move(exe_file_);
    orphans.swap(children_);
  }
  // exit_mm drops mm->exe_file before the parent hears of the exit: the
  // executable's mount is no longer pinned once wait returns.
  exe = vfs::VirtualDentry{};
  // Living or unreaped children go to init, which reaps them.
  std::shared_ptr<ThreadGroup> init = kernel_.init_ref();
  if (init != nullptr && init.get() != this && !orphans.empty()) {
    const ThreadId init_tid = init->tgid();
    for (auto& c : orphans) {
      c->set_parent(init);
      c->set_creator_tid(init_tid);
      // init never dies before the sandbox ends (its death kills all).
      (void)init->AddChild(std::move(c));
    }
    init->NotifyChildDied();
  }
  // Without our mu_: the parent's wait holds its mu_ and then ours. The
  // parent is held: it may exit (and hand us to init) meanwhile, then our
  // notice finds it dead and init, which has us, reaps us.
  if (std::shared_ptr<ThreadGroup> p = parent_ref(); p != nullptr) {
    // The exit signal (SIGCHLD); a parent that ignores it reaps at once.
    ExitStatus st = *exit_status();
    if (NotifyParentOfExit(*this, *p, st, task->CredsRef()->ruid)) {
      p->ForgetChild(this);
    }
    p->NotifyChildDied();
  } else if (parent() == nullptr) {
    ReleaseZombiePid();  // init: its parent, outside the sandbox, reaps it
  }
}

void ThreadGroup::ForgetChild(const ThreadGroup* child) {
  std::shared_ptr<ThreadGroup> gone;
  {
    absl::MutexLock l(&mu_);
    auto it = std::find_if(children_.begin(), children_.end(),
                           [child](const auto& c) { return c.get() == child; });
    if (it == children_.end()) return;  // handed to init meanwhile
    gone = std::move(*it);
    children_.erase(it);
  }
  gone->ReleaseZombiePid();  // auto-reaped: no zombie stays
}

bool ThreadGroup::AddChild(std::shared_ptr<ThreadGroup> child) {
  absl::MutexLock l(&mu_);
  if (dead_) return false;
  children_.push_back(std::move(child));
  return true;
}

void ThreadGroup::NotifyChildDied() {
  absl::MutexLock l(&mu_);
  for (ChildWaiter* w : child_waiters_) w->Notify();
}

KResult<ThreadGroup::Reaped> ThreadGroup::WaitChild(Task& waiter, ThreadId pid,
                                                    bool nohang) {
  WaitOptions o;
  if (pid > 0) {
    o.type = WaitOptions::Type::kPid;
    o.id = pid;
  }
  o.nohang = nohang;
  o.wall = true;
  return WaitChild(waiter, o);
}

void ThreadGroup::ReleaseZombiePid() const {
  PidNamespace& ns = kernel_.root_pid_namespace();
  const ThreadId id = tgid();
  std::shared_ptr<Task> t = ns.Lookup(id);
  if (t != nullptr && &t->thread_group() == this) ns.ReleaseIf(id, t.get());
  t.reset();
  // The caller holds this group; it goes with the last reference.
  kernel_.ForgetThreadGroup(this);
}

KResult<ThreadGroup::Reaped> ThreadGroup::WaitChild(Task& waiter,
                                                    const WaitOptions& opts) {
  // eligible_child: the PID or group matches; then __WALL takes every
  // child, else __WCLONE selects the children whose exit signal is not
  // SIGCHLD and its absence the others.
  auto eligible = [&opts, &waiter](ThreadGroup& c) {
    switch (opts.type) {
      case WaitOptions::Type::kAny:
        break;
      case WaitOptions::Type::kPid:
        if (c.tgid() != opts.id) return false;
        break;
      case WaitOptions::Type::kPgid:
        if (c.pgid() != opts.id) return false;
        break;
    }
    if (opts.nothread && c.creator_tid() != waiter.tid()) return false;
    if (opts.wall) return true;
    return (c.exit_signal() != SIGCHLD) == opts.wclone;
  };
  ChildWaiter w;
  bool registered = false;
  KResult<Reaped> result = kECHILD;
  for (;;) {
    std::shared_ptr<ThreadGroup> reaped;
    bool done = false;
    {
      absl::MutexLock l(&mu_);
      bool any = false;
      bool found = false;
      for (auto it = children_.begin(); it != children_.end(); ++it) {
        ThreadGroup& c = **it;
        if (!eligible(c)) continue;
        absl::MutexLock cl(&c.mu_);
        // A live child may still exit (or, later, stop): something to wait
        // for. A dead one counts only if WEXITED asks for it (else, as
        // Linux's wait_consider_task, it leaves ECHILD standing).
        if (!c.dead_) {
          any = true;
          // wait_task_stopped, then wait_task_continued: each event is
          // reported once (unless WNOWAIT).
          JobControl& j = c.jobctl_;
          Reaped r{c.tgid(), ExitStatus{}};
          if (opts.stopped && j.stop_stopped && j.group_exit_code != 0) {
            r.cld = CLD_STOPPED;
            r.stop_signo = j.group_exit_code;
            if (!opts.nowait) j.group_exit_code = 0;
          } else if (opts.continued && j.stop_continued) {
            r.cld = CLD_CONTINUED;
            if (!opts.nowait) j.stop_continued = false;
          } else {
            continue;
          }
          if (std::shared_ptr<Task> leader =
                  kernel_.root_pid_namespace().Lookup(c.tgid());
              leader != nullptr && &leader->thread_group() == &c) {
            r.uid = leader->CredsRef()->ruid;
          }
          result = r;
          found = true;
          break;
        }
        if (!opts.exited) continue;
        any = true;
        Reaped r{c.tgid(), *c.exit_status_};
        if (std::shared_ptr<Task> leader =
                kernel_.root_pid_namespace().Lookup(c.tgid());
            leader != nullptr && &leader->thread_group() == &c) {
          r.uid = leader->CredsRef()->ruid;
        }
        r.usage = ChildUsageLocked(c);  // both signal locks are held
        if (!opts.nowait) {
          AddChildUsageLocked(*this, r.usage);
          reaped = std::move(*it);
          children_.erase(it);
        }
        result = r;
        found = true;
        break;
      }
      if (!found) {
        if (!any) {
          result = kECHILD;
        } else if (opts.nohang) {
          result = Reaped{};
        } else {
          if (!registered) {
            child_waiters_.push_back(&w);
            registered = true;
          }
          absl::MutexLock wl(&w.mu);
          w.event = false;
        }
      }
      if (found || !any || opts.nohang) {
        if (registered) {
          child_waiters_.erase(
              std::remove(child_waiters_.begin(), child_waiters_.end(), &w),
              child_waiters_.end());
        }
        done = true;
      }
    }
    if (done) {
      // Without mu_: releasing the PID may free the child's leader and
      // takes the kernel's lock (which comes before ours).
      if (reaped != nullptr) reaped->ReleaseZombiePid();
      if (registered) waiter.SetBlocker(nullptr);
      return result;
    }
    // Registered with `event` cleared under mu_: a child's death after
    // the scan notifies us.
    waiter.SetBlocker(&w);
    {
      platform::ScopedSleep sleeping;  // /proc: S
      absl::MutexLock l(&w.mu);
      w.mu.Await(absl::Condition(&w.event));
    }
    if (waiter.InterruptPending() || exiting()) {
      waiter.SetBlocker(nullptr);
      absl::MutexLock l(&mu_);
      child_waiters_.erase(
          std::remove(child_waiters_.begin(), child_waiters_.end(), &w),
          child_waiters_.end());
      return kERestartSys;
    }
  }
}

LimitSet ThreadGroup::limits() const {
  absl::MutexLock l(&mu_);
  return limits_;
}

std::array<abi::KernelSigaction, abi::kNumSignals + 1> ThreadGroup::actions()
    const {
  absl::MutexLock l(&mu_);
  return actions_;
}

void ThreadGroup::set_actions(
    const std::array<abi::KernelSigaction, abi::kNumSignals + 1>& a) {
  absl::MutexLock l(&mu_);
  actions_ = a;
}

void ThreadGroup::FlushSignalHandlers(bool force_default) {
  absl::MutexLock l(&mu_);
  for (abi::KernelSigaction& a : actions_) {
    if (force_default || a.handler != abi::kSigIgn) a.handler = abi::kSigDfl;
    a.flags = 0;
    a.restorer = 0;
    a.mask = 0;
  }
}

ExitStatus ThreadGroup::WaitDead() const {
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(&dead_));
  return *exit_status_;
}

bool ThreadGroup::dead() const {
  absl::MutexLock l(&mu_);
  return dead_;
}

std::optional<ExitStatus> ThreadGroup::exit_status() const {
  absl::MutexLock l(&mu_);
  return exit_status_;
}

}  // namespace sandbox::kernel
