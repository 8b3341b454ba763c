#include "sentry/net/hostinet/convert.h"

#include "gtest/gtest.h"

namespace sandbox::net::hostinet {
namespace {

TEST(Convert, RoundTrips) {
  inet::InetAddr v4;
  v4.ip = inet::IpAddr::LoopbackV4();
  v4.port = 80;
  broker::Endpoint e = ToEndpoint(v4);
  EXPECT_EQ(e.ip.family, broker::kFamilyInet);
  EXPECT_EQ(e.ip.bytes[0], 127);
  EXPECT_EQ(e.ip.bytes[3], 1);
  EXPECT_EQ(e.ip.bytes[4], 0);
  EXPECT_EQ(e.port, 80);
  EXPECT_EQ(FromEndpoint(e), v4);
  inet::InetAddr v6;
  v6.ip = inet::IpAddr::LoopbackV6();
  v6.port = 443;
  e = ToEndpoint(v6);
  EXPECT_EQ(e.ip.family, broker::kFamilyInet6);
  EXPECT_EQ(e.ip.bytes[15], 1);
  EXPECT_EQ(FromEndpoint(e), v6);
  EXPECT_TRUE(FromEndpoint(ToEndpoint(v4)).ip.is_v4());
}

}  // namespace
}  // namespace sandbox::net::hostinet
