// Kernel: the sandbox's kernel instance. Owns the PID namespaces, the task
// set and the task threads; knows the platform and the syscall table.
//
// Lock order: Kernel::mu_ -> ThreadGroup::mu_ -> Task::mu_.
#ifndef SENTRY_KERNEL_KERNEL_H_
#define SENTRY_KERNEL_KERNEL_H_

#include <signal.h>
#include <stdint.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "platform/platform.h"
#include "sentry/base/result.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/kernel/futex.h"
#include "sentry/kernel/limits.h"
#include "sentry/kernel/pid_namespace.h"
#include "sentry/kernel/syscall_dispatcher.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/task_thread.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/kernel/timer_service.h"
#include "sentry/kernel/uts.h"
#include "sentry/vfs/filesystem_type.h"

namespace sandbox::kernel {

struct KernelOptions {
  std::string hostname = "localhost";
  std::string domainname = "(none)";
  // uname(2) release and version.
  std::string release = "6.1.0";
  std::string version = "#1 SMP PREEMPT_DYNAMIC sandbox";
  // The "flags" the host kernel prints in its /proc/cpuinfo, read before
  // confinement; empty when unknown. The sandbox's /proc/cpuinfo shows only
  // flags the host kernel shows too: a kernel clears features it finds
  // broken or disabled (RDSEED on some AMD parts) while CPUID still reports
  // them.
  std::vector<std::string> host_cpu_flags;
  // At most this many tasks (threads) at once (--pids-limit); 0: none.
  size_t max_tasks = 0;
};

struct NewProcessArgs {
  ThreadGroup* parent = nullptr;
  std::string exe_path;
  // The executable's location (/proc/PID/exe); may be unset.
  vfs::VirtualDentry exe_file;
  // Root, cwd, umask. Null: a task without a file system (unit tests).
  std::shared_ptr<vfs::FsContext> fs;
  Credentials creds = Credentials::Root();
  LimitSet limits = LimitSet::Defaults();
  std::shared_ptr<vfs::FdTable> fds;
  std::shared_ptr<mm::MemoryManager> mm;
  platform::CpuState cpu;
};

// What a new process shares with its creator (clone without CLONE_THREAD).
struct ForkOptions {
  bool share_mm = false;     // CLONE_VM: the same MemoryManager (vfork)
  bool share_files = false;  // CLONE_FILES: the same FD table
  bool share_fs = false;     // CLONE_FS: the same root, cwd and umask
  bool sibling = false;      // CLONE_PARENT: the creator's parent's child
  int exit_signal = SIGCHLD;
};

class Kernel {
 public:
  Kernel(platform::Platform* platform, SyscallDispatcher& dispatcher,
         KernelOptions options);
  // Joins every task thread (they must have been told to exit).
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  // The platform; null in unit tests that never run guest code.
  platform::Platform* platform() const { return platform_; }
  SyscallDispatcher& dispatcher() const { return dispatcher_; }
  const KernelOptions& options() const { return options_; }
  // The host and domain names (from options(), then as sethostname sets).
  Uts& uts() { return uts_; }
  PidNamespace& root_pid_namespace() { return root_pidns_; }
  FutexManager& futexes() { return futexes_; }
  // The one timer thread (timer_service.h) every guest timer uses.
  TimerService& timer_service() { return timer_service_; }

  // Creates a process with one task, not yet running. The first process
  // created is init.
  KResult<Task*> NewProcess(NewProcessArgs args);
  // Creates a thread in `parent`'s process (clone with CLONE_THREAD): same
  // thread group, mm, FD table, FS context (CLONE_FS) and credentials; `cpu` is
  // its initial state. Not yet running. EAGAIN if the process is exiting or no
  // TID is free.
  KResult<Task*> NewThread(Task& parent, platform::CpuState cpu);
  // fork(2): a new process, child of `parent`'s, with a copy-on-write copy
  // of its address space, copies of its FD table, FS context (root, cwd,
  // umask), limits and signal actions, and one task starting from `cpu`. Not
  // yet running.
  KResult<Task*> Fork(Task& parent, platform::CpuState cpu);
  // clone(2) of a process: as Fork, sharing what `opts` says (a shared mm
  // is not copied: the child runs in the creator's address space). EINVAL
  // for CLONE_PARENT from init (it has no parent in the sandbox).
  KResult<Task*> Fork(Task& parent, platform::CpuState cpu,
                      const ForkOptions& opts);
  // Starts the task's host thread, which runs Task::Run. Without one (the
  // host refused a thread) the sandbox ends (Fatal): for the first task.
  void Start(Task* task);
  // Runs the task on `thread`, made before the task (clone: a host that
  // cannot make one fails the clone with EAGAIN, task_thread.h).
  void Start(Task* task, std::unique_ptr<TaskThread> thread);

  ThreadGroup* init() const;
  std::shared_ptr<ThreadGroup> init_ref() const;

  // Waits until init has exited and every task thread has finished.
  ExitStatus WaitInit();

  // A signal from outside the sandbox (SIGINT/SIGTERM to `runsc do`) for
  // init's process, with si_pid 0: its handler runs, or its action applies.
  void SendExternalSignal(int sig);

  // Ends the sandbox because the Sentry cannot go on (a stub died); the
  // first reason is kept. Kills every process.
  void Fatal(std::string reason);
  std::optional<std::string> fatal_error() const;

  // Nanoseconds on CLOCK_MONOTONIC since the kernel was created (uptime).
  int64_t UptimeNs() const;
  // Tasks alive (sysinfo procs).
  size_t TaskCount() const { return root_pidns_.Count(); }

  // The OOM killer (oom.cc), the memory file's OOM handler: an allocation
  // of `needed` bytes would pass the sandbox's memory limit. Kills the
  // process with the most resident memory (SIGKILL; init too, which ends
  // the sandbox as a container's OOM does) unless an earlier victim is still
  // exiting, then waits a bounded time for the victim's pages. True if the
  // allocation should be tried again; false at once when the caller's own
  // process is the one dying. Takes Kernel::mu_ and the victims' locks
  // briefly, never an mm lock.
  bool OutOfMemory(uint64_t needed) ABSL_LOCKS_EXCLUDED(mu_, oom_mu_);
  // The sandbox's RAM as /proc/meminfo and sysinfo(2) show it: total is the
  // memory limit (--memory), free what the memory file does not use of it.
  // Without a limit (unit tests, --memory=0), the host's figures.
  struct MemoryFigures {
    uint64_t total = 0;
    uint64_t free = 0;
  };
  MemoryFigures Memory() const;

  // ---- Process groups and sessions (job_control.cc). ----
  // getpgid(2) (session false) and getsid(2) of the process `pid` names
  // (0: the caller's); ESRCH when none does (a zombie still counts).
  KResult<ThreadId> ProcessGroupOf(Task& caller, ThreadId pid, bool session);
  // setpgid(2), in Linux's order of checks (pid/pgid 0: the caller's PID;
  // then pid's): EINVAL for a negative group; ESRCH unless `pid` is the
  // caller or its child; EINVAL for a thread that is not a leader; a
  // child: EPERM in another session, EACCES once it has exec'd; EPERM for
  // a session leader, or for a group that does not exist in the caller's
  // session. Takes job_control_mu_.
  KResult<void> SetProcessGroup(Task& caller, ThreadId pid, ThreadId pgid)
      ABSL_LOCKS_EXCLUDED(job_control_mu_);
  // setsid(2): the caller's process leads a new session and group (its
  // PID); EPERM if a process group with that ID exists (the caller leads
  // one, or a former member's group lives on). Takes job_control_mu_.
  KResult<ThreadId> NewSession(Task& caller)
      ABSL_LOCKS_EXCLUDED(job_control_mu_);

  // The file system types mount(2) and /proc/filesystems know
  // (vfs/filesystem_type.h): registered by boot before guest code runs
  // (sentry/boot/root_fs.h: RegisterFilesystemTypes); empty in kernel
  // tests that do not.
  vfs::FilesystemTypeRegistry& filesystem_types() { return fs_types_; }
  const vfs::FilesystemTypeRegistry& filesystem_types() const {
    return fs_types_;
  }

  // The internal shm mount's root (Linux's shm_mnt; shm.cc), which no
  // mount namespace contains, so no path reaches it; memfd_create makes its
  // files there. Made on first use by `make` (fs/tmpfs/memfd.h's
  // NewShmMount, which memfd.cc passes: a tmpfs with no size or inode limit on
  // the caller's memory file, the platform's: this package does not depend on
  // the file systems) and kept until the kernel goes (the memory file outlives
  // the kernel). `make` runs under shm_mu_ (a leaf) and must take no kernel
  // lock.
  vfs::VirtualDentry ShmRoot(
      absl::FunctionRef<std::shared_ptr<vfs::Mount>()> make)
      ABSL_LOCKS_EXCLUDED(shm_mu_);

  // Called by Task::Run as a task ends (on its own thread).
  void TaskExited(Task* task);
  // A reaped process leaves the kernel's list (its object goes with the
  // last reference).
  void ForgetThreadGroup(const ThreadGroup* tg);
  // Processes the kernel knows (alive or zombies; tests).
  size_t ThreadGroupCount() const;

 private:
  platform::Platform* const platform_;
  SyscallDispatcher& dispatcher_;
  const KernelOptions options_;
  const int64_t boot_ns_;
  Uts uts_;
  PidNamespace root_pidns_{nullptr};
  FutexManager futexes_;

  // A platform Context bound to `mm`'s address space for a new task
  // (Context::Prepare): EAGAIN when the address space can run no more
  // threads (or the host could not make one), as copy_process fails when a
  // thread cannot be made. Null when the platform makes no Contexts (unit
  // tests).
  KResult<std::unique_ptr<platform::Context>> PrepareContext(
      mm::MemoryManager& mm);

  // Waits until every task thread has ended (live_threads_ is 0).
  void JoinTaskThreads();

  mutable absl::Mutex mu_;
  // Processes not yet reaped; the first is init, which stays.
  std::vector<std::shared_ptr<ThreadGroup>> thread_groups_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<ThreadGroup> init_ ABSL_GUARDED_BY(mu_);
  // init's first task stays allocated until the kernel goes (callers of
  // NewProcess keep its pointer); every other Task is freed once it has
  // exited and its TID is released (a leader: when its process is reaped).
  std::shared_ptr<Task> init_task_ ABSL_GUARDED_BY(mu_);
  // Task host threads are detached; each holds its Task while it runs and
  // counts itself here until its last access to the kernel.
  size_t live_threads_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<std::string> fatal_ ABSL_GUARDED_BY(mu_);
  vfs::FilesystemTypeRegistry fs_types_;
  absl::Mutex shm_mu_;  // leaf
  std::shared_ptr<vfs::Mount> shm_mount_ ABSL_GUARDED_BY(shm_mu_);
  // Serializes changes of process groups and sessions (Linux's
  // tasklist_lock for writing; job_control.cc). Taken with no other lock
  // held; under it only PidNamespace::mu_ and ThreadGroup::parent_mu_
  // (leaves) are taken. Readers of pgid/sid load the atomics.
  absl::Mutex job_control_mu_;
  // The OOM killer's last victim, while it may still hold memory.
  absl::Mutex oom_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::weak_ptr<ThreadGroup> oom_victim_ ABSL_GUARDED_BY(oom_mu_);
  // The victim with the most resident memory, or null (oom.cc).
  std::shared_ptr<ThreadGroup> PickOomVictim(uint64_t* bytes)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Last: destroyed (its thread joined) before the thread groups whose
  // timers its entries reference.
  TimerService timer_service_;
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_KERNEL_H_
