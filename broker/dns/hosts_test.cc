#include "broker/dns/hosts.h"

#include <arpa/inet.h>

#include <string>

#include "gtest/gtest.h"

namespace sandbox::broker::dns {
namespace {

std::string Text(const AddressAnswer& a) {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(a.v6 ? AF_INET6 : AF_INET, a.bytes.data(), buf, sizeof(buf));
  return buf;
}

TEST(HostsFile, ParsesLikeNssFiles) {
  const HostsFile h = HostsFile::Parse(
      "# a comment\n"
      "127.0.0.1\tlocalhost\n"
      "::1     localhost ip6-localhost ip6-loopback\n"
      "\n"
      "127.0.1.1 Box.Example box   # trailing comment\n"
      "10.0.0.5 db.internal\n"
      "10.0.0.6 db.internal.\r\n"
      "10.0.0.5 db.internal\n"  // a duplicate
      "not-an-address name.bad\n"
      "10.0.0.7\n"  // no name
      "999.0.0.1 bad.v4\n"
      "fe80::1%lo zoned.bad\n"
      "   10.9.9.9   spaced   ");
  ASSERT_EQ(h.Lookup("localhost", false).size(), 1u);
  EXPECT_EQ(Text(h.Lookup("localhost", false)[0]), "127.0.0.1");
  ASSERT_EQ(h.Lookup("LOCALHOST.", true).size(), 1u);
  EXPECT_EQ(Text(h.Lookup("localhost", true)[0]), "::1");
  EXPECT_EQ(Text(h.Lookup("ip6-loopback", true)[0]), "::1");
  EXPECT_TRUE(h.Lookup("ip6-loopback", false).empty());
  EXPECT_EQ(Text(h.Lookup("box.example", false)[0]), "127.0.1.1");
  EXPECT_EQ(Text(h.Lookup("BOX", false)[0]), "127.0.1.1");
  std::vector<AddressAnswer> db = h.Lookup("db.internal", false);
  ASSERT_EQ(db.size(), 2u);
  EXPECT_EQ(Text(db[0]), "10.0.0.5");
  EXPECT_EQ(Text(db[1]), "10.0.0.6");
  EXPECT_FALSE(h.Contains("name.bad"));
  EXPECT_FALSE(h.Contains("bad.v4"));
  EXPECT_FALSE(h.Contains("zoned.bad"));
  EXPECT_FALSE(h.Contains("trailing"));
  EXPECT_TRUE(h.Contains("spaced"));
  EXPECT_FALSE(h.Contains("comment"));
  EXPECT_EQ(h.name_count(), 7u);
}

TEST(HostsFile, MissingFileIsEmpty) {
  EXPECT_EQ(HostsFile::Load("/nonexistent/hosts").name_count(), 0u);
}

TEST(HostsFile, AddressesPerNameAreBounded) {
  std::string s;
  for (int i = 0; i < 200; ++i) {
    s += "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256) +
         " many\n";
  }
  EXPECT_EQ(HostsFile::Parse(s).Lookup("many", false).size(),
            HostsFile::kMaxAddressesPerName);
}

}  // namespace
}  // namespace sandbox::broker::dns
