// The broker's name resolution: the host's /etc/hosts (read before the
// broker confines itself), then the upstream resolvers (the host's
// /etc/resolv.conf nameservers, or runsc do --host-resolver) over UDP
// sockets the broker opens itself, with the DNS codec (broker/dns).
//
// Each query has a random ID and goes to each upstream in turn (kTries
// rounds, kTimeoutMs each); a response counts only if it answers the
// query (dns::AnswersQuery: same ID, name and type) and comes from the
// connected upstream (a connected UDP socket takes no other source). A
// truncated response keeps what it has (no TCP retry).
//
// Thread-safe (no mutable state but the random IDs' generator, locked).
#ifndef BROKER_SERVER_RESOLVER_H_
#define BROKER_SERVER_RESOLVER_H_

#include <stdint.h>

#include <string>
#include <string_view>
#include <vector>

#include "broker/dns/hosts.h"
#include "broker/protocol/messages.h"

namespace sandbox::broker {

struct Resolution {
  Rcode rcode = Rcode::kNoError;
  std::vector<Ip> addresses;
  uint32_t ttl = 0;
};

class Resolver {
 public:
  static constexpr int kTries = 2;
  static constexpr int kTimeoutMs = 2000;

  Resolver(dns::HostsFile hosts, std::vector<Endpoint> upstreams)
      : hosts_(std::move(hosts)), upstreams_(std::move(upstreams)) {}
  virtual ~Resolver() = default;

  // `family`: 0 (A and AAAA), kFamilyInet or kFamilyInet6. NXDOMAIN when
  // neither the hosts file nor an upstream knows the name, SERVFAIL when
  // no upstream answered.
  virtual Resolution Resolve(std::string_view name, uint8_t family);

 private:
  // One query of `qtype` to the upstreams; false when none answered.
  bool Query(std::string_view name, uint16_t qtype, Resolution* out);

  const dns::HostsFile hosts_;
  const std::vector<Endpoint> upstreams_;
};

// The nameservers of resolv.conf contents (resolv.conf(5): "nameserver
// ADDR" lines, port 53), at most 3 as glibc takes.
std::vector<Endpoint> ParseResolvConf(std::string_view contents);

// "ADDR" or "ADDR:PORT" or "[V6]:PORT" (runsc do --host-resolver);
// false for anything else.
bool ParseHostPort(std::string_view text, uint16_t default_port, Endpoint* out);

}  // namespace sandbox::broker

#endif  // BROKER_SERVER_RESOLVER_H_
