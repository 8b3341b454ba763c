// Extended attributes in the user.* namespace: set, get, list, remove,
// size rules, flags, errors.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

// Whether the file system of `path` takes user.* xattrs (tmpfs only since
// Linux 6.6: EOPNOTSUPP before). Leaves no attribute behind.
bool UserXattrsSupported(const char* path) {
  if (setxattr(path, "user.probe", "", 0, 0) != 0) return errno != EOPNOTSUPP;
  removexattr(path, "user.probe");
  return true;
}

constexpr char kNoUserXattrs[] =
    "no user.* xattrs on this file system (tmpfs has them since Linux 6.6)";

TEST(XattrTest, SetGetListRemove) {
  TempPath file = TempPath::CreateFile();
  const char* p = file.path().c_str();
  if (!UserXattrsSupported(p)) GTEST_SKIP() << kNoUserXattrs;
  ASSERT_THAT(setxattr(p, "user.a", "hello", 5, 0), SyscallSucceeds());
  ASSERT_THAT(setxattr(p, "user.bb", "", 0, 0), SyscallSucceeds());
  char buf[64] = {};
  EXPECT_THAT(getxattr(p, "user.a", buf, sizeof(buf)),
              SyscallSucceedsWithValue(5));
  EXPECT_EQ(std::string(buf, 5), "hello");
  // Size 0 asks for the length.
  EXPECT_THAT(getxattr(p, "user.a", nullptr, 0), SyscallSucceedsWithValue(5));
  EXPECT_THAT(getxattr(p, "user.a", buf, 4), SyscallFailsWithErrno(ERANGE));
  EXPECT_THAT(getxattr(p, "user.bb", buf, sizeof(buf)),
              SyscallSucceedsWithValue(0));
  EXPECT_THAT(getxattr(p, "user.none", buf, sizeof(buf)),
              SyscallFailsWithErrno(ENODATA));
  ssize_t n = listxattr(p, buf, sizeof(buf));
  ASSERT_GT(n, 0) << strerror(errno);
  std::string list(buf, n);
  EXPECT_NE(list.find(std::string("user.a\0", 7)), std::string::npos);
  EXPECT_NE(list.find(std::string("user.bb\0", 8)), std::string::npos);
  EXPECT_THAT(listxattr(p, nullptr, 0), SyscallSucceedsWithValue(n));
  EXPECT_THAT(listxattr(p, buf, 1), SyscallFailsWithErrno(ERANGE));
  ASSERT_THAT(removexattr(p, "user.a"), SyscallSucceeds());
  EXPECT_THAT(removexattr(p, "user.a"), SyscallFailsWithErrno(ENODATA));
  EXPECT_THAT(getxattr(p, "user.a", buf, sizeof(buf)),
              SyscallFailsWithErrno(ENODATA));
}

TEST(XattrTest, CreateAndReplaceFlags) {
  TempPath file = TempPath::CreateFile();
  const char* p = file.path().c_str();
  if (!UserXattrsSupported(p)) GTEST_SKIP() << kNoUserXattrs;
  EXPECT_THAT(setxattr(p, "user.x", "1", 1, XATTR_REPLACE),
              SyscallFailsWithErrno(ENODATA));
  ASSERT_THAT(setxattr(p, "user.x", "1", 1, XATTR_CREATE), SyscallSucceeds());
  EXPECT_THAT(setxattr(p, "user.x", "2", 1, XATTR_CREATE),
              SyscallFailsWithErrno(EEXIST));
  ASSERT_THAT(setxattr(p, "user.x", "22", 2, XATTR_REPLACE), SyscallSucceeds());
  EXPECT_THAT(getxattr(p, "user.x", nullptr, 0), SyscallSucceedsWithValue(2));
  EXPECT_THAT(setxattr(p, "user.x", "1", 1, 4), SyscallFailsWithErrno(EINVAL));
}

TEST(XattrTest, NameAndSizeLimits) {
  TempPath file = TempPath::CreateFile();
  const char* p = file.path().c_str();
  EXPECT_THAT(setxattr(p, "", "1", 1, 0), SyscallFailsWithErrno(ERANGE));
  std::string longname = "user." + std::string(251, 'n');
  EXPECT_THAT(setxattr(p, longname.c_str(), "1", 1, 0),
              SyscallFailsWithErrno(ERANGE));
  std::string big(65537, 'v');
  EXPECT_THAT(setxattr(p, "user.big", big.data(), big.size(), 0),
              SyscallFailsWithErrno(E2BIG));
  EXPECT_THAT(setxattr(p, "nonsense.x", "1", 1, 0),
              SyscallFailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(syscall(SYS_setxattr, p, reinterpret_cast<char*>(8), "1", 1, 0),
              SyscallFailsWithErrno(EFAULT));
}

TEST(XattrTest, FdAndLinkVariants) {
  TempPath file = TempPath::CreateFile();
  if (!UserXattrsSupported(file.path().c_str())) {
    GTEST_SKIP() << kNoUserXattrs;
  }
  FileDescriptor fd(open(file.path().c_str(), O_RDWR));
  ASSERT_TRUE(fd.valid());
  ASSERT_THAT(fsetxattr(fd.get(), "user.f", "v", 1, 0), SyscallSucceeds());
  char buf[8];
  EXPECT_THAT(fgetxattr(fd.get(), "user.f", buf, sizeof(buf)),
              SyscallSucceedsWithValue(1));
  EXPECT_THAT(fgetxattr(-1, "user.f", buf, sizeof(buf)),
              SyscallFailsWithErrno(EBADF));
  ASSERT_THAT(fremovexattr(fd.get(), "user.f"), SyscallSucceeds());
  // user.* on a symlink itself is EPERM; through it, the target's.
  std::string l = NewTempPath();
  ASSERT_THAT(symlink(file.path().c_str(), l.c_str()), SyscallSucceeds());
  EXPECT_THAT(lsetxattr(l.c_str(), "user.l", "v", 1, 0),
              SyscallFailsWithErrno(EPERM));
  ASSERT_THAT(setxattr(l.c_str(), "user.t", "v", 1, 0), SyscallSucceeds());
  EXPECT_THAT(getxattr(file.path().c_str(), "user.t", buf, sizeof(buf)),
              SyscallSucceedsWithValue(1));
  EXPECT_THAT(lgetxattr(l.c_str(), "user.t", buf, sizeof(buf)),
              SyscallFailsWithErrno(ENODATA));
  ASSERT_THAT(unlink(l.c_str()), SyscallSucceeds());
}

// llistxattr of a symlink lists the link's own names (never user.*, which
// Linux refuses on links), even when its target has some: what
// shutil.copytree(symlinks=True) does for each link. On the Gofer run the
// link is a host file.
TEST(XattrTest, ListOfASymlinkItself) {
  TempPath file = TempPath::CreateFile();
  ASSERT_THAT(setxattr(file.path().c_str(), "user.t", "v", 1, 0),
              SyscallSucceeds());
  std::string l = NewTempPath();
  ASSERT_THAT(symlink(file.path().c_str(), l.c_str()), SyscallSucceeds());
  char names[1024];
  ssize_t n = llistxattr(l.c_str(), names, sizeof(names));
  ASSERT_GE(n, 0) << strerror(errno);
  for (ssize_t i = 0; i < n; i += strlen(names + i) + 1) {
    EXPECT_NE(std::string(names + i).rfind("user.", 0), 0u) << names + i;
  }
  EXPECT_THAT(llistxattr(l.c_str(), nullptr, 0), SyscallSucceedsWithValue(n));
  // Through the link: the target's.
  n = listxattr(l.c_str(), names, sizeof(names));
  ASSERT_GE(n, 0);
  EXPECT_NE(std::string(names, n).find("user.t"), std::string::npos);
  char buf[8];
  EXPECT_THAT(lgetxattr(l.c_str(), "user.t", buf, sizeof(buf)),
              SyscallFailsWithErrno(ENODATA));
  ASSERT_THAT(unlink(l.c_str()), SyscallSucceeds());
}

}  // namespace
}  // namespace sandbox::testutil
