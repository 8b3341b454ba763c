#include "gofer/flags.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace gofer {
namespace {

// Removes a trailing "ro" part; true if there was one.
bool TakeRo(std::vector<std::string>* parts) {
  if (parts->size() > 1 && parts->back() == "ro") {
    parts->pop_back();
    return true;
  }
  return false;
}

// Removes trailing "ro", "suid" and "uds" parts, in any order.
void TakeOptions(std::vector<std::string>* parts, ServedMount* m) {
  for (int i = 0; i < 3; ++i) {
    if (!m->read_only && TakeRo(parts)) {
      m->read_only = true;
    } else if (!m->suid && parts->size() > 1 && parts->back() == "suid") {
      parts->pop_back();
      m->suid = true;
    } else if (!m->host_sockets && parts->size() > 1 &&
               parts->back() == "uds") {
      parts->pop_back();
      m->host_sockets = true;
    }
  }
}

}  // namespace

absl::StatusOr<GoferConfig> ParseGoferFlags(
    const std::vector<std::string>& args) {
  GoferConfig config;
  for (const std::string& a : args) {
    absl::string_view arg = a;
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
      ServedMount m;
      TakeOptions(&parts, &m);
      if (parts.size() > 2 || !absl::SimpleAtoi(parts[0], &m.sock_fd) ||
          m.sock_fd < 0) {
        return absl::InvalidArgumentError(absl::StrCat("bad flag ", a));
      }
      if (parts.size() == 2) m.path = parts[1];
      config.mounts.push_back(m);
    } else if (absl::ConsumePrefix(&arg, "--volume=")) {
      // FD:SRC[:ro]; SRC may itself contain ':'.
      std::vector<std::string> parts = absl::StrSplit(arg, ':');
      ServedMount m;
      Volume v;
      TakeOptions(&parts, &m);
      v.read_only = m.read_only;
      if (parts.size() < 2 || !absl::SimpleAtoi(parts[0], &m.sock_fd) ||
          m.sock_fd < 0) {
        return absl::InvalidArgumentError(absl::StrCat("bad flag ", a));
      }
      v.source = absl::StrJoin(parts.begin() + 1, parts.end(), ":");
      if (v.source.empty() || v.source[0] != '/') {
        return absl::InvalidArgumentError(
            absl::StrCat("bad flag ", a, ": SRC must be an absolute path"));
      }
      m.volume = static_cast<int>(config.volumes.size());
      config.volumes.push_back(v);
      config.mounts.push_back(m);
    } else if (absl::ConsumePrefix(&arg, "--bind=")) {
      std::vector<std::string> parts = absl::StrSplit(arg, ':');
      BindMount b;
      b.read_only = TakeRo(&parts);
      if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
        return absl::InvalidArgumentError(absl::StrCat("bad flag ", a));
      }
      b.source = parts[0];
      b.target = parts[1];
      config.submounts.push_back(b);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", a));
    }
  }
  if (config.root.empty() || config.root[0] != '/') {
    return absl::InvalidArgumentError("--root=ABSOLUTE_DIR is required");
  }
  if (config.mounts.empty()) {
    return absl::InvalidArgumentError("at least one --serve=FD is required");
  }
  return config;
}

}  // namespace gofer
