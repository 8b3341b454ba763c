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

}  // namespace
}  // namespace sandbox::fs::proc
