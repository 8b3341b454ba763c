// TCP (SOCK_STREAM of AF_INET and AF_INET6) in the Sentry: tcp_socket.h
// says how a loopback connection is made.
//
// Register sets inet::RegisteredProtocols().tcp; families.cc calls it
// before inet::Register.
#ifndef SENTRY_NET_TCP_TCP_H_
#define SENTRY_NET_TCP_TCP_H_

#include "sentry/net/inet/inet.h"

namespace sandbox::net::tcp {

void Register();

}  // namespace sandbox::net::tcp

#endif  // SENTRY_NET_TCP_TCP_H_
