#include "sentry/vfs/waiter.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "absl/container/inlined_vector.h"
#include "platform/sleep_state.h"

namespace sandbox::vfs {

// The queue proper, shared by the WaitQueue and its registrations.
struct WaitEntry::QueueState {
  absl::Mutex mu;
  std::vector<WaitEntry*> entries ABSL_GUARDED_BY(mu);
};

namespace {

// The calling host thread's wake-up eventfd, created on first use and
// closed when the thread ends. Non-blocking so draining never sleeps. If
// the host has no FD to give (EMFILE, ENFILE) it is -1 and the next use
// tries again; task threads make theirs before their task exists
// (kernel::TaskThread), so only other threads can see -1.
class ThreadEventFd {
 public:
  ~ThreadEventFd() {
    if (fd_ >= 0) close(fd_);
  }
  int Get() {
    if (fd_ < 0) fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return fd_;
  }

 private:
  int fd_ = -1;
};

}  // namespace

int ThreadWakeFd() {
  thread_local ThreadEventFd efd;
  return efd.Get();
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
  platform::ScopedSleep sleeping;  // /proc: S
  for (;;) {
    timespec to, *top = nullptr;
    if (deadline_ns >= 0) {
      int64_t left = deadline_ns - MonotonicNowNs();
      if (left <= 0) return WakeReason::kTimedOut;
      to = {left / 1000000000, left % 1000000000};
      top = &to;
    }
    // Without a wake-up eventfd (the host had none to give) a callback
    // cannot wake us: poll every millisecond and report a (spurious)
    // notification, which every caller re-checks.
    bool capped = false;
    timespec cap = {0, 1000000};
    if (efd_ < 0 &&
        (top == nullptr || to.tv_sec > 0 || to.tv_nsec > cap.tv_nsec)) {
      top = &cap;
      capped = true;
    }
    int n = ppoll(fds.data(), fds.size(), top, nullptr);
    if (n == 0 && capped) return WakeReason::kNotified;
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
    if (efd_ >= 0 && fds[1].revents != 0) DrainWakeFd(efd_);
    return WakeReason::kNotified;
  }
}

}  // namespace sandbox::vfs
