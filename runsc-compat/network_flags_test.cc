#include "runsc-compat/network_flags.h"

#include "gtest/gtest.h"

namespace sandbox::runsc {
namespace {

TEST(NetworkFlags, Network) {
  NetworkFlags f;
  std::string err;
  EXPECT_TRUE(ParseNetworkFlag("--network=host", &f, &err));
  EXPECT_TRUE(err.empty());
  EXPECT_TRUE(f.host);
  EXPECT_TRUE(ParseNetworkFlag("--network=none", &f, &err));
  EXPECT_FALSE(f.host);
  EXPECT_TRUE(ParseNetworkFlag("--network=bridge", &f, &err));
  EXPECT_NE(err.find("none or host"), std::string::npos) << err;
  EXPECT_FALSE(ParseNetworkFlag("--memory=1g", &f, &err));
}

TEST(NetworkFlags, Publish) {
  absl::StatusOr<broker::Publish> p = broker::ParsePublish("8080:80");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(broker::PublishToString(*p), "127.0.0.1:8080:80");
  EXPECT_EQ(p->proto, broker::Proto::kTcp);
  p = broker::ParsePublish("0.0.0.0:53:5353/udp");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(broker::PublishToString(*p), "0.0.0.0:53:5353/udp");
  p = broker::ParsePublish("[::1]:8080:80/tcp");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(broker::PublishToString(*p), "[::1]:8080:80");
  EXPECT_EQ(broker::ParsePublish(broker::PublishToString(*p))->host, p->host);
  struct Bad {
    const char* value;
    const char* says;
  } bad[] = {
      {"80", "two or three"},
      {"1:2:3:4", "two or three"},
      {"0:80", "HOSTPORT '0'"},
      {"65536:80", "HOSTPORT '65536'"},
      {"80:x", "GUESTPORT 'x'"},
      {"80:-1", "GUESTPORT '-1'"},
      {"localhost:80:80", "HOSTADDR 'localhost'"},
      {"[::1:80:80", "[ADDR]:"},
      {"[1.2.3.4]:80:80", "not an IPv6"},
      {"80:80/sctp", "unknown protocol 'sctp'"},
      {":80:80", "HOSTADDR ''"},
  };
  for (const Bad& b : bad) {
    p = broker::ParsePublish(b.value);
    ASSERT_FALSE(p.ok()) << b.value;
    EXPECT_NE(p.status().message().find(b.says), std::string::npos)
        << b.value << ": " << p.status().message();
    EXPECT_NE(p.status().message().find("[HOSTADDR:]HOSTPORT:GUESTPORT"),
              std::string::npos);
  }
}

TEST(NetworkFlags, CrossChecksAndPolicy) {
  NetworkFlags f;
  std::string err;
  ASSERT_TRUE(ParseNetworkFlag("--egress-allow=10.0.0.0/8:443", &f, &err));
  bool enforcing = true;
  absl::StatusOr<std::vector<std::string>> a = BrokerPolicyArgs(f, &enforcing);
  ASSERT_FALSE(a.ok());  // not in host mode
  EXPECT_NE(a.status().message().find("--network=host"), std::string::npos);
  f.host = true;
  ASSERT_TRUE(ParseNetworkFlag("--egress-allow=PyPI.org.", &f, &err));
  ASSERT_TRUE(ParseNetworkFlag("--host-resolver=127.0.0.1:5353", &f, &err));
  ASSERT_TRUE(err.empty()) << err;
  a = BrokerPolicyArgs(f, &enforcing);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(enforcing);
  EXPECT_EQ(*a, (std::vector<std::string>{"--policy", "--allow=10.0.0.0/8:443",
                                          "--allow=pypi.org",
                                          "--resolver=127.0.0.1:5353"}));
  // A bad entry names itself.
  ASSERT_TRUE(ParseNetworkFlag("--egress-allow=10.0.0.256", &f, &err));
  a = BrokerPolicyArgs(f, &enforcing);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("10.0.0.256"), std::string::npos);
  // Host mode without a policy: allow everything.
  NetworkFlags open;
  open.host = true;
  a = BrokerPolicyArgs(open, &enforcing);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(enforcing);
  EXPECT_TRUE(a->empty());
  // A host port twice.
  ASSERT_TRUE(ParseNetworkFlag("--publish=8080:80", &open, &err));
  ASSERT_TRUE(ParseNetworkFlag("--publish=127.0.0.1:8080:81", &open, &err));
  a = BrokerPolicyArgs(open, &enforcing);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("given twice"), std::string::npos);
  EXPECT_FALSE(ParseNetworkFlag("--host-resolver=nope", &open, &err) &&
               err.empty());
}

TEST(NetworkFlags, HelpSaysHostModeWithoutPolicyAllowsEverything) {
  EXPECT_NE(std::string(kNetworkFlagsHelp)
                .find("WITH NO --egress-allow/--egress-policy, HOST MODE"),
            std::string::npos);
}

}  // namespace
}  // namespace sandbox::runsc
