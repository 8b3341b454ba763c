// Fuzzes what the broker does with an upstream's answer: parse it as a
// response and extract the addresses for its question. Nothing may crash
// or read out of bounds; every decoded name encodes back.
#include <stddef.h>
#include <stdint.h>

#include "broker/dns/message.h"

namespace dns = sandbox::broker::dns;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<dns::Response> r = dns::ParseResponse({data, size});
  if (!r.ok()) return 0;
  if (r->answers.size() > dns::kMaxAnswers) __builtin_trap();
  for (const dns::Record& rec : r->answers) {
    if (!dns::EncodeName(rec.name).ok()) __builtin_trap();
    if (rec.type == dns::kTypeCNAME && !dns::EncodeName(rec.cname).ok()) {
      __builtin_trap();
    }
  }
  const std::string name = r->question          ? r->question->name
                           : r->answers.empty() ? std::string("a")
                                                : r->answers[0].name;
  for (uint16_t t : {dns::kTypeA, dns::kTypeAAAA}) {
    dns::Addresses a = dns::ExtractAddresses(*r, name, t);
    if (a.addresses.size() > r->answers.size()) __builtin_trap();
    (void)dns::AnswersQuery(*r, 0, name, t);
  }
  return 0;
}
