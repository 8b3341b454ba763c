// The sandbox's own name server (host mode with an egress policy): answers
// a DNS query from the guest by asking the broker (BrokerClient::Resolve),
// which answers only the names the policy allows and pins their addresses,
// so that a connect to them that follows is allowed. A name the policy
// does not allow is REFUSED, an unknown one NXDOMAIN.
//
// AnswerQuery is the whole server but the transport: a datagram in, a
// datagram out (the UDP path that carries them is the protocol's).
//
// Thread-safe (no state).
#ifndef SENTRY_NET_HOSTINET_RESOLVER_H_
#define SENTRY_NET_HOSTINET_RESOLVER_H_

#include <stdint.h>

#include <span>
#include <vector>

#include "sentry/net/hostinet/broker_client.h"
#include "sentry/net/socket.h"

namespace sandbox::net::hostinet {

// The response to `query` (at most 512 bytes: TC set past it), or empty
// when it must be dropped without an answer (not a query, too short).
// Only A and AAAA of class IN are asked of the broker; another type of an
// allowed name is NOERROR without answers, another class REFUSED.
std::vector<uint8_t> AnswerQuery(BrokerClient& broker, Caller& c,
                                 std::span<const uint8_t> query);

}  // namespace sandbox::net::hostinet

#endif  // SENTRY_NET_HOSTINET_RESOLVER_H_
