// UDP's host path (--network=host): datagrams from a guest UDP socket to a
// destination off the sandbox (udp::DatagramHostPath's send hook) leave
// through a host UDP socket the broker made and connected to that
// destination (one per guest port and destination, made on first use:
// the egress policy is checked there, EPERM and a log line when denied);
// the answers the host socket receives are delivered to the guest socket
// bound at that port (PortTable::FindReceiver: a socket closed since finds
// none, and its host sockets close).
//
// Published UDP ports (--publish=...:P/udp, in both network modes): the
// broker relays each host peer's datagrams through a flow of its own (a
// SOCK_SEQPACKET descriptor, one datagram a record); they are delivered
// to the guest socket bound at P on loopback, from the peer's address,
// and what that socket sends back to the peer's address goes out through
// the flow (udp::HostPath::reply) instead of the sandbox's loopback. With
// no socket bound at P a datagram is dropped, as Linux drops one to a
// closed port (the flow stays for the next).
//
// A reader thread polls every host UDP socket and flow of the sandbox (at
// most kMaxHostUdp; the least recently used goes first) and an eventfd
// that says the set changed.
//
// Not done: connect(2) of a guest UDP socket to an off-host destination
// (the hook cannot record the peer in the guest socket: ENETUNREACH stays
// until udp/ keeps it), and ICMP errors of the host path (a refused port is
// silent). Its destinations are off the sandbox only: a loopback one is
// the sandbox's own (unlike TCP's, which falls back to the host when no
// sandbox socket listens).
#ifndef SENTRY_NET_HOSTINET_UDP_HOST_H_
#define SENTRY_NET_HOSTINET_UDP_HOST_H_

#include <stddef.h>

#include "sentry/net/namespace.h"

namespace sandbox::net::hostinet {

inline constexpr size_t kMaxHostUdp = 1024;

// Sets udp::DatagramHostPath().send when the broker client is in host
// mode, and .reply with the broker's UDP flow handler when it has
// published UDP ports (start-up, before the first task; after
// BrokerClient::Start).
void StartUdpHostPath(NetNamespace& ns);
// Stops the reader (before the kernel goes).
void StopUdpHostPath();

}  // namespace sandbox::net::hostinet

#endif  // SENTRY_NET_HOSTINET_UDP_HOST_H_
