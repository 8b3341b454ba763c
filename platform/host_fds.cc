#include "platform/host_fds.h"

#include <sys/resource.h>

#include <algorithm>

namespace sandbox::platform {

size_t HostFdBudget::RaiseAndConfigure() {
  struct rlimit r;
  size_t nofile = 1024;
  if (getrlimit(RLIMIT_NOFILE, &r) == 0) {
    if (r.rlim_cur < r.rlim_max) {
      struct rlimit raised = r;
      raised.rlim_cur = r.rlim_max;
      if (setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
    }
    nofile = r.rlim_cur == RLIM_INFINITY ? (1u << 20)
                                         : static_cast<size_t>(r.rlim_cur);
  }
  Configure(nofile);
  return nofile;
}

void HostFdBudget::Configure(size_t nofile) {
  const size_t usable =
      nofile > 2 * kUncountedHostFds ? nofile - kUncountedHostFds : nofile / 2;
  const size_t cache = std::max<size_t>(1, usable / 4);
  file_cache_.store(cache, std::memory_order_relaxed);
  limit_.store(usable - cache, std::memory_order_relaxed);
}

size_t HostFdBudget::FileCacheFds() {
  return file_cache_.load(std::memory_order_relaxed);
}

bool HostFdBudget::TryTake(size_t n) {
  const size_t lim = limit();
  size_t cur = used_.load(std::memory_order_relaxed);
  do {
    if (cur > lim || n > lim - cur) return false;
  } while (
      !used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
  return true;
}

void HostFdBudget::Give(size_t n) {
  used_.fetch_sub(n, std::memory_order_relaxed);
}

}  // namespace sandbox::platform
