// eventfd: a 64-bit counter file (Linux's fs/eventfd.c).
//
// read(2) of at least 8 bytes (EINVAL below) waits until the counter is
// non-zero (EAGAIN with O_NONBLOCK), then returns it and resets it to 0,
// or with EFD_SEMAPHORE returns 1 and decrements it. write(2) of at least
// 8 bytes adds the value (0xffffffffffffffff is EINVAL), waiting while the
// sum would exceed 0xfffffffffffffffe (EAGAIN with O_NONBLOCK). Waits end
// with ERESTARTSYS on an interrupt. Readiness (eventfd_poll): POLLIN when
// the counter is non-zero, POLLOUT while it is below
// 0xfffffffffffffffe, POLLERR at 0xffffffffffffffff (unreachable from
// writes). fstat shows the anonymous inode, lseek keeps offset 0
// (noop_llseek), /proc/PID/fdinfo adds eventfd-count/-id/-semaphore.
//
// Blocking reads and writes wait on the readiness queue itself
// (vfs::ThreadWaiter on `queue_`), as eventfd_read waits on ctx->wqh.
// Lock order: EventFd::mu_ -> the queue's lock (Notify under mu_).
#ifndef SENTRY_FS_EVENTFD_EVENTFD_H_
#define SENTRY_FS_EVENTFD_EVENTFD_H_

#include <stdint.h>

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::fs::eventfd {

inline constexpr uint32_t kEfdSemaphore = 1;  // EFD_SEMAPHORE

class EventFd final : public vfs::FileDescription {
 public:
  // `initval`: the counter; `semaphore`: EFD_SEMAPHORE. `flags`: open
  // flags (O_RDWR, maybe O_NONBLOCK).
  EventFd(uint64_t initval, bool semaphore, uint32_t flags);

  KResult<size_t> Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) override;
  KResult<size_t> Write(vfs::IoContext& ctx,
                        absl::Span<const uint8_t> src) override;
  KResult<int64_t> Seek(int64_t, int) override { return int64_t{0}; }
  KResult<abi::Stat> Stat() override;
  bool MayBlock() const override { return true; }
  uint32_t Readiness(uint32_t mask) override ABSL_LOCKS_EXCLUDED(mu_);
  void EventRegister(vfs::WaitEntry* e, uint32_t mask) override {
    queue_.Register(e, mask);
  }
  bool CanPoll() const override { return true; }
  std::string FdInfo() override ABSL_LOCKS_EXCLUDED(mu_);
  std::string_view AnonInodeName() const override { return "[eventfd]"; }

  uint64_t count() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Takes the counter (or one) if non-zero; Notify(POLLOUT).
  bool TryReadLocked(uint64_t* v) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds v if it fits; Notify(POLLIN).
  bool TryWriteLocked(uint64_t v) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  uint64_t count_ ABSL_GUARDED_BY(mu_);
  const bool semaphore_;
  const int id_;  // eventfd-id in fdinfo
  vfs::WaitQueue queue_;
};

}  // namespace sandbox::fs::eventfd

#endif  // SENTRY_FS_EVENTFD_EVENTFD_H_
