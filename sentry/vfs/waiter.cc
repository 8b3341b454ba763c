#include "sentry/vfs/waiter.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "absl/container/inlined_vector.h"

namespace sandbox::vfs {

// The queue proper, shared by the WaitQueue and its registrations.
struct WaitEntry::QueueState {
  absl::Mutex mu;
  std::vector<WaitEntry*> entries ABSL_GUARDED_BY(mu);
};

namespace {

// The calling host thread's wake-up eventfd, created on first use and
// closed when the thread ends. Non-blocking so draining never sleeps.
class ThreadEventFd {
 public:
  ThreadEventFd() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    // Without it the thread could never sleep; the Sentry cannot go on
    // (only fd exhaustion of the Sentry itself gets here).
    if (fd_ < 0) std::abort();
  }
  ~ThreadEventFd() { close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

int ThreadWakeFd() {
  thread_local ThreadEventFd efd;
  return efd.fd();
}

void DrainWakeFd(int fd) {
  uint64_t v;
  while (read(fd, &v, sizeof(v)) < 0 && errno == EINTR) {
  }
}

void SignalWakeFd(int fd) {
  uint64_t one = 1;
  while (write(fd, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
}

int64_t MonotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

WaitEntry::~WaitEntry() { Unregister(); }

void WaitEntry::Unregister() {
  if (state_ == nullptr) return;
  {
    absl::MutexLock l(&state_->mu);
    auto& v = state_->entries;
    auto it = std::find(v.begin(), v.end(), this);
    if (it != v.end()) v.erase(it);
  }
  state_.reset();
}

WaitQueue::WaitQueue() : state_(std::make_shared<WaitEntry::QueueState>()) {}

WaitQueue::~WaitQueue() = default;

void WaitQueue::Register(WaitEntry* e, uint32_t mask) {
  e->Unregister();
  absl::MutexLock l(&state_->mu);
  e->mask_ = mask;
  e->state_ = state_;
  state_->entries.push_back(e);
}

void WaitQueue::Notify(uint32_t events) {
  absl::MutexLock l(&state_->mu);
  for (WaitEntry* e : state_->entries) {
    if (e->mask_ & events) e->Callback(events & e->mask_);
  }
}

bool WaitQueue::HasWaiters() const {
  absl::MutexLock l(&state_->mu);
  return !state_->entries.empty();
}

ThreadWaiter::ThreadWaiter() : efd_(ThreadWakeFd()) {}

ThreadWaiter::~ThreadWaiter() { Unregister(); }

void ThreadWaiter::Callback(uint32_t) { SignalWakeFd(efd_); }

WakeReason ThreadWaiter::Sleep(int interrupt_fd, int64_t deadline_ns,
                               absl::Span<const pollfd> host_fds) {
  absl::InlinedVector<pollfd, 8> fds;
  fds.push_back({interrupt_fd, POLLIN, 0});  // fd -1: ignored by ppoll
  fds.push_back({efd_, POLLIN, 0});
  fds.insert(fds.end(), host_fds.begin(), host_fds.end());
  for (;;) {
    timespec to, *top = nullptr;
    if (deadline_ns >= 0) {
      int64_t left = deadline_ns - MonotonicNowNs();
      if (left <= 0) return WakeReason::kTimedOut;
      to = {left / 1000000000, left % 1000000000};
      top = &to;
    }
    int n = ppoll(fds.data(), fds.size(), top, nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      // Only EFAULT/EINVAL/ENOMEM: back out as interrupted rather than
      // spin.
      return WakeReason::kInterrupted;
    }
    if (n == 0) continue;  // the deadline is re-checked above
    if (interrupt_fd >= 0 && fds[0].revents != 0) {
      return WakeReason::kInterrupted;
    }
    if (fds[1].revents != 0) DrainWakeFd(efd_);
    return WakeReason::kNotified;
  }
}

}  // namespace sandbox::vfs
