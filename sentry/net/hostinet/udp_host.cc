#include "sentry/net/hostinet/udp_host.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <list>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "sentry/net/hostinet/broker_client.h"
#include "sentry/net/hostinet/convert.h"
#include "sentry/net/inet/ports.h"
#include "sentry/net/udp/datagram.h"
#include "sentry/net/udp/dgram_socket.h"

namespace sandbox::net::hostinet {
namespace {

// One host UDP socket: guest `local` (its bound port) to `peer`; or, when
// `published`, a flow the broker relayed in from host `peer` to guest port
// local.port (local.ip the wildcard).
struct Flow {
  inet::InetAddr local;
  inet::InetAddr peer;
  bool v4 = true;
  bool published = false;
  vfs::OwnedFd fd;
  platform::HostFdHold hold;
};

class UdpHost {
 public:
  explicit UdpHost(NetNamespace& ns)
      : ns_(ns), wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    reader_ = std::thread([this] { Run(); });
  }
  ~UdpHost() {
    stop_ = true;
    Wake();
    reader_.join();
    close(wake_);
  }

  KResult<size_t> Send(Caller& c, udp::DgramSocket& s,
                       const inet::InetAddr& dst, MessageIo& data) {
    BrokerClient* b = BrokerClient::Instance();
    if (b == nullptr) return kENETUNREACH;
    // The guest socket needs its port (inet_autobind) for the answers.
    TRY(inet::InetAddr local, s.AutoBind(c));
    TRY(std::vector<uint8_t> payload, Payload(dst, data));
    int fd = Find(local.port, dst, /*published=*/false);
    if (fd < 0) {
      TRY(HostConnection conn,
          b->Connect(c, broker::Proto::kUdp, ToEndpoint(dst)));
      fd = Add(local, dst, std::move(conn));
    }
    return SendOn(fd, payload);
  }

  // HostPath::reply: a datagram from guest port `port` to `dst` through
  // the published flow from `dst` to that port, if there is one.
  bool Reply(uint16_t port, const inet::InetAddr& dst, MessageIo& data,
             KResult<size_t>* sent) {
    if (published_flows_.load(std::memory_order_acquire) == 0) return false;
    const int fd = Find(port, dst, /*published=*/true);
    if (fd < 0) return false;
    KResult<std::vector<uint8_t>> payload = Payload(dst, data);
    *sent = payload.ok() ? SendOn(fd, *payload) : payload.error();
    return true;
  }

  // The broker's flow from host `peer` to guest port `port`.
  void AddPublished(uint16_t port, const inet::InetAddr& peer,
                    HostConnection conn) {
    inet::InetAddr local;
    local.ip = peer.ip.is_v4() ? inet::IpAddr::AnyV4() : inet::IpAddr::AnyV6();
    local.port = port;
    (void)Add(local, peer, std::move(conn), /*published=*/true);
  }

 private:
  // The datagram's bytes: EMSGSIZE past UDP's limit for dst's family,
  // EFAULT for a short copy (udp_sendmsg's checks).
  static KResult<std::vector<uint8_t>> Payload(const inet::InetAddr& dst,
                                               MessageIo& data) {
    const size_t len = data.size();
    if (len > (dst.ip.is_v4() ? udp::kMaxUdp4Payload : udp::kMaxUdp6Payload)) {
      return kEMSGSIZE;
    }
    std::vector<uint8_t> payload(len);
    if (len > 0) {
      TRY(size_t got, data.CopyIn(0, absl::MakeSpan(payload)));
      if (got != len) return kEFAULT;
    }
    return payload;
  }
  // One datagram on a connected host socket or a flow (one record).
  static KResult<size_t> SendOn(int fd, const std::vector<uint8_t>& payload) {
    iovec iov = {const_cast<uint8_t*>(payload.data()), payload.size()};
    msghdr mh = {};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    ssize_t n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
    // A full host buffer drops the datagram, as a full device queue does.
    if (n < 0 && errno != EAGAIN && errno != ECONNREFUSED) return Errno(errno);
    return payload.size();
  }
  // The flow of guest port `port` to `peer` (a published one or a host
  // socket the guest made), or -1; it becomes the most recently used.
  int Find(uint16_t port, const inet::InetAddr& peer, bool published) {
    absl::MutexLock l(&mu_);
    for (auto it = flows_.begin(); it != flows_.end(); ++it) {
      if (it->published == published && it->local.port == port &&
          it->peer == peer) {
        flows_.splice(flows_.end(), flows_, it);  // most recently used
        return flows_.back().fd.get();
      }
    }
    return -1;
  }
  int Add(const inet::InetAddr& local, const inet::InetAddr& peer,
          HostConnection conn, bool published = false) {
    absl::MutexLock l(&mu_);
    if (flows_.size() >= kMaxHostUdp) PopOldestLocked();
    Flow f;
    f.local = local;
    f.peer = peer;
    f.v4 = peer.ip.is_v4();
    f.published = published;
    if (published) published_flows_.fetch_add(1, std::memory_order_release);
    f.fd = std::move(conn.fd);
    f.hold = std::move(conn.hold);
    flows_.push_back(std::move(f));
    const int fd = flows_.back().fd.get();
    Wake();
    return fd;
  }
  void Wake() {
    uint64_t one = 1;
    (void)!write(wake_, &one, sizeof(one));
  }
  void Run() {
    std::vector<uint8_t> buf(65536);
    while (!stop_) {
      std::vector<pollfd> pfds = {{wake_, POLLIN, 0}};
      {
        absl::MutexLock l(&mu_);
        for (const Flow& f : flows_) pfds.push_back({f.fd.get(), POLLIN, 0});
      }
      if (poll(pfds.data(), pfds.size(), -1) < 0) continue;
      if (pfds[0].revents != 0) {
        uint64_t v;
        (void)!read(wake_, &v, sizeof(v));
      }
      for (size_t i = 1; i < pfds.size(); ++i) {
        if (pfds[i].revents == 0) continue;
        Receive(pfds[i].fd, buf);
      }
    }
  }
  void PopOldestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (flows_.front().published) {
      published_flows_.fetch_sub(1, std::memory_order_release);
    }
    flows_.pop_front();
  }
  // Reads what `fd` has and delivers it; drops a host socket's flow when
  // its guest socket is gone (a published flow stays: a datagram to a port
  // nobody binds is dropped, the next may find one).
  void Receive(int fd, std::vector<uint8_t>& buf) {
    inet::InetAddr local, peer;
    bool v4 = true, published = false;
    {
      absl::MutexLock l(&mu_);
      bool found = false;
      for (const Flow& f : flows_) {
        if (f.fd.get() == fd) {
          local = f.local;
          peer = f.peer;
          v4 = f.v4;
          published = f.published;
          found = true;
        }
      }
      if (!found) return;
    }
    for (int k = 0; k < 64; ++k) {
      // recvmsg, not recv: the Sentry's allowlist has no recvfrom.
      iovec iov = {buf.data(), buf.size()};
      msghdr mh = {};
      mh.msg_iov = &iov;
      mh.msg_iovlen = 1;
      ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EAGAIN) return;
        if (published) {  // the broker closed its end
          Drop(fd);
          return;
        }
        continue;  // ECONNREFUSED from a port unreachable: skip it
      }
      if (n == 0 && published) {
        // A zero-length record, or the broker's end closed (POLLHUP).
        pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP)) {
          Drop(fd);
          return;
        }
      }
      inet::InetAddr dst = local;
      std::shared_ptr<Socket> r;
      inet::PortTable& table = inet::PortTable::Of(ns_, inet::Proto::kUdp);
      if (dst.ip.IsAny()) {
        // To loopback as the host peer reached it: IPv4 first, then ::1 (a
        // [::] socket takes both), as the TCP path finds its listener.
        dst.ip = v4 ? inet::IpAddr::LoopbackV4() : inet::IpAddr::LoopbackV6();
        r = table.FindReceiver(dst, peer);
        if (r == nullptr && published && v4) {
          dst.ip = inet::IpAddr::LoopbackV6();
          r = table.FindReceiver(dst, peer);
          dst.ip = inet::IpAddr::LoopbackV4();
        }
      } else {
        r = table.FindReceiver(dst, peer);
      }
      udp::DgramSocket* s = udp::AsDgramSocket(r.get());
      if (s == nullptr) {
        if (published) continue;  // dropped, as to a closed port
        Drop(fd);
        return;
      }
      udp::Datagram d;
      d.data.assign(buf.begin(), buf.begin() + n);
      d.src = peer;
      d.dst = published ? dst : local;
      d.v4 = v4;
      d.tstamp_ns = udp::RealtimeNowNs();
      d.truesize = udp::TrueSize(d.data.size());
      s->Deliver(std::move(d));
    }
  }
  void Drop(int fd) {
    absl::MutexLock l(&mu_);
    flows_.remove_if([this, fd](const Flow& f) {
      if (f.fd.get() != fd) return false;
      if (f.published) {
        published_flows_.fetch_sub(1, std::memory_order_release);
      }
      return true;
    });
  }

  NetNamespace& ns_;
  const int wake_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  std::list<Flow> flows_ ABSL_GUARDED_BY(mu_);  // least recently used first
  // How many of flows_ are published (read without mu_ on every loopback
  // send, so that a sandbox without published UDP ports pays nothing).
  std::atomic<size_t> published_flows_{0};
  std::thread reader_;
};

std::atomic<UdpHost*> g_udp{nullptr};

KResult<size_t> SendHook(Caller& c, udp::DgramSocket& s,
                         const inet::InetAddr& dst, MessageIo& data,
                         const udp::SendParams&, int) {
  UdpHost* h = g_udp.load();
  if (h == nullptr) return kENETUNREACH;
  return h->Send(c, s, dst, data);
}

bool ReplyHook(Caller&, uint16_t port, const inet::InetAddr& dst,
               MessageIo& data, KResult<size_t>* sent) {
  UdpHost* h = g_udp.load();
  return h != nullptr && h->Reply(port, dst, data, sent);
}

}  // namespace

void StartUdpHostPath(NetNamespace& ns) {
  BrokerClient* b = BrokerClient::Instance();
  if (b == nullptr) return;
  const bool publishes_udp = b->publishes(broker::Proto::kUdp);
  if (!b->host_mode() && !publishes_udp) return;
  UdpHost* h = new UdpHost(ns);
  delete g_udp.exchange(h);
  if (b->host_mode()) udp::DatagramHostPath().send = &SendHook;
  if (publishes_udp) {
    udp::DatagramHostPath().reply = &ReplyHook;
    b->SetUdpFlowHandler(
        [h](uint16_t port, const broker::Endpoint& peer, HostConnection conn) {
          h->AddPublished(port, FromEndpoint(peer), std::move(conn));
        });
  }
}

void StopUdpHostPath() {
  if (BrokerClient* b = BrokerClient::Instance()) b->SetUdpFlowHandler({});
  udp::DatagramHostPath().send = nullptr;
  udp::DatagramHostPath().reply = nullptr;
  delete g_udp.exchange(nullptr);
}

}  // namespace sandbox::net::hostinet
