// `runsc do`'s network flags: --network, --publish, --egress-allow,
// --egress-policy, --host-resolver; their checks and help text, and what
// they make of the broker's command line (broker/broker.h).
#ifndef RUNSC_COMPAT_NETWORK_FLAGS_H_
#define RUNSC_COMPAT_NETWORK_FLAGS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "broker/broker.h"
#include "runsc-compat/flags.h"

namespace sandbox::runsc {

struct NetworkFlags {
  bool host = false;  // --network=host (default none)
  std::vector<broker::Publish> publishes;
  std::vector<std::string> egress_allow;  // --egress-allow values
  std::vector<std::string> egress_files;  // --egress-policy paths
  std::vector<broker::Endpoint> host_resolvers;
};

// The network flags' table rows, setting `flags` (-p is --publish).
flags::Table NetworkFlagTable(NetworkFlags* flags);

// Whether the sandbox needs a broker: host mode or a published port.
inline bool NeedsBroker(const NetworkFlags& f) {
  return f.host || !f.publishes.empty();
}

// The cross-flag checks (an egress policy or --host-resolver only with
// --network=host; at most kMaxPublishedPorts ports; no host port twice)
// and the egress policy, parsed (its files read): the broker's policy
// flags (--policy, --allow=CANONICAL...) and --resolver flags. The errors
// name the flag.
absl::StatusOr<std::vector<std::string>> BrokerPolicyArgs(
    const NetworkFlags& flags, bool* enforcing);

// The "Network" section of `runsc do --help`.
std::string NetworkFlagsHelp();

}  // namespace sandbox::runsc

#endif  // RUNSC_COMPAT_NETWORK_FLAGS_H_
