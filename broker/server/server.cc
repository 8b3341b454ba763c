#include "broker/server/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "broker/protocol/codec.h"
#include "broker/server/sockaddr.h"

namespace sandbox::broker {
namespace {

policy::IpAddress ToPolicy(const Ip& ip) {
  return ip.family == kFamilyInet ? policy::IpAddress::V4(ip.bytes.data())
                                  : policy::IpAddress::V6(ip.bytes.data());
}

std::vector<policy::IpAddress> ToPolicy(const std::vector<Ip>& ips) {
  std::vector<policy::IpAddress> out;
  out.reserve(ips.size());
  for (const Ip& ip : ips) out.push_back(ToPolicy(ip));
  return out;
}

// What the resolver threads share with the loop; they hold it by
// shared_ptr, so a thread still running when Serve returns finds it
// alive (its reply then fails with EPIPE).
struct Shared {
  UniqueFd sentry;
  std::unique_ptr<policy::Policy> policy;
  std::unique_ptr<Resolver> resolver;
  absl::Mutex send_mu;
  std::atomic<int> resolvers{0};

  int Send(const Message& m, int fd = -1, int flags = 0) {
    absl::MutexLock l(&send_mu);
    return SendMessage(sentry.get(), m, fd, flags);
  }
};

// One host peer of a published UDP port.
struct Flow {
  Endpoint peer;
  sockaddr_storage addr;
  socklen_t addr_len = 0;
  UniqueFd ours;  // the broker's end of the flow's socketpair
};

class Loop {
 public:
  explicit Loop(ServerConfig config)
      : shared_(std::make_shared<Shared>()),
        listeners_(std::move(config.listeners)),
        flows_(listeners_.size()) {
    shared_->sentry = std::move(config.sentry);
    shared_->policy = std::move(config.policy);
    shared_->resolver = std::move(config.resolver);
  }

  absl::Status Run();

 private:
  void OnConnect(const Message& req);
  void OnResolve(const Message& req);
  void OnAccept(Listener& l);
  void OnDatagram(size_t li);
  // False when the flow ended (to be removed).
  bool OnFlow(size_t li, Flow& f, short revents);

  std::shared_ptr<Shared> shared_;
  std::vector<Listener> listeners_;
  std::vector<std::deque<Flow>> flows_;  // per listener (UDP only)
  std::vector<uint8_t> dgram_ = std::vector<uint8_t>(65536);
};

void Loop::OnConnect(const Message& req) {
  Message reply;
  reply.type = Type::kConnectReply;
  reply.id = req.id;
  const bool tcp = req.proto == Proto::kTcp;
  const policy::Decision d =
      shared_->policy->Check(ToPolicy(req.endpoint.ip), req.endpoint.port,
                             tcp ? policy::Proto::kTcp : policy::Proto::kUdp);
  if (!d.allowed) {
    reply.error = tcp ? ECONNREFUSED : EPERM;
    reply.reason =
        DenialLine(req.proto, req.endpoint,
                   req.name.empty() ? d.via_name : req.name, d.reason);
    shared_->Send(reply);
    return;
  }
  const int family = req.endpoint.ip.family == kFamilyInet ? AF_INET : AF_INET6;
  int fd = socket(
      family, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK | SOCK_CLOEXEC,
      0);
  if (fd < 0) {
    reply.error = errno;
    shared_->Send(reply);
    return;
  }
  UniqueFd owned(fd);
  sockaddr_storage ss;
  const socklen_t len = ToSockaddr(req.endpoint, &ss);
  if (connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    if (errno != EINPROGRESS) {
      reply.error = errno;
      shared_->Send(reply);
      return;
    }
    reply.in_progress = true;
  }
  // connect(2) bound the socket (even in progress): the guest's
  // getsockname.
  sockaddr_storage local;
  socklen_t local_len = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) == 0) {
    FromSockaddr(local, &reply.local);
  }
  shared_->Send(reply, fd);
}

void Loop::OnResolve(const Message& req) {
  Message reply;
  reply.type = Type::kResolveReply;
  reply.id = req.id;
  if (!shared_->policy->AllowsName(req.name)) {
    reply.rcode = Rcode::kRefused;
    shared_->Send(reply);
    return;
  }
  if (shared_->resolvers.fetch_add(1) >= kMaxResolvers) {
    shared_->resolvers.fetch_sub(1);
    reply.rcode = Rcode::kServFail;
    shared_->Send(reply);
    return;
  }
  std::thread([s = shared_, req, reply]() mutable {
    Resolution r = s->resolver->Resolve(req.name, req.family);
    reply.rcode = r.rcode;
    reply.ttl = r.ttl;
    if (r.rcode == Rcode::kNoError) {
      reply.addresses = std::move(r.addresses);
      // Pinned before the reply: the connect that follows is allowed.
      if (!reply.addresses.empty()) {
        std::vector<policy::IpAddress> ips = ToPolicy(reply.addresses);
        s->policy->Pin(req.name, ips);
      }
    }
    s->Send(reply);
    s->resolvers.fetch_sub(1);
  }).detach();
}

void Loop::OnAccept(Listener& l) {
  for (int i = 0; i < 64; ++i) {
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd = accept4(l.fd.get(), reinterpret_cast<sockaddr*>(&ss), &len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or a connection gone before accept
    UniqueFd conn(fd);
    Message m;
    m.type = Type::kAccepted;
    m.guest_port = l.publish.guest_port;
    if (!FromSockaddr(ss, &m.endpoint)) continue;
    // Never block on a Sentry that does not read: the host peer sees the
    // connection closed instead.
    shared_->Send(m, fd, MSG_DONTWAIT);
  }
}

void Loop::OnDatagram(size_t li) {
  Listener& l = listeners_[li];
  for (int i = 0; i < 64; ++i) {
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    ssize_t n = recvfrom(l.fd.get(), dgram_.data(), dgram_.size(), MSG_DONTWAIT,
                         reinterpret_cast<sockaddr*>(&ss), &len);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      continue;  // a queued ICMP error: nothing to relay
    }
    Endpoint peer;
    if (!FromSockaddr(ss, &peer)) continue;
    std::deque<Flow>& flows = flows_[li];
    Flow* f = nullptr;
    for (Flow& x : flows) {
      if (x.peer == peer) f = &x;
    }
    if (f == nullptr) {
      int sv[2];
      if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        continue;
      }
      UniqueFd ours(sv[0]), theirs(sv[1]);
      fcntl(ours.get(), F_SETFL, O_NONBLOCK);
      Message m;
      m.type = Type::kUdpFlow;
      m.guest_port = l.publish.guest_port;
      m.endpoint = peer;
      if (shared_->Send(m, theirs.get(), MSG_DONTWAIT) != 0) continue;
      if (flows.size() >= kMaxUdpFlows) flows.pop_front();
      Flow nf;
      nf.peer = peer;
      nf.addr = ss;
      nf.addr_len = len;
      nf.ours = std::move(ours);
      flows.push_back(std::move(nf));
      f = &flows.back();
    }
    // A full flow drops the datagram, as a full socket buffer does.
    (void)send(f->ours.get(), dgram_.data(), static_cast<size_t>(n),
               MSG_DONTWAIT | MSG_NOSIGNAL);
  }
}

bool Loop::OnFlow(size_t li, Flow& f, short revents) {
  if (revents & POLLIN) {
    for (int i = 0; i < 64; ++i) {
      ssize_t n =
          recv(f.ours.get(), dgram_.data(), dgram_.size(), MSG_DONTWAIT);
      if (n < 0) break;
      if (n == 0 && (revents & POLLHUP)) return false;
      (void)sendto(listeners_[li].fd.get(), dgram_.data(),
                   static_cast<size_t>(n), MSG_DONTWAIT | MSG_NOSIGNAL,
                   reinterpret_cast<const sockaddr*>(&f.addr), f.addr_len);
    }
  }
  return (revents & (POLLHUP | POLLERR | POLLNVAL)) == 0;
}

absl::Status Loop::Run() {
  std::vector<pollfd> pfds;
  // Which flow each pollfd past the listeners is: (listener, index).
  std::vector<std::pair<size_t, size_t>> who;
  for (;;) {
    pfds.clear();
    who.clear();
    pfds.push_back({shared_->sentry.get(), POLLIN, 0});
    for (const Listener& l : listeners_)
      pfds.push_back({l.fd.get(), POLLIN, 0});
    for (size_t li = 0; li < flows_.size(); ++li) {
      for (size_t k = 0; k < flows_[li].size(); ++k) {
        pfds.push_back({flows_[li][k].ours.get(), POLLIN, 0});
        who.push_back({li, k});
      }
    }
    int r = poll(pfds.data(), pfds.size(), -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, "poll");
    }
    if (pfds[0].revents != 0) {
      Received in;
      int err = RecvMessage(shared_->sentry.get(), &in, MSG_DONTWAIT);
      if (err == ECONNRESET) return absl::OkStatus();  // the Sentry is gone
      if (err == 0) {
        switch (in.message.type) {
          case Type::kConnect:
            OnConnect(in.message);
            break;
          case Type::kResolve:
            OnResolve(in.message);
            break;
          default:
            break;  // not a request: ignored
        }
      } else if (err != EBADMSG && err != EAGAIN && err != EINTR) {
        return absl::ErrnoToStatus(err, "receive from the Sentry");
      }
    }
    for (size_t i = 0; i < listeners_.size(); ++i) {
      if (pfds[1 + i].revents == 0) continue;
      if (listeners_[i].publish.proto == Proto::kTcp) {
        OnAccept(listeners_[i]);
      } else {
        OnDatagram(i);
      }
    }
    // Flows last, removed back to front so indexes stay valid.
    for (size_t j = who.size(); j-- > 0;) {
      const short ev = pfds[1 + listeners_.size() + j].revents;
      if (ev == 0) continue;
      auto [li, k] = who[j];
      if (k >= flows_[li].size()) continue;
      if (!OnFlow(li, flows_[li][k], ev)) {
        flows_[li].erase(flows_[li].begin() + k);
      }
    }
  }
}

}  // namespace

std::string DenialLine(Proto proto, const Endpoint& dst,
                       const std::string& name, const std::string& reason) {
  return absl::StrCat("egress denied: ", proto == Proto::kTcp ? "tcp" : "udp",
                      " to ", EndpointToString(dst),
                      name.empty() ? "" : absl::StrCat(" (name ", name, ")"),
                      ": ", reason);
}

absl::Status OpenPublishListeners(const std::vector<Publish>& publishes,
                                  std::vector<Listener>* out) {
  for (const Publish& p : publishes) {
    const bool tcp = p.proto == Proto::kTcp;
    const std::string what =
        absl::StrCat("--publish ", EndpointToString(p.host), ":", p.guest_port,
                     tcp ? "" : "/udp");
    const int family = p.host.ip.family == kFamilyInet ? AF_INET : AF_INET6;
    int fd = socket(
        family, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK | SOCK_CLOEXEC,
        0);
    if (fd < 0) return absl::ErrnoToStatus(errno, what + ": socket");
    Listener l;
    l.publish = p;
    l.fd.reset(fd);
    int one = 1;
    if (tcp) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (family == AF_INET6) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    }
    sockaddr_storage ss;
    const socklen_t len = ToSockaddr(p.host, &ss);
    if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
      return absl::ErrnoToStatus(errno, what + ": bind");
    }
    if (tcp && listen(fd, SOMAXCONN) != 0) {
      return absl::ErrnoToStatus(errno, what + ": listen");
    }
    out->push_back(std::move(l));
  }
  return absl::OkStatus();
}

absl::Status Serve(ServerConfig config) {
  Loop loop(std::move(config));
  return loop.Run();
}

}  // namespace sandbox::broker
