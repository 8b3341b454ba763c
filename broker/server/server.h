// The broker's request loop: the one place where the sandbox's host
// Internet sockets are made. It serves one Sentry connection (a
// SOCK_SEQPACKET socketpair, broker/protocol) until the Sentry closes it:
//
//  - Connect{proto, endpoint, name}: checked against the egress policy
//    (broker/policy); allowed: a host socket of the endpoint's family,
//    non-blocking, connect(2) started (TCP) or done (UDP), donated by
//    SCM_RIGHTS with in_progress when connect said EINPROGRESS; the
//    broker keeps no copy. Denied: ECONNREFUSED (TCP) or EPERM (UDP) with
//    the log line the Sentry writes as the reason (destination, the name it
//    came from if any, why).
//  - Resolve{name, family}: REFUSED unless the policy allows the name;
//    else the host's /etc/hosts, then the upstream resolvers (Resolver);
//    the answer's addresses are pinned in the policy before the reply, so
//    a connect to them that follows is allowed. Each resolve runs on its
//    own thread (at most kMaxResolvers at once; more: SERVFAIL), so a slow
//    upstream never holds up connects.
//  - Publish: the listeners made at start-up (OpenPublishListeners, before
//    confinement: the seccomp filter has no bind or listen). Each
//    connection accepted on a TCP one goes to the Sentry as Accepted{peer,
//    guest_port} with its descriptor. A UDP one relays datagrams: each new
//    host peer gets a flow, a SOCK_SEQPACKET socketpair whose one end goes
//    to the Sentry as UdpFlow{peer, guest_port}; a record on the flow is
//    one datagram, either way (from the peer to the guest port, and the
//    guest's replies back to the peer through the published socket). At
//    most kMaxUdpFlows flows per published port (the oldest goes first);
//    the Sentry closing its end ends a flow.
//
// The loop is single-threaded but for the resolver threads, which only
// send their reply (under send_mu_, so records never interleave; seqpacket
// sends are atomic anyway) and touch the policy (thread-safe).
#ifndef BROKER_SERVER_SERVER_H_
#define BROKER_SERVER_SERVER_H_

#include <stdint.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "broker/policy/policy.h"
#include "broker/protocol/messages.h"
#include "broker/protocol/transport.h"
#include "broker/server/resolver.h"

namespace sandbox::broker {

// One --publish=[HOSTADDR:]HOSTPORT:GUESTPORT[/udp].
struct Publish {
  Proto proto = Proto::kTcp;
  Endpoint host;  // the host address and port to listen on
  uint16_t guest_port = 0;
};

// A published port's host socket (listening TCP, or bound UDP).
struct Listener {
  Publish publish;
  UniqueFd fd;
};

// Makes the host sockets of `publishes` (SO_REUSEADDR, bound, listening;
// non-blocking). The error names the flag and the host's errno.
absl::Status OpenPublishListeners(const std::vector<Publish>& publishes,
                                  std::vector<Listener>* out);

struct ServerConfig {
  UniqueFd sentry;  // the Sentry's connection
  std::vector<Listener> listeners;
  std::unique_ptr<policy::Policy> policy;  // never null (AllowAll: none)
  std::unique_ptr<Resolver> resolver;      // never null
};

inline constexpr int kMaxResolvers = 16;
inline constexpr size_t kMaxUdpFlows = 256;

// Serves until the Sentry closes its connection (OK) or the connection
// fails (the error). Hostile input never ends the loop: an undecodable
// record is dropped.
absl::Status Serve(ServerConfig config);

// What Connect answers (for tests): the decision's log line for a denial.
std::string DenialLine(Proto proto, const Endpoint& dst,
                       const std::string& name, const std::string& reason);

}  // namespace sandbox::broker

#endif  // BROKER_SERVER_SERVER_H_
