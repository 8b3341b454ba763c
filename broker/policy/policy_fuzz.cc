// Fuzzes the policy parser: an input is a policy file (and its first line
// an --egress-allow entry). Nothing may crash; every entry that parses
// prints a canonical form that parses back to the same entry; the decisions
// of the resulting policy are consistent with the pins made.
#include <stddef.h>
#include <stdint.h>

#include <string>
#include <string_view>
#include <vector>

#include "broker/policy/policy.h"

namespace policy = sandbox::broker::policy;

namespace {

void CheckRoundTrip(const policy::Entry& e) {
  absl::StatusOr<policy::Entry> again = policy::ParseEntry(e.ToString());
  if (!again.ok() || !(*again == e)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string_view first = text.substr(0, text.find('\n'));
  absl::StatusOr<policy::Entry> one = policy::ParseEntry(first);
  if (one.ok()) CheckRoundTrip(*one);

  absl::StatusOr<std::vector<policy::Entry>> es =
      policy::ParsePolicyFile(text, "fuzz");
  if (!es.ok()) return 0;
  for (const policy::Entry& e : *es) CheckRoundTrip(e);
  std::unique_ptr<policy::Policy> p = policy::Policy::FromEntries(*es);

  // Every name entry's name (a wildcard's with a label in front) may be
  // resolved; what it pins is then allowed on its ports.
  uint32_t pinned = 0;
  for (const policy::Entry& e : *es) {
    if (e.kind != policy::Entry::Kind::kName) {
      const policy::Decision d =
          p->Check(e.address, e.ports ? e.ports->lo : 1, policy::Proto::kTcp);
      if (!d.allowed) __builtin_trap();
      continue;
    }
    const std::string name = e.wildcard ? "x." + e.name : e.name;
    if (!p->AllowsName(name)) __builtin_trap();
    // A fresh address for each (198.18.0.0/15, the benchmarking range).
    if (++pinned >= (1u << 17)) break;
    const uint8_t b[4] = {198, static_cast<uint8_t>(18 + (pinned >> 16)),
                          static_cast<uint8_t>(pinned >> 8),
                          static_cast<uint8_t>(pinned)};
    const policy::IpAddress a = policy::IpAddress::V4(b);
    if (!p->Pin(name, std::vector<policy::IpAddress>{a})) __builtin_trap();
    if (!p->Check(a, e.ports ? e.ports->hi : 65535, policy::Proto::kUdp)
             .allowed) {
      __builtin_trap();
    }
  }
  // The input itself as a name and an address.
  (void)p->AllowsName(first);
  if (auto a = policy::IpAddress::Parse(first)) {
    (void)p->Check(*a, 443, policy::Proto::kTcp);
  }
  return 0;
}
