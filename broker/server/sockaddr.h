// The host's sockaddr for a broker Endpoint and back: what the request
// loop (server.h) and the resolver (resolver.h) hand to connect, bind,
// sendto and take from getsockname, recvfrom, accept.
//
// Thread-safety: pure functions.
#ifndef BROKER_SERVER_SOCKADDR_H_
#define BROKER_SERVER_SOCKADDR_H_

#include <sys/socket.h>

#include "broker/protocol/messages.h"

namespace sandbox::broker {

// Fills `ss` (zeroed first) with `e` as a sockaddr_in or sockaddr_in6;
// returns its length.
socklen_t ToSockaddr(const Endpoint& e, sockaddr_storage* ss);

// `ss` as an Endpoint in `e`; false (and `e` empty) for a family other
// than AF_INET and AF_INET6.
bool FromSockaddr(const sockaddr_storage& ss, Endpoint* e);

}  // namespace sandbox::broker

#endif  // BROKER_SERVER_SOCKADDR_H_
