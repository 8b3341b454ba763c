// The sandbox's network interfaces, their addresses and the routes the
// kernel derives from them: the one table netlink (RTM_GETLINK/GETADDR/
// GETROUTE), the interface ioctls (SIOCGIF*) and /proc/net read, and that
// the Internet families (#21) extend with their devices and counters.
//
// One Interfaces object per network namespace (NetNamespace::Get<
// Interfaces>()). Today it holds `lo` (index 1), as a fresh Linux network
// namespace has it after `ip link set lo up`: the sandbox starts with lo UP
// (gVisor does the same), so a program that never runs `ip link set lo up`
// still reaches 127.0.0.1; `ip link set lo down/up` (RTM_NEWLINK,
// SIOCSIFFLAGS) change it as on Linux:
//   - the first up gives lo 127.0.0.1/8 (kept when it goes down again, as
//     Linux keeps IPv4 addresses of a down device) and the qdisc noqueue
//     (noop before);
//   - up adds ::1/128, down removes it (addrconf_ifdown);
//   - the local table's routes follow (see Routes()).
//
// The values are Linux's for a loopback device (loopback_setup): mtu 65536,
// txqlen 1000, ARPHRD_LOOPBACK, zero hardware and broadcast addresses,
// operstate UNKNOWN when up (no carrier detection), DOWN when down.
//
// Thread-safety: every method locks mu_; the returned values are copies.
// Lock order: Interfaces::mu_ is a leaf; the change listener runs after
// it is released.
#ifndef SENTRY_NET_STACK_INTERFACES_H_
#define SENTRY_NET_STACK_INTERFACES_H_

#include <stdint.h>

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"

namespace sandbox::net::stack {

// Linux's interface flags (include/uapi/linux/if.h), as the ioctls and
// netlink report them.
inline constexpr uint32_t kIffUp = 0x1;
inline constexpr uint32_t kIffBroadcast = 0x2;
inline constexpr uint32_t kIffDebug = 0x4;
inline constexpr uint32_t kIffLoopback = 0x8;
inline constexpr uint32_t kIffPointopoint = 0x10;
inline constexpr uint32_t kIffNotrailers = 0x20;
inline constexpr uint32_t kIffRunning = 0x40;
inline constexpr uint32_t kIffNoarp = 0x80;
inline constexpr uint32_t kIffPromisc = 0x100;
inline constexpr uint32_t kIffAllmulti = 0x200;
inline constexpr uint32_t kIffMaster = 0x400;
inline constexpr uint32_t kIffSlave = 0x800;
inline constexpr uint32_t kIffMulticast = 0x1000;
inline constexpr uint32_t kIffPortsel = 0x2000;
inline constexpr uint32_t kIffAutomedia = 0x4000;
inline constexpr uint32_t kIffDynamic = 0x8000;
inline constexpr uint32_t kIffLowerUp = 0x10000;
inline constexpr uint32_t kIffDormant = 0x20000;

inline constexpr uint16_t kArphrdLoopback = 772;  // ARPHRD_LOOPBACK
inline constexpr size_t kIfNameSize = 16;         // IFNAMSIZ

// RFC 2863 operational states (IF_OPER_*).
inline constexpr uint8_t kOperUnknown = 0;
inline constexpr uint8_t kOperDown = 2;
inline constexpr uint8_t kOperUp = 6;

// Route scopes, types, protocols and tables (linux/rtnetlink.h).
inline constexpr uint8_t kScopeUniverse = 0;
inline constexpr uint8_t kScopeLink = 253;
inline constexpr uint8_t kScopeHost = 254;
inline constexpr uint8_t kRtnUnicast = 1;
inline constexpr uint8_t kRtnLocal = 2;
inline constexpr uint8_t kRtnBroadcast = 3;
inline constexpr uint8_t kProtoKernel = 2;
inline constexpr uint32_t kTableMain = 254;
inline constexpr uint32_t kTableLocal = 255;

// IFA_F_PERMANENT.
inline constexpr uint32_t kIfaPermanent = 0x80;
// IFAPROT_KERNEL_LO (IFA_PROTO of ::1).
inline constexpr uint8_t kIfaProtoKernelLo = 1;

// The counters of rtnl_link_stats64 that /proc/net/dev and netlink show.
struct LinkStats {
  uint64_t rx_packets = 0, tx_packets = 0, rx_bytes = 0, tx_bytes = 0;
  uint64_t rx_errors = 0, tx_errors = 0, rx_dropped = 0, tx_dropped = 0;
  uint64_t multicast = 0;
};

struct Link {
  int index = 0;
  std::string name;    // at most 15 bytes
  uint16_t type = 0;   // ARPHRD_*
  uint32_t flags = 0;  // as dev_get_flags reports them (IFF_RUNNING and
                       // IFF_LOWER_UP while up, IFF_PROMISC while
                       // promiscuity > 0)
  uint32_t mtu = 0;
  uint32_t txqlen = 0;
  uint8_t operstate = kOperDown;
  std::string qdisc;  // "noop" until first up, then "noqueue"
  uint32_t promiscuity = 0;
  uint32_t allmulti = 0;
  uint32_t group = 0;
  std::array<uint8_t, 6> address = {};
  std::array<uint8_t, 6> broadcast = {};
  LinkStats stats;
  bool up() const { return flags & kIffUp; }
};

struct Addr {
  int family = 0;  // AF_INET or AF_INET6
  int index = 0;   // the interface
  uint8_t prefixlen = 0;
  uint8_t scope = 0;                  // RT_SCOPE_*
  uint32_t flags = 0;                 // IFA_F_*
  std::array<uint8_t, 16> addr = {};  // 4 bytes for AF_INET
  std::string label;                  // AF_INET only ("lo")
  uint8_t proto = 0;                  // IFA_PROTO, 0: none
  // When the address was made and last changed, in hundredths of a second
  // since the namespace started (IFA_CACHEINFO's cstamp/tstamp).
  uint32_t cstamp = 0, tstamp = 0;
  size_t addr_len() const { return family == 2 ? 4 : 16; }
};

struct Route {
  int family = 0;
  uint8_t dst_len = 0;
  uint32_t table = 0;
  uint8_t protocol = 0;
  uint8_t scope = 0;
  uint8_t type = 0;
  std::array<uint8_t, 16> dst = {};
  std::optional<std::array<uint8_t, 16>> prefsrc;
  int oif = 0;
  std::optional<uint32_t> priority;  // RTA_PRIORITY (IPv6 always has one)
};

// A change of the table, as rtnetlink announces it to its multicast
// listeners (RTM_NEWLINK, RTM_NEWADDR/RTM_DELADDR, RTM_NEWROUTE/
// RTM_DELROUTE).
struct Change {
  enum Kind : uint8_t { kLink, kNewAddr, kDelAddr, kNewRoute, kDelRoute };
  Kind kind = kLink;
  Link link;    // kLink: the new state
  Addr addr;    // k*Addr
  Route route;  // k*Route
};
// Called with the changes of one operation, in Linux's order, after the
// table's lock is released.
using ChangeListener = std::function<void(const std::vector<Change>&)>;

class Interfaces {
 public:
  static constexpr int kLoopbackIndex = 1;

  // The table of a new namespace: lo, up (see the file comment).
  Interfaces();
  Interfaces(const Interfaces&) = delete;
  Interfaces& operator=(const Interfaces&) = delete;

  // Every interface, by index.
  std::vector<Link> Links() const ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<Link> LinkByIndex(int index) const ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<Link> LinkByName(std::string_view name) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Addresses of `family` (AF_UNSPEC: AF_INET's, then AF_INET6's), in the
  // order Linux dumps them (per interface, newest IPv4 primary first).
  std::vector<Addr> Addrs(int family) const ABSL_LOCKS_EXCLUDED(mu_);
  // Routes of `family` (AF_UNSPEC: both) in the order of Linux's dumps:
  // per table, by prefix. A namespace whose lo is up has only the local
  // table's routes (local 127.0.0.0/8, local 127.0.0.1, broadcast
  // 127.255.255.255, local ::1); after lo goes down the two IPv4 local
  // routes stay (Linux keeps them with the address) and the others go.
  std::vector<Route> Routes(int family) const ABSL_LOCKS_EXCLUDED(mu_);

  // dev_change_flags: `flags` is the new flags word (SIOCSIFFLAGS's
  // ifr_flags, or netlink's combination of ifi_flags and ifi_change). Only
  // IFF_UP, IFF_PROMISC, IFF_ALLMULTI and the bits Linux lets a user set
  // (IFF_DEBUG, IFF_NOTRAILERS, IFF_NOARP, IFF_DYNAMIC, IFF_MULTICAST,
  // IFF_PORTSEL, IFF_AUTOMEDIA) change. ENODEV for an unknown index.
  KResult<void> ChangeFlags(int index, uint32_t flags) ABSL_LOCKS_EXCLUDED(mu_);
  // The flags word as dev->flags holds it (for netlink's ifi_change
  // combination): without IFF_RUNNING/IFF_LOWER_UP.
  KResult<uint32_t> DevFlags(int index) const ABSL_LOCKS_EXCLUDED(mu_);
  // dev_set_mtu (EINVAL below 0 or for lo above its maximum, none) and
  // txqueuelen.
  KResult<void> SetMtu(int index, uint32_t mtu) ABSL_LOCKS_EXCLUDED(mu_);
  KResult<void> SetTxqlen(int index, uint32_t txqlen) ABSL_LOCKS_EXCLUDED(mu_);
  KResult<void> SetGroup(int index, uint32_t group) ABSL_LOCKS_EXCLUDED(mu_);

  // Sets the one listener (netlink's notifier); replaces any before.
  void SetListener(ChangeListener l) ABSL_LOCKS_EXCLUDED(mu_);

  // Hundredths of a second since this table was made (cstamp/tstamp).
  uint32_t Centiseconds() const;

 private:
  struct Dev {
    Link link;            // flags hold dev->flags (no RUNNING/LOWER_UP)
    uint32_t gflags = 0;  // user-requested IFF_PROMISC/IFF_ALLMULTI
    bool was_up = false;  // has been up once (IPv4 address, qdisc)
    std::vector<Addr> addrs;
  };
  Dev* FindLocked(int index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const Dev* FindLocked(int index) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  static Link Report(const Dev& d);
  // NETDEV_UP / NETDEV_DOWN of a loopback device.
  void UpLocked(Dev& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ChangeFlagsLocked(Dev& d, uint32_t flags)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DownLocked(Dev& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<Route> RoutesLocked(int family) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  std::vector<Addr> AddrsLocked(int family) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const int64_t start_ns_;
  mutable absl::Mutex mu_;
  std::vector<Dev> devs_ ABSL_GUARDED_BY(mu_);  // by index
  ChangeListener listener_ ABSL_GUARDED_BY(mu_);
};

// /proc/net/dev and /proc/net/if_inet6 of `ifs` (Linux's layouts:
// dev_seq_show, if6_seq_show).
std::string FormatProcNetDev(const Interfaces& ifs);
std::string FormatProcNetIfInet6(const Interfaces& ifs);

}  // namespace sandbox::net::stack

#endif  // SENTRY_NET_STACK_INTERFACES_H_
