// AF_NETLINK sockets (Linux's net/netlink/af_netlink.c): SOCK_RAW and
// SOCK_DGRAM (the same), protocols NETLINK_ROUTE (the kernel side in
// route.h answers from the namespace's stack::Interfaces) and
// NETLINK_KOBJECT_UEVENT (opens, binds and receives nothing: the sandbox
// has no devices; CAP_SYS_ADMIN senders get their messages acknowledged);
// every other protocol is EPROTONOSUPPORT.
//
// Port ids: bind with nl_pid 0 (or the first sendmsg/connect) autobinds to
// the caller's thread-group id, or when that is taken a random negative id
// below -4096 (netlink_autobind); an explicit nl_pid must be free
// (EADDRINUSE). Multicast groups: bind's nl_groups (the first 32) and
// NETLINK_ADD/DROP_MEMBERSHIP (all of the protocol's groups); any user may
// listen (NL_CFG_F_NONROOT_RECV), sending to a group or to a user port
// needs CAP_NET_ADMIN (no NL_CFG_F_NONROOT_SEND). Sockets of one namespace
// reach each other by port id; messages to port 0 go to the kernel side.
//
// Receive: one datagram a recvmsg, cut to the buffer with MSG_TRUNC set
// (and its real length returned with the MSG_TRUNC flag); MSG_PEEK leaves
// it queued. A dump (NLM_F_DUMP) queues its first datagram at once and the
// next ones as the reader reads (netlink_dump: while the queue holds at
// most half of SO_RCVBUF); a second dump before the first ended is EBUSY.
// Kernel replies that find the queue over SO_RCVBUF are dropped and the
// next recvmsg fails with ENOBUFS (netlink_overrun), unless
// NETLINK_NO_ENOBUFS.
//
// Socket options (SOL_NETLINK): NETLINK_ADD_MEMBERSHIP,
// NETLINK_DROP_MEMBERSHIP, NETLINK_PKTINFO, NETLINK_BROADCAST_ERROR,
// NETLINK_NO_ENOBUFS, NETLINK_LIST_MEMBERSHIPS, NETLINK_CAP_ACK,
// NETLINK_EXT_ACK, NETLINK_GET_STRICT_CHK; SOL_SOCKET goes to the base
// Socket.
//
// Not done: NETLINK_PKTINFO's control message (the option is kept and
// reported; ControlMessages has no slot for it), NETLINK_LISTEN_ALL_NSID
// (accepted with CAP_NET_BROADCAST; there is one namespace, so no
// control message), NETLINK_BROADCAST_ERROR's effect, mmap'ed rings (gone
// from Linux too). rtnetlink multicasts the link, address and route
// changes of `ip link set lo up/down` and SIOCSIFFLAGS (route.h).
//
// Lock order: NetlinkSocket::mu_ -> PortTable::mu_ (bind and autobind
// insert while holding the socket's lock); a sender never holds its own
// lock while locking a receiver.
#ifndef SENTRY_NET_NETLINK_NETLINK_H_
#define SENTRY_NET_NETLINK_NETLINK_H_

#include <stdint.h>

#include <deque>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "sentry/net/family.h"
#include "sentry/net/namespace.h"
#include "sentry/net/socket.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::net::netlink {

inline constexpr int kNetlinkRoute = 0;           // NETLINK_ROUTE
inline constexpr int kNetlinkKobjectUevent = 15;  // NETLINK_KOBJECT_UEVENT
inline constexpr int kSolNetlink = 270;           // SOL_NETLINK

class NetlinkSocket;

// The port ids of one namespace (nl_table's hash of each protocol).
class PortTable {
 public:
  // Adds `s` as (protocol, portid): EADDRINUSE if taken.
  KResult<void> Insert(int protocol, uint32_t portid,
                       const std::shared_ptr<NetlinkSocket>& s)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Removes the entry if it is still `s`'s.
  void Remove(int protocol, uint32_t portid, const NetlinkSocket* s)
      ABSL_LOCKS_EXCLUDED(mu_);
  bool Taken(int protocol, uint32_t portid) const ABSL_LOCKS_EXCLUDED(mu_);
  std::shared_ptr<NetlinkSocket> Lookup(int protocol, uint32_t portid) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Every bound socket (of `protocol`, or all when -1), by port id.
  std::vector<std::shared_ptr<NetlinkSocket>> Bound(int protocol) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    const NetlinkSocket* raw;
    std::weak_ptr<NetlinkSocket> sock;
  };
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::pair<int, uint32_t>, Entry> ports_
      ABSL_GUARDED_BY(mu_);
};

class NetlinkSocket final : public Socket {
 public:
  // Use Create (the socket must know its own shared_ptr).
  NetlinkSocket(int type, int protocol, uint32_t flags, const Ucred& owner,
                NetNamespace& ns);
  ~NetlinkSocket() override;
  static KResult<SocketRef> Create(Caller& c, int type, int protocol,
                                   uint32_t flags);

  KResult<void> Bind(Caller& c, const SockAddr& addr) override;
  KResult<void> Connect(Caller& c, const SockAddr& addr) override;
  KResult<SockAddr> GetSockName(Caller& c) override;
  KResult<SockAddr> GetPeerName(Caller& c) override;
  KResult<size_t> SendMsg(Caller& c, MessageIo& data,
                          SendRequest& req) override;
  KResult<size_t> RecvMsg(Caller& c, MessageIo& data,
                          RecvRequest& req) override;
  KResult<void> SetSockOpt(Caller& c, int level, int name,
                           absl::Span<const uint8_t> val) override;
  KResult<size_t> GetSockOpt(Caller& c, int level, int name,
                             absl::Span<uint8_t> val) override;

  uint32_t Readiness(uint32_t mask) override;
  void EventRegister(vfs::WaitEntry* e, uint32_t mask) override;

  // A datagram from another socket (src_portid, to groups `group_mask`),
  // or from the kernel side (src 0). False if the queue is full.
  bool Deliver(std::string bytes, uint32_t src_portid, uint32_t group_mask,
               bool kernel) ABSL_LOCKS_EXCLUDED(mu_);

  // /proc/net/netlink's line of this socket.
  std::string ProcLine() ABSL_LOCKS_EXCLUDED(mu_);
  uint32_t portid() ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the socket listens to group number `group` (1-based).
  bool InGroup(uint32_t group) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Datagram {
    std::string bytes;
    uint32_t src_portid = 0;
    uint32_t group_mask = 0;  // netlink_group_mask(dst_group)
  };
  uint32_t ngroups() const;
  // Binds to the caller's tgid or a free negative id (netlink_autobind).
  KResult<void> AutobindLocked(Caller& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  KResult<void> InsertLocked(uint32_t portid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Room in the receive queue (sk_rmem_alloc <= sk_rcvbuf).
  bool HasRoomLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EnqueueLocked(Datagram d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // netlink_overrun.
  void OverrunLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next round of a running dump, when the queue has room for it.
  void ContinueDumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The kernel side of this socket's protocol, for `bytes` sent to port 0.
  void KernelReceive(Caller& c, absl::Span<const uint8_t> bytes)
      ABSL_LOCKS_EXCLUDED(mu_);

  NetNamespace& ns_;
  std::weak_ptr<NetlinkSocket> self_;
  vfs::WaitQueue queue_;

  absl::Mutex mu_;
  bool bound_ ABSL_GUARDED_BY(mu_) = false;
  uint32_t portid_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t groups_ ABSL_GUARDED_BY(mu_) = 0;  // bit g-1: group g
  uint32_t dst_portid_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t dst_group_ ABSL_GUARDED_BY(mu_) = 0;  // a group number, 0: none
  // NETLINK_* flags.
  bool pktinfo_ ABSL_GUARDED_BY(mu_) = false;
  bool broadcast_error_ ABSL_GUARDED_BY(mu_) = false;
  bool no_enobufs_ ABSL_GUARDED_BY(mu_) = false;
  bool cap_ack_ ABSL_GUARDED_BY(mu_) = false;
  bool ext_ack_ ABSL_GUARDED_BY(mu_) = false;
  bool strict_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Datagram> rx_ ABSL_GUARDED_BY(mu_);
  size_t rx_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // accounted (truesize-like)
  std::deque<std::string> dump_rest_ ABSL_GUARDED_BY(mu_);
  size_t max_recvmsg_len_ ABSL_GUARDED_BY(mu_) = 0;
  bool error_pending_ ABSL_GUARDED_BY(mu_) = false;  // POLLERR (SO_ERROR)
  uint32_t drops_ ABSL_GUARDED_BY(mu_) = 0;
};

// Registers AF_NETLINK with the socket layer and /proc/net/netlink.
void Register();

// /proc/net/netlink of `ns` (netlink_seq_show).
std::string ProcNetNetlink(NetNamespace& ns);

}  // namespace sandbox::net::netlink

#endif  // SENTRY_NET_NETLINK_NETLINK_H_
