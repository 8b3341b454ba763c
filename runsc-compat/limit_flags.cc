#include "runsc-compat/limit_flags.h"

#include <stdint.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace sandbox::runsc {

const char kLimitFlagsHelp[] =
    R"(Resource limits (what a memory and a pids cgroup would give a container):
  --memory=BYTES      the sandbox's memory: anonymous memory, tmpfs files
                      and cached file pages together; BYTES takes a suffix
                      k, m, g or t (binary units, as docker's --memory).
                      Past it the largest process is killed with SIGKILL
                      (the OOM killer; if it is the program itself, runsc
                      exits 137). /proc/meminfo's MemTotal and sysinfo show
                      it, and tmpfs mounts default to half of it (size=),
                      as Linux's to half of RAM. Default: half the host's
                      memory (MemTotal); 0: no limit. At least 32m.
  --pids-limit=N      at most N tasks (threads count, as in a pids cgroup):
                      fork and clone fail with EAGAIN beyond. Default 4096;
                      0 or -1: no limit. A process also gets EAGAIN from
                      clone past 1024 threads of one address space (the
                      platform's limit).
)";

LimitFlags DefaultLimits() {
  LimitFlags l;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long psz = sysconf(_SC_PAGESIZE);
  uint64_t total = pages > 0 && psz > 0 ? static_cast<uint64_t>(pages) * psz
                                        : uint64_t{2} << 30;
  l.memory = std::max(total / 2 / 4096 * 4096, kMinMemory);
  l.pids = kDefaultPidsLimit;
  return l;
}

absl::StatusOr<uint64_t> ParseByteSize(std::string_view s) {
  const std::string in(s);
  size_t i = 0;
  while (i < s.size() && (absl::ascii_isdigit(s[i]) || s[i] == '.')) ++i;
  std::string_view num = s.substr(0, i);
  std::string unit = absl::AsciiStrToLower(std::string(s.substr(i)));
  double v = 0;
  if (num.empty() || num.front() == '.' ||
      !absl::SimpleAtod(absl::string_view(num.data(), num.size()), &v)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: not a size (e.g. 256m, 2g)", in));
  }
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  if (unit.size() == 2 && unit.back() == 'i') unit.pop_back();
  int shift;
  if (unit.empty()) {
    shift = 0;
  } else if (unit == "k") {
    shift = 10;
  } else if (unit == "m") {
    shift = 20;
  } else if (unit == "g") {
    shift = 30;
  } else if (unit == "t") {
    shift = 40;
  } else {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: unknown unit (b, k, m, g or t)", in));
  }
  const double bytes = std::ldexp(v, shift);
  if (!(bytes < 18446744073709551616.0)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: too large", in));
  }
  return static_cast<uint64_t>(bytes);
}

bool ParseLimitFlag(std::string_view arg, LimitFlags* limits,
                    std::string* error) {
  if (arg.rfind("--memory=", 0) == 0) {
    absl::StatusOr<uint64_t> v = ParseByteSize(arg.substr(9));
    if (!v.ok()) {
      *error = absl::StrFormat("--memory=%s", v.status().message());
    } else if (*v != 0 && *v < kMinMemory) {
      *error = absl::StrFormat("%s: at least 32m", arg);
    } else {
      limits->memory = *v / 4096 * 4096;
    }
    return true;
  }
  if (arg.rfind("--pids-limit=", 0) == 0) {
    std::string_view value = arg.substr(13);
    int64_t n;
    if (!absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &n) ||
        n < -1 || n > INT32_MAX) {
      *error = absl::StrFormat("%s: expected a number of tasks", arg);
    } else {
      limits->pids = n <= 0 ? 0 : static_cast<uint32_t>(n);
    }
    return true;
  }
  return false;
}

}  // namespace sandbox::runsc
