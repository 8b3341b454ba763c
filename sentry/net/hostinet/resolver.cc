#include "sentry/net/hostinet/resolver.h"

#include <sys/socket.h>

#include <cstring>

#include "broker/dns/message.h"

namespace sandbox::net::hostinet {

namespace dns = ::sandbox::broker::dns;

std::vector<uint8_t> AnswerQuery(BrokerClient& broker, Caller& c,
                                 std::span<const uint8_t> query) {
  std::optional<dns::ParsedQuery> q = dns::ParseQuery(query);
  if (!q.has_value()) return {};
  auto reply = [&](dns::Rcode rcode,
                   const std::vector<dns::AddressAnswer>& answers = {}) {
    return dns::BuildResponse(*q, rcode, answers, dns::kMaxUdpSize);
  };
  if (q->error != dns::Rcode::kNoError || !q->question.has_value()) {
    return reply(q->error);
  }
  const dns::Question& question = *q->question;
  if (question.qclass != dns::kClassIN) return reply(dns::Rcode::kRefused);
  const bool a = question.qtype == dns::kTypeA;
  const bool aaaa = question.qtype == dns::kTypeAAAA;
  // Other types: ask for the name anyway (the policy decides whether it
  // exists for the sandbox), answer without records.
  KResult<Resolved> r = broker.Resolve(c, question.name,
                                       a      ? AF_INET
                                       : aaaa ? AF_INET6
                                              : 0);
  if (!r.ok()) return reply(dns::Rcode::kServFail);
  switch (r->rcode) {
    case broker::Rcode::kNoError:
      break;
    case broker::Rcode::kNxDomain:
      return reply(dns::Rcode::kNxDomain);
    case broker::Rcode::kRefused:
      return reply(dns::Rcode::kRefused);
    default:
      return reply(dns::Rcode::kServFail);
  }
  std::vector<dns::AddressAnswer> answers;
  if (a || aaaa) {
    for (const broker::Ip& ip : r->addresses) {
      const bool v6 = ip.family == broker::kFamilyInet6;
      if (v6 != aaaa) continue;
      dns::AddressAnswer x;
      x.v6 = v6;
      std::memcpy(x.bytes.data(), ip.bytes.data(), v6 ? 16 : 4);
      x.ttl = r->ttl;
      answers.push_back(x);
    }
  }
  return reply(dns::Rcode::kNoError, answers);
}

}  // namespace sandbox::net::hostinet
