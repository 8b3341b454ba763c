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
  // net.ipv4.ip_local_port_range: the ephemeral ports (bind to port 0,
  // connect of an unbound socket), both ends included.
  std::atomic<int64_t> ip_local_port_lo{32768};
  std::atomic<int64_t> ip_local_port_hi{60999};
  // net.ipv4.ping_group_range: the gids that may make ping sockets
  // (IPPROTO_ICMP/ICMPV6 datagram sockets). Linux's built-in default is
  // "1 0" (nobody); every systemd distribution sets "0 2147483647", which
  // is what programs like ping expect to find, so that is the sandbox's.
  std::atomic<int64_t> ping_group_lo{0};
  std::atomic<int64_t> ping_group_hi{2147483647};
  // net.ipv4.ip_nonlocal_bind / net.ipv6.ip_nonlocal_bind: bind(2) to an
  // address no interface has is allowed (EADDRNOTAVAIL otherwise).
  std::atomic<int64_t> ip_nonlocal_bind{0};
  std::atomic<int64_t> ip6_nonlocal_bind{0};
  // net.ipv4.ip_default_ttl (IP_TTL -1), net.ipv6.conf.all.hop_limit.
  std::atomic<int64_t> ip_default_ttl{64};
  std::atomic<int64_t> ip6_hop_limit{64};
  // net.ipv4.tcp_rmem / tcp_wmem (min default max): a TCP socket's buffers
  // before SO_RCVBUF/SO_SNDBUF.
  std::atomic<int64_t> tcp_rmem_min{4096}, tcp_rmem_default{131072},
      tcp_rmem_max{6291456};
  std::atomic<int64_t> tcp_wmem_min{4096}, tcp_wmem_default{16384},
      tcp_wmem_max{4194304};
  // net.ipv4.tcp_fin_timeout (s), tcp_keepalive_time/intvl/probes (the
  // defaults of TCP_KEEPIDLE/INTVL/CNT), tcp_syn_retries, tcp_congestion
  // is "cubic" (read only here).
  std::atomic<int64_t> tcp_fin_timeout{60};
  std::atomic<int64_t> tcp_keepalive_time{7200};
  std::atomic<int64_t> tcp_keepalive_intvl{75};
  std::atomic<int64_t> tcp_keepalive_probes{9};
  std::atomic<int64_t> tcp_syn_retries{6};
  // net.ipv4.tcp_max_syn_backlog.
  std::atomic<int64_t> tcp_max_syn_backlog{4096};
  // net.ipv4.ip_unprivileged_port_start: bind(2) below it needs
  // CAP_NET_BIND_SERVICE.
  std::atomic<int64_t> ip_unprivileged_port_start{1024};
  // net.ipv6.bindv6only: IPV6_V6ONLY's default.
  std::atomic<int64_t> ip6_bindv6only{0};
  // net.ipv6.conf.all.disable_ipv6 (stored; IPv6 stays on).
  std::atomic<int64_t> ip6_disable_ipv6{0};
  // net.ipv4.tcp_congestion_control: 0 reno, 1 cubic.
  std::atomic<int64_t> tcp_congestion{1};
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
