// Conversions between the Internet families' addresses (inet::InetAddr,
// IPv4 held v4-mapped) and the broker protocol's (broker::Endpoint: a
// family and 4 or 16 bytes).
#ifndef SENTRY_NET_HOSTINET_CONVERT_H_
#define SENTRY_NET_HOSTINET_CONVERT_H_

#include "broker/protocol/messages.h"
#include "sentry/net/inet/address.h"

namespace sandbox::net::hostinet {

// An IPv4 address (is_v4) becomes an AF_INET endpoint, anything else an
// AF_INET6 one.
broker::Ip ToIp(const inet::IpAddr& a);
broker::Endpoint ToEndpoint(const inet::InetAddr& a);
inet::IpAddr FromIp(const broker::Ip& ip);
inet::InetAddr FromEndpoint(const broker::Endpoint& e);

}  // namespace sandbox::net::hostinet

#endif  // SENTRY_NET_HOSTINET_CONVERT_H_
