// Fuzz target for the BootSpec parser (the spec memfd is untrusted input
// to the Sentry): parsing never crashes, and whatever parses is stable:
// serialized again, it parses to the same serialization.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sentry/boot/boot_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<sandbox::boot::BootSpec> spec =
      sandbox::boot::ParseBootSpec(in);
  if (!spec.ok()) return 0;
  const std::string out = sandbox::boot::SerializeBootSpec(*spec);
  absl::StatusOr<sandbox::boot::BootSpec> again =
      sandbox::boot::ParseBootSpec(out);
  if (!again.ok() || sandbox::boot::SerializeBootSpec(*again) != out) {
    std::abort();
  }
  return 0;
}
