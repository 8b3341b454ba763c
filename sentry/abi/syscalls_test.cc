#include "sentry/abi/syscalls.h"

#include <sys/syscall.h>

#include <cstring>

#include "gtest/gtest.h"

namespace sandbox::abi {
namespace {

TEST(SyscallsTest, NumbersMatchHostHeaders) {
  EXPECT_EQ(nr::read, SYS_read);
  EXPECT_EQ(nr::getppid, SYS_getppid);
  EXPECT_EQ(nr::exit_group, SYS_exit_group);
  EXPECT_EQ(nr::rseq, SYS_rseq);
  EXPECT_EQ(nr::openat2, SYS_openat2);
}

TEST(SyscallsTest, Names) {
  EXPECT_STREQ(SyscallName(0), "read");
  EXPECT_STREQ(SyscallName(nr::newfstatat), "newfstatat");
  EXPECT_STREQ(SyscallName(nr::file_setattr), "file_setattr");
  EXPECT_EQ(SyscallName(-1), nullptr);
  EXPECT_EQ(SyscallName(kMaxSyscall), nullptr);
  EXPECT_EQ(SyscallName(400), nullptr);  // The 335..423 gap.
}

}  // namespace
}  // namespace sandbox::abi
