// `runsc do`'s resource-limit flags: --memory and --pids-limit (the
// sandbox's equivalent of a memory and a pids cgroup), their defaults and
// their help text.
#ifndef RUNSC_COMPAT_LIMIT_FLAGS_H_
#define RUNSC_COMPAT_LIMIT_FLAGS_H_

#include <stdint.h>

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "runsc-compat/flags.h"

namespace sandbox::runsc {

// The limits a sandbox gets (0: none).
struct LimitFlags {
  uint64_t memory = 0;
  uint32_t pids = 0;
};

// Defaults: memory half the host's MemTotal (at least kMinMemory), 4096
// tasks.
inline constexpr uint32_t kDefaultPidsLimit = 4096;
inline constexpr uint64_t kMinMemory = uint64_t{32} << 20;
LimitFlags DefaultLimits();

// A byte count as docker's --memory takes it: digits (a fraction allowed),
// then an optional b, k, m, g or t (any case; binary units), optionally
// followed by "b" or "ib" ("256m", "1.5g", "512MiB").
absl::StatusOr<uint64_t> ParseByteSize(std::string_view s);

// The limit flags' table rows, setting `limits` (the defaults are
// DefaultLimits(), which the caller starts from).
flags::Table LimitFlagTable(LimitFlags* limits);

// The "Resource limits" section of `runsc do --help`.
std::string LimitFlagsHelp();

}  // namespace sandbox::runsc

#endif  // RUNSC_COMPAT_LIMIT_FLAGS_H_
