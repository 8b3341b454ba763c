// The --strace form of socket addresses (FormatSockAddr), as strace 6.x
// prints them.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "gtest/gtest.h"
#include "sentry/syscalls/args.h"

namespace sandbox::syscalls {
namespace {

TEST(FormatSockAddrTest, Inet) {
  sockaddr_in in = {};
  in.sin_family = AF_INET;
  in.sin_port = htons(80);
  inet_pton(AF_INET, "127.0.0.1", &in.sin_addr);
  EXPECT_EQ(FormatSockAddr(reinterpret_cast<const uint8_t*>(&in), sizeof(in)),
            "{sa_family=AF_INET, sin_port=htons(80), "
            "sin_addr=inet_addr(\"127.0.0.1\")}");
  EXPECT_EQ(FormatSockAddr(reinterpret_cast<const uint8_t*>(&in), 4),
            "{sa_family=AF_INET, sa_data=\"\\x00P\"}");
}

TEST(FormatSockAddrTest, Inet6) {
  sockaddr_in6 in6 = {};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(8080);
  in6.sin6_scope_id = 1;
  inet_pton(AF_INET6, "::1", &in6.sin6_addr);
  const auto* p = reinterpret_cast<const uint8_t*>(&in6);
  EXPECT_EQ(FormatSockAddr(p, sizeof(in6)),
            "{sa_family=AF_INET6, sin6_port=htons(8080), "
            "sin6_flowinfo=htonl(0), inet_pton(AF_INET6, \"::1\", "
            "&sin6_addr), sin6_scope_id=1}");
  EXPECT_EQ(FormatSockAddr(p, 24),
            "{sa_family=AF_INET6, sin6_port=htons(8080), "
            "sin6_flowinfo=htonl(0), inet_pton(AF_INET6, \"::1\", "
            "&sin6_addr)}");
  inet_pton(AF_INET6, "::ffff:127.0.0.1", &in6.sin6_addr);
  EXPECT_NE(FormatSockAddr(p, sizeof(in6)).find("\"::ffff:127.0.0.1\""),
            std::string::npos);
}

}  // namespace
}  // namespace sandbox::syscalls
