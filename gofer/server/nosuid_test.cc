// The host side of a connection is nosuid and nodev unless ServerOptions::
// suid: every message that sets a mode or an owner is tried as a hostile
// client would (set-id bits, foreign owners, device nodes, privileged
// xattrs), and the host tree is checked afterwards. With suid the same
// requests reach the host, which shows the checks can fail.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "gofer/server/testing.h"

namespace gofer {
namespace {

using testing::Harness;
using testing::TempTree;
using testing::WriteFile;

constexpr uint32_t kSetId = S_ISUID | S_ISGID;

class NosuidTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { WriteFile(Root("plain"), "x"); }
  bool suid() const { return GetParam(); }
  std::string Root(const std::string& rel) { return tree_.root() + "/" + rel; }
  struct stat Lstat(const std::string& rel) {
    struct stat st = {};
    EXPECT_EQ(lstat(Root(rel).c_str(), &st), 0) << rel;
    return st;
  }
  // What a non-directory's 06755 becomes on the host.
  uint32_t Want(uint32_t mode) const { return suid() ? mode : mode & ~kSetId; }

  TempTree tree_;
  Harness h_{tree_.root(), ServerOptions{.suid = GetParam()}};
};

TEST_P(NosuidTest, CreateStripsSetIdBits) {
  InodeResp r;
  UniqueFd fd;
  ASSERT_EQ(
      h_.client().Call(CreateReq{h_.root(), "f", O_RDWR, 06755, kNoId, kNoId},
                       &r, &fd),
      0);
  EXPECT_EQ(Lstat("f").st_mode & 07777, Want(06755));
  // The reply tells the client what the host has.
  EXPECT_EQ(r.inode.stat.mode & 07777, Want(06755));
  // S_ISGID alone (no group execute: Linux's mandatory-locking marker) too.
  ASSERT_EQ(
      h_.client().Call(CreateReq{h_.root(), "g", O_RDWR, 02644, kNoId, kNoId},
                       &r, &fd),
      0);
  EXPECT_EQ(Lstat("g").st_mode & 07777, Want(02644));
}

TEST_P(NosuidTest, MknodOfARegularFileStripsSetIdBits) {
  InodeResp r;
  ASSERT_EQ(h_.client().Call(MknodReq{h_.root(), "m", S_IFREG | 06755}, &r), 0);
  EXPECT_EQ(Lstat("m").st_mode & 07777, Want(06755));
  ASSERT_EQ(h_.client().Call(MknodReq{h_.root(), "p", S_IFIFO | 06644}, &r), 0);
  EXPECT_TRUE(S_ISFIFO(Lstat("p").st_mode));
  EXPECT_EQ(Lstat("p").st_mode & 07777, Want(06644));
}

TEST_P(NosuidTest, NeverADeviceNode) {
  InodeResp r;
  for (uint32_t type : {S_IFCHR, S_IFBLK}) {
    EXPECT_EQ(h_.client().Call(MknodReq{h_.root(), "dev", type | 0666}, &r),
              EPERM);
  }
  EXPECT_FALSE(std::filesystem::exists(Root("dev")));
}

// Directories keep S_ISGID (group inheritance; Linux's nosuid keeps it too)
// and lose S_ISUID, which means nothing on a directory.
TEST_P(NosuidTest, MkdirKeepsOnlySetGid) {
  InodeResp r;
  ASSERT_EQ(h_.client().Call(MkdirReq{h_.root(), "d", 06755}, &r), 0);
  EXPECT_EQ(Lstat("d").st_mode & 07777, suid() ? 06755u : 02755u);
  EXPECT_EQ(r.inode.stat.mode & 07777, suid() ? 06755u : 02755u);
}

TEST_P(NosuidTest, SetAttrStripsSetIdBits) {
  Handle f = h_.MustWalk({"plain"});
  Empty e;
  SetAttrReq req;
  req.handle = f;
  req.mask = kSetMode;
  for (uint32_t mode : {04755u, 02755u, 06711u, 02644u}) {
    req.mode = mode;
    ASSERT_EQ(h_.client().Call(req, &e), 0);
    EXPECT_EQ(Lstat("plain").st_mode & 07777, Want(mode)) << std::oct << mode;
  }
  InodeResp r;
  ASSERT_EQ(h_.client().Call(MkdirReq{h_.root(), "d", 0755}, &r), 0);
  req.handle = r.inode.handle;
  req.mode = 06775;
  ASSERT_EQ(h_.client().Call(req, &e), 0);
  EXPECT_EQ(Lstat("d").st_mode & 07777, suid() ? 06775u : 02775u);
}

// Owners: a nosuid connection gives files only its own ids (creations with
// another owner keep the server's; SetAttr to one is EINVAL).
TEST_P(NosuidTest, OwnersAreOnlyTheServersIds) {
  const uint32_t uid = geteuid(), gid = getegid();
  const uint32_t other = uid + 4242, other_gid = gid + 4242;
  // With suid, the host itself decides: chown to other ids needs CAP_CHOWN
  // (root) and ids mapped in this user namespace.
  const bool root = uid == 0 &&
                    testing::IdMapped("/proc/self/uid_map", other) &&
                    testing::IdMapped("/proc/self/gid_map", other_gid);
  // Created (nosuid: with the server's ids instead), or the host's own
  // refusal (EPERM or EINVAL) of a suid connection's chown.
  auto created = [&](int err) {
    if (suid() && !root) {
      EXPECT_NE(err, 0);
    } else {
      EXPECT_EQ(err, 0);
    }
  };
  InodeResp r;
  UniqueFd fd;
  created(h_.client().Call(
      CreateReq{h_.root(), "f", O_RDWR, 0644, other, other_gid}, &r, &fd));
  if (!suid() || root) {
    struct stat st = Lstat("f");
    EXPECT_EQ(st.st_uid, suid() ? other : uid);
    EXPECT_EQ(st.st_gid, suid() ? other_gid : gid);
  }
  created(h_.client().Call(MkdirReq{h_.root(), "d", 0755, other, kNoId}, &r));
  if (!suid()) EXPECT_EQ(Lstat("d").st_uid, uid);
  created(
      h_.client().Call(SymlinkReq{h_.root(), "s", "plain", other, kNoId}, &r));
  if (!suid()) EXPECT_EQ(Lstat("s").st_uid, uid);
  created(h_.client().Call(
      MknodReq{h_.root(), "p", S_IFIFO | 0644, kNoId, other_gid}, &r));
  if (!suid()) EXPECT_EQ(Lstat("p").st_gid, gid);

  Handle plain = h_.MustWalk({"plain"});
  Empty e;
  SetAttrReq req;
  req.handle = plain;
  req.mask = kSetUid | kSetGid;
  req.uid = uid;  // The server's own ids (and the file's): allowed.
  req.gid = gid;
  EXPECT_EQ(h_.client().Call(req, &e), 0);
  req.mask = kSetUid;
  req.uid = other;
  int err = h_.client().Call(req, &e);
  if (!suid()) {
    EXPECT_EQ(err, EINVAL);
  } else if (root) {
    EXPECT_EQ(err, 0);
  }
  EXPECT_EQ(Lstat("plain").st_uid, suid() && root ? other : uid);
  req.mask = kSetGid;
  req.gid = other_gid;
  err = h_.client().Call(req, &e);
  if (!suid()) {
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(Lstat("plain").st_gid, gid);
  }
}

// A hard link is a new name of a host file: it adds no bits (the mode is
// the file's, which a nosuid connection never gave set-id bits).
TEST_P(NosuidTest, LinkAddsNoBits) {
  InodeResp r;
  UniqueFd fd;
  ASSERT_EQ(
      h_.client().Call(CreateReq{h_.root(), "f", O_RDWR, 04755, kNoId, kNoId},
                       &r, &fd),
      0);
  InodeResp l;
  ASSERT_EQ(h_.client().Call(LinkReq{h_.root(), "hard", r.inode.handle}, &l),
            0);
  EXPECT_EQ(Lstat("hard").st_mode & 07777, Want(04755));
}

// security.* (file capabilities among them) and trusted.* never reach the
// host, suid or not: only user.* is served.
TEST_P(NosuidTest, PrivilegedXattrsAreRefused) {
  Handle f = h_.MustWalk({"plain"});
  Empty e;
  // A v2 capability blob granting everything.
  std::string caps(20, '\xff');
  caps[0] = 0x00;
  caps[1] = 0x00;
  caps[2] = 0x00;
  caps[3] = 0x02;
  for (const char* name :
       {"security.capability", "security.selinux", "trusted.overlay.opaque",
        "system.posix_acl_access"}) {
    EXPECT_EQ(h_.client().Call(SetXattrReq{f, name, caps, 0}, &e), EOPNOTSUPP)
        << name;
    char buf[64];
    EXPECT_LT(lgetxattr(Root("plain").c_str(), name, buf, sizeof(buf)), 0)
        << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Nosuid, NosuidTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "Suid" : "Nosuid";
                         });

}  // namespace
}  // namespace gofer
