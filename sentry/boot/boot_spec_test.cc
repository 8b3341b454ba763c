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
  s.seed = {{SeedEntry::kTmpfsMount, "/tmp", 01777, 0, 0, -1},
            {SeedEntry::kFile, "/bin/true", 0755, 1, 2, 4}};
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
  ASSERT_EQ(got->seed.size(), 2u);
  EXPECT_EQ(got->seed[0].kind, SeedEntry::kTmpfsMount);
  EXPECT_EQ(got->seed[0].path, "/tmp");
  EXPECT_EQ(got->seed[0].mode, 01777u);
  EXPECT_EQ(got->seed[1].kind, SeedEntry::kFile);
  EXPECT_EQ(got->seed[1].uid, 1u);
  EXPECT_EQ(got->seed[1].gid, 2u);
  EXPECT_EQ(got->seed[1].host_fd, 4);
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
  std::string bad = good.substr(0, good.size() - 4 - 4 - 5 - 4);
  bad.append("\xff\xff\xff\x7f", 4);
  EXPECT_FALSE(ParseBootSpec(bad).ok());
  // So is a seed entry of an unknown kind.
  BootSpec with_seed{.argv = {"x"}};
  with_seed.seed.push_back({SeedEntry::kDir, "/d", 0755, 0, 0, -1});
  std::string seeded = SerializeBootSpec(with_seed);
  EXPECT_TRUE(ParseBootSpec(seeded).ok());
  size_t kind_at = seeded.size() - (4 + 4 + 2 + 4 + 4 + 4 + 4);
  seeded[kind_at] = 9;
  EXPECT_FALSE(ParseBootSpec(seeded).ok());
}

}  // namespace
}  // namespace sandbox::boot
