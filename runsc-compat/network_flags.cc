#include "runsc-compat/network_flags.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "broker/policy/policy.h"
#include "broker/protocol/codec.h"
#include "broker/server/resolver.h"
#include "sentry/boot/boot_spec.h"

namespace sandbox::runsc {

flags::Table NetworkFlagTable(NetworkFlags* flags) {
  using flags::Arg;
  return {
      {.name = "network",
       .arg = Arg::kRequired,
       .value_name = "none|host",
       .default_value = "none",
       .help = {{"--network=none",
                 R"((default) the sandbox's own loopback only (lo:
127.0.0.0/8 and ::1): nothing reaches the host's
network; no broker runs unless a port is published)"},
                {"--network=host",
                 R"(connections and datagrams to non-loopback addresses
go out through host sockets that a separate, confined
broker process (`runsc broker`) opens and hands to
the sandbox, checked against the egress policy.
WITH NO --egress-allow/--egress-policy, HOST MODE
ALLOWS EVERY DESTINATION but the host's own loopback
(127.0.0.0/8, ::1: its local services), which only
a policy entry opens. The sandbox's listening
sockets stay inside (see --publish))"}},
       .set = flags::SetChoice<bool>(&flags->host,
                                     {{"none", false}, {"host", true}},
                                     "expected --network=none or host")},
      {.name = "publish",
       .alias = 'p',
       .arg = Arg::kRequired,
       .value_name = "[HOSTADDR:]HOSTPORT:GUESTPORT[/udp]",
       .help = {{"", R"(as docker run -p: the broker listens on the host at
HOSTADDR:HOSTPORT (default HOSTADDR 127.0.0.1; an
IPv6 one as [::1]) and forwards each connection (or,
with /udp, each datagram) to the sandbox's GUESTPORT
on its loopback. Works in both modes. Repeatable)"}},
       .set =
           [flags](const flags::Given& g) {
             absl::StatusOr<broker::Publish> p = broker::ParsePublish(g.value);
             if (!p.ok()) return p.status();
             flags->publishes.push_back(*p);
             return absl::OkStatus();
           }},
      {.name = "egress-allow",
       .arg = Arg::kRequired,
       .value_name = "ENTRY",
       .help = {{"", R"((host mode) allow a destination: a CIDR
(10.0.0.0/8, [2001:db8::/32]), optionally with a
port or port range (:443, :8000-8080), or a domain
name, optionally "*."-wildcarded and with a port
(pypi.org:443, *.pythonhosted.org). With any entry
(or --egress-policy) everything else is refused:
ECONNREFUSED for TCP, EPERM for UDP, with one --log
line naming the destination, the name it came from
and why. Repeatable)"}},
       .set = flags::AppendNonEmpty(&flags->egress_allow,
                                    "--egress-allow needs an ENTRY")},
      {.name = "egress-policy",
       .arg = Arg::kRequired,
       .value_name = "FILE",
       .help = {{"", R"((host mode) entries as --egress-allow, one a line;
'#' comments. Repeatable)"}},
       .set = flags::AppendNonEmpty(&flags->egress_files,
                                    "--egress-policy needs a FILE")},
      {.name = "host-resolver",
       .arg = Arg::kRequired,
       .value_name = "ADDR[:PORT]",
       .help = {{"", R"((host mode) the DNS server the broker asks for names
the policy allows (default: the nameservers of the
host's /etc/resolv.conf, port 53). Repeatable)"}},
       .set =
           [flags](const flags::Given& g) {
             broker::Endpoint e;
             if (!broker::ParseHostPort(g.value, 53, &e)) {
               return absl::InvalidArgumentError(absl::StrFormat(
                   "%s: expected an IP address, ADDR:PORT or [V6ADDR]:PORT",
                   g.text));
             }
             flags->host_resolvers.push_back(e);
             return absl::OkStatus();
           }},
  };
}

std::string NetworkFlagsHelp() {
  NetworkFlags unused;
  return "Network:\n" + flags::FormatHelp(NetworkFlagTable(&unused));
}

absl::StatusOr<std::vector<std::string>> BrokerPolicyArgs(
    const NetworkFlags& flags, bool* enforcing) {
  *enforcing = false;
  const bool any_policy =
      !flags.egress_allow.empty() || !flags.egress_files.empty();
  if (!flags.host && any_policy) {
    return absl::InvalidArgumentError(
        "--egress-allow and --egress-policy apply to --network=host only "
        "(--network=none reaches nothing outside the sandbox)");
  }
  if (!flags.host && !flags.host_resolvers.empty()) {
    return absl::InvalidArgumentError(
        "--host-resolver applies to --network=host only");
  }
  if (flags.publishes.size() > boot::kMaxPublishedPorts) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "at most %d --publish flags", boot::kMaxPublishedPorts));
  }
  for (size_t i = 0; i < flags.publishes.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const broker::Publish& a = flags.publishes[i];
      const broker::Publish& b = flags.publishes[j];
      if (a.proto == b.proto && a.host == b.host) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--publish: host port ", broker::EndpointToString(a.host),
            a.proto == broker::Proto::kUdp ? "/udp" : "", " given twice"));
      }
    }
  }
  std::vector<std::string> args;
  if (any_policy) {
    absl::StatusOr<std::unique_ptr<broker::policy::Policy>> p =
        broker::policy::Policy::FromFlags(flags.egress_allow,
                                          flags.egress_files);
    if (!p.ok()) return p.status();
    *enforcing = !(*p)->allow_all();
    if (*enforcing) args.push_back("--policy");
    for (const std::string& e : (*p)->CanonicalEntries()) {
      args.push_back("--allow=" + e);
    }
  }
  for (const broker::Endpoint& e : flags.host_resolvers) {
    args.push_back("--resolver=" + broker::EndpointToString(e));
  }
  return args;
}

}  // namespace sandbox::runsc
