#include "sentry/fs/eventfd/eventfd.h"

#include <atomic>
#include <cstring>

#include "absl/strings/str_format.h"
#include "sentry/fs/anon/anon_inode.h"

namespace sandbox::fs::eventfd {
namespace {

constexpr uint64_t kMax = ~uint64_t{0};  // ULLONG_MAX
std::atomic<int> next_id{0};

}  // namespace

EventFd::EventFd(uint64_t initval, bool semaphore, uint32_t flags)
    : vfs::FileDescription(flags),
      count_(initval),
      semaphore_(semaphore),
      id_(next_id.fetch_add(1, std::memory_order_relaxed)) {}

bool EventFd::TryReadLocked(uint64_t* v) {
  if (count_ == 0) return false;
  *v = semaphore_ ? 1 : count_;
  count_ -= *v;
  queue_.Notify(vfs::kPollOut | vfs::kPollWrNorm);
  return true;
}

bool EventFd::TryWriteLocked(uint64_t v) {
  if (kMax - count_ <= v) return false;
  count_ += v;
  if (v != 0) queue_.Notify(vfs::kPollIn | vfs::kPollRdNorm);
  return true;
}

KResult<size_t> EventFd::Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) {
  return vfs::ReadCounter(queue_, nonblocking(), ctx.interrupt_fd, dst,
                          [&](uint64_t* v) {
                            absl::MutexLock l(&mu_);
                            return TryReadLocked(v);
                          });
}

KResult<size_t> EventFd::Write(vfs::IoContext& ctx,
                               absl::Span<const uint8_t> src) {
  if (src.size() < sizeof(uint64_t)) return kEINVAL;
  uint64_t v;
  memcpy(&v, src.data(), sizeof(v));
  if (v == kMax) return kEINVAL;
  TRY_VOID(vfs::WaitUntil(queue_, vfs::kPollOut, nonblocking(),
                          ctx.interrupt_fd, [&] {
                            absl::MutexLock l(&mu_);
                            return TryWriteLocked(v);
                          }));
  return sizeof(v);
}

KResult<abi::Stat> EventFd::Stat() { return anon::AnonInodeStat(); }

uint32_t EventFd::Readiness(uint32_t mask) {
  absl::MutexLock l(&mu_);
  uint32_t r = 0;
  // eventfd_poll: no RDNORM/WRNORM.
  if (count_ > 0) r |= vfs::kPollIn;
  if (count_ == kMax) r |= vfs::kPollErr;
  if (kMax - 1 > count_) r |= vfs::kPollOut;
  return r & mask;
}

std::string EventFd::FdInfo() {
  absl::MutexLock l(&mu_);
  return absl::StrFormat(
      "eventfd-count: %16x\neventfd-id: %d\neventfd-semaphore: %d\n", count_,
      id_, semaphore_ ? 1 : 0);
}

uint64_t EventFd::count() const {
  absl::MutexLock l(&mu_);
  return count_;
}

}  // namespace sandbox::fs::eventfd
