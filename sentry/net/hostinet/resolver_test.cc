// The sandbox's name server against a fake broker: allowed names answered
// with the broker's addresses, refused and unknown ones as the broker says.
#include "sentry/net/hostinet/resolver.h"

#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "broker/dns/message.h"
#include "broker/protocol/transport.h"
#include "gtest/gtest.h"

namespace sandbox::net::hostinet {
namespace {

namespace dns = ::sandbox::broker::dns;

TEST(Resolver, AnswersWhatTheBrokerSays) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  broker::UniqueFd fake(sv[1]);
  BrokerClient client(sv[0], true, {});
  std::thread t([&] {
    for (int i = 0; i < 3; ++i) {
      broker::Received req;
      ASSERT_EQ(broker::RecvMessage(fake.get(), &req), 0);
      broker::Message rep;
      rep.type = broker::Type::kResolveReply;
      rep.id = req.message.id;
      if (req.message.name == "pypi.org") {
        EXPECT_EQ(req.message.family, broker::kFamilyInet);
        broker::Ip ip;
        ip.bytes = {127, 0, 0, 9};
        rep.addresses = {ip};
        rep.ttl = 60;
      } else if (req.message.name == "evil.test") {
        rep.rcode = broker::Rcode::kRefused;
      } else {
        rep.rcode = broker::Rcode::kNxDomain;
      }
      ASSERT_EQ(broker::SendMessage(fake.get(), rep), 0);
    }
  });
  Caller c;
  auto ask = [&](const char* name) {
    auto q = dns::BuildQuery(0x1234, name, dns::kTypeA);
    EXPECT_TRUE(q.ok());
    std::vector<uint8_t> resp = AnswerQuery(client, c, *q);
    auto parsed = dns::ParseResponse(resp);
    EXPECT_TRUE(parsed.ok());
    EXPECT_TRUE(dns::AnswersQuery(*parsed, 0x1234, name, dns::kTypeA));
    return *parsed;
  };
  dns::Response ok = ask("pypi.org");
  EXPECT_EQ(ok.header.rcode, 0);
  dns::Addresses a = dns::ExtractAddresses(ok, "pypi.org", dns::kTypeA);
  ASSERT_EQ(a.addresses.size(), 1u);
  EXPECT_EQ(a.addresses[0].bytes[3], 9);
  EXPECT_EQ(ask("evil.test").header.rcode, 5);
  EXPECT_EQ(ask("nowhere.test").header.rcode, 3);
  t.join();
  // Not a query: no answer.
  uint8_t junk[3] = {1, 2, 3};
  EXPECT_TRUE(AnswerQuery(client, c, junk).empty());
}

}  // namespace
}  // namespace sandbox::net::hostinet
