#include "sentry/net/hostinet/convert.h"

#include <cstring>

namespace sandbox::net::hostinet {

broker::Ip ToIp(const inet::IpAddr& a) {
  broker::Ip ip;
  if (a.is_v4()) {
    ip.family = broker::kFamilyInet;
    std::memcpy(ip.bytes.data(), a.bytes().data() + 12, 4);
  } else {
    ip.family = broker::kFamilyInet6;
    ip.bytes = a.bytes();
  }
  return ip;
}

broker::Endpoint ToEndpoint(const inet::InetAddr& a) {
  return broker::Endpoint{ToIp(a.ip), a.port};
}

inet::IpAddr FromIp(const broker::Ip& ip) {
  return ip.family == broker::kFamilyInet
             ? inet::IpAddr::FromV4Bytes(ip.bytes.data())
             : inet::IpAddr::FromV6Bytes(ip.bytes.data());
}

inet::InetAddr FromEndpoint(const broker::Endpoint& e) {
  inet::InetAddr a;
  a.ip = FromIp(e.ip);
  a.port = e.port;
  return a;
}

}  // namespace sandbox::net::hostinet
