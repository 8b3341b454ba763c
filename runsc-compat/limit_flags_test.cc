#include "runsc-compat/limit_flags.h"

#include "gtest/gtest.h"

namespace sandbox::runsc {
namespace {

TEST(LimitFlagsTest, ByteSizesAsDockerTakesThem) {
  EXPECT_EQ(*ParseByteSize("4096"), 4096u);
  EXPECT_EQ(*ParseByteSize("256m"), 256u << 20);
  EXPECT_EQ(*ParseByteSize("256M"), 256u << 20);
  EXPECT_EQ(*ParseByteSize("512MiB"), 512u << 20);
  EXPECT_EQ(*ParseByteSize("1.5g"), uint64_t{3} << 29);
  EXPECT_EQ(*ParseByteSize("2GB"), uint64_t{2} << 30);
  EXPECT_EQ(*ParseByteSize("1t"), uint64_t{1} << 40);
  EXPECT_EQ(*ParseByteSize("100b"), 100u);
  for (const char* bad :
       {"", "m", "-1m", ".5g", "12q", "1mm", "1 m", "99999999999t"}) {
    EXPECT_FALSE(ParseByteSize(bad).ok()) << bad;
  }
}

TEST(LimitFlagsTest, FlagsAndDefaults) {
  LimitFlags l = DefaultLimits();
  EXPECT_EQ(l.pids, kDefaultPidsLimit);
  EXPECT_GE(l.memory, kMinMemory);
  EXPECT_EQ(l.memory % 4096, 0u);
  std::string err;
  EXPECT_FALSE(ParseLimitFlag("--bind=/x", &l, &err));
  EXPECT_TRUE(ParseLimitFlag("--memory=300m", &l, &err));
  EXPECT_EQ(err, "");
  EXPECT_EQ(l.memory, 300u << 20);
  EXPECT_TRUE(ParseLimitFlag("--memory=0", &l, &err));
  EXPECT_EQ(l.memory, 0u);  // no limit
  EXPECT_TRUE(ParseLimitFlag("--pids-limit=-1", &l, &err));
  EXPECT_EQ(l.pids, 0u);
  EXPECT_TRUE(ParseLimitFlag("--pids-limit=64", &l, &err));
  EXPECT_EQ(l.pids, 64u);
  EXPECT_TRUE(ParseLimitFlag("--memory=1m", &l, &err));
  EXPECT_NE(err, "");  // below the minimum
  err.clear();
  EXPECT_TRUE(ParseLimitFlag("--pids-limit=-2", &l, &err));
  EXPECT_NE(err, "");
}

}  // namespace
}  // namespace sandbox::runsc
