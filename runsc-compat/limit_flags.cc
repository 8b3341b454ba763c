#include "runsc-compat/limit_flags.h"

#include <stdint.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace sandbox::runsc {

namespace {

constexpr char kLimitFlagsTitle[] =
    "Resource limits (what a memory and a pids cgroup would give a "
    "container):\n";

}  // namespace

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

flags::Table LimitFlagTable(LimitFlags* limits) {
  using flags::Arg;
  return {
      {.name = "memory",
       .arg = Arg::kRequired,
       .value_name = "BYTES",
       .help = {{"", R"(the sandbox's memory: anonymous memory, tmpfs files
and cached file pages together; BYTES takes a suffix
k, m, g or t (binary units, as docker's --memory).
Past it the largest process is killed with SIGKILL
(the OOM killer; if it is the program itself, runsc
exits 137). /proc/meminfo's MemTotal and sysinfo show
it, and tmpfs mounts default to half of it (size=),
as Linux's to half of RAM. Default: half the host's
memory (MemTotal); 0: no limit. At least 32m.)"}},
       .set =
           [limits](const flags::Given& g) {
             absl::StatusOr<uint64_t> v = ParseByteSize(g.value);
             if (!v.ok()) {
               return absl::InvalidArgumentError(
                   absl::StrFormat("--memory=%s", v.status().message()));
             }
             if (*v != 0 && *v < kMinMemory) {
               return absl::InvalidArgumentError(
                   absl::StrFormat("%s: at least 32m", g.text));
             }
             limits->memory = *v / 4096 * 4096;
             return absl::OkStatus();
           }},
      {.name = "pids-limit",
       .arg = Arg::kRequired,
       .value_name = "N",
       .help = {{"", R"(at most N tasks (threads count, as in a pids cgroup):
fork and clone fail with EAGAIN beyond. Default 4096;
0 or -1: no limit. A process also gets EAGAIN from
clone past 1024 threads of one address space (the
platform's limit).)"}},
       .set =
           [limits](const flags::Given& g) {
             int64_t n;
             if (!absl::SimpleAtoi(
                     absl::string_view(g.value.data(), g.value.size()), &n) ||
                 n < -1 || n > INT32_MAX) {
               return absl::InvalidArgumentError(
                   absl::StrFormat("%s: expected a number of tasks", g.text));
             }
             limits->pids = n <= 0 ? 0 : static_cast<uint32_t>(n);
             return absl::OkStatus();
           }},
  };
}

std::string LimitFlagsHelp() {
  LimitFlags unused;
  return kLimitFlagsTitle + flags::FormatHelp(LimitFlagTable(&unused));
}

}  // namespace sandbox::runsc
