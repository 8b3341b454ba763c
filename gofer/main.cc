// gofer: the Gofer process as a binary (tests, and until runsc calls
// RunGofer itself).
//
//   gofer --root=DIR --serve=FD[:PATH][:ro] ... [--bind=SRC:TARGET[:ro]] ...
//         [--root-ro] [--userns] [--no-confine] [--no-seccomp]
//
// --serve gives one connection: the inherited socket FD, the directory it
// serves (relative to the root; default the root) and ":ro" to refuse
// changes. Exit status 0 when every connection ended cleanly, 1 otherwise.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gofer/gofer.h"

namespace {

bool TakeRo(std::vector<std::string>* parts) {
  if (parts->size() > 1 && parts->back() == "ro") {
    parts->pop_back();
    return true;
  }
  return false;
}

int Usage(const char* msg) {
  std::fprintf(stderr,
               "gofer: %s\nusage: gofer --root=DIR --serve=FD[:PATH][:ro]... "
               "[--bind=SRC:TARGET[:ro]]... [--root-ro] [--userns] "
               "[--no-confine] [--no-seccomp]\n",
               msg);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  gofer::GoferConfig config;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--root=")) {
      config.root = std::string(arg);
    } else if (arg == "--root-ro") {
      config.root_read_only = true;
    } else if (arg == "--userns") {
      config.user_namespace = true;
    } else if (arg == "--no-confine") {
      config.confine = false;
    } else if (arg == "--no-seccomp") {
      config.seccomp = false;
    } else if (absl::ConsumePrefix(&arg, "--serve=")) {
      std::vector<std::string> parts = absl::StrSplit(arg, ':');
      gofer::ServedMount m;
      m.read_only = TakeRo(&parts);
      if (parts.empty() || parts.size() > 2 ||
          !absl::SimpleAtoi(parts[0], &m.sock_fd) || m.sock_fd < 0) {
        return Usage("bad --serve");
      }
      if (parts.size() == 2) m.path = parts[1];
      config.mounts.push_back(m);
    } else if (absl::ConsumePrefix(&arg, "--bind=")) {
      std::vector<std::string> parts = absl::StrSplit(arg, ':');
      gofer::BindMount b;
      b.read_only = TakeRo(&parts);
      if (parts.size() != 2) return Usage("bad --bind");
      b.source = parts[0];
      b.target = parts[1];
      config.submounts.push_back(b);
    } else {
      return Usage("unknown argument");
    }
  }
  if (config.root.empty()) return Usage("--root is required");
  absl::Status s = gofer::RunGofer(config);
  if (!s.ok()) {
    std::fprintf(stderr, "gofer: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
