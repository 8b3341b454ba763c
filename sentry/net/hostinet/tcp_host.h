// The TCP protocol's host branch (--network=host) and the published ports'
// connections: the glue between sentry/net/tcp and the broker.
//
// Where a connect(2) goes (TcpGoesToHost): with a broker in host mode, to
// the host when the destination is not one of the sandbox's addresses, or
// is one (loopback) that no sandbox socket listens on: connections
// between sandbox sockets never leave the Sentry, and the host's own
// loopback services are reachable, as everything else, only as the egress
// policy allows (none: everything). Without a broker, or in
// --network=none, never (ECONNREFUSED for a loopback port nobody listens
// on, ENETUNREACH for another address, as a namespace with only lo).
#ifndef SENTRY_NET_HOSTINET_TCP_HOST_H_
#define SENTRY_NET_HOSTINET_TCP_HOST_H_

#include <functional>
#include <memory>

#include "sentry/base/result.h"
#include "sentry/net/hostinet/host_stream.h"
#include "sentry/net/inet/address.h"
#include "sentry/net/namespace.h"
#include "sentry/net/socket.h"
#include "sentry/vfs/file_description.h"

namespace sandbox::net::hostinet {

bool TcpGoesToHost(NetNamespace& ns, const inet::InetAddr& dst);

// A host TCP connection to `dst` for a guest socket of `family`, through
// the broker: connect started (HostStream::WaitConnected completes it).
// ECONNREFUSED when the policy denies it (logged), ENETUNREACH without a
// broker.
KResult<std::shared_ptr<HostStream>> ConnectTcp(Caller& c, int family,
                                                const inet::InetAddr& dst);

// Publish: each connection the broker accepted for guest port P is given
// to `enqueue` with the listener it reaches (the one FindListener finds for
// 127.0.0.1:P from the host peer, else for ::1:P), as a HostStream of the
// listener's family and the address the accepted socket reports as its
// own (the loopback address and P); the protocol's accept(2) makes it a
// HostTcpSocket. No listener, or `enqueue` refusing it (not listening, a
// full backlog), closes it (the host client sees it closed, as a refused
// one). Call once at start-up, after the broker client started.
using EnqueueFn = std::function<bool(
    Socket& listener, std::shared_ptr<HostStream> conn, const SockAddr& local)>;
void StartPublishing(NetNamespace& ns, EnqueueFn enqueue);

}  // namespace sandbox::net::hostinet

#endif  // SENTRY_NET_HOSTINET_TCP_HOST_H_
