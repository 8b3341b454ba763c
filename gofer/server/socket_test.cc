// BindSocket and ConnectSocket (host Unix sockets, ServerOptions::
// host_sockets): refused on connections without it; with it, a socket
// bound in the tree is reachable from the host and a host socket in the
// tree from the client, and nothing else: no symlink is followed out of the
// tree, no swapped name reached.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "gofer/server/testing.h"

namespace gofer {
namespace {

using testing::Harness;
using testing::TempTree;
using testing::WriteFile;

constexpr uint32_t kStream = SOCK_STREAM;

sockaddr_un Addr(const std::string& path, socklen_t* len) {
  sockaddr_un sa = {};
  sa.sun_family = AF_UNIX;
  EXPECT_LT(path.size(), sizeof(sa.sun_path)) << path;
  std::memcpy(sa.sun_path, path.data(), path.size());
  *len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  return sa;
}

// A host socket listening at path (its fd), or -1.
int Listen(const std::string& path, int type = SOCK_STREAM) {
  int s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  socklen_t len;
  sockaddr_un sa = Addr(path, &len);
  if (bind(s, reinterpret_cast<sockaddr*>(&sa), len) != 0 ||
      listen(s, 4) != 0) {
    close(s);
    return -1;
  }
  return s;
}

// Whether a connection waits on listener `l` (within 100 ms).
bool Pending(int l) {
  pollfd p = {l, POLLIN, 0};
  return poll(&p, 1, 100) == 1;
}

class SocketTest : public ::testing::Test {
 protected:
  // Host paths for bind and connect go through /proc/self/fd (the test's
  // temporary directory is too long for sun_path).
  void SetUp() override {
    root_fd_.reset(open(tree_.root().c_str(), O_PATH | O_CLOEXEC));
    outside_fd_.reset(open(tree_.outside().c_str(), O_PATH | O_CLOEXEC));
    ASSERT_TRUE(root_fd_.valid() && outside_fd_.valid());
  }
  std::string Root(const std::string& rel) { return tree_.root() + "/" + rel; }
  std::string Outside(const std::string& rel) {
    return tree_.outside() + "/" + rel;
  }
  std::string RootSock(const std::string& rel) {
    return "/proc/self/fd/" + std::to_string(root_fd_.get()) + "/" + rel;
  }
  std::string OutsideSock(const std::string& rel) {
    return "/proc/self/fd/" + std::to_string(outside_fd_.get()) + "/" + rel;
  }

  TempTree tree_;
  UniqueFd root_fd_, outside_fd_;
  Harness h_{tree_.root(), ServerOptions{.host_sockets = true}};
};

TEST_F(SocketTest, RefusedWithoutHostSockets) {
  Harness plain(tree_.root());
  int l = Listen(RootSock("h.sock"));
  ASSERT_GE(l, 0);
  InodeResp r;
  UniqueFd fd;
  EXPECT_EQ(plain.client().Call(
                BindSocketReq{plain.root(), "s", kStream, 0755, kNoId, kNoId},
                &r, &fd),
            EOPNOTSUPP);
  EXPECT_FALSE(fd.valid());
  struct stat st;
  EXPECT_NE(lstat(Root("s").c_str(), &st), 0);  // Nothing made.
  Handle h = plain.MustWalk({"h.sock"});
  Empty e;
  EXPECT_EQ(plain.client().Call(ConnectSocketReq{h, kStream}, &e, &fd),
            EOPNOTSUPP);
  EXPECT_FALSE(fd.valid());
  EXPECT_FALSE(Pending(l));
  close(l);
  // And a read-only connection with host sockets binds nothing.
  Harness ro(tree_.root(),
             ServerOptions{.read_only = true, .host_sockets = true});
  EXPECT_EQ(
      ro.client().Call(
          BindSocketReq{ro.root(), "s", kStream, 0755, kNoId, kNoId}, &r, &fd),
      EROFS);
}

TEST_F(SocketTest, BoundSocketIsReachedFromTheHost) {
  InodeResp r;
  UniqueFd fd;
  ASSERT_EQ(h_.client().Call(BindSocketReq{h_.root(), "srv.sock", kStream, 0640,
                                           kNoId, kNoId},
                             &r, &fd),
            0);
  ASSERT_TRUE(fd.valid());
  EXPECT_NE(r.inode.handle, 0u);
  EXPECT_EQ(r.inode.stat.mode, S_IFSOCK | 0640);
  struct stat st;
  ASSERT_EQ(lstat(Root("srv.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode, S_IFSOCK | 0640);  // The mode asked, no umask.
  EXPECT_EQ(st.st_ino, r.inode.stat.ino);
  EXPECT_TRUE(fcntl(fd.get(), F_GETFL) & O_NONBLOCK);
  ASSERT_EQ(listen(fd.get(), 4), 0);
  int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t len;
  sockaddr_un sa = Addr(RootSock("srv.sock"), &len);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&sa), len), 0);
  ASSERT_EQ(write(c, "ping", 4), 4);
  ASSERT_TRUE(Pending(fd.get()));
  int a = accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(a, 0);
  char buf[8] = {};
  EXPECT_EQ(read(a, buf, sizeof(buf)), 4);
  EXPECT_STREQ(buf, "ping");
  close(a);
  close(c);
  // An existing name, a symlink included (never followed), is EADDRINUSE.
  UniqueFd fd2;
  EXPECT_EQ(h_.client().Call(BindSocketReq{h_.root(), "srv.sock", kStream, 0640,
                                           kNoId, kNoId},
                             &r, &fd2),
            EADDRINUSE);
  ASSERT_EQ(symlink(Outside("made.sock").c_str(), Root("link").c_str()), 0);
  EXPECT_EQ(h_.client().Call(
                BindSocketReq{h_.root(), "link", kStream, 0640, kNoId, kNoId},
                &r, &fd2),
            EADDRINUSE);
  EXPECT_NE(lstat(Outside("made.sock").c_str(), &st), 0);
  EXPECT_FALSE(fd2.valid());
}

TEST_F(SocketTest, BadRequests) {
  InodeResp r;
  UniqueFd fd;
  EXPECT_EQ(h_.client().Call(BindSocketReq{h_.root(), "s", 3 /* SOCK_RAW */,
                                           0755, kNoId, kNoId},
                             &r, &fd),
            ESOCKTNOSUPPORT);
  EXPECT_EQ(h_.client().Call(BindSocketReq{h_.root(), std::string(108, 'n'),
                                           kStream, 0755, kNoId, kNoId},
                             &r, &fd),
            ENAMETOOLONG);
  EXPECT_EQ(
      h_.client().Call(
          BindSocketReq{h_.root(), "..", kStream, 0755, kNoId, kNoId}, &r, &fd),
      EINVAL);
  EXPECT_EQ(h_.client().Call(
                BindSocketReq{h_.root(), "a/b", kStream, 0755, kNoId, kNoId},
                &r, &fd),
            EINVAL);
  EXPECT_EQ(h_.client().Call(
                BindSocketReq{999, "s", kStream, 0755, kNoId, kNoId}, &r, &fd),
            EBADF);
  Empty e;
  EXPECT_EQ(h_.client().Call(ConnectSocketReq{999, kStream}, &e, &fd), EBADF);
  // Connecting to what is no socket: ECONNREFUSED, as Linux.
  WriteFile(Root("file"), "x");
  EXPECT_EQ(h_.client().Call(ConnectSocketReq{h_.MustWalk({"file"}), kStream},
                             &e, &fd),
            ECONNREFUSED);
  EXPECT_EQ(h_.client().Call(ConnectSocketReq{h_.root(), kStream}, &e, &fd),
            ECONNREFUSED);
  EXPECT_FALSE(fd.valid());
  EXPECT_EQ(h_.client().Call(ConnectSocketReq{h_.root(), 99}, &e, &fd),
            ESOCKTNOSUPPORT);
}

TEST_F(SocketTest, ConnectReachesTheHostSocketInTheTree) {
  int l = Listen(RootSock("h.sock"));
  ASSERT_GE(l, 0);
  Handle h = h_.MustWalk({"h.sock"});
  Empty e;
  UniqueFd fd;
  ASSERT_EQ(h_.client().Call(ConnectSocketReq{h, kStream}, &e, &fd), 0);
  ASSERT_TRUE(fd.valid());
  int a = accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(a, 0);
  ASSERT_EQ(write(fd.get(), "hello", 5), 5);
  char buf[8] = {};
  EXPECT_EQ(read(a, buf, sizeof(buf)), 5);
  EXPECT_STREQ(buf, "hello");
  close(a);
  // The wrong type: the host's EPROTOTYPE.
  UniqueFd fd2;
  EXPECT_EQ(h_.client().Call(ConnectSocketReq{h, SOCK_DGRAM}, &e, &fd2),
            EPROTOTYPE);
  close(l);
  // Nobody listening any more: ECONNREFUSED.
  EXPECT_EQ(h_.client().Call(ConnectSocketReq{h, kStream}, &e, &fd2),
            ECONNREFUSED);
}

TEST_F(SocketTest, SymlinksOutOfTheTreeAreNeverFollowed) {
  int victim = Listen(OutsideSock("victim.sock"));
  ASSERT_GE(victim, 0);
  ASSERT_EQ(symlink(Outside("victim.sock").c_str(), Root("evil").c_str()), 0);
  // The walk stops at the symlink; its handle is no socket.
  int err;
  WalkResp w = h_.Walk(h_.root(), {"evil"}, &err);
  ASSERT_EQ(err, 0);
  ASSERT_EQ(w.status, WalkStatus::kSymlink);
  Empty e;
  UniqueFd fd;
  EXPECT_EQ(
      h_.client().Call(ConnectSocketReq{w.inodes[0].handle, kStream}, &e, &fd),
      ECONNREFUSED);
  EXPECT_FALSE(Pending(victim));
  // A socket node walked, then swapped for a symlink on the host: the
  // name is no longer the node, so nothing is connected.
  int l = Listen(RootSock("s.sock"));
  ASSERT_GE(l, 0);
  Handle h = h_.MustWalk({"s.sock"});
  ASSERT_EQ(rename(Root("evil").c_str(), Root("s.sock").c_str()), 0);
  EXPECT_EQ(h_.client().Call(ConnectSocketReq{h, kStream}, &e, &fd),
            ECONNREFUSED);
  EXPECT_FALSE(fd.valid());
  EXPECT_FALSE(Pending(victim));
  EXPECT_FALSE(Pending(l));
  close(l);
  close(victim);
}

}  // namespace
}  // namespace gofer
