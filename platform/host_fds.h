// The Sentry's budget of host file descriptors.
//
// Every guest process costs the Sentry host FDs (systrap: a stub's reply
// pipe, its data pipe's two ends and its pidfd) and every guest thread two
// more (its interrupt eventfd and its host thread's wake-up eventfd). The
// guest can make processes and threads; the host's RLIMIT_NOFILE is fixed.
// Before this budget, ~200 guest processes under `ulimit -n 1024` ran the
// Sentry out of FDs, and the first host call that needed one failed in a
// path that could only crash.
//
// So the consumers the guest can multiply take their FDs from this budget
// before they make anything, and a guest call that would go past it fails
// (fork/clone: EAGAIN, as Linux's copy_process does for an exhausted
// resource) with nothing changed. The rest of the limit is kept for what the
// budget does not count: the Gofer client's FD cache (sized from
// FileCacheFds()), the memory file, stdio, sockets and FDs in flight.
//
// Thread safety: every function may be called from any thread (atomics).
#ifndef PLATFORM_HOST_FDS_H_
#define PLATFORM_HOST_FDS_H_

#include <stddef.h>

#include <atomic>

namespace sandbox::platform {

// Host FDs a guest thread costs the Sentry (sentry/kernel: the task's
// interrupt eventfd and its host thread's wake-up eventfd).
inline constexpr size_t kTaskHostFds = 2;

// FDs the budget never hands out: the Sentry's own (memory file, stdio,
// logs, Gofer sockets, epoll, the platform's service FDs) and FDs in flight
// (a donated FD before the cache takes it, a pipe being made).
inline constexpr size_t kUncountedHostFds = 64;

class HostFdBudget {
 public:
  // Sets the budget from the soft RLIMIT_NOFILE after raising it to the
  // hard limit (what the Sentry may use without CAP_SYS_RESOURCE). Call once
  // at start, before the first guest process. Returns the soft limit now in
  // force.
  static size_t RaiseAndConfigure();
  // Sets the budget for a soft limit of `nofile` FDs (tests; and
  // RaiseAndConfigure).
  static void Configure(size_t nofile);

  // FDs the Gofer client's file-data caches may hold, together (a quarter
  // of the limit past the uncounted reserve).
  static size_t FileCacheFds();

  // Takes `n` FDs; false (and nothing taken) if that would go past the
  // budget.
  static bool TryTake(size_t n);
  static void Give(size_t n);

  static size_t used() { return used_.load(std::memory_order_relaxed); }
  static size_t limit() { return limit_.load(std::memory_order_relaxed); }

 private:
  // Unconfigured: a limit that the default 1024 soft limit can serve.
  static inline std::atomic<size_t> limit_{1024 - kUncountedHostFds - 240};
  static inline std::atomic<size_t> file_cache_{240};
  static inline std::atomic<size_t> used_{0};
};

// `n` FDs of the budget, given back on destruction. Move-only.
class HostFdHold {
 public:
  HostFdHold() = default;
  // An empty hold (ok() false) if the budget has no `n` FDs left.
  static HostFdHold Take(size_t n) {
    HostFdHold h;
    if (HostFdBudget::TryTake(n)) h.n_ = n;
    h.ok_ = h.n_ == n;
    return h;
  }
  HostFdHold(HostFdHold&& o) noexcept : n_(o.n_), ok_(o.ok_) { o.n_ = 0; }
  HostFdHold& operator=(HostFdHold&& o) noexcept {
    if (this != &o) {
      Release();
      n_ = o.n_;
      ok_ = o.ok_;
      o.n_ = 0;
    }
    return *this;
  }
  HostFdHold(const HostFdHold&) = delete;
  HostFdHold& operator=(const HostFdHold&) = delete;
  ~HostFdHold() { Release(); }

  bool ok() const { return ok_; }
  size_t size() const { return n_; }

 private:
  void Release() {
    if (n_ != 0) HostFdBudget::Give(n_);
    n_ = 0;
  }
  size_t n_ = 0;
  bool ok_ = false;
};

}  // namespace sandbox::platform

#endif  // PLATFORM_HOST_FDS_H_
