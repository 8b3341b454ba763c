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

// One host UDP socket: guest `local` (its bound port) to `peer`.
struct Flow {
  inet::InetAddr local;
  inet::InetAddr peer;
  bool v4 = true;
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
    const size_t len = data.size();
    if (len > (dst.ip.is_v4() ? udp::kMaxUdp4Payload : udp::kMaxUdp6Payload)) {
      return kEMSGSIZE;
    }
    std::vector<uint8_t> payload(len);
    if (len > 0) {
      TRY(size_t got, data.CopyIn(0, absl::MakeSpan(payload)));
      if (got != len) return kEFAULT;
    }
    int fd = Find(local, dst);
    if (fd < 0) {
      TRY(HostConnection conn,
          b->Connect(c, broker::Proto::kUdp, ToEndpoint(dst)));
      fd = Add(local, dst, std::move(conn));
    }
    iovec iov = {payload.data(), payload.size()};
    msghdr mh = {};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    ssize_t n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
    // A full host buffer drops the datagram, as a full device queue does.
    if (n < 0 && errno != EAGAIN && errno != ECONNREFUSED) return Errno(errno);
    return len;
  }

 private:
  int Find(const inet::InetAddr& local, const inet::InetAddr& peer) {
    absl::MutexLock l(&mu_);
    for (auto it = flows_.begin(); it != flows_.end(); ++it) {
      if (it->local.port == local.port && it->peer == peer) {
        flows_.splice(flows_.end(), flows_, it);  // most recently used
        return flows_.back().fd.get();
      }
    }
    return -1;
  }
  int Add(const inet::InetAddr& local, const inet::InetAddr& peer,
          HostConnection conn) {
    absl::MutexLock l(&mu_);
    if (flows_.size() >= kMaxHostUdp) flows_.pop_front();
    Flow f;
    f.local = local;
    f.peer = peer;
    f.v4 = peer.ip.is_v4();
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
  // Reads what `fd` has and delivers it; drops the flow when its guest
  // socket is gone.
  void Receive(int fd, std::vector<uint8_t>& buf) {
    inet::InetAddr local, peer;
    bool v4 = true;
    {
      absl::MutexLock l(&mu_);
      bool found = false;
      for (const Flow& f : flows_) {
        if (f.fd.get() == fd) {
          local = f.local;
          peer = f.peer;
          v4 = f.v4;
          found = true;
        }
      }
      if (!found) return;
    }
    for (int k = 0; k < 64; ++k) {
      ssize_t n = recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EAGAIN) return;
        continue;  // ECONNREFUSED from a port unreachable: skip it
      }
      inet::InetAddr dst = local;
      if (dst.ip.IsAny()) {
        dst.ip = v4 ? inet::IpAddr::LoopbackV4() : inet::IpAddr::LoopbackV6();
      }
      std::shared_ptr<Socket> r =
          inet::PortTable::Of(ns_, inet::Proto::kUdp).FindReceiver(dst, peer);
      udp::DgramSocket* s = udp::AsDgramSocket(r.get());
      if (s == nullptr) {
        Drop(fd);
        return;
      }
      udp::Datagram d;
      d.data.assign(buf.begin(), buf.begin() + n);
      d.src = peer;
      d.dst = local;
      d.v4 = v4;
      d.tstamp_ns = udp::RealtimeNowNs();
      d.truesize = udp::TrueSize(d.data.size());
      s->Deliver(std::move(d));
    }
  }
  void Drop(int fd) {
    absl::MutexLock l(&mu_);
    flows_.remove_if([fd](const Flow& f) { return f.fd.get() == fd; });
  }

  NetNamespace& ns_;
  const int wake_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  std::list<Flow> flows_ ABSL_GUARDED_BY(mu_);  // least recently used first
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

}  // namespace

void StartUdpHostPath(NetNamespace& ns) {
  BrokerClient* b = BrokerClient::Instance();
  if (b == nullptr || !b->host_mode()) return;
  delete g_udp.exchange(new UdpHost(ns));
  udp::DatagramHostPath().send = &SendHook;
}

void StopUdpHostPath() {
  udp::DatagramHostPath().send = nullptr;
  delete g_udp.exchange(nullptr);
}

}  // namespace sandbox::net::hostinet
