// Fuzzes the /etc/hosts parser: nothing may crash; what a line lists is
// found again.
#include <stddef.h>
#include <stdint.h>

#include <string_view>

#include "broker/dns/hosts.h"

namespace dns = sandbox::broker::dns;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const dns::HostsFile h = dns::HostsFile::Parse(text);
  if (h.name_count() > dns::HostsFile::kMaxNames) __builtin_trap();
  const std::string_view first = text.substr(0, text.find('\n'));
  for (bool v6 : {false, true}) {
    if (h.Lookup(first, v6).size() > dns::HostsFile::kMaxAddressesPerName) {
      __builtin_trap();
    }
  }
  return 0;
}
