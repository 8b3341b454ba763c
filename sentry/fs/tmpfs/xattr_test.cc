// Extended attributes on tmpfs through vfs/xattr_ops.h.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/testing.h"
#include "sentry/vfs/xattr_ops.h"

namespace sandbox::fs::tmpfs {
namespace {

using ::testing::ElementsAre;

class XattrTest : public TmpfsTest {};

TEST_F(XattrTest, SetGetListRemove) {
  WriteFile("/f", "");
  auto b = Base();
  EXPECT_ERRNO(vfs::GetXattrAt(b, "/f", true, "user.a"), kENODATA);
  ASSERT_OK(vfs::SetXattrAt(b, "/f", true, "user.a", "1", 0));
  ASSERT_OK(vfs::SetXattrAt(b, "/f", true, "trusted.t", "2", 0));
  EXPECT_EQ(vfs::GetXattrAt(b, "/f", true, "user.a").value(), "1");
  EXPECT_ERRNO(vfs::SetXattrAt(b, "/f", true, "user.a", "x", XATTR_CREATE),
               kEEXIST);
  EXPECT_ERRNO(vfs::SetXattrAt(b, "/f", true, "user.b", "x", XATTR_REPLACE),
               kENODATA);
  ASSERT_OK(vfs::SetXattrAt(b, "/f", true, "user.a", "", XATTR_REPLACE));
  EXPECT_EQ(vfs::GetXattrAt(b, "/f", true, "user.a").value(), "");
  EXPECT_THAT(vfs::ListXattrAt(b, "/f", true).value(),
              ElementsAre("trusted.t", "user.a"));
  // Without CAP_SYS_ADMIN trusted.* is hidden and refused.
  EXPECT_THAT(vfs::ListXattrAt(Base(user_), "/f", true).value(),
              ElementsAre("user.a"));
  EXPECT_ERRNO(vfs::GetXattrAt(Base(user_), "/f", true, "trusted.t"), kEPERM);
  ASSERT_OK(vfs::RemoveXattrAt(b, "/f", true, "user.a"));
  EXPECT_ERRNO(vfs::RemoveXattrAt(b, "/f", true, "user.a"), kENODATA);
}

TEST_F(XattrTest, Errors) {
  WriteFile("/f", "");
  auto b = Base();
  EXPECT_ERRNO(vfs::SetXattrAt(b, "/f", true, "", "v", 0), kERANGE);
  EXPECT_ERRNO(
      vfs::SetXattrAt(b, "/f", true, "user." + std::string(251, 'n'), "v", 0),
      kERANGE);
  EXPECT_OK(
      vfs::SetXattrAt(b, "/f", true, "user." + std::string(250, 'n'), "v", 0));
  EXPECT_ERRNO(vfs::SetXattrAt(b, "/f", true, "user.big",
                               std::string(vfs::kXattrSizeMax + 1, 'v'), 0),
               kE2BIG);
  EXPECT_ERRNO(vfs::SetXattrAt(b, "/f", true, "user.x", "v", 4), kEINVAL);
  EXPECT_ERRNO(vfs::SetXattrAt(b, "/f", true, "weird.x", "v", 0), kEOPNOTSUPP);
  EXPECT_ERRNO(
      vfs::SetXattrAt(b, "/f", true, "system.posix_acl_access", "v", 0),
      kEOPNOTSUPP);
  // Per-inode space is bounded.
  std::string v(vfs::kXattrSizeMax, 'v');
  KResult<void> r = OkResult();
  for (int i = 0; i < 20 && r.ok(); ++i) {
    r = vfs::SetXattrAt(b, "/f", true, "user.fill" + std::to_string(i), v, 0);
  }
  EXPECT_ERRNO(r, kENOSPC);
}

TEST_F(XattrTest, UserNamespaceRules) {
  ASSERT_OK(Mkdir("/tmp", 01777));
  ASSERT_OK(OpenAs(user_, "/tmp/mine", O_CREAT | O_RDWR, 0644));
  ASSERT_OK(Symlink("mine", "/tmp/link"));
  ASSERT_OK(vfs::MknodAt(Base(), "/tmp/fifo", S_IFIFO | 0666, 0, 0));
  // Only regular files and directories carry user.*.
  EXPECT_ERRNO(vfs::SetXattrAt(Base(), "/tmp/link", false, "user.a", "v", 0),
               kEPERM);
  EXPECT_ERRNO(vfs::GetXattrAt(Base(), "/tmp/link", false, "user.a"), kENODATA);
  EXPECT_ERRNO(vfs::SetXattrAt(Base(), "/tmp/fifo", true, "user.a", "v", 0),
               kEPERM);
  // Following the link reaches the file.
  EXPECT_OK(vfs::SetXattrAt(Base(user_), "/tmp/link", true, "user.a", "v", 0));
  // Write permission on the file is needed; read permission to read.
  EXPECT_ERRNO(
      vfs::SetXattrAt(Base(user2_), "/tmp/mine", true, "user.b", "v", 0),
      kEACCES);
  EXPECT_EQ(vfs::GetXattrAt(Base(user2_), "/tmp/mine", true, "user.a").value(),
            "v");
  // A sticky directory: only its owner (root here) may set user.* on it.
  ASSERT_OK(vfs::ChmodAt(Base(), "/tmp", 01777, 0));
  EXPECT_ERRNO(vfs::SetXattrAt(Base(user_), "/tmp", true, "user.d", "v", 0),
               kEPERM);
  EXPECT_OK(vfs::SetXattrAt(Base(), "/tmp", true, "user.d", "v", 0));
  // trusted.* works on symlinks for CAP_SYS_ADMIN.
  EXPECT_OK(vfs::SetXattrAt(Base(), "/tmp/link", false, "trusted.o", "y", 0));
}

}  // namespace
}  // namespace sandbox::fs::tmpfs
