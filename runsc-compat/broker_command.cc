#include "runsc-compat/broker_command.h"

#include <signal.h>
#include <sys/prctl.h>

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "broker/broker.h"

namespace sandbox::runsc {

int BrokerCommand(int argc, char** argv) {
  prctl(PR_SET_NAME, "runsc-broker");
  // Dies with the CLI (set before the exec too; it survives an exec of a
  // binary that is not set-id).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  signal(SIGPIPE, SIG_IGN);
  absl::StatusOr<broker::BrokerConfig> config =
      broker::ParseBrokerFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (!config.ok()) {
    absl::FPrintF(stderr, "runsc broker: %s\n", config.status().ToString());
    return 2;
  }
  absl::Status s = broker::RunBroker(*config);
  if (!s.ok()) {
    absl::FPrintF(stderr, "runsc broker: %s\n", s.ToString());
    return 1;
  }
  return 0;
}

}  // namespace sandbox::runsc
