// InetSocket: what every AF_INET/AF_INET6 socket shares (Linux's struct
// inet_sock and ipv6_pinfo): the IP-level options of SOL_IP and SOL_IPV6,
// the binding in the protocol's PortTable, the address checks of bind(2)
// and the source address chosen for a destination, and the row it shows in
// /proc/net/{tcp,tcp6,udp,udp6,raw,...}.
//
// Protocols derive from it (tcp/, udp/ and ping in udp/) and call
// InetSocket::SetSockOpt/GetSockOpt for the levels they do not handle
// themselves (SOL_IP and SOL_IPV6 here, SOL_SOCKET in net::Socket).
//
// Thread-safety: ip_mu_ guards the IP options and the binding; it is a
// leaf under the protocol's own socket lock (protocol mutex -> ip_mu_ ->
// PortTable::mu_ is never taken in another order: PortTable calls back
// into nothing). Binding calls read the SOL_SOCKET flags with ip_mu_ held
// (ip_mu_ -> Socket::opt_mu_, a leaf).
#ifndef SENTRY_NET_INET_INET_SOCKET_H_
#define SENTRY_NET_INET_INET_SOCKET_H_

#include <stdint.h>

#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/net/inet/address.h"
#include "sentry/net/inet/ports.h"
#include "sentry/net/socket.h"

namespace sandbox::net::inet {

// The SOL_IP / SOL_IPV6 options (inet_sock's and ipv6_pinfo's fields).
struct IpOptions {
  // SOL_IP.
  int tos = 0;            // IP_TOS (the ECN bits kept as Linux keeps them)
  int ttl = -1;           // IP_TTL (-1: net.ipv4.ip_default_ttl)
  bool pktinfo = false;   // IP_PKTINFO
  bool recvtos = false;   // IP_RECVTOS
  bool recvttl = false;   // IP_RECVTTL
  bool recvopts = false;  // IP_RECVOPTS / IP_RETOPTS
  bool recverr = false;   // IP_RECVERR
  bool recverr_rfc4884 = false;
  bool recvorigdstaddr = false;       // IP_RECVORIGDSTADDR
  bool freebind = false;              // IP_FREEBIND
  bool transparent = false;           // IP_TRANSPARENT (needs CAP_NET_ADMIN)
  bool bind_address_no_port = false;  // IP_BIND_ADDRESS_NO_PORT
  bool hdrincl = false;
  int mtu_discover = 1;        // IP_MTU_DISCOVER: IP_PMTUDISC_WANT for TCP/UDP
  int multicast_ttl = 1;       // IP_MULTICAST_TTL
  bool multicast_loop = true;  // IP_MULTICAST_LOOP
  int multicast_if = 0;        // IP_MULTICAST_IF index
  uint32_t multicast_addr = 0;
  bool multicast_all = true;  // IP_MULTICAST_ALL
  bool checksum = false;      // IP_CHECKSUM
  int local_port_lo = 0,
      local_port_hi = 0;  // IP_LOCAL_PORT_RANGE (0: the sysctl's)
  // SOL_IPV6.
  bool v6only = false;     // IPV6_V6ONLY (net.ipv6.bindv6only: 0)
  int tclass = 0;          // IPV6_TCLASS
  int unicast_hops = -1;   // IPV6_UNICAST_HOPS (-1: the route's, 64)
  int multicast_hops = 1;  // IPV6_MULTICAST_HOPS
  bool multicast_loop6 = true;
  int multicast_if6 = 0;
  bool recvpktinfo = false;   // IPV6_RECVPKTINFO
  bool recvtclass = false;    // IPV6_RECVTCLASS
  bool recvhoplimit = false;  // IPV6_RECVHOPLIMIT
  bool recverr6 = false;      // IPV6_RECVERR
  bool recvpathmtu = false;
  bool recvorigdstaddr6 = false;
  bool autoflowlabel = true;
  int mtu_discover6 = 1;  // IPV6_MTU_DISCOVER
  bool dontfrag = false;
  bool freebind6 = false;
  bool transparent6 = false;
  bool recvfragsize = false;
  // Added with the implementation (inet_socket.cc).
  int min_ttl = 0;               // IP_MINTTL
  int uc_index = 0;              // IP_UNICAST_IF
  bool passsec = false;          // IP_PASSSEC
  bool nodefrag = false;         // IP_NODEFRAG (raw only)
  bool recvfragsize4 = false;    // IP_RECVFRAGSIZE
  std::vector<uint8_t> options;  // IP_OPTIONS as set (a multiple of 4)
  struct McGroup {               // IP_ADD_MEMBERSHIP (ip_mc_socklist)
    uint32_t group = 0;          // host order
    uint32_t address = 0;        // imr_address, host order
    int ifindex = 0;
  };
  std::vector<McGroup> mc_groups;
  int ucast_oif6 = 0;    // IPV6_UNICAST_IF
  bool mc_all6 = true;   // IPV6_MULTICAST_ALL
  bool sndflow = false;  // IPV6_FLOWINFO_SEND
  bool rtalert_isolate = false;
  bool recverr6_rfc4884 = false;
  int min_hopcount = 0;   // IPV6_MINHOPCOUNT
  int frag_size = 0;      // IPV6_MTU
  bool recvflow = false;  // IPV6_FLOWINFO
  bool rx2292pktinfo = false, rx2292hoplimit = false;
  bool recvrthdr = false, recvhopopts = false, recvdstopts = false;
  bool autoflowlabel_set = false;
  struct Mc6Group {  // IPV6_ADD_MEMBERSHIP
    std::array<uint8_t, 16> group = {};
    int ifindex = 0;
  };
  std::vector<Mc6Group> mc6_groups;
  uint32_t srcprefs = 0;  // IPV6_ADDR_PREFERENCES (IPV6_PREFER_SRC_*)
  // IPV6_PKTINFO set as a sticky option (np->sticky_pktinfo).
  std::array<uint8_t, 16> sticky_addr = {};
  int sticky_ifindex = 0;
};

// One row of /proc/net/{tcp,tcp6,udp,udp6} (tcp4_seq_show and friends).
struct ProcRow {
  InetAddr local;
  InetAddr remote;
  int state = 0;          // TCP_ESTABLISHED... (st column; UDP: 7 unconnected,
                          // 1 connected)
  uint64_t tx_queue = 0;  // bytes not yet acknowledged / in the send queue
  uint64_t rx_queue = 0;  // bytes readable (a listener: its accept queue)
  uint32_t uid = 0;
  uint64_t inode = 0;
  int refcount = 2;    // sk_refcnt as shown
  uint64_t drops = 0;  // UDP's sk_drops
  // TCP's columns after the inode (get_tcp4_sock), as clock_t (USER_HZ
  // 100) where they are times: the pending timer (tr: 0 none, 1
  // retransmit, 2 keepalive, 3 TIME_WAIT, 4 zero window probe) and when it
  // fires, retransmits, probes_out, rto, ato, quick<<1|pingpong, cwnd,
  // ssthresh (-1 in initial slow start; a listener: its fastopen queue).
  int timer_active = 0;
  int64_t timer_when = 0;
  uint32_t retransmits = 0;
  int probes = 0;
  uint32_t rto = 20, ato = 4, quick_pingpong = 0, cwnd = 10;
  int ssthresh = -1;
};

// Made with std::make_shared (the port table names the socket through
// weak_from_this()).
class InetSocket : public Socket,
                   public std::enable_shared_from_this<InetSocket> {
 public:
  // `family` is AF_INET or AF_INET6.
  InetSocket(int family, int type, int protocol, uint32_t flags,
             const Ucred& owner, Proto proto);
  ~InetSocket() override;

  // The network namespace the socket lives in (sock_net): set by the
  // family's socket(2) (inet.cc) right after the protocol made the socket,
  // with the namespace's defaults (IPV6_V6ONLY from net.ipv6.bindv6only;
  // always set for an AF_INET6 ping socket, as ping_init_sock does);
  // an accepted socket gets its listener's. Root until set.
  void AttachNamespace(NetNamespace& ns) ABSL_LOCKS_EXCLUDED(ip_mu_);
  NetNamespace& netns() const;

  Proto proto() const { return proto_; }
  bool v6() const { return family() == AF_INET6; }
  const Ucred& owner_ids() const { return owner_; }

  // SOL_IP and SOL_IPV6 (do_ip_setsockopt / do_ipv6_setsockopt with
  // Linux's checks: EINVAL for short values and bad ranges, ENOPROTOOPT for
  // unknown names and for SOL_IPV6 on an AF_INET socket, EPERM for
  // IP_TRANSPARENT without CAP_NET_RAW/CAP_NET_ADMIN); SOL_IP works on
  // AF_INET6 sockets too (ipv6_setsockopt passes it on); SOL_SOCKET goes
  // to net::Socket. Other levels: ENOPROTOOPT, as ip_setsockopt /
  // ipv6_setsockopt answer them (the protocol handles its own, SOL_TCP/
  // SOL_UDP, before calling this).
  KResult<void> SetSockOpt(Caller& c, int level, int name,
                           absl::Span<const uint8_t> val) override;
  KResult<size_t> GetSockOpt(Caller& c, int level, int name,
                             absl::Span<uint8_t> val) override;

  IpOptions ip_options() const ABSL_LOCKS_EXCLUDED(ip_mu_);
  // inet_csk_clone_lock: an accepted connection starts with the listener's
  // SOL_SOCKET and SOL_IP/SOL_IPV6 options (on the new socket, before
  // anyone else sees it).
  void InheritOptions(const InetSocket& listener) ABSL_LOCKS_EXCLUDED(ip_mu_);
  // The TTL / hop limit a packet of this socket carries to `dst`.
  int EffectiveTtl(Caller& c, const IpAddr& dst) const;

  // ---- Binding (the protocol calls these with its own lock held). ----
  // bind(2)'s checks and reservation (inet_bind/inet6_bind): the address
  // parsed for this socket's family; EINVAL if already bound; an AF_INET6
  // socket with IPV6_V6ONLY cannot bind a v4-mapped address (EINVAL);
  // a multicast address binds as Linux allows; a non-local address is
  // EADDRNOTAVAIL unless IP_FREEBIND/IP_TRANSPARENT/ip_nonlocal_bind;
  // a port below net.ipv4.ip_unprivileged_port_start (1024) needs
  // CAP_NET_BIND_SERVICE (EACCES).
  KResult<void> BindTo(Caller& c, const InetAddr& addr)
      ABSL_LOCKS_EXCLUDED(ip_mu_);
  // The binding for a connect(2) to `remote`: the existing one connected,
  // or an ephemeral one (autobind). The source address is SourceFor.
  // `remote` is stored as given: the protocol first replaces a wildcard
  // destination by loopback (ip_route_connect / tcp_v6_connect: 0.0.0.0
  // -> 127.0.0.1, :: -> ::1). TCP: EADDRNOTAVAIL when no port is free;
  // UDP/ping: EAGAIN (inet_autobind).
  KResult<InetAddr> ConnectBinding(Caller& c, const InetAddr& remote)
      ABSL_LOCKS_EXCLUDED(ip_mu_);
  // UDP: an unbound socket sending gets an ephemeral port.
  KResult<InetAddr> AutoBind(Caller& c) ABSL_LOCKS_EXCLUDED(ip_mu_);
  // Releases the binding (close; TCP disconnect of an auto-bound socket).
  void Unbind() ABSL_LOCKS_EXCLUDED(ip_mu_);
  // Back to bound-only (UDP connect(AF_UNSPEC), TCP disconnect of an
  // explicitly bound socket): the table's Disconnect.
  void DisconnectBinding() ABSL_LOCKS_EXCLUDED(ip_mu_);
  // Installs `b` as this socket's binding (an accepted TCP socket:
  // PortTable::Inherit), not explicit.
  void AdoptBinding(Binding b) ABSL_LOCKS_EXCLUDED(ip_mu_);
  // The peer of the binding, if connected.
  std::optional<InetAddr> RemoteAddr() const ABSL_LOCKS_EXCLUDED(ip_mu_);
  // The protocol's port table in this socket's namespace.
  PortTable& table() const { return PortTable::Of(netns(), proto_); }
  // Whether bound, and the binding (null if not).
  Binding binding() const ABSL_LOCKS_EXCLUDED(ip_mu_);
  // The local address as getsockname reports it (0.0.0.0:0 / [::]:0 when
  // unbound; the connected source once connected).
  InetAddr LocalAddr() const ABSL_LOCKS_EXCLUDED(ip_mu_);

  // The source address for a packet to `dst` (the route's preferred source:
  // 127.0.0.1 for 127.0.0.0/8, ::1 for ::1, the bound address when bound
  // to a specific one), or ENETUNREACH when there is no route (the sandbox
  // has only lo; non-loopback destinations go through the network mode's
  // host path, decided by the protocol), EAFNOSUPPORT for an IPv4
  // destination of an IPV6_V6ONLY socket... (as Linux: ENETUNREACH).
  KResult<IpAddr> SourceFor(Caller& c, const IpAddr& dst) const;

  // /proc/net row of this socket.
  virtual ProcRow proc_row() const = 0;

 protected:
  mutable absl::Mutex ip_mu_;
  IpOptions ip_ ABSL_GUARDED_BY(ip_mu_);
  Binding binding_ ABSL_GUARDED_BY(ip_mu_);
  bool bound_explicitly_ ABSL_GUARDED_BY(ip_mu_) = false;
  // bind(2) to port 0 with IP_BIND_ADDRESS_NO_PORT: the address is kept,
  // the port chosen at connect(2) (no binding yet; bind may be repeated).
  std::optional<IpAddr> bound_no_port_ ABSL_GUARDED_BY(ip_mu_);

 private:
  BindRequest RequestLocked(const IpAddr& ip, uint16_t port) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(ip_mu_);
  KResult<IpAddr> SourceForLocked(const IpAddr& dst) const
      ABSL_SHARED_LOCKS_REQUIRED(ip_mu_);
  KResult<void> SetIp(Caller& c, int name, absl::Span<const uint8_t> val);
  KResult<size_t> GetIp(Caller& c, int name, absl::Span<uint8_t> val);
  KResult<void> SetIpv6(Caller& c, int name, absl::Span<const uint8_t> val);
  KResult<size_t> GetIpv6(Caller& c, int name, absl::Span<uint8_t> val);

  const Proto proto_;
  const Ucred owner_;
  std::atomic<NetNamespace*> netns_{nullptr};
};

// The description as an Internet socket, or null.
InetSocket* AsInetSocket(vfs::FileDescription* f);

// Whether `ip` is a local address of namespace `ns` (an address of an up
// interface, or a /8 of 127 while lo has 127.0.0.1/8: inet_addr_type ==
// RTN_LOCAL; ::1 while lo is up).
bool IsLocalAddress(NetNamespace& ns, const IpAddr& ip);

}  // namespace sandbox::net::inet

#endif  // SENTRY_NET_INET_INET_SOCKET_H_
