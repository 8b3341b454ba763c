// PortTable: the bound and connected Internet sockets of one protocol in one
// network namespace (Linux's inet_hashinfo for TCP: bhash, lhash and ehash;
// udp_table for UDP; the ping id table), with Linux's bind conflict rules,
// ephemeral port choice and the lookups that deliver a connection or a
// datagram.
//
// A socket holds its entry as a Binding (shared_ptr): made by Bind or
// BindConnect, changed through the table (Listen, Connect, Disconnect,
// Unlisten), removed by Unbind (or when the socket drops its last
// reference to the entry, which unbinds it). An entry names its socket
// weakly; lookups return the socket as a shared_ptr, or null.
//
// Conflict rules (bind(2), listen(2) and SO_REUSEADDR/SO_REUSEPORT), as
// inet_csk_get_port/inet_csk_bind_conflict (TCP, relax = true) and
// udp_lib_get_port/udp_lib_lport_inuse (UDP):
//   two entries on one port conflict when their local addresses overlap
//   (inet_rcv_saddr_equal with wildcards: equal addresses; 0.0.0.0 overlaps
//   every IPv4 address and v4-mapped one; :: overlaps every IPv6 address
//   and, unless the :: socket is IPV6_V6ONLY, every IPv4 one; an IPV6_V6ONLY
//   socket never overlaps an IPv4 address; an AF_INET6 socket bound to a
//   non-mapped address overlaps IPv4 sockets as 127.0.0.6, LOOPBACK4_IPV6,
//   as Linux) and their devices overlap (SO_BINDTODEVICE: either bound to
//   none, or both to the same one), unless
//     TCP: both have SO_REUSEADDR and the existing one is not listening,
//          or both have SO_REUSEPORT and the same owner uid;
//     UDP: both have SO_REUSEADDR, or both SO_REUSEPORT and the same uid.
//   listen(2) re-checks its entry as listening (two SO_REUSEADDR sockets
//   bound to one port: the second listen is EADDRINUSE).
// A conflict is EADDRINUSE. bind(2) to port 0 picks a free port from
// net.ipv4.ip_local_port_range, starting at a random offset
// (inet_csk_find_open_port, which prefers ports of the parity connect(2)
// does not use); none free: EADDRINUSE.
// connect(2) of an unbound TCP socket (BindConnect, __inet_hash_connect)
// picks a port of the range whose 4-tuple is unused, sharing ports with
// other connected sockets; none: EADDRNOTAVAIL. A UDP connect of an
// unbound socket autobinds as bind(port 0) does.
//
// Lookups (ScoreListener/compute_score): the most specific entry wins: a
// local address equal to the destination over a wildcard, an AF_INET
// socket over an AF_INET6 one for an IPv4 destination; a connected UDP
// socket only for its peer, and scoring above unconnected ones. Among
// listeners of one SO_REUSEPORT group (same port, address and uid) the
// choice is a hash of the source address and port
// (reuseport_select_sock), so accepts spread across the group.
//
// Ping (ping_get_port) checks the ident alone: two sockets conflict on one
// ident unless both have SO_REUSEADDR, whatever their addresses; an
// ephemeral ident is one nobody has, from a rover over 1..65535.
// Listening on an unbound socket: the protocol autobinds it first
// (AutoBind; Linux's inet_csk_listen_start then reports EADDRINUSE where
// AutoBind says EAGAIN).
//
// Thread-safety: every method takes mu_ (a leaf: nothing is called with it
// held; sockets are locked by their callers before or after, never during;
// a socket found by a lookup is locked from its weak_ptr after mu_ is
// released, so that dropping it, which unbinds, cannot deadlock).
#ifndef SENTRY_NET_INET_PORTS_H_
#define SENTRY_NET_INET_PORTS_H_

#include <stdint.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/net/inet/address.h"

namespace sandbox::net {
class Socket;
class NetNamespace;
}  // namespace sandbox::net

namespace sandbox::net::inet {

enum class Proto : uint8_t { kTcp, kUdp, kPing };

// What bind(2) asks for (the socket's options at the time of the call).
struct BindRequest {
  InetAddr local;          // the address (any allowed); port 0: ephemeral
  bool v6_socket = false;  // an AF_INET6 socket
  bool v6only = false;     // IPV6_V6ONLY
  bool reuseaddr = false;  // SO_REUSEADDR
  bool reuseport = false;  // SO_REUSEPORT
  uint32_t uid = 0;        // sock_i_uid: the socket's owner
  int bound_dev_if = 0;    // SO_BINDTODEVICE
  // IP_LOCAL_PORT_RANGE (0: the sysctl's end): narrows
  // net.ipv4.ip_local_port_range for this socket's ephemeral ports
  // (inet_sk_get_local_port_range: an end outside the sysctl's range is
  // ignored).
  uint16_t range_lo = 0, range_hi = 0;
};

// One socket's entry. Read its fields through the table (Snapshot);
// they change under the table's mutex.
class BindingEntry;
using Binding = std::shared_ptr<BindingEntry>;

// A copy of an entry's state.
struct BindingState {
  BindRequest req;                 // as bound; req.local.port is the port
  std::optional<InetAddr> local;   // the connected local address (TCP/UDP
                                   // after connect: the source chosen)
  std::optional<InetAddr> remote;  // the peer after connect(2)
  bool listening = false;
  std::weak_ptr<Socket> owner;
};

class PortTable {
 public:
  PortTable(Proto proto, NetNamespace& ns);
  ~PortTable();
  PortTable(const PortTable&) = delete;
  PortTable& operator=(const PortTable&) = delete;

  // The table of `proto` in `ns` (made on first use).
  static PortTable& Of(NetNamespace& ns, Proto proto);

  Proto proto() const { return proto_; }

  // bind(2): reserves req.local (port 0: an ephemeral one). EADDRINUSE on
  // a conflict or when no ephemeral port is free.
  KResult<Binding> Bind(const BindRequest& req, std::weak_ptr<Socket> owner)
      ABSL_LOCKS_EXCLUDED(mu_);
  // connect(2) of an unbound socket: binds to `local` (the source address
  // chosen for `remote`) and an ephemeral port such that (local, remote) is
  // unique (TCP) or free as for bind (UDP, ping), and connects the entry.
  // EADDRNOTAVAIL when the range is exhausted (TCP), EAGAIN (UDP: as
  // udp_v4_get_port's failure through ip4_datagram_connect... Linux gives
  // EAGAIN).
  KResult<Binding> BindConnect(const BindRequest& req, const InetAddr& remote,
                               std::weak_ptr<Socket> owner)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Connects a bound entry: sets its local (source) and remote addresses.
  // TCP: EADDRNOTAVAIL if the 4-tuple is taken by another connected entry.
  KResult<void> Connect(const Binding& b, const InetAddr& local,
                        const InetAddr& remote) ABSL_LOCKS_EXCLUDED(mu_);
  // Back to bound-only (UDP connect(AF_UNSPEC); a TCP disconnect keeps the
  // port only if it was bound explicitly: `unbind_if_auto`).
  void Disconnect(const Binding& b) ABSL_LOCKS_EXCLUDED(mu_);
  // listen(2): re-checks the entry as a listener (EADDRINUSE) and marks it.
  KResult<void> Listen(const Binding& b) ABSL_LOCKS_EXCLUDED(mu_);
  // Releases the port (close, a failed connect of an auto-bound socket).
  // Snapshot still works on the entry afterwards; nothing else does.
  void Unbind(const Binding& b) ABSL_LOCKS_EXCLUDED(mu_);
  // An accepted connection (TCP, __inet_inherit_port): an entry on the
  // listener's port with the listener's options, `local` and `remote`
  // set, added without a conflict check (it shares the listener's bucket,
  // so a later bind(2) of that port conflicts with it as on Linux).
  Binding Inherit(const Binding& listener, const InetAddr& local,
                  const InetAddr& remote, std::weak_ptr<Socket> owner)
      ABSL_LOCKS_EXCLUDED(mu_);

  BindingState Snapshot(const Binding& b) const ABSL_LOCKS_EXCLUDED(mu_);

  // The listener a connection from `src` to `dst` reaches (TCP), or null
  // (no listener: the connection is refused with RST: ECONNREFUSED).
  std::shared_ptr<Socket> FindListener(const InetAddr& dst,
                                       const InetAddr& src) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The socket a datagram from `src` to `dst` is delivered to (UDP, ping),
  // or null (nobody: ICMP port unreachable).
  std::shared_ptr<Socket> FindReceiver(const InetAddr& dst,
                                       const InetAddr& src) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Every entry's state, in bind order (for /proc/net/tcp and friends).
  std::vector<BindingState> List() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const Proto proto_;
  NetNamespace& ns_;
  // The ephemeral range of `req` (sysctl, narrowed by the socket's).
  std::pair<int, int> RangeFor(const BindRequest& req) const;
  bool PortFreeLocked(uint16_t port, const BindingEntry& nw, bool relax) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  KResult<uint16_t> EphemeralLocked(const BindingEntry& nw)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void InsertLocked(BindingEntry* e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveLocked(BindingEntry* e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint32_t RandomLocked(uint32_t n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  // port -> entries on it, in bind order.
  absl::flat_hash_map<uint16_t, std::vector<BindingEntry*>> ports_
      ABSL_GUARDED_BY(mu_);
  uint64_t seq_ ABSL_GUARDED_BY(mu_) = 0;         // bind order
  uint64_t rng_ ABSL_GUARDED_BY(mu_);             // the ports' random offsets
  uint16_t ping_rover_ ABSL_GUARDED_BY(mu_) = 0;  // ping_port_rover
  friend class BindingEntry;
};

}  // namespace sandbox::net::inet

#endif  // SENTRY_NET_INET_PORTS_H_
