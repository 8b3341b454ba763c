// chdir(2), fchdir(2), getcwd(2), chroot(2).
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

std::string Cwd() {
  char buf[PATH_MAX];
  if (getcwd(buf, sizeof(buf)) == nullptr) return "";
  return buf;
}

// Restores the working directory when a test ends.
class CwdTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = Cwd(); }
  void TearDown() override { ASSERT_EQ(chdir(saved_.c_str()), 0); }
  std::string saved_;
};

TEST_F(CwdTest, ChdirThenRelativePaths) {
  TempPath dir = TempPath::CreateDir();
  ASSERT_THAT(chdir(dir.path().c_str()), SyscallSucceeds());
  EXPECT_EQ(Cwd(), dir.path());
  FileDescriptor fd(open("rel", O_CREAT | O_WRONLY, 0644));
  ASSERT_TRUE(fd.valid());
  struct stat st;
  EXPECT_THAT(stat((dir.path() + "/rel").c_str(), &st), SyscallSucceeds());
  ASSERT_THAT(chdir(".."), SyscallSucceeds());
  EXPECT_EQ(Cwd(), dir.path().substr(0, dir.path().rfind('/')));
}

TEST_F(CwdTest, ChdirErrors) {
  TempPath file = TempPath::CreateFile();
  EXPECT_THAT(chdir(file.path().c_str()), SyscallFailsWithErrno(ENOTDIR));
  EXPECT_THAT(chdir(NewTempPath().c_str()), SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(chdir(""), SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(syscall(SYS_chdir, reinterpret_cast<char*>(8)),
              SyscallFailsWithErrno(EFAULT));
}

TEST_F(CwdTest, Fchdir) {
  TempPath dir = TempPath::CreateDir();
  FileDescriptor dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(dfd.valid());
  ASSERT_THAT(fchdir(dfd.get()), SyscallSucceeds());
  EXPECT_EQ(Cwd(), dir.path());
  // O_PATH descriptors work too.
  ASSERT_THAT(chdir("/"), SyscallSucceeds());
  FileDescriptor pfd(open(dir.path().c_str(), O_PATH));
  ASSERT_TRUE(pfd.valid());
  ASSERT_THAT(fchdir(pfd.get()), SyscallSucceeds());
  EXPECT_EQ(Cwd(), dir.path());
  TempPath file = TempPath::CreateFile();
  FileDescriptor ffd(open(file.path().c_str(), O_RDONLY));
  EXPECT_THAT(fchdir(ffd.get()), SyscallFailsWithErrno(ENOTDIR));
  EXPECT_THAT(fchdir(-1), SyscallFailsWithErrno(EBADF));
}

TEST_F(CwdTest, GetcwdRange) {
  std::string cwd = Cwd();
  ASSERT_FALSE(cwd.empty());
  char buf[PATH_MAX];
  EXPECT_THAT(syscall(SYS_getcwd, buf, cwd.size() + 1),
              SyscallSucceedsWithValue(cwd.size() + 1));
  EXPECT_THAT(syscall(SYS_getcwd, buf, cwd.size()),
              SyscallFailsWithErrno(ERANGE));
  EXPECT_THAT(syscall(SYS_getcwd, buf, 0), SyscallFailsWithErrno(ERANGE));
  EXPECT_THAT(syscall(SYS_getcwd, reinterpret_cast<char*>(8), sizeof(buf)),
              SyscallFailsWithErrno(EFAULT));
}

TEST_F(CwdTest, GetcwdOfRemovedDirectoryIsEnoent) {
  std::string d = NewTempPath();
  ASSERT_THAT(mkdir(d.c_str(), 0755), SyscallSucceeds());
  ASSERT_THAT(chdir(d.c_str()), SyscallSucceeds());
  ASSERT_THAT(rmdir(d.c_str()), SyscallSucceeds());
  char buf[PATH_MAX];
  EXPECT_THAT(syscall(SYS_getcwd, buf, sizeof(buf)),
              SyscallFailsWithErrno(ENOENT));
  // Creating in a removed directory fails too.
  EXPECT_THAT(open("x", O_CREAT | O_WRONLY, 0644),
              SyscallFailsWithErrno(ENOENT));
}

TEST_F(CwdTest, ForkedChildHasItsOwnCwd) {
  TempPath dir = TempPath::CreateDir();
  std::string before = Cwd();
  EXPECT_THAT(InForkedChild([&] {
                if (chdir(dir.path().c_str()) != 0) _exit(2);
              }),
              ExitedWithCode(0));
  EXPECT_EQ(Cwd(), before);
}

TEST_F(CwdTest, ChrootNeedsCapability) {
  TempPath dir = TempPath::CreateDir();
  EXPECT_THAT(InForkedChild([&] {
                if (!DropCapabilities(false)) _exit(2);
                if (chroot(dir.path().c_str()) == 0 || errno != EPERM) {
                  _exit(3);
                }
              }),
              ExitedWithCode(0));
}

TEST_F(CwdTest, ChrootChangesRootNotCwd) {
  TempPath dir = TempPath::CreateDir();
  ASSERT_THAT(mkdir((dir.path() + "/inner").c_str(), 0755), SyscallSucceeds());
  EXPECT_THAT(
      InForkedChild([&] {
        if (chroot(dir.path().c_str()) != 0) _exit(2);
        struct stat st;
        // The root is now dir: /inner exists, the old paths do not.
        if (stat("/inner", &st) != 0) _exit(3);
        if (stat(dir.path().c_str(), &st) == 0) _exit(4);
        // The cwd stayed outside the new root.
        char buf[PATH_MAX];
        if (syscall(SYS_getcwd, buf, sizeof(buf)) < 0) _exit(5);
        if (strncmp(buf, "(unreachable)", 13) != 0) _exit(6);
        if (chdir("/") != 0) _exit(7);
        if (getcwd(buf, sizeof(buf)) == nullptr || strcmp(buf, "/") != 0) {
          _exit(8);
        }
        // ".." at the root stays there.
        if (chdir("..") != 0 || stat("inner", &st) != 0) _exit(9);
      }),
      ExitedWithCode(0));
}

}  // namespace
}  // namespace sandbox::testutil
