// A gtest binary for runner_test: each case behaves according to whether it
// runs "in the sandbox" (fake_sandbox.sh sets FAKE_SANDBOX=1).
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace {

bool InSandbox() { return getenv("FAKE_SANDBOX") != nullptr; }

TEST(Sample, Passes) {}

TEST(Sample, SkipsEverywhere) { GTEST_SKIP() << "no capability"; }

TEST(Sample, SkipsInSandbox) {
  if (InSandbox()) GTEST_SKIP() << "sandbox lacks it";
}

TEST(Sample, FailsInSandbox) {
  EXPECT_FALSE(InSandbox()) << "sandbox says <no> & \"]]>\" \x01";
}

TEST(Sample, FailsWhenAsked) {
  EXPECT_EQ(getenv("SAMPLE_FAIL"), nullptr) << "asked to fail";
}

TEST(Sample, ChecksItsDirectory) {
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  const char* tmp = getenv("TEST_TMPDIR");
  ASSERT_NE(tmp, nullptr);
  EXPECT_EQ(std::string(cwd), std::string(tmp));
  EXPECT_EQ(access("leftover", F_OK), -1) << "directory reused";
  FILE* f = fopen("leftover", "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  EXPECT_EQ(getenv("XML_OUTPUT_FILE"), nullptr);
}

TEST(Sample, OnlyStdioIsOpen) {
  for (int fd = 3; fd < 256; ++fd) {
    EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "fd " << fd << " is open";
  }
}

// Last among the normal cases: crashing ends the process.
TEST(SampleZ, CrashesInSandbox) {
  if (InSandbox()) raise(SIGSEGV);
}

TEST(SampleZ, HangsWhenAsked) {
  if (getenv("SAMPLE_HANG") == nullptr) return;
  // A grandchild in the same process group keeps the output pipe open.
  if (fork() == 0) {
    sleep(1000);
    _exit(0);
  }
  sleep(1000);
}

}  // namespace
