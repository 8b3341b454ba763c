#include "runsc-compat/gofer_command.h"

#include <sys/prctl.h>

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gofer/flags.h"
#include "gofer/gofer.h"

namespace sandbox::runsc {

int GoferCommand(int argc, char** argv) {
  prctl(PR_SET_NAME, "runsc-gofer");
  absl::StatusOr<::gofer::GoferConfig> config =
      ::gofer::ParseGoferFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (!config.ok()) {
    absl::FPrintF(stderr, "runsc gofer: %s\n", config.status().ToString());
    return 2;
  }
  absl::Status s = ::gofer::RunGofer(*config);
  if (!s.ok()) {
    absl::FPrintF(stderr, "runsc gofer: %s\n", s.ToString());
    return 1;
  }
  return 0;
}

}  // namespace sandbox::runsc
