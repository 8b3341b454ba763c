// The sandbox's UTS names (Linux's uts_namespace: one for the whole
// sandbox, no unshare(CLONE_NEWUTS) yet): the host and domain names that
// sethostname/setdomainname change and uname and /proc/sys/kernel/
// {hostname,domainname} report. Any task thread reads and writes them.
#ifndef SENTRY_KERNEL_UTS_H_
#define SENTRY_KERNEL_UTS_H_

#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace sandbox::kernel {

class Uts {
 public:
  // __NEW_UTS_LEN: the longest name sethostname/setdomainname take.
  static constexpr int kMaxLen = 64;

  Uts(std::string hostname, std::string domainname)
      : hostname_(std::move(hostname)), domainname_(std::move(domainname)) {}

  // The names as set: up to kMaxLen bytes, which may hold NULs (uname
  // copies them as they are; C strings end at the first).
  std::string hostname() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    return hostname_;
  }
  std::string domainname() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    return domainname_;
  }
  void set_hostname(std::string name) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    hostname_ = std::move(name);
  }
  void set_domainname(std::string name) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    domainname_ = std::move(name);
  }

 private:
  mutable absl::Mutex mu_;
  std::string hostname_ ABSL_GUARDED_BY(mu_);
  std::string domainname_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_UTS_H_
