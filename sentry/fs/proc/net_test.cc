#include "sentry/fs/proc/net.h"

#include <limits.h>

#include "gtest/gtest.h"

namespace sandbox::fs::proc {
namespace {

struct Case {
  const char* in;
  bool ok;
  std::optional<int64_t> value;
  size_t consumed;
};

TEST(ParseSysctlIntTest, AsProcDointvec) {
  // What Linux 6.18 does with these writes to net.core.somaxconn.
  const Case cases[] = {
      {"1", true, 1, 1},
      {"  77\n", true, 77, 5},
      {"12 13", true, 12, 3},
      {"1\n2\n", true, 1, 2},
      {"0x10", true, 16, 4},
      {"010", true, 8, 3},
      {"2147483647", true, 2147483647, 10},
      {"", true, std::nullopt, 0},
      {"  \n", true, std::nullopt, 3},
      {"-5", false, std::nullopt, 0},
      {"99999999999", false, std::nullopt, 0},
      {"2147483648", false, std::nullopt, 0},
      {"abc", false, std::nullopt, 0},
      {"5abc", false, std::nullopt, 0},
      {"+6", false, std::nullopt, 0},
      {"-", false, std::nullopt, 0},
  };
  for (const Case& c : cases) {
    size_t consumed = 0;
    KResult<std::optional<int64_t>> r =
        ParseSysctlInt(c.in, 0, INT_MAX, &consumed);
    ASSERT_EQ(r.ok(), c.ok) << c.in;
    if (!c.ok) {
      EXPECT_EQ(r.error(), kEINVAL) << c.in;
      continue;
    }
    EXPECT_EQ(r.value(), c.value) << c.in;
    EXPECT_EQ(consumed, c.consumed) << c.in;
  }
}

TEST(ParseSysctlIntTest, NegativeWhereAllowed) {
  size_t consumed;
  KResult<std::optional<int64_t>> r =
      ParseSysctlInt("-1", INT_MIN, INT_MAX, &consumed);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), -1);
  EXPECT_TRUE(ParseSysctlInt("-2147483648", INT_MIN, INT_MAX, &consumed).ok());
  EXPECT_FALSE(ParseSysctlInt("-2147483649", INT_MIN, INT_MAX, &consumed).ok());
  EXPECT_FALSE(ParseSysctlInt("100", 2304, INT_MAX, &consumed).ok());
}

TEST(ParseSysctlIntsTest, Vector) {
  size_t consumed = 0;
  auto r = ParseSysctlInts("10\t20\n", {1, 2}, 0, 100, &consumed);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(consumed, 6u);
  // One value: the second keeps its own.
  r = ParseSysctlInts("7", {1, 2}, 0, 100, &consumed);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), (std::vector<int64_t>{7, 2}));
  EXPECT_FALSE(ParseSysctlInts("", {1, 2}, 0, 100, &consumed).ok());
  EXPECT_FALSE(ParseSysctlInts("5 500", {1, 2}, 0, 100, &consumed).ok());
  EXPECT_FALSE(ParseSysctlInts("5 x", {1, 2}, 0, 100, &consumed).ok());
}

TEST(SysctlWriteTest, LocalPortRange) {
  net::NetNamespace ns;
  net::NetSysctls& sys = ns.sysctl();
  ASSERT_TRUE(WriteLocalPortRange(sys, "40000 50000\n").ok());
  EXPECT_EQ(sys.ip_local_port_lo.load(), 40000);
  EXPECT_EQ(sys.ip_local_port_hi.load(), 50000);
  // low > high, below the unprivileged start, out of range: EINVAL, kept.
  EXPECT_EQ(WriteLocalPortRange(sys, "50001 50000").error(), kEINVAL);
  EXPECT_EQ(WriteLocalPortRange(sys, "1000 50000").error(), kEINVAL);
  EXPECT_EQ(WriteLocalPortRange(sys, "40000 65536").error(), kEINVAL);
  EXPECT_EQ(WriteLocalPortRange(sys, "0 100").error(), kEINVAL);
  EXPECT_EQ(sys.ip_local_port_lo.load(), 40000);
  EXPECT_EQ(sys.ip_local_port_hi.load(), 50000);
  // The same parity is allowed.
  EXPECT_TRUE(WriteLocalPortRange(sys, "40000 40000").ok());
  // ip_unprivileged_port_start may not exceed the range's low end.
  EXPECT_EQ(WriteUnprivilegedPortStart(sys, "40001").error(), kEINVAL);
  ASSERT_TRUE(WriteUnprivilegedPortStart(sys, "80").ok());
  EXPECT_TRUE(WriteLocalPortRange(sys, "1000 2000").ok());
}

TEST(SysctlWriteTest, PingGroupRange) {
  net::NetNamespace ns;
  net::NetSysctls& sys = ns.sysctl();
  ASSERT_TRUE(WritePingGroupRange(sys, "100 200").ok());
  EXPECT_EQ(sys.ping_group_lo.load(), 100);
  EXPECT_EQ(sys.ping_group_hi.load(), 200);
  // high < low: "1 0" (nobody), not an error.
  ASSERT_TRUE(WritePingGroupRange(sys, "5 4").ok());
  EXPECT_EQ(sys.ping_group_lo.load(), 1);
  EXPECT_EQ(sys.ping_group_hi.load(), 0);
  EXPECT_EQ(WritePingGroupRange(sys, "-1 4").error(), kEINVAL);
}

}  // namespace
}  // namespace sandbox::fs::proc
