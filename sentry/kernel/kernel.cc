#include "sentry/kernel/kernel.h"

#include <signal.h>
#include <time.h>

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
      boot_ns_(MonotonicNs()) {}

Kernel::~Kernel() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock l(&mu_);
    for (auto& tg : thread_groups_) tg->ExitGroup(ExitStatus::Killed(SIGKILL));
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

KResult<Task*> Kernel::NewProcess(NewProcessArgs args) {
  if (args.fds == nullptr) args.fds = std::make_shared<vfs::FdTable>();
  auto tg = std::make_shared<ThreadGroup>(
      *this, args.parent, std::move(args.exe_path), args.limits);
  tg->set_exe_file(std::move(args.exe_file));
  auto task = std::make_unique<Task>(
      *this, tg, std::make_shared<const Credentials>(std::move(args.creds)),
      std::move(args.fds), std::move(args.fs), std::move(args.mm),
      std::move(args.cpu));
  TRY(ThreadId tid, root_pidns_.Allocate(task.get()));
  task->set_tid(tid);
  // comm starts as the executable's base name (TASK_COMM_LEN - 1 bytes).
  const std::string& exe = tg->exe_path();
  std::string comm = exe.substr(exe.rfind('/') + 1);  // npos + 1 == 0
  if (comm.size() > 15) comm.resize(15);
  task->set_name(std::move(comm));
  tg->AddTask(task.get());
  tg->set_pgid_sid(tid, tid);
  Task* raw = task.get();
  absl::MutexLock l(&mu_);
  thread_groups_.push_back(std::move(tg));
  tasks_.push_back(std::move(task));
  return raw;
}

KResult<Task*> Kernel::NewThread(Task& parent, platform::CpuState cpu) {
  ThreadGroup& tg = parent.thread_group();
  if (tg.exiting()) return kEAGAIN;
  auto task = std::make_unique<Task>(
      *this, parent.thread_group_ref(), parent.creds_ref(),
      parent.fd_table_ref(), parent.fs_ref(), parent.mm_ref(), std::move(cpu));
  TRY(ThreadId tid, root_pidns_.Allocate(task.get()));
  task->set_tid(tid);
  task->set_name(parent.name());  // comm is inherited, as Linux copies it
  task->set_signal_mask(parent.signal_mask());
  tg.AddTask(task.get());
  Task* raw = task.get();
  absl::MutexLock l(&mu_);
  tasks_.push_back(std::move(task));
  return raw;
}

KResult<Task*> Kernel::Fork(Task& parent, platform::CpuState cpu) {
  return Fork(parent, std::move(cpu), ForkOptions{});
}

KResult<Task*> Kernel::Fork(Task& parent, platform::CpuState cpu,
                            const ForkOptions& opts) {
  if (platform_ == nullptr) return kENOMEM;
  ThreadGroup& ctg = parent.thread_group();
  if (ctg.exiting()) return kEAGAIN;
  // CLONE_PARENT: the child is the creator's sibling and gets the
  // creator's exit signal (copy_process).
  ThreadGroup* ptg_ptr = opts.sibling ? ctg.parent() : &ctg;
  if (ptg_ptr == nullptr) return kEINVAL;
  ThreadGroup& ptg = *ptg_ptr;
  std::shared_ptr<mm::MemoryManager> mm;
  if (opts.share_mm) {
    mm = parent.mm_ref();
  } else {
    TRY(std::unique_ptr<mm::MemoryManager> copy, parent.mm().Fork(*platform_));
    mm = std::move(copy);
  }
  auto tg =
      std::make_shared<ThreadGroup>(*this, &ptg, ctg.exe_path(), ctg.limits());
  tg->set_actions(ctg.actions());
  tg->set_exe_file(ctg.exe_file());  // dup_mmap copies mm->exe_file
  tg->set_exit_signal(opts.sibling ? ctg.exit_signal() : opts.exit_signal);
  auto task = std::make_unique<Task>(
      *this, tg, parent.creds_ref(),
      opts.share_files ? parent.fd_table_ref() : parent.fd_table().Fork(),
      opts.share_fs ? parent.fs_ref() : parent.fs().Fork(), std::move(mm),
      std::move(cpu));
  TRY(ThreadId tid, root_pidns_.Allocate(task.get()));
  task->set_tid(tid);
  task->set_name(parent.name());  // comm is inherited, as Linux copies it
  task->set_signal_mask(parent.signal_mask());
  tg->AddTask(task.get());
  tg->set_pgid_sid(ctg.pgid(), ctg.sid());
  ptg.AddChild(tg);
  Task* raw = task.get();
  absl::MutexLock l(&mu_);
  thread_groups_.push_back(std::move(tg));
  tasks_.push_back(std::move(task));
  return raw;
}

void Kernel::Start(Task* task) {
  absl::MutexLock l(&mu_);
  threads_.emplace_back([task] { task->Run(); });
}

ThreadGroup* Kernel::init() const {
  absl::MutexLock l(&mu_);
  return thread_groups_.empty() ? nullptr : thread_groups_.front().get();
}

ExitStatus Kernel::WaitInit() {
  ThreadGroup* tg = init();
  ExitStatus status = tg != nullptr ? tg->WaitDead() : ExitStatus{};
  // init's death kills the namespace (every other process).
  std::vector<std::thread> threads;
  {
    absl::MutexLock l(&mu_);
    for (auto& g : thread_groups_) g->ExitGroup(ExitStatus::Killed(SIGKILL));
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
  return status;
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
  LogWarning("sandbox failure: %s", reason);
}

std::optional<std::string> Kernel::fatal_error() const {
  absl::MutexLock l(&mu_);
  return fatal_;
}

int64_t Kernel::UptimeNs() const { return MonotonicNs() - boot_ns_; }

void Kernel::TaskExited(Task* task) {
  // An old leader killed by another thread's execve no longer owns its TID
  // (PidNamespace::Reassign gave it to the exec'ing thread).
  if (root_pidns_.Lookup(task->tid()) == task) {
    // A process's PID (its leader's TID) names the zombie until the parent
    // reaps it (ThreadGroup::ReleaseZombiePid); init's goes when its last
    // task exits (its parent is outside the sandbox).
    if (task->tid() == task->thread_group().tgid()) return;
    root_pidns_.Release(task->tid());
  }
}

}  // namespace sandbox::kernel
