// Fuzzes what the sandbox's resolver does with a guest's datagram: parse
// it as a query and build the response. Nothing may crash or read out of
// bounds; a response fits its size limit, parses back, and echoes the ID
// and the question's exact name.
#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "broker/dns/message.h"

namespace dns = sandbox::broker::dns;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<dns::ParsedQuery> q = dns::ParseQuery({data, size});
  if (!q) return 0;
  if (q->question) {
    // The text form encodes back (what the broker then asks upstream).
    if (!dns::EncodeName(q->question->name).ok()) __builtin_trap();
  }
  std::vector<dns::AddressAnswer> answers(size % 40);
  for (size_t i = 0; i < answers.size(); ++i) {
    answers[i].v6 = (i + size) & 1;
    answers[i].bytes[15] = static_cast<uint8_t>(i);
    answers[i].ttl = static_cast<uint32_t>(i * 7);
  }
  const size_t limits[] = {0, 12, 40, dns::kMaxUdpSize, dns::kMaxTcpSize};
  for (size_t limit : limits) {
    const dns::Rcode rc =
        q->error != dns::Rcode::kNoError ? q->error : dns::Rcode::kNoError;
    std::vector<uint8_t> resp = dns::BuildResponse(*q, rc, answers, limit);
    if (resp.size() > std::max(limit, dns::kHeaderSize)) __builtin_trap();
    absl::StatusOr<dns::Response> back = dns::ParseResponse(resp);
    if (!back.ok()) __builtin_trap();
    if (back->header.id != q->header.id) __builtin_trap();
    if (back->question && back->question->name != q->question->name) {
      __builtin_trap();
    }
    if (!back->header.tc && rc == dns::Rcode::kNoError && q->question &&
        back->answers.size() != std::min(answers.size(), dns::kMaxAnswers)) {
      __builtin_trap();
    }
  }
  return 0;
}
