#include "sentry/net/hostinet/tcp_host.h"

#include <fcntl.h>
#include <sys/socket.h>

#include "sentry/net/hostinet/convert.h"
#include "sentry/net/inet/inet_socket.h"
#include "sentry/net/inet/ports.h"

namespace sandbox::net::hostinet {

bool TcpGoesToHost(NetNamespace& ns, const inet::InetAddr& dst) {
  BrokerClient* b = BrokerClient::Instance();
  if (b == nullptr || !b->host_mode()) return false;
  if (!dst.ip.IsLoopback() && !dst.ip.IsAny() &&
      !inet::IsLocalAddress(ns, dst.ip)) {
    return true;
  }
  inet::InetAddr src;
  src.ip = dst.ip;
  return inet::PortTable::Of(ns, inet::Proto::kTcp).FindListener(dst, src) ==
         nullptr;
}

KResult<std::shared_ptr<HostStream>> ConnectTcp(Caller& c, int family,
                                                const inet::InetAddr& dst) {
  BrokerClient* b = BrokerClient::Instance();
  if (b == nullptr) return kENETUNREACH;
  // The wildcard means this host's loopback (ip_route_connect).
  inet::InetAddr to = dst;
  if (to.ip.IsAny()) {
    to.ip =
        to.ip.is_v4() ? inet::IpAddr::LoopbackV4() : inet::IpAddr::LoopbackV6();
  }
  TRY(HostConnection conn, b->Connect(c, broker::Proto::kTcp, ToEndpoint(to)));
  return std::make_shared<HostStream>(std::move(conn), family, SOCK_STREAM,
                                      ToEndpoint(to));
}

void StartPublishing(NetNamespace& ns, EnqueueFn enqueue) {
  BrokerClient* b = BrokerClient::Instance();
  if (b == nullptr) return;
  b->SetAcceptHandler(
      [&ns, enqueue = std::move(enqueue)](
          uint16_t port, const broker::Endpoint& peer, HostConnection conn) {
        const inet::InetAddr from = FromEndpoint(peer);
        inet::InetAddr dst;
        dst.port = port;
        inet::PortTable& table = inet::PortTable::Of(ns, inet::Proto::kTcp);
        // The guest's loopback listener: IPv4 first (a [::] listener takes
        // v4 too), then ::1.
        dst.ip = inet::IpAddr::LoopbackV4();
        std::shared_ptr<Socket> l = table.FindListener(dst, from);
        if (l == nullptr) {
          dst.ip = inet::IpAddr::LoopbackV6();
          l = table.FindListener(dst, from);
        }
        if (l == nullptr) return;  // nobody listens: conn closes here
        const int family = l->family();
        auto stream = std::make_shared<HostStream>(std::move(conn), family,
                                                   SOCK_STREAM, peer);
        // The accepted socket's own address is the listener's side of the
        // connection: the loopback address it was reached on.
        (void)enqueue(*l, std::move(stream),
                      ToGuestSockAddr(family, ToEndpoint(dst)));
      });
}

}  // namespace sandbox::net::hostinet
