#include "broker/policy/policy.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sandbox::broker::policy {
namespace {

using ::testing::HasSubstr;

IpAddress Ip(const char* s) {
  std::optional<IpAddress> a = IpAddress::Parse(s);
  EXPECT_TRUE(a.has_value()) << s;
  return a.value_or(IpAddress{});
}

struct Good {
  const char* text;
  const char* canonical;
};

TEST(ParseEntry, GoodEntriesAndTheirCanonicalForm) {
  const Good kGood[] = {
      {"10.0.0.0/8", "10.0.0.0/8"},
      {"10.0.0.0/8:443", "10.0.0.0/8:443"},
      {"127.0.0.1", "127.0.0.1/32"},
      {"127.0.0.1:8000", "127.0.0.1/32:8000"},
      {"0.0.0.0/0", "0.0.0.0/0"},
      {"192.168.1.0/24:1-65535", "192.168.1.0/24:1-65535"},
      {"  10.1.2.3:80-90 ", "10.1.2.3/32:80-90"},
      {"2001:db8::/32", "2001:db8::/32"},
      {"[2001:db8::/32]:80-90", "[2001:db8::/32]:80-90"},
      {"[2001:DB8::1]", "2001:db8::1/128"},
      {"::1", "::1/128"},
      {"[::1]:53", "[::1/128]:53"},
      {"::/0", "::/0"},
      {"::ffff:1.2.3.4", "1.2.3.4/32"},
      {"[::ffff:10.0.0.0/104]:80", "10.0.0.0/8:80"},
      {"pypi.org", "pypi.org"},
      {"PyPI.Org.", "pypi.org"},
      {"*.pythonhosted.org:443", "*.pythonhosted.org:443"},
      {"*.org", "*.org"},
      {"localhost:8000-8010", "localhost:8000-8010"},
      {"a-b.c_d.example", "a-b.c_d.example"},
      {"123.com", "123.com"},
      {"x.y:65535", "x.y:65535"},
  };
  for (const Good& g : kGood) {
    absl::StatusOr<Entry> e = ParseEntry(g.text);
    ASSERT_TRUE(e.ok()) << g.text << ": " << e.status();
    EXPECT_EQ(e->ToString(), g.canonical) << g.text;
    // The canonical form parses back to the same entry.
    absl::StatusOr<Entry> again = ParseEntry(e->ToString());
    ASSERT_TRUE(again.ok()) << e->ToString() << ": " << again.status();
    EXPECT_EQ(*again, *e) << g.text;
  }
}

struct BadCase {
  const char* text;
  const char* message;  // a substring of the error
};

TEST(ParseEntry, BadEntriesSayWhatIsWrong) {
  const std::string long_label(64, 'a');
  const std::string label63(63, 'a');
  // 4 * 64 - 1 = 255 characters.
  const std::string long_name =
      label63 + "." + label63 + "." + label63 + "." + label63;
  const std::string long_label_entry = long_label + ".com";
  const BadCase kBad[] = {
      {"", "empty entry"},
      {"10.0.0.256", "octet 256 out of range 0..255"},
      {"10.0.0.1000", "octet 1000 out of range 0..255"},
      {"10.0.0.01", "leading zero"},
      {"10.0.0", "fewer than four octets"},
      {"10.0.0.0.0", "more than four octets"},
      {"10..0.1", "empty octet"},
      {"10.0.0.0/33", "prefix 33 longer than 32"},
      {"10.0.0.0/", "empty prefix length"},
      {"10.0.0.0/x", "not a number"},
      {"10.1.0.0/8", "did you mean 10.0.0.0/8?"},
      {"2001:db8::/129", "prefix 129 longer than 128"},
      {"2001:db8::1/32", "did you mean 2001:db8::/32?"},
      {"2001:db8:::1", "not an IPv6 address"},
      {"fe80::1%eth0", "zone"},
      {"[::1", "`[` without `]`"},
      {"[::1]80", "expected `:PORT`"},
      {"[10.0.0.1]:80", "not an IPv6 address"},
      {"pypi.org:0", "port 0 out of range 1..65535"},
      {"pypi.org:65536", "port 65536 out of range 1..65535"},
      {"pypi.org:123456", "out of range 1..65535"},
      {"pypi.org:", "empty port"},
      {"pypi.org:http", "not a number"},
      {"pypi.org:090", "leading zero"},
      {"pypi.org:90-80", "port range 90-80 is empty"},
      {"pypi.org:80-", "empty port"},
      {"[::1]:0", "port 0"},
      {"a..b", "empty label"},
      {".a", "empty label"},
      {"a.b..", "empty label"},
      {".", "empty name"},
      {long_label_entry.c_str(), "64 characters long, more than 63"},
      {long_name.c_str(), "255 characters long, more than 253"},
      {"a.*.org", "`*` only as the whole first label"},
      {"*a.org", "`*` only as the whole first label"},
      {"a*.org", "`*` only as the whole first label"},
      {"*", "`*` only as the whole first label"},
      {"*.", "a wildcard needs a name"},
      {"*.*.org", "`*` only as the whole first label"},
      {"py!pi.org", "character `!` not allowed"},
      {"caf\xc3\xa9.fr", "byte 0xc3 not allowed"},
      {"-a.org", "starts or ends with `-`"},
      {"a-.org", "starts or ends with `-`"},
      {"a.org b.org", "more than one entry"},
      {"a/b.org", "not an IPv4 address"},
  };
  for (const BadCase& b : kBad) {
    absl::StatusOr<Entry> e = ParseEntry(b.text);
    ASSERT_FALSE(e.ok()) << "`" << b.text << "` parsed as " << e->ToString();
    EXPECT_THAT(std::string(e.status().message()), HasSubstr(b.message))
        << b.text;
  }
}

TEST(ParseEntry, ErrorNamesTheOffendingText) {
  absl::StatusOr<Entry> e = ParseEntry("10.0.0.0/40:443");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(),
            "`10.0.0.0/40:443`: prefix 40 longer than 32");
}

TEST(ParsePolicyFile, CommentsBlankLinesAndLineNumbers) {
  absl::StatusOr<std::vector<Entry>> es = ParsePolicyFile(
      "# the package index\n"
      "\n"
      "pypi.org:443   # the index\n"
      "\t*.pythonhosted.org:443\r\n"
      "10.0.0.0/8\n"
      "   \n"
      "a#b.org\n",
      "policy.txt");
  ASSERT_FALSE(es.ok());
  // "a#b.org": a "#" inside an entry is no comment.
  EXPECT_EQ(es.status().message(),
            "policy.txt:7: `a#b.org`: character `#` not allowed in a name");

  es = ParsePolicyFile("pypi.org:443 # x\n*.pythonhosted.org\n\n# end", "p");
  ASSERT_TRUE(es.ok()) << es.status();
  ASSERT_EQ(es->size(), 2u);
  EXPECT_EQ((*es)[0].ToString(), "pypi.org:443");
  EXPECT_EQ((*es)[1].ToString(), "*.pythonhosted.org");

  es = ParsePolicyFile("ok.org\nok.org other.org\n", "f");
  ASSERT_FALSE(es.ok());
  EXPECT_THAT(std::string(es.status().message()),
              HasSubstr("f:2: `ok.org other.org`: more than one entry"));

  es = ParsePolicyFile("", "empty");
  ASSERT_TRUE(es.ok());
  EXPECT_TRUE(es->empty());
}

TEST(Policy, FromFlagsReadsFilesAndNamesBadOnes) {
  const char* tmp = getenv("TEST_TMPDIR");
  std::string templ = std::string(tmp ? tmp : "/var/tmp") + "/policyXXXXXX";
  char* path = templ.data();
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string body = "# comment\n127.0.0.1:8000\nbad..name\n";
  ASSERT_EQ(write(fd, body.data(), body.size()),
            static_cast<ssize_t>(body.size()));
  close(fd);
  const std::vector<std::string> allow = {"pypi.org"};
  const std::vector<std::string> files = {path};
  absl::StatusOr<std::unique_ptr<Policy>> p = Policy::FromFlags(allow, files);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            std::string(path) + ":3: `bad..name`: empty label");

  const std::vector<std::string> bad_allow = {"1.2.3.4:0"};
  p = Policy::FromFlags(bad_allow, {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "--egress-allow=1.2.3.4:0: `1.2.3.4:0`: port 0 out of range "
            "1..65535");

  const std::vector<std::string> missing = {"/nonexistent/policy"};
  p = Policy::FromFlags({}, missing);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr("--egress-policy=/nonexistent/policy: "));

  const std::string good = "# only\n127.0.0.1:8000\n";
  FILE* f = fopen(path, "w");
  ASSERT_NE(f, nullptr);
  fputs(good.c_str(), f);
  fclose(f);
  p = Policy::FromFlags(allow, files);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE((*p)->allow_all());
  EXPECT_EQ((*p)->CanonicalEntries(),
            (std::vector<std::string>{"pypi.org", "127.0.0.1/32:8000"}));
  unlink(path);

  p = Policy::FromFlags({}, {});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE((*p)->allow_all());
}

std::unique_ptr<Policy> Make(std::vector<std::string> texts) {
  std::vector<Entry> es;
  for (const std::string& t : texts) {
    absl::StatusOr<Entry> e = ParseEntry(t);
    EXPECT_TRUE(e.ok()) << t << ": " << e.status();
    if (e.ok()) es.push_back(*e);
  }
  return Policy::FromEntries(std::move(es));
}

TEST(Policy, AllowAllAllowsEverything) {
  std::unique_ptr<Policy> p = Policy::AllowAll();
  EXPECT_TRUE(p->allow_all());
  EXPECT_TRUE(p->AllowsName("anything.example"));
  Decision d = p->Check(Ip("8.8.8.8"), 53, Proto::kUdp);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.reason, "no egress policy");
  EXPECT_FALSE(p->Pin("x.org", std::vector<IpAddress>{Ip("1.2.3.4")}));
  // But not the host's own loopback services.
  for (const char* local :
       {"127.0.0.1", "127.1.2.3", "0.0.0.0", "::1", "::", "::ffff:127.0.0.1"}) {
    Decision l = p->Check(Ip(local), 5432, Proto::kTcp);
    EXPECT_FALSE(l.allowed) << local;
    EXPECT_EQ(l.reason,
              "the host's loopback is reachable only when a policy lists it");
  }
  EXPECT_TRUE(p->Check(Ip("128.0.0.1"), 80, Proto::kTcp).allowed);
  EXPECT_TRUE(p->Check(Ip("::2"), 80, Proto::kTcp).allowed);
}

TEST(Policy, EmptyEnforcingPolicyDeniesEverything) {
  std::unique_ptr<Policy> p = Policy::FromEntries({});
  EXPECT_FALSE(p->AllowsName("pypi.org"));
  Decision d = p->Check(Ip("127.0.0.1"), 80, Proto::kTcp);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.reason, "not in policy");
}

TEST(Policy, CidrsAndPorts) {
  std::unique_ptr<Policy> p = Make({"10.0.0.0/8:443", "127.0.0.1:8000-8001",
                                    "[2001:db8::/32]:80-90", "192.168.0.0/16"});
  struct {
    const char* ip;
    uint16_t port;
    bool allowed;
    const char* reason;
  } const kCases[] = {
      {"10.1.2.3", 443, true, "allowed by 10.0.0.0/8:443"},
      {"10.1.2.3", 22, false, "port 22 not allowed for 10.0.0.0/8:443"},
      {"11.0.0.1", 443, false, "not in policy"},
      {"127.0.0.1", 8000, true, "allowed by 127.0.0.1/32:8000-8001"},
      {"127.0.0.1", 8001, true, "allowed by 127.0.0.1/32:8000-8001"},
      {"127.0.0.1", 8002, false,
       "port 8002 not allowed for 127.0.0.1/32:8000-8001"},
      {"127.0.0.2", 8000, false, "not in policy"},
      {"2001:db8:1::5", 85, true, "allowed by [2001:db8::/32]:80-90"},
      {"2001:db9::5", 85, false, "not in policy"},
      {"192.168.255.255", 1, true, "allowed by 192.168.0.0/16"},
      // v4-mapped v6 is checked as v4.
      {"::ffff:10.9.9.9", 443, true, "allowed by 10.0.0.0/8:443"},
      {"::ffff:11.9.9.9", 443, false, "not in policy"},
  };
  for (const auto& c : kCases) {
    Decision d = p->Check(Ip(c.ip), c.port, Proto::kTcp);
    EXPECT_EQ(d.allowed, c.allowed) << c.ip << ":" << c.port;
    EXPECT_EQ(d.reason, c.reason) << c.ip << ":" << c.port;
    EXPECT_EQ(d.via_name, "");
  }
}

TEST(Policy, ZeroPrefixMatchesItsFamilyOnly) {
  std::unique_ptr<Policy> p = Make({"0.0.0.0/0:53"});
  EXPECT_TRUE(p->Check(Ip("1.2.3.4"), 53, Proto::kUdp).allowed);
  EXPECT_FALSE(p->Check(Ip("2001:db8::1"), 53, Proto::kUdp).allowed);
  p = Make({"::/0"});
  EXPECT_TRUE(p->Check(Ip("2001:db8::1"), 1, Proto::kTcp).allowed);
  // ::ffff:0:0/96 addresses are checked as IPv4, which ::/0 does not hold.
  EXPECT_FALSE(p->Check(Ip("::ffff:1.2.3.4"), 1, Proto::kTcp).allowed);
}

TEST(Policy, AllowsName) {
  std::unique_ptr<Policy> p =
      Make({"pypi.org:443", "*.pythonhosted.org:443", "localhost"});
  EXPECT_TRUE(p->AllowsName("pypi.org"));
  EXPECT_TRUE(p->AllowsName("PYPI.org."));
  EXPECT_TRUE(p->AllowsName("files.pythonhosted.org"));
  EXPECT_TRUE(p->AllowsName("a.b.pythonhosted.org"));
  EXPECT_FALSE(p->AllowsName("pythonhosted.org"));
  EXPECT_FALSE(p->AllowsName("xpythonhosted.org"));
  EXPECT_FALSE(p->AllowsName("www.pypi.org"));
  EXPECT_FALSE(p->AllowsName("pypi.org.evil"));
  EXPECT_TRUE(p->AllowsName("localhost"));
  EXPECT_FALSE(p->AllowsName(""));
  EXPECT_FALSE(p->AllowsName("*.pythonhosted.org"));
  // The DNS codec's escaped form of a label with a dot never matches.
  EXPECT_FALSE(p->AllowsName("evil\\046pypi.org"));
  EXPECT_FALSE(p->AllowsName("pypi..org"));
}

TEST(Policy, PinsAllowResolvedAddressesOnTheNamesPorts) {
  std::unique_ptr<Policy> p = Make({"pypi.org:443", "pypi.org:80",
                                    "*.pythonhosted.org:443", "open.example"});
  const std::vector<IpAddress> pypi = {Ip("151.101.0.223"),
                                       Ip("2a04:4e42::223")};
  EXPECT_FALSE(p->Check(pypi[0], 443, Proto::kTcp).allowed);
  EXPECT_TRUE(p->Pin("PyPI.org.", pypi));
  EXPECT_EQ(p->pin_count(), 2u);

  Decision d = p->Check(pypi[0], 443, Proto::kTcp);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.reason, "allowed by pypi.org:443");
  EXPECT_EQ(d.via_name, "pypi.org");
  d = p->Check(pypi[1], 80, Proto::kTcp);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.reason, "allowed by pypi.org:80");
  d = p->Check(pypi[0], 22, Proto::kTcp);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.reason, "port 22 not allowed for pypi.org:443, pypi.org:80");
  EXPECT_EQ(d.via_name, "pypi.org");
  // Pinned as v4; asked as v4-mapped.
  EXPECT_TRUE(p->Check(Ip("::ffff:151.101.0.223"), 443, Proto::kTcp).allowed);

  // Names the policy does not allow pin nothing.
  EXPECT_FALSE(p->Pin("evil.org", std::vector<IpAddress>{Ip("6.6.6.6")}));
  EXPECT_FALSE(p->Check(Ip("6.6.6.6"), 443, Proto::kTcp).allowed);

  // A wildcard name pins its own addresses with the entry's port.
  EXPECT_TRUE(p->Pin("files.pythonhosted.org",
                     std::vector<IpAddress>{Ip("151.101.1.1")}));
  d = p->Check(Ip("151.101.1.1"), 443, Proto::kTcp);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.via_name, "files.pythonhosted.org");
  EXPECT_FALSE(p->Check(Ip("151.101.1.1"), 80, Proto::kTcp).allowed);

  // An entry without a port: every port. The same address under a second
  // name gains that name's ports.
  EXPECT_TRUE(p->Pin("open.example", std::vector<IpAddress>{pypi[0]}));
  d = p->Check(pypi[0], 22, Proto::kTcp);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.reason, "allowed by open.example");
  EXPECT_EQ(d.via_name, "open.example");
}

TEST(Policy, CidrPortDenialIsReportedOverPins) {
  std::unique_ptr<Policy> p = Make({"10.0.0.0/8:443", "db.example:5432"});
  EXPECT_TRUE(p->Pin("db.example", std::vector<IpAddress>{Ip("10.0.0.5")}));
  EXPECT_TRUE(p->Check(Ip("10.0.0.5"), 5432, Proto::kTcp).allowed);
  EXPECT_TRUE(p->Check(Ip("10.0.0.5"), 443, Proto::kTcp).allowed);
  Decision d = p->Check(Ip("10.0.0.5"), 22, Proto::kTcp);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.reason, "port 22 not allowed for 10.0.0.0/8:443");
}

TEST(Policy, PinsAreBounded) {
  std::unique_ptr<Policy> p = Make({"*.example"});
  for (size_t i = 0; i < Policy::kMaxPins + 10; ++i) {
    uint8_t b[4] = {10, static_cast<uint8_t>(i >> 16),
                    static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
    ASSERT_TRUE(p->Pin("a.example", std::vector<IpAddress>{IpAddress::V4(b)}));
  }
  EXPECT_EQ(p->pin_count(), Policy::kMaxPins);
  // The oldest went.
  EXPECT_FALSE(p->Check(Ip("10.0.0.0"), 1, Proto::kTcp).allowed);
  EXPECT_TRUE(p->Check(Ip("10.0.0.10"), 1, Proto::kTcp).allowed);
}

TEST(Policy, ConcurrentPinsAndChecks) {
  std::unique_ptr<Policy> p = Make({"*.example:443"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        uint8_t b[4] = {10, static_cast<uint8_t>(t),
                        static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
        const IpAddress a = IpAddress::V4(b);
        p->Pin("x.example", std::vector<IpAddress>{a});
        if (!p->Check(a, 443, Proto::kTcp).allowed) abort();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(p->pin_count(), 8000u);
}

TEST(IpAddress, SockaddrAndText) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(443);
  inet_pton(AF_INET, "1.2.3.4", &in.sin_addr);
  uint16_t port = 0;
  std::optional<IpAddress> a = IpAddress::FromSockaddr(
      reinterpret_cast<sockaddr*>(&in), sizeof(in), &port);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->ToString(), "1.2.3.4");
  EXPECT_EQ(port, 443);
  EXPECT_FALSE(
      IpAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&in), sizeof(in) - 1)
          .has_value());
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(80);
  inet_pton(AF_INET6, "::1", &in6.sin6_addr);
  a = IpAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&in6), sizeof(in6),
                              &port);
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->v6);
  EXPECT_EQ(a->ToString(), "::1");
  EXPECT_EQ(port, 80);
  EXPECT_FALSE(IpAddress::Parse("1.2.3").has_value());
  EXPECT_EQ(Ip("::ffff:1.2.3.4").Unmapped().ToString(), "1.2.3.4");
}

TEST(Policy, HelpSaysNoPolicyAllowsEverything) {
  EXPECT_THAT(std::string(kEgressPolicyHelp),
              HasSubstr("Without either flag, host mode allows every "
                        "destination."));
}

}  // namespace
}  // namespace sandbox::broker::policy
