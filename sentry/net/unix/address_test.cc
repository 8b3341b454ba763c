#include "sentry/net/unix/address.h"

#include <string.h>
#include <sys/socket.h>

#include <string>

#include "gtest/gtest.h"

namespace sandbox::net::unix {
namespace {

SockAddr Raw(const std::string& path, uint32_t len, uint16_t family = AF_UNIX) {
  SockAddr a;
  memcpy(a.bytes, &family, 2);
  memcpy(a.bytes + 2, path.data(), std::min<size_t>(path.size(), 126));
  a.len = len;
  return a;
}

TEST(AddressTest, LengthsAndFamily) {
  EXPECT_EQ(ParseName(Raw("/a", 2)).error(), kEINVAL);
  EXPECT_EQ(ParseName(Raw("/a", 1)).error(), kEINVAL);
  EXPECT_EQ(ParseName(Raw("/a", 111)).error(), kEINVAL);
  EXPECT_EQ(ParseName(Raw("/a", 5, AF_INET)).error(), kEINVAL);
  EXPECT_TRUE(IsAutobindRequest(Raw("", 2)));
  EXPECT_FALSE(IsAutobindRequest(Raw("", 2, AF_INET)));
  EXPECT_FALSE(IsAutobindRequest(Raw("", 3)));
}

TEST(AddressTest, PathStopsAtNulAndReportsItsLength) {
  std::string p("/tmp/s\0junk", 11);
  auto n = ParseName(Raw(p, 2 + 11));
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(n->abstract);
  EXPECT_EQ(n->bytes, "/tmp/s");
  EXPECT_EQ(n->len, 2u + 6 + 1);
  // Without a NUL inside the length: the whole rest, plus one.
  auto m = ParseName(Raw("/tmp/s", 2 + 6));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->bytes, "/tmp/s");
  EXPECT_EQ(m->len, 9u);
  // 108 bytes of path report 111 (the NUL past sun_path).
  std::string longp(108, 'x');
  longp[0] = '/';
  auto l = ParseName(Raw(longp, 110));
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->bytes.size(), 108u);
  EXPECT_EQ(l->len, 111u);
  Address a;
  a.name = *l;
  EXPECT_EQ(a.ToSockAddr().len, 111u);
}

TEST(AddressTest, AbstractKeepsEveryByte) {
  std::string p("\0ab\0", 4);
  auto n = ParseName(Raw(p, 2 + 4));
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE(n->abstract);
  EXPECT_EQ(n->bytes, p);
  EXPECT_EQ(n->len, 6u);
  Address a;
  a.name = *n;
  EXPECT_EQ(a.ProcName(), "@ab@");
  SockAddr s = a.ToSockAddr();
  EXPECT_EQ(s.len, 6u);
  EXPECT_EQ(memcmp(s.bytes + 2, p.data(), 4), 0);
}

TEST(AddressTest, Autobind) {
  Name n = AutobindName(0xabc);
  EXPECT_EQ(n.len, 8u);
  EXPECT_EQ(n.bytes, std::string("\0"
                                 "00abc",
                                 6));
  EXPECT_EQ(UnnamedSockAddr().len, 2u);
}

}  // namespace
}  // namespace sandbox::net::unix
