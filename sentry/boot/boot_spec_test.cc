#include "sentry/boot/boot_spec.h"

#include <unistd.h>

#include "gtest/gtest.h"

namespace sandbox::boot {
namespace {

TEST(BootSpecTest, RoundTripThroughMemfd) {
  BootSpec s;
  s.exe_path = "/bin/true";
  s.cwd = "/tmp";
  s.hostname = "h";
  s.strace_summary = true;
  s.argv = {"true", "", std::string("a\0b", 3)};
  s.envp = {"A=1"};
  auto fd = WriteBootSpecToMemfd(s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  auto got = ReadBootSpecFromFd(*fd);
  close(*fd);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->exe_path, "/bin/true");
  EXPECT_EQ(got->cwd, "/tmp");
  EXPECT_FALSE(got->strace);
  EXPECT_TRUE(got->strace_summary);
  EXPECT_EQ(got->argv, s.argv);
  EXPECT_EQ(got->envp, s.envp);
}

TEST(BootSpecTest, RejectsMalformed) {
  std::string good = SerializeBootSpec(BootSpec{.argv = {"x"}});
  EXPECT_TRUE(ParseBootSpec(good).ok());
  EXPECT_FALSE(ParseBootSpec("").ok());
  EXPECT_FALSE(ParseBootSpec("XXXX").ok());
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(ParseBootSpec(good.substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(ParseBootSpec(good + "x").ok());
  // A huge count is rejected without allocating.
  std::string bad = good.substr(0, good.size() - 4 - 5 - 4);
  bad.append("\xff\xff\xff\x7f", 4);
  EXPECT_FALSE(ParseBootSpec(bad).ok());
}

}  // namespace
}  // namespace sandbox::boot
