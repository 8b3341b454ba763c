// TCP inside the Sentry (SOCK_STREAM of AF_INET and AF_INET6).
//
// A connection between two sandbox sockets never becomes packets: it is a
// pair of Endpoints, each with a StreamBuffer of the bytes its peer wrote
// and it has not read, and the state machine that TCP makes visible
// (tcp_set_state's states as tcp_info, /proc/net/tcp and poll show them):
// the handshake completes at connect(2) when the listener's accept queue
// has room (else the connector waits in SYN_SENT in the listener's syn
// queue, as a dropped SYN that is retransmitted), a FIN is the peer
// buffer's end-of-stream, a RST is an error the peer's next call reads.
// On loopback every segment is acknowledged at once, so the states that
// wait for an ACK (FIN_WAIT1, LAST_ACK, CLOSING, SYN_RECV) are passed
// through, and TIME_WAIT is not kept (the closed socket is gone).
//
// The data path copies straight from the writer's MessageIo into the
// reader's StreamBuffer and from there into the reader's MessageIo (no
// bounce buffer), without holding the buffer's lock during the copies. The
// buffer holds at most the window: the receiver's SO_RCVBUF plus the
// sender's SO_SNDBUF (what Linux's autotuning lets be in flight on
// loopback) when the program set them, else a larger autotuned window
// (kAutoRcvWindow + kAutoSndWindow, within tcp_rmem[2] + tcp_wmem[2]).
// Wake-ups follow Linux's: data arrival notifies the reader's queue
// (sk_data_ready), and a reader that consumed wakes a writer only when the
// writer found the buffer full and a third of the window is free again
// (sk_stream_write_space); sleeping readers and writers register on the
// queue only while they sleep, so a transfer that never blocks pays no
// wake-up.
//
// The other end of an Endpoint is another Endpoint today. A connection to
// a non-loopback address (network mode "host", #21) will be a socket whose
// peer is a host descriptor donated by the broker: the branch point is
// TcpSocket::Connect (see ConnectRemote in connect.cc); such a socket hands
// its data calls to the host descriptor as hostunix's do.
//
// Locking:
//   TcpSocket::conn_mu_ (connect, listen, disconnect: one at a time)
//     -> Endpoint::mu_ -> InetSocket::ip_mu_ -> PortTable::mu_
//   Endpoint::rd_mu_ (one reader), Endpoint::wr_mu_ (one writer) ->
//     Endpoint::mu_ of self or peer (never both at once)
//   A listener's mu_ -> a connector's mu_ (establishing from the syn queue)
//   -> a new embryo's mu_. Two established peers' mu_ are never held
//   together: a call locks one, copies what it needs, unlocks.
//   Endpoint::mu_ -> vfs::WaitQueue's mutex (Notify).
#ifndef SENTRY_NET_TCP_TCP_SOCKET_H_
#define SENTRY_NET_TCP_TCP_SOCKET_H_

#include <stdint.h>

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/net/family.h"
#include "sentry/net/hostinet/host_stream.h"
#include "sentry/net/inet/address.h"
#include "sentry/net/inet/inet_socket.h"
#include "sentry/net/inet/mib.h"
#include "sentry/net/namespace.h"
#include "sentry/net/tcp/stream_buffer.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::net::tcp {

// Linux's TCP states (include/net/tcp_states.h): tcpi_state, /proc/net/tcp.
enum TcpState : uint8_t {
  kEstablished = 1,
  kSynSent = 2,
  kSynRecv = 3,
  kFinWait1 = 4,
  kFinWait2 = 5,
  kTimeWait = 6,
  kClose = 7,
  kCloseWait = 8,
  kLastAck = 9,
  kListen = 10,
  kClosing = 11,
};

// sk_shutdown bits.
inline constexpr uint8_t kRcvShutdown = 1;
inline constexpr uint8_t kSendShutdown = 2;
inline constexpr uint8_t kShutdownMask = 3;

// The autotuned window parts (see above).
inline constexpr int64_t kAutoRcvWindow = 1 << 20;
inline constexpr int64_t kAutoSndWindow = 256 << 10;

// The options of SOL_TCP a socket keeps (tcp_sock / inet_connection_sock
// fields), inherited by accepted sockets (sk_clone_lock).
struct TcpOptions {
  bool nodelay = false;   // TCP_NODELAY
  bool cork = false;      // TCP_CORK
  bool quickack = true;   // TCP_QUICKACK (icsk_ack.pingpong == 0)
  int keepidle = 0;       // TCP_KEEPIDLE (0: tcp_keepalive_time)
  int keepintvl = 0;      // TCP_KEEPINTVL (0: the sysctl's)
  int keepcnt = 0;        // TCP_KEEPCNT (0: the sysctl's)
  int user_timeout = 0;   // TCP_USER_TIMEOUT (ms)
  int defer_accept = 0;   // TCP_DEFER_ACCEPT (as retransmits)
  int maxseg = 0;         // TCP_MAXSEG (user_mss)
  int linger2 = 0;        // TCP_LINGER2 (0: tcp_fin_timeout)
  int syncnt = 0;         // TCP_SYNCNT (0: tcp_syn_retries)
  int window_clamp = 0;   // TCP_WINDOW_CLAMP
  int notsent_lowat = 0;  // TCP_NOTSENT_LOWAT (0: none)
  int fastopen = 0;       // TCP_FASTOPEN (qlen)
  bool fastopen_connect = false;
  bool thin_linear = false;  // TCP_THIN_LINEAR_TIMEOUTS
  bool autocork = true;
  int tx_delay = 0;
  std::string congestion = "cubic";  // TCP_CONGESTION
};

class Endpoint;
using EndpointRef = std::shared_ptr<Endpoint>;
class TcpSocket;

// One side of a connection, or a listener (Linux's tcp_sock). Lives apart
// from its file so that a listener's accept queue and the peer can hold it.
class Endpoint : public std::enable_shared_from_this<Endpoint> {
 public:
  explicit Endpoint(NetNamespace& ns) : netns_(ns), mib_(inet::MibOf(ns)) {}
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  NetNamespace& netns() const { return netns_; }

  // ---- Used by the socket's halves (connect.cc, data.cc, options.cc). ----
  NetNamespace& netns_;
  inet::Mib& mib_;  // the namespace's counters (looked up once)
  absl::Mutex rd_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // one reader
  absl::Mutex wr_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // one writer
  mutable absl::Mutex mu_;

  TcpState state_ ABSL_GUARDED_BY(mu_) = kClose;
  uint8_t shutdown_ ABSL_GUARDED_BY(mu_) = 0;
  int err_ ABSL_GUARDED_BY(mu_) = 0;        // sk_err
  bool done_ ABSL_GUARDED_BY(mu_) = false;  // SOCK_DONE: peer FIN/closed
  bool dead_ ABSL_GUARDED_BY(mu_) = false;  // the file is gone (orphan)
  EndpointRef peer_ ABSL_GUARDED_BY(mu_);
  // The connection's addresses as this side sees them (accept, names).
  inet::InetAddr local_ ABSL_GUARDED_BY(mu_);
  inet::InetAddr remote_ ABSL_GUARDED_BY(mu_);

  // What the peer wrote (sk_receive_queue), its window, and whether a
  // writer found it full (SOCK_NOSPACE on the writer).
  StreamBuffer rx_ ABSL_GUARDED_BY(mu_);
  int64_t window_ ABSL_GUARDED_BY(mu_) = kAutoRcvWindow + kAutoSndWindow;
  bool writer_blocked_ ABSL_GUARDED_BY(mu_) = false;
  // Urgent data (tp->urg_data, urg_seq): the byte at stream offset
  // urg_seq_ of rx_ is urgent; urg_valid_ until read with MSG_OOB
  // (TCP_URG_VALID), urg_read_ after (TCP_URG_READ).
  bool urg_valid_ ABSL_GUARDED_BY(mu_) = false;
  bool urg_read_ ABSL_GUARDED_BY(mu_) = false;
  uint8_t urg_byte_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t urg_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // Counters for tcp_info and SIOCOUTQ.
  uint64_t bytes_sent_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t segs_out_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t segs_in_ ABSL_GUARDED_BY(mu_) = 0;

  // A listener's queues: connections ready for accept(2) (the server
  // sides, established), and connectors waiting for room (their SYN was
  // dropped: sk_acceptq_is_full).
  std::deque<EndpointRef> accept_q_ ABSL_GUARDED_BY(mu_);
  // Connections of a published port (runsc do --publish) for this
  // listener: host connections the broker accepted (hostinet/tcp_host.h),
  // accept(2) makes them HostTcpSockets. Counted in the backlog.
  struct HostPending {
    std::shared_ptr<hostinet::HostStream> stream;
    SockAddr local;
  };
  std::deque<HostPending> host_accept_q_ ABSL_GUARDED_BY(mu_);
  std::deque<std::weak_ptr<Endpoint>> syn_q_ ABSL_GUARDED_BY(mu_);
  int64_t backlog_ ABSL_GUARDED_BY(mu_) = 0;  // sk_max_ack_backlog
  // The listener a SYN_SENT connector waits on.
  std::weak_ptr<Endpoint> waiting_on_ ABSL_GUARDED_BY(mu_);
  // The listener's socket family and options, for accepted sockets.
  TcpOptions opts_ ABSL_GUARDED_BY(mu_);
  // The window parts this side's file asked for (0: autotuned): the
  // receive part of its rx_ window, the send part of its peer's.
  std::atomic<int64_t> rcv_limit_{0};
  std::atomic<int64_t> snd_limit_{0};
  // The owner uid and socket inode, for /proc rows of embryos.
  TcpSocket* sock_ ABSL_GUARDED_BY(mu_) = nullptr;

  // The readers, writers, poll and epoll of this side (sk_sleep).
  vfs::WaitQueue wq_;

  // Whether a reader needing `target` bytes (and the urgent mark) has
  // them (tcp_stream_is_readable).
  bool ReadableLocked(size_t target, bool oobinline) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Takes sk_err (sock_error).
  int TakeErrLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int e = err_;
    err_ = 0;
    return e;
  }
  // tcp_done: CLOSE, both directions shut, peer dropped.
  void DoneLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // tcp_reset as the peer's RST arrives: sk_err by state, then tcp_done.
  void ResetLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // tcp_fin: the peer's FIN.
  void FinLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

// The file description of a TCP socket.
class TcpSocket final : public inet::InetSocket {
 public:
  TcpSocket(int family, uint32_t flags, const Ucred& owner, NetNamespace& ns);
  TcpSocket(int family, uint32_t flags, const Ucred& owner, EndpointRef ep);
  ~TcpSocket() override;

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

  // read/write without the syscall layer's bounce buffer (direct_io.cc).
  bool CanDirectIo(const platform::MemoryFile&) const override { return true; }
  KResult<size_t> ReadDirect(vfs::IoContext& ctx, vfs::GuestIo& dst,
                             int64_t offset) override;
  KResult<size_t> WriteDirect(vfs::IoContext& ctx, vfs::GuestIo& src,
                              int64_t offset) override;

  uint32_t Readiness(uint32_t mask) override;
  // A host connection (--network=host) polls its host descriptor.
  int HostPollFd() const override {
    hostinet::HostStream* h = host();
    return h != nullptr ? h->fd() : -1;
  }
  // Queues a published port's connection on this listener; false when
  // it is not listening or its backlog is full.
  bool EnqueueHost(std::shared_ptr<hostinet::HostStream> conn,
                   const SockAddr& local);
  void EventRegister(vfs::WaitEntry* e, uint32_t mask) override {
    ep_->wq_.Register(e, mask);
  }

  inet::ProcRow proc_row() const override;

 private:
  // Socket states of struct socket (SS_*), for connect(2)'s answers.
  enum class SockState : uint8_t { kUnconnected, kConnecting, kConnected };

  KResult<void> Disconnect(Caller& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(conn_mu_);
  KResult<void> ConnectLoopback(Caller& c, const inet::InetAddr& remote,
                                bool nonblock)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(conn_mu_);
  // Waits while the connection is in SYN_SENT (inet_wait_for_connect).
  KResult<void> WaitConnected(Caller& c)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(conn_mu_);
  KResult<size_t> RecvUrgent(MessageIo& data, RecvRequest& req);
  bool bound_explicitly() const;
  // The window of the peer's buffer this socket writes into.
  int64_t SendWindow(const Endpoint& peer) const;
  KResult<void> SetTcp(Caller& c, int name, absl::Span<const uint8_t> val);
  KResult<size_t> GetTcp(Caller& c, int name, absl::Span<uint8_t> val);
  // Releases the connection as close(2) does (tcp_close).
  void Close();
  // The host connection (network mode "host"): set once by connect(2)
  // to a destination outside the sandbox (hostinet::TcpGoesToHost);
  // every data call then goes to it.
  hostinet::HostStream* host() const {
    return host_.load(std::memory_order_acquire);
  }
  KResult<void> ConnectHost(Caller& c, const inet::InetAddr& remote,
                            bool nonblock)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(conn_mu_);

  const EndpointRef ep_;
  absl::Mutex conn_mu_;
  SockState ss_ ABSL_GUARDED_BY(conn_mu_) = SockState::kUnconnected;
  std::shared_ptr<hostinet::HostStream> host_owner_ ABSL_GUARDED_BY(conn_mu_);
  std::atomic<hostinet::HostStream*> host_{nullptr};

  friend class Listener;
};

// hostinet::StartPublishing's enqueue: `listener` is a TcpSocket.
bool EnqueueHostConnection(Socket& listener,
                           std::shared_ptr<hostinet::HostStream> conn,
                           const SockAddr& local);

// Makes a socket (socket(2) of SOCK_STREAM/IPPROTO_TCP).
KResult<SocketRef> NewSocket(Caller& c, int family, uint32_t flags);

// Establishes `connector` with `listener` (which has room): makes the
// server side, queues it for accept and wakes the listener. Both locked.
void EstablishLocked(Endpoint& listener, Endpoint& connector)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(listener.mu_, connector.mu_);

}  // namespace sandbox::net::tcp

#endif  // SENTRY_NET_TCP_TCP_SOCKET_H_
