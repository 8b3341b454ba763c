// NetNamespace: the state of one network namespace (Linux's struct net):
// the sysctls under /proc/sys/net that the sockets obey, and per-family
// state (the abstract AF_UNIX names, netlink's port ids, the interface and
// address tables), each created on first use by the family that owns it.
//
// The sandbox has one network namespace today (Root); CLONE_NEWNET and
// setns come with the network modes (#21), which give each task its own.
//
// Thread-safety: Get is thread-safe; the state objects lock themselves.
// The sysctls are atomics.
#ifndef SENTRY_NET_NAMESPACE_H_
#define SENTRY_NET_NAMESPACE_H_

#include <stdint.h>

#include <atomic>
#include <memory>
#include <typeindex>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace sandbox::net {

// /proc/sys/net values of one namespace (Linux's defaults).
struct NetSysctls {
  std::atomic<int64_t> somaxconn{4096};       // net.core.somaxconn
  std::atomic<int64_t> rmem_max{212992};      // net.core.rmem_max
  std::atomic<int64_t> wmem_max{212992};      // net.core.wmem_max
  std::atomic<int64_t> rmem_default{212992};  // net.core.rmem_default
  std::atomic<int64_t> wmem_default{212992};  // net.core.wmem_default
  std::atomic<int64_t> max_dgram_qlen{10};    // net.unix.max_dgram_qlen
};

class NetNamespace {
 public:
  NetNamespace() = default;
  NetNamespace(const NetNamespace&) = delete;
  NetNamespace& operator=(const NetNamespace&) = delete;

  // The sandbox's (initial) network namespace.
  static NetNamespace& Root();

  NetSysctls& sysctl() { return sysctl_; }

  // The state of type T in this namespace (default-constructed on first
  // use, lives as long as the namespace).
  template <typename T>
  T& Get() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    auto& slot = state_[std::type_index(typeid(T))];
    if (slot == nullptr) slot = std::make_shared<T>();
    return *static_cast<T*>(slot.get());
  }

 private:
  NetSysctls sysctl_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::type_index, std::shared_ptr<void>> state_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace sandbox::net

#endif  // SENTRY_NET_NAMESPACE_H_
