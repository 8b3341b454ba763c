#include "runsc-compat/network_flags.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sandbox::runsc {
namespace {

// Parses `args` with `table` (as a command line after a command name);
// the error's message, "" when they parse.
std::string ParseWith(const flags::Table& table,
                      std::vector<std::string> args) {
  args.insert(args.begin(), "do");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  absl::StatusOr<int> r =
      flags::Parse(table, static_cast<int>(argv.size()), argv.data(), 1);
  return r.ok() ? "" : std::string(r.status().message());
}

TEST(NetworkFlags, Network) {
  NetworkFlags f;
  EXPECT_EQ(ParseWith(NetworkFlagTable(&f), {"--network=host"}), "");
  EXPECT_TRUE(f.host);
  EXPECT_EQ(ParseWith(NetworkFlagTable(&f), {"--network", "none"}), "");
  EXPECT_FALSE(f.host);
  std::string err = ParseWith(NetworkFlagTable(&f), {"--network=bridge"});
  EXPECT_NE(err.find("none or host"), std::string::npos) << err;
  EXPECT_EQ(ParseWith(NetworkFlagTable(&f), {"--memory=1g"}),
            "unknown flag --memory=1g");
  // Mode none is the default.
  f.host = true;
  EXPECT_EQ(ParseWith(NetworkFlagTable(&f), {}), "");
  EXPECT_FALSE(f.host);
}

TEST(NetworkFlags, PublishAndItsAlias) {
  NetworkFlags f;
  EXPECT_EQ(ParseWith(NetworkFlagTable(&f),
                      {"--publish=8080:80", "-p=8081:81", "-p", "8082:82"}),
            "");
  ASSERT_EQ(f.publishes.size(), 3u);
  EXPECT_EQ(broker::PublishToString(f.publishes[2]), "127.0.0.1:8082:82");
  std::string err = ParseWith(NetworkFlagTable(&f), {"-p=80"});
  EXPECT_NE(err.find("--publish=80: "), std::string::npos) << err;
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
  ASSERT_EQ(ParseWith(NetworkFlagTable(&f), {"--egress-allow=10.0.0.0/8:443"}),
            "");
  bool enforcing = true;
  absl::StatusOr<std::vector<std::string>> a = BrokerPolicyArgs(f, &enforcing);
  ASSERT_FALSE(a.ok());  // not in host mode
  EXPECT_NE(a.status().message().find("--network=host"), std::string::npos);
  f.host = true;
  ASSERT_EQ(ParseWith(NetworkFlagTable(&f),
                      {"--network=host", "--egress-allow=PyPI.org.",
                       "--host-resolver=127.0.0.1:5353"}),
            "");
  a = BrokerPolicyArgs(f, &enforcing);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(enforcing);
  EXPECT_EQ(*a, (std::vector<std::string>{"--policy", "--allow=10.0.0.0/8:443",
                                          "--allow=pypi.org",
                                          "--resolver=127.0.0.1:5353"}));
  // A bad entry names itself.
  ASSERT_EQ(ParseWith(NetworkFlagTable(&f),
                      {"--network=host", "--egress-allow=10.0.0.256"}),
            "");
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
  ASSERT_EQ(
      ParseWith(NetworkFlagTable(&open), {"--network=host", "--publish=8080:80",
                                          "--publish=127.0.0.1:8080:81"}),
      "");
  a = BrokerPolicyArgs(open, &enforcing);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("given twice"), std::string::npos);
  EXPECT_EQ(ParseWith(NetworkFlagTable(&open), {"--host-resolver=nope"}),
            "--host-resolver=nope: expected an IP address, ADDR:PORT or "
            "[V6ADDR]:PORT");
  EXPECT_EQ(ParseWith(NetworkFlagTable(&open), {"--egress-allow="}),
            "--egress-allow needs an ENTRY");
  EXPECT_EQ(ParseWith(NetworkFlagTable(&open), {"--egress-policy="}),
            "--egress-policy needs a FILE");
}

TEST(NetworkFlags, HelpSaysHostModeWithoutPolicyAllowsEverything) {
  EXPECT_NE(NetworkFlagsHelp().find(
                "WITH NO --egress-allow/--egress-policy, HOST MODE"),
            std::string::npos);
}

}  // namespace
}  // namespace sandbox::runsc
