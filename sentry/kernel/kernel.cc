#include "sentry/kernel/kernel.h"

#include <signal.h>
#include <time.h>

#include <algorithm>

#include "absl/time/clock.h"
#include "sentry/kernel/log.h"
#include "sentry/mm/memory_manager.h"

namespace sandbox::kernel {
namespace {

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

}  // namespace

Kernel::Kernel(platform::Platform* platform, SyscallDispatcher& dispatcher,
               KernelOptions options)
    : platform_(platform),
      dispatcher_(dispatcher),
      options_(std::move(options)),
      boot_ns_(MonotonicNs()),
      uts_(options_.hostname, options_.domainname) {
  root_pidns_.set_max_tasks(options_.max_tasks);
}

Kernel::~Kernel() {
  {
    absl::MutexLock l(&mu_);
    for (auto& tg : thread_groups_) tg->ExitGroup(ExitStatus::Killed(SIGKILL));
  }
  JoinTaskThreads();
}

void Kernel::JoinTaskThreads() {
  absl::MutexLock l(&mu_);
  auto none = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return live_threads_ == 0;
  };
  mu_.Await(absl::Condition(&none));
}

KResult<Task*> Kernel::NewProcess(NewProcessArgs args) {
  if (args.fds == nullptr) args.fds = std::make_shared<vfs::FdTable>();
  auto tg = std::make_shared<ThreadGroup>(
      *this, args.parent, std::move(args.exe_path), args.limits);
  tg->set_exe_file(std::move(args.exe_file));
  auto task = std::make_shared<Task>(
      *this, tg, std::make_shared<const Credentials>(std::move(args.creds)),
      std::move(args.fds), std::move(args.fs), std::move(args.mm),
      std::move(args.cpu));
  if (!task->has_interrupt_fd()) return kEAGAIN;
  task->AdoptHostFds(platform::HostFdHold::Take(platform::kTaskHostFds));
  TRY(ThreadId tid, root_pidns_.Allocate(task));
  task->set_tid(tid);
  // comm starts as the executable's base name (TASK_COMM_LEN - 1 bytes).
  const std::string& exe = tg->exe_path();
  std::string comm = exe.substr(exe.rfind('/') + 1);  // npos + 1 == 0
  if (comm.size() > 15) comm.resize(15);
  task->set_name(std::move(comm));
  tg->AddTask(task.get());
  tg->set_pgid_sid(tid, tid);
  if (args.parent != nullptr) {
    tg->set_creator_tid(args.parent->tgid());
    (void)args.parent->AddChild(tg);
  }
  Task* raw = task.get();
  absl::MutexLock l(&mu_);
  if (init_ == nullptr) {
    // The sandbox's PID 1: SIGNAL_UNKILLABLE (its parent is outside).
    tg->set_unkillable(args.parent == nullptr);
    init_ = tg;
    init_task_ = task;
  }
  thread_groups_.push_back(std::move(tg));
  return raw;
}

KResult<std::unique_ptr<platform::Context>> Kernel::PrepareContext(
    mm::MemoryManager& mm) {
  if (platform_ == nullptr) return std::unique_ptr<platform::Context>();
  absl::StatusOr<std::unique_ptr<platform::Context>> c =
      platform_->NewContext();
  // A platform that makes no Contexts (unit tests' fake): the task's Run
  // reports it, as it did before clone prepared them.
  if (!c.ok()) return std::unique_ptr<platform::Context>();
  if (absl::Status s = (*c)->Prepare(mm.address_space()); !s.ok()) {
    LogDebug("clone: no thread for the new task: %s", s.ToString());
    return kEAGAIN;
  }
  return std::move(c).value();
}

KResult<Task*> Kernel::NewThread(Task& parent, platform::CpuState cpu) {
  ThreadGroup& tg = parent.thread_group();
  if (tg.exiting() || root_pidns_.AtLimit()) return kEAGAIN;
  platform::HostFdHold fds = platform::HostFdHold::Take(platform::kTaskHostFds);
  if (!fds.ok()) return kEAGAIN;
  TRY(std::unique_ptr<platform::Context> context, PrepareContext(parent.mm()));
  auto task = std::make_shared<Task>(
      *this, parent.thread_group_ref(), parent.creds_ref(),
      parent.fd_table_ref(), parent.fs_ref(), parent.mm_ref(), std::move(cpu));
  if (!task->has_interrupt_fd()) return kEAGAIN;
  task->AdoptHostFds(std::move(fds));
  TRY(ThreadId tid, root_pidns_.Allocate(task));
  task->set_tid(tid);
  task->set_name(parent.name());  // comm is inherited, as Linux copies it
  task->set_signal_mask(parent.signal_mask());
  task->sched().Set(parent.sched().Get().ForChild());
  task->set_prepared_context(std::move(context));
  tg.AddTask(task.get());
  return task.get();  // held by the PID namespace
}

KResult<Task*> Kernel::Fork(Task& parent, platform::CpuState cpu) {
  return Fork(parent, std::move(cpu), ForkOptions{});
}

KResult<Task*> Kernel::Fork(Task& parent, platform::CpuState cpu,
                            const ForkOptions& opts) {
  if (platform_ == nullptr) return kENOMEM;
  ThreadGroup& ctg = parent.thread_group();
  if (ctg.exiting() || root_pidns_.AtLimit()) return kEAGAIN;
  // CLONE_PARENT: the child is the creator's sibling and gets the
  // creator's exit signal (copy_process). The parent is held: it may exit
  // meanwhile (then AddChild refuses and the child goes to the new parent,
  // init, as Linux's copy_process under tasklist_lock would see it).
  std::shared_ptr<ThreadGroup> ptg =
      opts.sibling ? ctg.parent_ref() : parent.thread_group_ref();
  if (ptg == nullptr) return kEINVAL;
  // The host's resources first (platform/host_fds.h): past the budget the
  // fork fails with nothing made.
  platform::HostFdHold fds = platform::HostFdHold::Take(platform::kTaskHostFds);
  if (!fds.ok()) return kEAGAIN;
  std::shared_ptr<mm::MemoryManager> mm;
  if (opts.share_mm) {
    mm = parent.mm_ref();
  } else {
    TRY(std::unique_ptr<mm::MemoryManager> copy, parent.mm().Fork(*platform_));
    mm = std::move(copy);
  }
  TRY(std::unique_ptr<platform::Context> context, PrepareContext(*mm));
  auto tg = std::make_shared<ThreadGroup>(*this, ptg.get(), ctg.exe_path(),
                                          ctg.limits());
  tg->set_actions(ctg.actions());
  tg->set_exe_file(ctg.exe_file());  // dup_mmap copies mm->exe_file
  tg->set_exit_signal(opts.sibling ? ctg.exit_signal() : opts.exit_signal);
  tg->set_creator_tid(opts.sibling ? ctg.creator_tid() : parent.tid());
  auto task = std::make_shared<Task>(
      *this, tg, parent.creds_ref(),
      opts.share_files ? parent.fd_table_ref() : parent.fd_table().Fork(),
      opts.share_fs ? parent.fs_ref() : parent.fs().Fork(), std::move(mm),
      std::move(cpu));
  if (!task->has_interrupt_fd()) return kEAGAIN;
  task->AdoptHostFds(std::move(fds));
  TRY(ThreadId tid, root_pidns_.Allocate(task));
  task->set_tid(tid);
  task->set_name(parent.name());  // comm is inherited, as Linux copies it
  task->set_signal_mask(parent.signal_mask());
  task->sched().Set(parent.sched().Get().ForChild());
  task->set_prepared_context(std::move(context));
  tg->AddTask(task.get());
  tg->set_pgid_sid(ctg.pgid(), ctg.sid());
  while (!ptg->AddChild(tg)) {
    // The parent died after we read it: its children (soon) belong to
    // init, and so does this one. Its TaskExited reparents our creator
    // right after marking itself dead; wait for that. If the creator is
    // being killed meanwhile (init's death kills all), give up as
    // copy_process does with a fatal signal pending.
    if (ctg.exiting()) {
      root_pidns_.ReleaseIf(tid, task.get());
      return kERestartNoIntr;
    }
    std::shared_ptr<ThreadGroup> next = ctg.parent_ref();
    if (next == ptg || next == nullptr) {
      absl::SleepFor(absl::Microseconds(50));
      continue;
    }
    ptg = std::move(next);
    tg->set_parent(ptg);
    tg->set_creator_tid(ptg->tgid());
  }
  Task* raw = task.get();
  absl::MutexLock l(&mu_);
  thread_groups_.push_back(std::move(tg));
  return raw;
}

void Kernel::Start(Task* task) {
  KResult<std::unique_ptr<TaskThread>> thread = TaskThread::Create();
  if (!thread.ok()) {
    // Only the first task (boot, tests) gets here; clone makes its thread
    // before the task. Without a thread the task cannot run: end it.
    Fatal("cannot make a host thread for a task");
    return;
  }
  Start(task, std::move(thread).value());
}

void Kernel::Start(Task* task, std::unique_ptr<TaskThread> thread) {
  std::shared_ptr<Task> held = task->shared_from_this();
  {
    absl::MutexLock l(&mu_);
    ++live_threads_;
  }
  thread->Run([this, held = std::move(held)]() mutable {
    held->Run();
    held.reset();  // the Task goes here unless its TID still names it
    absl::MutexLock l(&mu_);
    --live_threads_;
  });
}

ThreadGroup* Kernel::init() const {
  absl::MutexLock l(&mu_);
  return init_.get();
}

std::shared_ptr<ThreadGroup> Kernel::init_ref() const {
  absl::MutexLock l(&mu_);
  return init_;
}

ExitStatus Kernel::WaitInit() {
  ThreadGroup* tg = init();
  ExitStatus status = tg != nullptr ? tg->WaitDead() : ExitStatus{};
  // init's death kills the namespace (every other process).
  {
    absl::MutexLock l(&mu_);
    for (auto& g : thread_groups_) g->ExitGroup(ExitStatus::Killed(SIGKILL));
  }
  JoinTaskThreads();
  return status;
}

void Kernel::ForgetThreadGroup(const ThreadGroup* tg) {
  std::shared_ptr<ThreadGroup> gone;  // freed after mu_
  absl::MutexLock l(&mu_);
  if (tg == init_.get()) return;
  auto it = std::find_if(thread_groups_.begin(), thread_groups_.end(),
                         [tg](const auto& g) { return g.get() == tg; });
  if (it == thread_groups_.end()) return;
  gone = std::move(*it);
  thread_groups_.erase(it);
}

size_t Kernel::ThreadGroupCount() const {
  absl::MutexLock l(&mu_);
  return thread_groups_.size();
}

void Kernel::SendExternalSignal(int sig) {
  ThreadGroup* tg = init();
  if (tg != nullptr) tg->SignalDefaultAction(sig);
}

void Kernel::Fatal(std::string reason) {
  {
    absl::MutexLock l(&mu_);
    if (fatal_.has_value()) return;
    fatal_ = reason;
    for (auto& tg : thread_groups_) tg->ExitGroup(ExitStatus::Killed(SIGKILL));
  }
  LogError("sandbox failure: %s", reason);
}

std::optional<std::string> Kernel::fatal_error() const {
  absl::MutexLock l(&mu_);
  return fatal_;
}

int64_t Kernel::UptimeNs() const { return MonotonicNs() - boot_ns_; }

void Kernel::TaskExited(Task* task) {
  // An old leader killed by another thread's execve no longer owns its TID
  // (PidNamespace::Reassign gave it to the exec'ing thread).
  // A process's PID (its leader's TID) names the zombie until the parent
  // reaps it (ThreadGroup::ReleaseZombiePid); init's goes when its last
  // task exits (its parent is outside the sandbox).
  if (task->tid() == task->thread_group().tgid()) return;
  root_pidns_.ReleaseIf(task->tid(), task);
}

}  // namespace sandbox::kernel
