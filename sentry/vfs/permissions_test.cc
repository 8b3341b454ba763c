#include "sentry/vfs/permissions.h"

#include <sys/stat.h>

#include "gtest/gtest.h"

namespace sandbox::vfs {
namespace {

using kernel::Credentials;

bool Allowed(const Credentials& c, int may, uint32_t mode, uint32_t uid = 1000,
             uint32_t gid = 1000) {
  return CheckPermission(c, may, mode, uid, gid).ok();
}

TEST(CheckPermission, OwnerGroupOtherClassesAreExclusive) {
  Credentials owner = Credentials::User(1000, 50);
  Credentials member = Credentials::User(2000, 1000);
  Credentials supp = Credentials::User(2000, 50, {7, 1000});
  Credentials other = Credentials::User(3000, 3000);
  // Owner bits apply to the owner even when group/other would allow more.
  EXPECT_FALSE(Allowed(owner, kMayRead, S_IFREG | 0077));
  EXPECT_TRUE(Allowed(member, kMayRead, S_IFREG | 0040));
  EXPECT_FALSE(Allowed(member, kMayRead, S_IFREG | 0404));
  EXPECT_TRUE(Allowed(supp, kMayWrite, S_IFREG | 0020));
  EXPECT_TRUE(Allowed(other, kMayRead | kMayExec, S_IFREG | 0005));
  EXPECT_FALSE(Allowed(other, kMayWrite, S_IFREG | 0775));
  EXPECT_EQ(CheckPermission(other, kMayWrite, S_IFREG | 0775, 1, 1).error(),
            kEACCES);
}

TEST(CheckPermission, Capabilities) {
  Credentials root = Credentials::Root();
  root.fsuid = 0;
  EXPECT_TRUE(Allowed(root, kMayRead | kMayWrite, S_IFREG | 0));
  EXPECT_TRUE(Allowed(root, kMayRead | kMayWrite | kMayExec, S_IFDIR | 0));
  // DAC_OVERRIDE grants exec on a file only if some x bit is set.
  EXPECT_FALSE(Allowed(root, kMayExec, S_IFREG | 0666));
  EXPECT_TRUE(Allowed(root, kMayExec, S_IFREG | 0001));

  Credentials rs = Credentials::User(5, 5);
  rs.cap_effective = uint64_t{1} << kernel::kCapDacReadSearch;
  EXPECT_TRUE(Allowed(rs, kMayRead, S_IFREG | 0));
  EXPECT_FALSE(Allowed(rs, kMayWrite, S_IFREG | 0));
  EXPECT_TRUE(Allowed(rs, kMayRead | kMayExec, S_IFDIR | 0));
  EXPECT_FALSE(Allowed(rs, kMayWrite | kMayExec, S_IFDIR | 0));
}

TEST(CheckSticky, OnlyOwnersOrFowner) {
  InodeAttrs dir{.mode = S_IFDIR | 01777, .uid = 1};
  InodeAttrs victim{.mode = S_IFREG | 0644, .uid = 2};
  EXPECT_EQ(CheckSticky(Credentials::User(3, 3), dir, victim).error(), kEPERM);
  EXPECT_TRUE(CheckSticky(Credentials::User(2, 3), dir, victim).ok());
  EXPECT_TRUE(CheckSticky(Credentials::User(1, 3), dir, victim).ok());
  EXPECT_TRUE(CheckSticky(Credentials::Root(), dir, victim).ok());
  dir.mode = S_IFDIR | 0777;
  EXPECT_TRUE(CheckSticky(Credentials::User(3, 3), dir, victim).ok());
}

TEST(InitOwner, SetgidDirectoryInheritance) {
  Credentials c = Credentials::User(1000, 1000);
  InodeAttrs dir{.mode = S_IFDIR | 02775, .uid = 0, .gid = 44};
  NewInodeAttrs sub = InitOwner(c, dir, S_IFDIR | 0755);
  EXPECT_EQ(sub.gid, 44u);
  EXPECT_EQ(sub.mode, S_IFDIR | 02755u);
  // Not in group 44, no CAP_FSETID: a group-executable setgid file loses it.
  NewInodeAttrs f = InitOwner(c, dir, S_IFREG | 02755);
  EXPECT_EQ(f.gid, 44u);
  EXPECT_EQ(f.mode, S_IFREG | 0755u);
  dir.mode = S_IFDIR | 0775;
  NewInodeAttrs g = InitOwner(c, dir, S_IFREG | 0644);
  EXPECT_EQ(g.uid, 1000u);
  EXPECT_EQ(g.gid, 1000u);
}

TEST(ChmodMode, OwnerOnlyAndSetgidDropped) {
  InodeAttrs a{.mode = S_IFREG | 0644, .uid = 1000, .gid = 44};
  EXPECT_EQ(ChmodMode(Credentials::User(1001, 1), a, 0600).error(), kEPERM);
  EXPECT_EQ(ChmodMode(Credentials::User(1000, 1000), a, 02755).value(), 0755u);
  EXPECT_EQ(ChmodMode(Credentials::User(1000, 1000, {44}), a, 02755).value(),
            02755u);
  EXPECT_EQ(ChmodMode(Credentials::Root(), a, 06755).value(), 06755u);
}

TEST(PrepareChown, Rules) {
  InodeAttrs a{.mode = S_IFREG | 06755, .uid = 1000, .gid = 1000};
  Credentials owner = Credentials::User(1000, 1000, {44});
  SetAttrRequest req;
  EXPECT_EQ(PrepareChown(owner, a, 0, -1, &req).error(), kEPERM);
  EXPECT_EQ(PrepareChown(owner, a, -1, 45, &req).error(), kEPERM);
  EXPECT_EQ(PrepareChown(Credentials::User(7, 7), a, -1, 1000, &req).error(),
            kEPERM);
  req = {};
  ASSERT_TRUE(PrepareChown(owner, a, -1, 44, &req).ok());
  EXPECT_TRUE(req.mask & SetAttrRequest::kGid);
  EXPECT_EQ(req.gid, 44u);
  // Set-id bits cleared (setgid too: group-executable).
  EXPECT_TRUE(req.mask & SetAttrRequest::kMode);
  EXPECT_EQ(req.mode, 0755u);
  req = {};
  ASSERT_TRUE(PrepareChown(Credentials::Root(), a, 5, 5, &req).ok());
  EXPECT_EQ(req.mode, 0755u);
  // Directories keep their set-id bits.
  InodeAttrs d{.mode = S_IFDIR | 02755, .uid = 1000, .gid = 1000};
  req = {};
  ASSERT_TRUE(PrepareChown(Credentials::Root(), d, 5, 5, &req).ok());
  EXPECT_FALSE(req.mask & SetAttrRequest::kMode);
}

TEST(ModeAfterWrite, KillsSetIdWithoutFsetid) {
  Credentials u = Credentials::User(1, 1);
  EXPECT_EQ(ModeAfterWrite(u, 06755), 0755u);
  EXPECT_EQ(ModeAfterWrite(u, 06745), 02745u);  // setgid without g+x stays
  EXPECT_EQ(ModeAfterWrite(Credentials::Root(), 06755), 06755u);
}

}  // namespace
}  // namespace sandbox::vfs
