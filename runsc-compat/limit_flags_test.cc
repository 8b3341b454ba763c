#include "runsc-compat/limit_flags.h"

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
  EXPECT_EQ(ParseWith(LimitFlagTable(&l), {"--bind=/x"}),
            "unknown flag --bind=/x");
  EXPECT_EQ(ParseWith(LimitFlagTable(&l), {"--memory=300m"}), "");
  EXPECT_EQ(l.memory, 300u << 20);
  EXPECT_EQ(ParseWith(LimitFlagTable(&l), {"--memory", "0"}), "");
  EXPECT_EQ(l.memory, 0u);  // no limit
  EXPECT_EQ(ParseWith(LimitFlagTable(&l), {"--pids-limit=-1"}), "");
  EXPECT_EQ(l.pids, 0u);
  EXPECT_EQ(ParseWith(LimitFlagTable(&l), {"--pids-limit=64"}), "");
  EXPECT_EQ(l.pids, 64u);
  // Below the minimum.
  EXPECT_EQ(ParseWith(LimitFlagTable(&l), {"--memory=1m"}),
            "--memory=1m: at least 32m");
  EXPECT_EQ(ParseWith(LimitFlagTable(&l), {"--memory", "abc"}),
            "--memory=abc: not a size (e.g. 256m, 2g)");
  EXPECT_EQ(ParseWith(LimitFlagTable(&l), {"--pids-limit=-2"}),
            "--pids-limit=-2: expected a number of tasks");
  EXPECT_EQ(l.pids, 64u);  // a bad value changes nothing
}

}  // namespace
}  // namespace sandbox::runsc
