// BrokerClient: the Sentry's side of the broker protocol
// (docs/broker-protocol.md, broker/protocol): the only way the Sentry gets
// a host Internet socket. The Sentry makes none itself (its seccomp
// allowlist has no socket, connect or bind); the broker, a separate
// confined process, makes them, checks them against the egress policy, and
// donates them by SCM_RIGHTS. The Sentry then does I/O on the donated
// descriptor only (host_stream.h).
//
// Addresses are the protocol's (broker::Endpoint); convert.h maps them to
// and from inet::InetAddr.
//
// Requests (Connect, Resolve) are sent by the calling task's thread; a
// reader thread receives every record: a reply wakes the caller waiting
// for its id (a vfs::ThreadWaiter, so the wait is interruptible: a signal
// abandons the call with ERESTARTSYS, and a reply that comes later is
// dropped, its descriptor closed), an unsolicited message (a connection or
// a UDP flow of a published port) goes to the handler the protocol set
// (SetAcceptHandler, SetUdpFlowHandler), if its guest port is one that
// runsc published (else it is dropped: the broker is not trusted either).
//
// Denials: the broker's reason is logged (kernel::LogWarning: the --log
// file, JSON with --log-format=json), one line per denied connect, and the
// caller gets ECONNREFUSED (TCP) or EPERM (UDP).
//
// Lifetime: boot starts one (Start) when the BootSpec names a broker fd
// and stops it (Stop) before the kernel goes. Instance() is null without
// a broker (--network=none and no --publish).
//
// Thread-safety: every method may be called from any thread. mu_ guards
// the pending calls and the handlers; it is a leaf (handlers run without
// it).
#ifndef SENTRY_NET_HOSTINET_BROKER_CLIENT_H_
#define SENTRY_NET_HOSTINET_BROKER_CLIENT_H_

#include <stdint.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "broker/protocol/messages.h"
#include "platform/host_fds.h"
#include "sentry/base/result.h"
#include "sentry/net/socket.h"
#include "sentry/vfs/host_socket.h"

namespace sandbox::net::hostinet {

// A donated host socket and what the broker said about it.
struct HostConnection {
  vfs::OwnedFd fd;
  platform::HostFdHold hold;  // its FD of the Sentry's budget
  bool in_progress = false;   // TCP connect(2) said EINPROGRESS
  broker::Endpoint local;     // the host socket's own address
};

struct Resolved {
  broker::Rcode rcode = broker::Rcode::kNoError;
  std::vector<broker::Ip> addresses;
  uint32_t ttl = 0;
};

// A published port, as the BootSpec lists it.
struct PublishedPort {
  broker::Proto proto = broker::Proto::kTcp;
  uint16_t guest_port = 0;
};

class BrokerClient {
 public:
  // Handlers of the broker's unsolicited messages: a TCP connection to
  // guest port `port` from host `peer`, or a UDP flow (a SOCK_SEQPACKET
  // descriptor, one datagram a record) from `peer` to `port`. They run on
  // the reader thread and must not block; `fd` is theirs.
  using AcceptHandler = std::function<void(
      uint16_t port, const broker::Endpoint& peer, HostConnection conn)>;

  // Takes `fd` (the Sentry's end of the connection) and starts the reader.
  BrokerClient(int fd, bool host_mode, std::vector<PublishedPort> published);
  ~BrokerClient();
  BrokerClient(const BrokerClient&) = delete;
  BrokerClient& operator=(const BrokerClient&) = delete;

  // The process's client (null: no broker). Start installs one; Stop ends
  // its reader and removes it (before the kernel is destroyed).
  static BrokerClient* Instance();
  static void Start(int fd, bool host_mode,
                    std::vector<PublishedPort> published);
  static void Stop();

  // --network=host: non-loopback destinations go through Connect.
  bool host_mode() const { return host_mode_; }
  // Whether some port of `proto` is published.
  bool publishes(broker::Proto proto) const;

  // A host socket of `proto` (TCP: connect started; UDP: connected) to
  // `dst`; `name` is the DNS name it came from, if known (for the log).
  // ECONNREFUSED/EPERM on a denial (logged), the host's errno otherwise
  // (ENETUNREACH...), ENFILE past the FD budget, ECONNABORTED when the
  // broker is gone, ERESTARTSYS when interrupted.
  KResult<HostConnection> Connect(Caller& c, broker::Proto proto,
                                  const broker::Endpoint& dst,
                                  std::string_view name = {});
  // Resolves `name` (family 0, AF_INET or AF_INET6) through the broker:
  // REFUSED for a name the policy does not allow.
  KResult<Resolved> Resolve(Caller& c, std::string_view name, int family);

  void SetAcceptHandler(AcceptHandler h) ABSL_LOCKS_EXCLUDED(mu_);
  void SetUdpFlowHandler(AcceptHandler h) ABSL_LOCKS_EXCLUDED(mu_);

  // Counters (tests, diagnostics).
  uint64_t denials() const { return denials_.load(); }
  uint64_t dropped() const { return dropped_.load(); }

 private:
  struct Pending {
    vfs::ThreadWaiter* waiter = nullptr;
    bool done = false;
    broker::Message reply;
    vfs::OwnedFd fd;
  };
  // Sends `req` (its id set here) and waits for the reply.
  KResult<void> Call(Caller& c, broker::Message& req, broker::Message* reply,
                     vfs::OwnedFd* fd, int64_t timeout_ns);
  void ReadLoop();
  void Dispatch(broker::Message m, vfs::OwnedFd fd);

  const vfs::OwnedFd fd_;
  const bool host_mode_;
  const std::vector<PublishedPort> published_;
  const int stop_fd_;  // eventfd: the reader's stop request

  absl::Mutex mu_;
  uint32_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint32_t, Pending*> pending_ ABSL_GUARDED_BY(mu_);
  bool gone_ ABSL_GUARDED_BY(mu_) = false;  // the broker closed
  AcceptHandler on_accept_ ABSL_GUARDED_BY(mu_);
  AcceptHandler on_udp_flow_ ABSL_GUARDED_BY(mu_);

  std::atomic<uint64_t> denials_{0};
  std::atomic<uint64_t> dropped_{0};
  std::thread reader_;
};

}  // namespace sandbox::net::hostinet

#endif  // SENTRY_NET_HOSTINET_BROKER_CLIENT_H_
