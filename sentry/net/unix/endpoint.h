// The state of one AF_UNIX socket (Linux's struct unix_sock / struct sock)
// and its file description (UnixSocket, struct socket + struct file).
//
// An Endpoint lives apart from its file so that peers, queued messages and
// the listener's accept queue can refer to it without keeping the file
// open: a connection made by connect(2) is an Endpoint (Linux's embryo)
// until accept(2) gives it a file. When the file's last reference goes,
// the Endpoint is released (unix_release_sock): it leaves the name tables,
// its peer sees the hang-up, its queue is flushed.
//
// Messages (Linux's skbs): a datagram or SEQPACKET record is one Message;
// a stream write is cut into Messages of at most kMaxStreamChunk bytes,
// copied straight from the caller's MessageIo into the Message's buffer
// and out of it into the reader's. Each Message charges its sender's
// wmem_ with its truesize until it is consumed (sock_wfree), which is what
// SO_SNDBUF limits; a listener's queue holds one Message per pending
// connection, carrying the embryo.
//
// Locking (see gc.h for the collector's):
//   Endpoint::bind_mu_ (bind, autobind; Linux's bindlock)
//     -> the file system's locks (creating a path node: tree_mu, which
//        bind holds while it checks the socket is unbound, -> mu_)
//     -> the name tables' mutexes (registry.h; leaves)
//   Endpoint::io_mu_ (one reader at a time; Linux's iolock; released while
//   the reader sleeps)
//     -> Endpoint::mu_ (the state; unix_state_lock)
//   Two Endpoints' mu_ (connect, datagram send and connect): lower address
//   first (LockPair). Otherwise an Endpoint's mu_ is not held while
//   another's is taken.
//   Endpoint::mu_ -> vfs::WaitQueue's own mutex (Notify) -> callbacks
//   Endpoint::mu_ -> net::Socket::opt_mu_ (reading the receiver's options)
// Descriptions are never dropped with any of these held (gc.h).
#ifndef SENTRY_NET_UNIX_ENDPOINT_H_
#define SENTRY_NET_UNIX_ENDPOINT_H_

#include <stdint.h>

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/net/hostunix/host_endpoint.h"
#include "sentry/net/message.h"
#include "sentry/net/namespace.h"
#include "sentry/net/socket.h"
#include "sentry/net/unix/address.h"
#include "sentry/net/wait.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::net::unix {

class Endpoint;
class UnixSocket;
struct HostPeer;
using EndpointRef = std::shared_ptr<Endpoint>;

// sk_state as af_unix uses it.
enum class State : uint8_t { kClose, kListen, kEstablished };
// sk_shutdown bits.
inline constexpr uint8_t kRcvShutdown = 1;
inline constexpr uint8_t kSendShutdown = 2;
inline constexpr uint8_t kShutdownMask = 3;

// The largest stream Message: SKB_MAX_HEAD(0) + UNIX_SKB_FRAGS_SZ.
inline constexpr size_t kMaxStreamChunk = 3776 + 32768;
// overflowuid/overflowgid: the ids of a message sent without credentials.
inline constexpr uint32_t kOverflowId = 65534;

// The truesize a Message of `len` bytes charges (Linux's skb truesize: the
// sk_buff, the shared info and the data as allocated).
int64_t TrueSize(size_t len);

// One queued message.
struct Message {
  Message() = default;
  ~Message();  // un-charges the sender (rights must have been taken out)
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;

  size_t remaining() const { return len - consumed; }

  std::unique_ptr<uint8_t[]> data;
  size_t len = 0;
  size_t consumed = 0;  // stream: bytes already read (UNIXCB.consumed)
  int64_t truesize = 0;
  EndpointRef sender;          // charged with truesize; its name is msg_name
  std::optional<Ucred> creds;  // UNIXCB pid/uid/gid; none: not attached
  std::vector<vfs::FileRef> rights;  // in flight (gc.h)
  uint32_t rights_uid = 0;           // who sent them (per-user count)
  EndpointRef embryo;   // a listener's queue: the pending connection
  bool peeked = false;  // a zero-length datagram seen by MSG_PEEK
};
using MessagePtr = std::unique_ptr<Message>;

class Endpoint : public std::enable_shared_from_this<Endpoint> {
 public:
  Endpoint(int type, NetNamespace& ns);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  int type() const { return type_; }
  NetNamespace& netns() const { return netns_; }
  bool connection_based() const { return type_ != SOCK_DGRAM; }

  // unix_release_sock: called once, when the file's last reference goes
  // (or by the listener's release for a connection never accepted:
  // `embryo`).
  void Release(bool embryo);

  // The bound address or null (for getsockname and msg_name).
  std::shared_ptr<const Address> address() const ABSL_LOCKS_EXCLUDED(mu_);

  // Un-charges `truesize` (a Message of this sender was consumed) and, once
  // the socket is writable again (a quarter of SO_SNDBUF or less in
  // flight), wakes writers (unix_write_space).
  void WmemFree(int64_t truesize);

  // ---- For the socket operations (stream.cc, dgram.cc, socket.cc). ----
  const int type_;
  NetNamespace& netns_;

  absl::Mutex bind_mu_;
  absl::Mutex io_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;

  State state_ ABSL_GUARDED_BY(mu_) = State::kClose;
  uint8_t shutdown_ ABSL_GUARDED_BY(mu_) = 0;
  int err_ ABSL_GUARDED_BY(mu_) = 0;        // sk_err (ECONNRESET)
  bool dead_ ABSL_GUARDED_BY(mu_) = false;  // SOCK_DEAD: released
  EndpointRef peer_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const Address> addr_ ABSL_GUARDED_BY(mu_);
  // The receive queue (a listener's: pending connections). Only readers
  // (holding io_mu_), a release and the collector remove Messages, so a
  // reader holding io_mu_ may use a Message without mu_.
  std::deque<MessagePtr> queue_ ABSL_GUARDED_BY(mu_);
  // sk_max_ack_backlog: listen's backlog, else max_dgram_qlen. The queue is
  // full when it holds more than this (unix_recvq_full).
  int64_t backlog_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<Ucred> peercred_ ABSL_GUARDED_BY(mu_);  // SO_PEERCRED
  int32_t peek_off_ ABSL_GUARDED_BY(mu_) = -1;          // SO_PEEK_OFF
  // The file, or null (an embryo, or released). Valid under mu_.
  UnixSocket* sock_ ABSL_GUARDED_BY(mu_) = nullptr;
  // The file, for the collector's use count. Set once before it is shared.
  std::weak_ptr<vfs::FileDescription> file_;
  // Datagram senders whose poll saw this queue full
  // (unix_dgram_peer_wake_me): woken when a datagram leaves it.
  std::vector<std::weak_ptr<Endpoint>> room_waiters_ ABSL_GUARDED_BY(mu_);

  // sk_wmem_alloc: truesize of this socket's Messages still queued.
  std::atomic<int64_t> wmem_{0};
  // The file's SO_SNDBUF, for WmemFree (which may run under another
  // Endpoint's mu_, where the file's options are out of reach).
  std::atomic<int64_t> sndbuf_{0};

  // sk_sleep: readers, writers waiting for wmem, poll and epoll.
  vfs::WaitQueue wq_;
  // u->peer_wait: connectors and datagram senders waiting for this queue
  // to drain.
  vfs::WaitQueue peer_wait_;

  // The collector's (gc.cc, under gc mu).
  int64_t inflight_ = 0;

  bool QueueFullLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return static_cast<int64_t>(queue_.size()) > backlog_;
  }
  // Wakes what waits for room in this queue (after a Message left it).
  void RoomLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes and clears sk_err (sock_error).
  int TakeErrLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int e = err_;
    err_ = 0;
    return e;
  }
};

// A new Endpoint of `type` in `ns`, listed for /proc/net/unix.
EndpointRef NewEndpoint(int type, NetNamespace& ns);

// Locks two Endpoints' mu_ (lower address first; once if the same). A
// scoped capability: the analysis sees both held for its lifetime.
class ABSL_SCOPED_LOCKABLE LockPair {
 public:
  LockPair(Endpoint& a, Endpoint& b) ABSL_EXCLUSIVE_LOCK_FUNCTION(a.mu_, b.mu_);
  ~LockPair() ABSL_UNLOCK_FUNCTION();
  LockPair(const LockPair&) = delete;
  LockPair& operator=(const LockPair&) = delete;

 private:
  absl::Mutex* first_;
  absl::Mutex* second_;  // null when a == b
};

// The file description of an AF_UNIX socket.
class UnixSocket final : public Socket {
 public:
  UnixSocket(EndpointRef ep, uint32_t flags, const Ucred& owner);
  ~UnixSocket() override;

  // A new socket file on `ep` (socket, socketpair, accept).
  static std::shared_ptr<UnixSocket> Make(EndpointRef ep, uint32_t flags,
                                          const Ucred& owner);

  const EndpointRef& endpoint() const { return ep_; }

  KResult<void> Bind(Caller& c, const SockAddr& addr) override;
  KResult<void> Listen(Caller& c, int backlog) override;
  KResult<vfs::FileRef> Accept(Caller& c, uint32_t flags,
                               SockAddr* peer) override;
  KResult<void> Connect(Caller& c, const SockAddr& addr) override;
  KResult<SockAddr> GetSockName(Caller& c) override;
  KResult<SockAddr> GetPeerName(Caller& c) override;
  KResult<void> Shutdown(Caller& c, int how) override;
  KResult<size_t> SendMsg(Caller& c, MessageIo& data,
                          SendRequest& req) override;
  KResult<size_t> RecvMsg(Caller& c, MessageIo& data,
                          RecvRequest& req) override;
  KResult<void> SetSockOpt(Caller& c, int level, int name,
                           absl::Span<const uint8_t> val) override;
  KResult<size_t> GetSockOpt(Caller& c, int level, int name,
                             absl::Span<uint8_t> val) override;
  KResult<uint64_t> SocketIoctl(Caller& c, uint32_t cmd, uint64_t arg) override;

  uint32_t Readiness(uint32_t mask) override;
  void EventRegister(vfs::WaitEntry* e, uint32_t mask) override {
    ep_->wq_.Register(e, mask);
  }
  // A socket on the host (below): its host fd, whose readiness is the
  // socket's; -1 otherwise.
  int HostPollFd() const override;

  // The host socket this socket became, or null: bind(2) made its node in a
  // ":uds" mount, or connect(2) reached a host socket there
  // (sentry/net/hostunix). From then on every socket operation is the host
  // endpoint's. Set once (never cleared) and read without a lock.
  hostunix::HostEndpoint* host() const {
    return host_.load(std::memory_order_acquire);
  }

  // Used by the type-specific halves.
  KResult<void> Autobind();
  KResult<void> StreamConnect(Caller& c, const SockAddr& addr);
  KResult<void> DgramConnect(Caller& c, const SockAddr& addr);
  KResult<size_t> StreamSend(Caller& c, MessageIo& data, SendRequest& req);
  KResult<size_t> StreamRecv(Caller& c, MessageIo& data, RecvRequest& req);
  KResult<size_t> DgramSend(Caller& c, MessageIo& data, SendRequest& req);
  KResult<size_t> DgramRecv(Caller& c, MessageIo& data, RecvRequest& req);
  uint32_t StreamPoll();
  uint32_t DgramPoll(uint32_t mask);
  // Makes this socket the host endpoint's (once: false if it already is
  // one's).
  bool SetHost(std::shared_ptr<hostunix::HostEndpoint> h);
  // connect(2) to the host socket node `hp` found for `name`.
  KResult<void> HostConnect(Caller& c, const Name& name, HostPeer& hp,
                            bool nonblock, int64_t deadline);

 private:
  const EndpointRef ep_;
  absl::Mutex host_mu_;  // leaf; serializes SetHost
  std::shared_ptr<hostunix::HostEndpoint> host_owner_ ABSL_GUARDED_BY(host_mu_);
  std::atomic<hostunix::HostEndpoint*> host_{nullptr};
};

// Adds `sender` (once) to the senders woken when `receiver`'s queue
// drains.
void AddRoomWaiterLocked(Endpoint& receiver, const EndpointRef& sender)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(receiver.mu_);

// The description as a unix socket, or null.
UnixSocket* AsUnixSocket(vfs::FileDescription* f);

// ---- Helpers shared by stream.cc and dgram.cc (socket.cc). ----

// The ids a message carries when credentials are attached for the
// receiver (maybe_add_creds): the caller's tgid and real uid and gid.
Ucred SenderCreds(const Caller& c);
// RLIMIT_NOFILE and privilege of the caller for AttachRights.
uint64_t NofileLimit(const Caller& c);
bool MayExceedInflight(const Caller& c);
// Whether a sender `self` must attach its credentials to a message for
// `other` (unix_passcred_enabled). Requires other.mu_.
bool PasscredEnabledLocked(UnixSocket& self, Endpoint& other)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(other.mu_);

// Sleeps on a socket's queue (sentry/net/wait.h).
using Waiter = QueueWaiter;

// Counters of live unix sockets (for tests and leak checks).
int64_t LiveEndpoints();  // Endpoints not yet destroyed
int64_t OpenEndpoints();  // Endpoints not yet released

}  // namespace sandbox::net::unix

#endif  // SENTRY_NET_UNIX_ENDPOINT_H_
