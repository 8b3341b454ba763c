// Task: one guest thread (Linux task_struct), run by one Sentry host
// thread.
//
// A task's run loop (task_run.cc) switches into guest code through its
// platform Context, and on each return dispatches a syscall, resolves a
// fault through the mm, or handles an interrupt.
//
// Ownership and threading:
//  - Fields marked "task thread" are used only by the task's own host thread
//    (and before it starts, by its creator): no lock.
//  - Interrupt() may be called from any thread.
//  - thread_group, fd table and mm are shared with other tasks (threads of
//    one process, later fork/clone) through shared pointers.
//
// Lock order: ThreadGroup::mu_ -> Task::mu_ (leaf).
#ifndef SENTRY_KERNEL_TASK_H_
#define SENTRY_KERNEL_TASK_H_

#include <stdint.h>

#include <atomic>
#include <memory>
#include <string>
#include <type_traits>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "platform/host_fds.h"
#include "platform/platform.h"
#include "platform/sleep_state.h"
#include "sentry/base/result.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/kernel/cpu_clock.h"
#include "sentry/kernel/futex.h"
#include "sentry/kernel/pid_namespace.h"
#include "sentry/kernel/sched.h"
#include "sentry/kernel/signal_frame.h"
#include "sentry/kernel/signal_queue.h"
#include "sentry/kernel/vfork.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/fs_context.h"

namespace sandbox::mm {
class MemoryManager;
}

namespace sandbox::kernel {

class Kernel;
class ThreadGroup;

// What execve hands the kernel once the new image is loaded: plain data,
// so the kernel needs neither the loader nor the handlers.
struct ExecImage {
  std::shared_ptr<mm::MemoryManager> mm;  // the image, stack and vDSO mapped
  std::string comm;                       // at most 15 bytes
  std::string exe_path;                   // /proc/PID/exe
  vfs::VirtualDentry exe_file;
  int dumpable = 1;     // 0 for an unreadable executable or a secure exec
  bool secure = false;  // AT_SECURE: the parent-death signal is cleared
  Credentials creds;    // the recomputed credentials (commit_creds)
  uint64_t entry = 0;
  uint64_t stack_pointer = 0;
};

class Task final : public vfs::UserMemory,
                   public std::enable_shared_from_this<Task> {
 public:
  // Use Kernel::NewProcess (and later clone) to create tasks.
  Task(Kernel& kernel, std::shared_ptr<ThreadGroup> tg,
       std::shared_ptr<const Credentials> creds,
       std::shared_ptr<vfs::FdTable> fds, std::shared_ptr<vfs::FsContext> fs,
       std::shared_ptr<mm::MemoryManager> mm, platform::CpuState cpu);
  ~Task() override;
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  // ---- Identity. ----
  // The TID in the root PID namespace; immutable once set by the kernel.
  ThreadId tid() const { return tid_; }
  void set_tid(ThreadId tid) { tid_ = tid; }
  Kernel& kernel() const { return kernel_; }
  ThreadGroup& thread_group() const { return *tg_; }
  // Credentials (credentials.h has the design). creds(): the task's own
  // thread only, no lock (it is the only writer). CredsRef(): any thread;
  // a snapshot that stays valid while held.
  const Credentials& creds() const { return *creds_; }
  std::shared_ptr<const Credentials> CredsRef() ABSL_LOCKS_EXCLUDED(mu_);
  // commit_creds: installs `next` (task thread). As Linux, a change of
  // euid, egid, fsuid or fsgid, or a permitted set that is not a subset of
  // the old one, makes the process non-dumpable (suid_dumpable = 0) and
  // clears the parent-death signal.
  void CommitCreds(Credentials next) ABSL_LOCKS_EXCLUDED(mu_);
  // Shared references for a new thread of this task's process.
  std::shared_ptr<ThreadGroup> thread_group_ref() const { return tg_; }
  std::shared_ptr<const Credentials> creds_ref() const { return creds_; }
  std::shared_ptr<vfs::FdTable> fd_table_ref() const { return fds_; }
  std::shared_ptr<vfs::FsContext> fs_ref() const { return fs_; }
  std::shared_ptr<mm::MemoryManager> mm_ref() const { return mm_; }
  // Before Start: the platform Context Run will use (already bound to the
  // task's address space).
  void set_prepared_context(std::unique_ptr<platform::Context> c) {
    prepared_context_ = std::move(c);
  }
  // The same from another thread (/proc): under mu_, which the task
  // thread holds to replace or drop them (unshare, execve, exit); null
  // once the task has exited.
  std::shared_ptr<vfs::FdTable> FdTableRefLocked() const
      ABSL_LOCKS_EXCLUDED(mu_);
  std::shared_ptr<vfs::FsContext> FsRefLocked() const ABSL_LOCKS_EXCLUDED(mu_);
  std::shared_ptr<mm::MemoryManager> MmRefLocked() const
      ABSL_LOCKS_EXCLUDED(mu_);

  // ---- execve (task_exec.cc). ----
  // The commit of an exec past its point of no return (begin_new_exec):
  // de_thread, the timers dropped, the new mm, a private FD table without
  // the close-on-exec descriptors, the handlers flushed (ignored stay
  // ignored) and the alternate stack cleared, comm and exe, dumpable, the
  // new credentials, clear_child_tid and the robust list forgotten, the
  // registers of a fresh start_thread. kEINTR (nothing changed) when the
  // process started exiting meanwhile. Task thread, no locks held.
  KResult<void> Execve(ExecImage image);

  // ---- Resources (task thread). ----
  vfs::FdTable& fd_table() const { return *fds_; }
  // Root, cwd and umask (Linux fs_struct): shared with the threads of this
  // process (CLONE_FS), copied by fork. Never null; its root is unset
  // (!Root().ok()) only in unit tests without a file system.
  vfs::FsContext& fs() const { return *fs_; }
  // close_range(CLOSE_RANGE_UNSHARE), unshare(CLONE_FILES): this task gets
  // a private copy of its FD table.
  void UnshareFdTable() { SwapFdTable(fds_->Fork()); }
  // clone without CLONE_FS (before the task runs), unshare(CLONE_FS): a
  // private copy of the root, cwd and umask.
  void UnshareFs() { SwapFs(fs_->Fork()); }
  // Valid until the task has exited (its run loop drops it).
  mm::MemoryManager& mm() const { return *mm_; }
  // execve: the task's new address space (task thread). The old one goes
  // when its last holder drops it.
  void set_mm(std::shared_ptr<mm::MemoryManager> mm) {
    SwapMm(std::move(mm));
    CompleteVforkDone();  // exec_mm_release
  }
  // The task's registers and FP state. Task thread. The FP image comes back
  // from the platform first when the last Switch left it there
  // (CpuState::fp_stale): every reader of `fp` goes through here.
  platform::CpuState& cpu() {
    if (cpu_.fp_stale) SyncFp();
    return cpu_;
  }

  // ---- Guest memory (task thread). ----
  // Partial copies as MemoryManager::CopyIn/CopyOut.
  KResult<size_t> CopyIn(uint64_t addr, void* dst, size_t n);
  KResult<size_t> CopyOut(uint64_t addr, const void* src, size_t n);
  KResult<std::string> CopyInString(uint64_t addr, size_t max_len);
  // vfs::UserMemory: all n bytes or EFAULT.
  KResult<void> CopyInFull(uint64_t addr, void* dst, size_t n) override;
  KResult<void> CopyOutFull(uint64_t addr, const void* src, size_t n) override;
  template <typename T>
  KResult<T> CopyInObj(uint64_t addr) {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    TRY_VOID(CopyInFull(addr, &v, sizeof(T)));
    return v;
  }
  template <typename T>
  KResult<void> CopyOutObj(uint64_t addr, const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    return CopyOutFull(addr, &v, sizeof(T));
  }

  // What file operations need from this task (interrupt FD, memory).
  vfs::IoContext io_context() { return {interrupt_fd_, this, creds_.get()}; }
  // Whether the host gave the task its interrupt eventfd (else the creator
  // fails the clone: EAGAIN).
  bool has_interrupt_fd() const { return interrupt_fd_ >= 0; }
  // The task's share of the host FD budget (platform/host_fds.h), given
  // back when the task goes.
  void AdoptHostFds(platform::HostFdHold hold) { host_fds_ = std::move(hold); }

  // ---- Signals (signal.h has the design). ----
  // The blocked mask: read by the task thread without a lock, by others
  // under thread_group().signal_mu(); changed through SetSignalMask
  // (signal.h), or with set_signal_mask before the task runs or under
  // signal_mu().
  uint64_t signal_mask() const { return signal_mask_; }
  void set_signal_mask(uint64_t mask) { signal_mask_ = mask; }
  // Pending signals and delivery state (TaskSignals says what guards what).
  TaskSignals& signals() { return signals_; }

  // ---- Thread bookkeeping (task thread). ----
  uint64_t clear_child_tid() const { return clear_child_tid_; }
  void set_clear_child_tid(uint64_t addr) { clear_child_tid_ = addr; }
  uint64_t robust_list() const { return robust_list_; }
  void set_robust_list(uint64_t addr) { robust_list_ = addr; }

  // ---- Recorded per-thread state (task thread). ----
  // comm (PR_SET_NAME): at most 15 bytes.
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  int pdeathsig() const { return pdeathsig_; }
  void set_pdeathsig(int sig) { pdeathsig_ = sig; }
  bool no_new_privs() const { return no_new_privs_; }
  void set_no_new_privs() { no_new_privs_ = true; }
  // sigaltstack(2) (signal_frame.h): {ss_sp, ss_flags, ss_size}.
  using AltStack = kernel::AltStack;
  const AltStack& alt_stack() const { return alt_stack_; }
  void set_alt_stack(const AltStack& s) { alt_stack_ = s; }

  // ---- vfork (task thread; set by the creator before the task runs). ----
  // The completion a CLONE_VFORK parent waits on (vfork.h); completed when
  // this task releases the shared mm: execve (set_mm) or exit (Run).
  void set_vfork_done(std::shared_ptr<VforkCompletion> c) {
    vfork_done_ = std::move(c);
  }
  void CompleteVforkDone() {
    if (vfork_done_ != nullptr) {
      vfork_done_->Complete();
      vfork_done_.reset();
    }
  }

  // ---- CPU time (cpu_clock.h; the run loop charges it). ----
  TaskCpuClock& cpu_clock() { return cpu_clock_; }
  const TaskCpuClock& cpu_clock() const { return cpu_clock_; }

  // ---- Scheduling attributes (sched.h: nice, policy, affinity). ----
  TaskSched& sched() { return sched_; }
  const TaskSched& sched() const { return sched_; }

  // ---- Lifecycle. ----
  // exit(2): this thread leaves its run loop when the syscall returns.
  void ExitThread(int code) {
    exit_code_ = code;
    exit_requested_ = true;
  }
  // Makes the task leave guest code or a blocking wait promptly and
  // re-check its state. Any thread.
  void Interrupt();
  // While a task sleeps on a Sentry-side wait (futex), Interrupt notifies
  // the blocker. Set and cleared by the task thread around the wait; if an
  // interrupt is already pending, SetBlocker notifies at once.
  void SetBlocker(Blocker* b);
  // Whether the task sleeps in a blocking wait (platform/sleep_state.h:
  // every blocking wait marks it), else runs. Any thread; a snapshot.
  platform::SleepState sleep_state() const {
    return sleep_state_.load(std::memory_order_relaxed);
  }
  // Whether an interrupt arrived since the run loop last drained them.
  bool InterruptPending() const {
    return interrupt_pending_.load(std::memory_order_acquire);
  }
  // The run loop; returns when the task has exited. Task thread.
  void Run();
  // The task whose run loop is on the calling host thread (set by Run for
  // its duration), or null on other threads (/proc/self, /dev/fd).
  static Task* Current();

 private:
  enum class Step { kContinue, kExit };
  Step HandleSyscall();
  Step HandleFault(const platform::SwitchResult& r);
  void DrainInterrupts();
  // Waits until no Interrupt() is between its FD write and its flag store
  // (or the flag is set), so that a task woken through the FD sees the
  // flag. Task thread.
  void AwaitInterruptsInFlight();
  // Replace a shared resource under mu_ (task thread); the old one is
  // released after mu_.
  void SwapFdTable(std::shared_ptr<vfs::FdTable> fds);
  void SwapFs(std::shared_ptr<vfs::FsContext> fs);
  void SwapMm(std::shared_ptr<mm::MemoryManager> mm);

  Kernel& kernel_;
  ThreadId tid_ = 0;
  const std::shared_ptr<ThreadGroup> tg_;
  // Written by the task thread under mu_; read by it without mu_, by other
  // threads under mu_ (CredsRef).
  std::shared_ptr<const Credentials> creds_;
  // Task thread; written under mu_ (others read them under mu_).
  std::shared_ptr<vfs::FdTable> fds_;
  std::shared_ptr<vfs::FsContext> fs_;
  std::shared_ptr<mm::MemoryManager> mm_;
  platform::CpuState cpu_;  // task thread
  // The platform context of the run loop (task thread only; context_ is the
  // same pointer for other threads, under mu_).
  platform::Context* run_context_ = nullptr;
  // Made and bound by the kernel at clone (Kernel::PrepareContext), taken
  // by Run; null for init, whose Run makes its own.
  std::unique_ptr<platform::Context> prepared_context_;
  void SyncFp();
  uint64_t signal_mask_ = 0;      // task thread
  uint64_t clear_child_tid_ = 0;  // task thread
  uint64_t robust_list_ = 0;      // task thread
  bool exit_requested_ = false;   // task thread
  std::string name_;              // task thread
  int pdeathsig_ = 0;             // task thread
  bool no_new_privs_ = false;     // task thread
  AltStack alt_stack_;            // task thread
  int exit_code_ = 0;             // task thread

  // Task thread (set by the creator before the task runs).
  std::shared_ptr<VforkCompletion> vfork_done_;

  TaskSignals signals_;
  TaskCpuClock cpu_clock_;
  TaskSched sched_;  // any thread (its own leaf lock)

  // An eventfd that is readable while an interrupt is pending; blocking host
  // waits poll it. Immutable.
  int interrupt_fd_ = -1;
  platform::HostFdHold host_fds_;
  std::atomic<bool> interrupt_pending_{false};
  // Written by the task thread's waits (ScopedSleep), read by any.
  std::atomic<platform::SleepState> sleep_state_{
      platform::SleepState::kRunning};
  // Interrupt() calls between their FD write and their flag store.
  std::atomic<int> interrupts_in_flight_{0};

  mutable absl::Mutex mu_;
  // Set while the run loop has a context (Interrupt kicks it).
  platform::Context* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  Blocker* blocker_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_TASK_H_
