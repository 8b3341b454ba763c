#include "sentry/net/hostinet/broker_client.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "broker/protocol/codec.h"
#include "broker/protocol/transport.h"
#include "sentry/kernel/log.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::net::hostinet {
namespace {

// How long a call waits for its reply. A connect's reply is immediate (the
// broker connects non-blocking); a resolve may ask several upstreams.
constexpr int64_t kConnectTimeoutNs = 10'000'000'000;
constexpr int64_t kResolveTimeoutNs = 30'000'000'000;

std::atomic<BrokerClient*> g_instance{nullptr};

}  // namespace

BrokerClient::BrokerClient(int fd, bool host_mode,
                           std::vector<PublishedPort> published)
    : fd_(fd),
      host_mode_(host_mode),
      published_(std::move(published)),
      stop_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  reader_ = std::thread([this] { ReadLoop(); });
}

BrokerClient::~BrokerClient() {
  uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof(one));
  if (reader_.joinable()) reader_.join();
  close(stop_fd_);
}

BrokerClient* BrokerClient::Instance() { return g_instance.load(); }

void BrokerClient::Start(int fd, bool host_mode,
                         std::vector<PublishedPort> published) {
  auto* c = new BrokerClient(fd, host_mode, std::move(published));
  delete g_instance.exchange(c);
}

void BrokerClient::Stop() { delete g_instance.exchange(nullptr); }

void BrokerClient::SetAcceptHandler(AcceptHandler h) {
  absl::MutexLock l(&mu_);
  on_accept_ = std::move(h);
}

bool BrokerClient::publishes(broker::Proto proto) const {
  return std::any_of(
      published_.begin(), published_.end(),
      [proto](const PublishedPort& p) { return p.proto == proto; });
}

void BrokerClient::SetUdpFlowHandler(AcceptHandler h) {
  absl::MutexLock l(&mu_);
  on_udp_flow_ = std::move(h);
}

KResult<void> BrokerClient::Call(Caller& c, broker::Message& req,
                                 broker::Message* reply, vfs::OwnedFd* fd,
                                 int64_t timeout_ns) {
  vfs::ThreadWaiter waiter;
  Pending p;
  p.waiter = &waiter;
  {
    absl::MutexLock l(&mu_);
    if (gone_) return kECONNABORTED;
    req.id = next_id_++;
    if (next_id_ == 0) next_id_ = 1;  // 0 is for unsolicited messages
    pending_[req.id] = &p;
  }
  auto forget = [&] {
    absl::MutexLock l(&mu_);
    pending_.erase(req.id);
  };
  if (int err = broker::SendMessage(fd_.get(), req); err != 0) {
    forget();
    return kECONNABORTED;
  }
  const int64_t deadline = vfs::MonotonicNowNs() + timeout_ns;
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      if (p.done) {
        pending_.erase(req.id);
        *reply = std::move(p.reply);
        if (fd != nullptr) *fd = std::move(p.fd);
        return OkResult();
      }
      if (gone_) {
        pending_.erase(req.id);
        return kECONNABORTED;
      }
    }
    switch (waiter.Sleep(c.io.interrupt_fd, deadline)) {
      case vfs::WakeReason::kNotified:
        break;
      case vfs::WakeReason::kInterrupted:
        // The reply, if it comes, is dropped (ReadLoop: unknown id).
        forget();
        return kERestartSys;
      case vfs::WakeReason::kTimedOut:
        forget();
        kernel::LogWarning("broker: no reply to a request in %d s",
                           timeout_ns / 1'000'000'000);
        return kETIMEDOUT;
    }
  }
}

KResult<HostConnection> BrokerClient::Connect(Caller& c, broker::Proto proto,
                                              const broker::Endpoint& dst,
                                              std::string_view name) {
  HostConnection conn;
  conn.hold = platform::HostFdHold::Take(1);
  if (!conn.hold.ok()) return kENFILE;
  broker::Message req;
  req.type = broker::Type::kConnect;
  req.proto = proto;
  req.endpoint = dst;
  req.name = std::string(name.substr(0, broker::kMaxName));
  broker::Message reply;
  TRY_VOID(Call(c, req, &reply, &conn.fd, kConnectTimeoutNs));
  if (reply.type != broker::Type::kConnectReply) return kECONNABORTED;
  if (reply.error != 0) {
    if (!reply.reason.empty()) {
      denials_.fetch_add(1);
      kernel::LogWarning("%s", reply.reason);
    }
    return Errno(reply.error);
  }
  if (!conn.fd.valid()) return kECONNABORTED;
  // The descriptor must be the socket asked for: a hostile broker could
  // send anything.
  int type = 0;
  socklen_t len = sizeof(type);
  if (getsockopt(conn.fd.get(), SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
      type != (proto == broker::Proto::kTcp ? SOCK_STREAM : SOCK_DGRAM)) {
    kernel::LogWarning(
        "broker: donated descriptor is not the socket asked "
        "for; dropped");
    return kECONNABORTED;
  }
  conn.in_progress = reply.in_progress;
  conn.local = reply.local;
  return conn;
}

KResult<Resolved> BrokerClient::Resolve(Caller& c, std::string_view name,
                                        int family) {
  broker::Message req;
  req.type = broker::Type::kResolve;
  if (name.size() > broker::kMaxName) return kEINVAL;
  req.name = std::string(name);
  req.family = family == AF_INET    ? broker::kFamilyInet
               : family == AF_INET6 ? broker::kFamilyInet6
                                    : 0;
  broker::Message reply;
  TRY_VOID(Call(c, req, &reply, nullptr, kResolveTimeoutNs));
  if (reply.type != broker::Type::kResolveReply) return kECONNABORTED;
  Resolved r;
  r.rcode = reply.rcode;
  r.ttl = reply.ttl;
  r.addresses = std::move(reply.addresses);
  return r;
}

void BrokerClient::Dispatch(broker::Message m, vfs::OwnedFd fd) {
  if (m.id != 0) {
    absl::MutexLock l(&mu_);
    auto it = pending_.find(m.id);
    if (it == pending_.end()) return;  // abandoned: the fd closes here
    Pending* p = it->second;
    p->reply = std::move(m);
    p->fd = std::move(fd);
    p->done = true;
    p->waiter->Callback(0);
    return;
  }
  const broker::Proto proto = m.type == broker::Type::kAccepted
                                  ? broker::Proto::kTcp
                                  : broker::Proto::kUdp;
  const bool published = std::any_of(
      published_.begin(), published_.end(), [&](const PublishedPort& p) {
        return p.proto == proto && p.guest_port == m.guest_port;
      });
  AcceptHandler h;
  {
    absl::MutexLock l(&mu_);
    h = proto == broker::Proto::kTcp ? on_accept_ : on_udp_flow_;
  }
  HostConnection conn;
  conn.hold = platform::HostFdHold::Take(1);
  if (!published || !h || !conn.hold.ok()) {
    dropped_.fetch_add(1);
    if (!published) {
      kernel::LogWarning(
          "broker: unsolicited message for guest port %d, "
          "which is not published; dropped",
          m.guest_port);
    }
    return;
  }
  conn.fd = std::move(fd);
  h(m.guest_port, m.endpoint, std::move(conn));
}

void BrokerClient::ReadLoop() {
  for (;;) {
    pollfd p[2] = {{fd_.get(), POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    int r = poll(p, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[1].revents != 0) return;
    broker::Received in;
    int err = broker::RecvMessage(fd_.get(), &in, MSG_DONTWAIT);
    if (err == EAGAIN || err == EINTR || err == EBADMSG) {
      if (err == EBADMSG) {
        kernel::LogWarning("broker: undecodable record dropped");
      }
      continue;
    }
    if (err != 0) break;  // ECONNRESET: the broker is gone
    Dispatch(std::move(in.message), vfs::OwnedFd(in.fd.release()));
  }
  kernel::LogWarning("broker: connection closed; no host network any more");
  absl::MutexLock l(&mu_);
  gone_ = true;
  for (auto& [id, p] : pending_) p->waiter->Callback(0);
}

}  // namespace sandbox::net::hostinet
