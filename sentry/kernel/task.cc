#include "sentry/kernel/task.h"

#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"

namespace sandbox::kernel {

Task::Task(Kernel& kernel, std::shared_ptr<ThreadGroup> tg,
           std::shared_ptr<const Credentials> creds,
           std::shared_ptr<vfs::FdTable> fds,
           std::shared_ptr<vfs::FsContext> fs,
           std::shared_ptr<mm::MemoryManager> mm, platform::CpuState cpu)
    : kernel_(kernel),
      tg_(std::move(tg)),
      creds_(std::move(creds)),
      fds_(std::move(fds)),
      fs_(fs != nullptr ? std::move(fs)
                        : std::make_shared<vfs::FsContext>(
                              vfs::VirtualDentry{}, vfs::VirtualDentry{})),
      mm_(std::move(mm)),
      cpu_(std::move(cpu)),
      interrupt_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

Task::~Task() {
  if (interrupt_fd_ >= 0) close(interrupt_fd_);
}

KResult<size_t> Task::CopyIn(uint64_t addr, void* dst, size_t n) {
  return mm_->CopyIn(addr, dst, n);
}

KResult<size_t> Task::CopyOut(uint64_t addr, const void* src, size_t n) {
  return mm_->CopyOut(addr, src, n);
}

KResult<std::string> Task::CopyInString(uint64_t addr, size_t max_len) {
  return mm_->CopyInString(addr, max_len);
}

KResult<void> Task::CopyInFull(uint64_t addr, void* dst, size_t n) {
  if (n == 0) return OkResult();
  TRY(size_t got, mm_->CopyIn(addr, dst, n));
  if (got != n) return kEFAULT;
  return OkResult();
}

KResult<void> Task::CopyOutFull(uint64_t addr, const void* src, size_t n) {
  if (n == 0) return OkResult();
  TRY(size_t got, mm_->CopyOut(addr, src, n));
  if (got != n) return kEFAULT;
  return OkResult();
}

void Task::Interrupt() {
  // The FD is written before the flag is set, so a DrainInterrupts that
  // misses the flag leaves the FD for the next one: the FD is never left
  // readable with no pending flag to drain it. The task may wake from the
  // FD before the flag is set: interrupts_in_flight_ lets its run loop wait
  // for the flag (AwaitInterruptsInFlight).
  interrupts_in_flight_.fetch_add(1, std::memory_order_seq_cst);
  if (interrupt_fd_ >= 0) {
    uint64_t one = 1;
    // A full counter (never in practice) still leaves the FD readable.
    (void)!write(interrupt_fd_, &one, sizeof(one));
  }
  interrupt_pending_.store(true, std::memory_order_seq_cst);
  interrupts_in_flight_.fetch_sub(1, std::memory_order_seq_cst);
  absl::MutexLock l(&mu_);
  if (context_ != nullptr) context_->Interrupt();
  if (blocker_ != nullptr) blocker_->Notify();
}

void Task::SetBlocker(Blocker* b) {
  absl::MutexLock l(&mu_);
  blocker_ = b;
  if (b != nullptr && interrupt_pending_.load(std::memory_order_acquire)) {
    b->Notify();
  }
}

std::shared_ptr<vfs::FdTable> Task::FdTableRefLocked() const {
  absl::MutexLock l(&mu_);
  return fds_;
}

std::shared_ptr<vfs::FsContext> Task::FsRefLocked() const {
  absl::MutexLock l(&mu_);
  return fs_;
}

std::shared_ptr<mm::MemoryManager> Task::MmRefLocked() const {
  absl::MutexLock l(&mu_);
  return mm_;
}

void Task::SwapFdTable(std::shared_ptr<vfs::FdTable> fds) {
  {
    absl::MutexLock l(&mu_);
    fds_.swap(fds);
  }
  // `fds` (the old table) goes here, without mu_ (closing files may block).
}

void Task::SwapFs(std::shared_ptr<vfs::FsContext> fs) {
  absl::MutexLock l(&mu_);
  fs_.swap(fs);
}

void Task::SwapMm(std::shared_ptr<mm::MemoryManager> mm) {
  {
    absl::MutexLock l(&mu_);
    mm_.swap(mm);
  }
}

std::shared_ptr<const Credentials> Task::CredsRef() {
  absl::MutexLock l(&mu_);
  return creds_;
}

void Task::CommitCreds(Credentials next) {
  const Credentials& old = *creds_;
  if (old.euid != next.euid || old.egid != next.egid ||
      old.fsuid != next.fsuid || old.fsgid != next.fsgid ||
      (next.cap_permitted & ~old.cap_permitted) != 0) {
    tg_->set_dumpable(0);  // suid_dumpable
    pdeathsig_ = 0;
  }
  std::shared_ptr<const Credentials> c =
      std::make_shared<const Credentials>(std::move(next));
  {
    absl::MutexLock l(&mu_);
    creds_.swap(c);
  }
  // `c` now holds the old object: freed here unless a reader still has it.
}

void Task::AwaitInterruptsInFlight() {
  // An Interrupt between its FD write and its flag store: a few
  // instructions, unless its thread is preempted there (then yield to it).
  // Done as soon as the flag is set (whatever else is in flight, the run
  // loop then takes every pending signal) or nothing is in flight (every
  // Interrupt that wrote the FD has set the flag).
  for (int spins = 0;
       interrupts_in_flight_.load(std::memory_order_seq_cst) != 0 &&
       !interrupt_pending_.load(std::memory_order_seq_cst);
       ++spins) {
    if (spins < 64) {
      __builtin_ia32_pause();
    } else {
      sched_yield();
    }
  }
}

void Task::DrainInterrupts() {
  if (!interrupt_pending_.exchange(false, std::memory_order_acq_rel)) return;
  uint64_t v;
  (void)!read(interrupt_fd_, &v, sizeof(v));
}

}  // namespace sandbox::kernel
