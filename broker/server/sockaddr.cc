#include "broker/server/sockaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace sandbox::broker {

socklen_t ToSockaddr(const Endpoint& e, sockaddr_storage* ss) {
  std::memset(ss, 0, sizeof(*ss));
  if (e.ip.family == kFamilyInet) {
    auto* s = reinterpret_cast<sockaddr_in*>(ss);
    s->sin_family = AF_INET;
    s->sin_port = htons(e.port);
    std::memcpy(&s->sin_addr, e.ip.bytes.data(), 4);
    return sizeof(*s);
  }
  auto* s = reinterpret_cast<sockaddr_in6*>(ss);
  s->sin6_family = AF_INET6;
  s->sin6_port = htons(e.port);
  std::memcpy(&s->sin6_addr, e.ip.bytes.data(), 16);
  return sizeof(*s);
}

bool FromSockaddr(const sockaddr_storage& ss, Endpoint* e) {
  *e = Endpoint();
  if (ss.ss_family == AF_INET) {
    const auto* s = reinterpret_cast<const sockaddr_in*>(&ss);
    e->ip.family = kFamilyInet;
    std::memcpy(e->ip.bytes.data(), &s->sin_addr, 4);
    e->port = ntohs(s->sin_port);
    return true;
  }
  if (ss.ss_family == AF_INET6) {
    const auto* s = reinterpret_cast<const sockaddr_in6*>(&ss);
    e->ip.family = kFamilyInet6;
    std::memcpy(e->ip.bytes.data(), &s->sin6_addr, 16);
    e->port = ntohs(s->sin6_port);
    return true;
  }
  return false;
}

}  // namespace sandbox::broker
