// gofer: the Gofer process as a binary (tests, and until runsc calls
// RunGofer itself). Flags: flags.h. Exit status 0 when every connection
// ended cleanly, 1 on an error, 2 on bad flags.
#include <cstdio>
#include <string>
#include <vector>

#include "gofer/flags.h"
#include "gofer/gofer.h"

int main(int argc, char** argv) {
  absl::StatusOr<gofer::GoferConfig> config =
      gofer::ParseGoferFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (!config.ok()) {
    std::fprintf(stderr, "gofer: %s\n", config.status().ToString().c_str());
    return 2;
  }
  absl::Status s = gofer::RunGofer(*config);
  if (!s.ok()) {
    std::fprintf(stderr, "gofer: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
