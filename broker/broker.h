// The network broker: the only process that opens host Internet sockets
// for a sandbox (runsc do --network=host, or any --publish). `runsc do`
// starts it as `runsc broker` (runsc-compat/broker_command.h) beside the
// Gofer, with one SOCK_SEQPACKET connection to the Sentry; it dies with
// the CLI (PR_SET_PDEATHSIG) and ends when the Sentry's end closes.
//
// RunBroker, in order: read the host's /etc/hosts and (without
// --resolver) /etc/resolv.conf's nameservers; make the published ports'
// host sockets; build the egress policy; confine (confine.h: its own
// mount/IPC/UTS namespaces, an empty read-only root, no capabilities; the
// host's network namespace kept); install the seccomp allowlist
// (seccomp.h); serve (server/server.h).
#ifndef BROKER_BROKER_H_
#define BROKER_BROKER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "broker/server/server.h"

namespace sandbox::broker {

struct BrokerConfig {
  int sentry_fd = -1;
  std::vector<Publish> publishes;
  // Published ports whose host sockets the caller made (runsc do opens
  // them, so that a port in use is its usage error): (fd, publish).
  std::vector<std::pair<int, Publish>> listeners;
  // The egress policy: enforcing (policy) with `allow` entries (canonical
  // texts, policy::Entry::ToString), or none (allow everything).
  bool policy = false;
  std::vector<std::string> allow;
  // Upstream resolvers; empty: the host's /etc/resolv.conf nameservers.
  std::vector<Endpoint> resolvers;
  bool confine = true;  // false: tests only
  bool seccomp = true;  // false: tests only
};

// `runsc broker` flags: --fd=N [--publish=HOSTADDR:HOSTPORT:GUESTPORT[/udp]]...
// [--listener=FD:HOSTADDR:HOSTPORT:GUESTPORT[/udp]]... [--policy]
// [--allow=ENTRY]... [--resolver=ADDR[:PORT]]... [--no-confine]
// [--no-seccomp].
absl::StatusOr<BrokerConfig> ParseBrokerFlags(
    const std::vector<std::string>& args);

// One --publish value, [HOSTADDR:]HOSTPORT:GUESTPORT[/udp] (as docker run
// -p): HOSTADDR an IPv4 address or a bracketed IPv6 one ("[::1]"),
// default 127.0.0.1; ports 1..65535. The error says what is wrong.
absl::StatusOr<Publish> ParsePublish(std::string_view value);
// The canonical text ParsePublish takes back: "127.0.0.1:8080:80",
// "[::1]:53:53/udp".
std::string PublishToString(const Publish& p);

// Runs the broker; returns when the Sentry's connection ends (OK) or on a
// failure (the error).
absl::Status RunBroker(const BrokerConfig& config);

}  // namespace sandbox::broker

#endif  // BROKER_BROKER_H_
