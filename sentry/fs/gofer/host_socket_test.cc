// The gofer file system's vfs::HostSockets (Options::host_sockets) over an
// in-process Gofer: none without the option, refused by a Gofer that does
// not serve host sockets, and with both a socket bound in the tree that a
// host client reaches, and a host socket in the tree connected to.
#include "sentry/vfs/host_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "sentry/fs/gofer/testing.h"

namespace sandbox::fs::gofer {
namespace {

// A sun_path for `name` in directory `dirfd` (the test's temporary
// directory is too long for sun_path).
sockaddr_un Addr(int dirfd, const std::string& name, socklen_t* len) {
  std::string p = "/proc/self/fd/" + std::to_string(dirfd) + "/" + name;
  sockaddr_un sa = {};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, p.data(), p.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + p.size() + 1);
  return sa;
}

class HostSocketTest : public GoferFsTest {
 protected:
  void SetUp() override {
    dirfd_ = open(tree_.root().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dirfd_, 0);
  }
  void TearDown() override {
    GoferFsTest::TearDown();
    close(dirfd_);
  }
  vfs::Inode& RootInode() { return root_vd_.dentry->inode(); }
  vfs::NewInodeAttrs SocketAttrs() { return {S_IFSOCK | 0750, 0, 0, 0}; }
  int dirfd_ = -1;
};

TEST_F(HostSocketTest, NoneWithoutTheOption) {
  Mount();
  EXPECT_EQ(fs_->host_sockets(), nullptr);
}

TEST_F(HostSocketTest, RefusedByAGoferWithoutHostSockets) {
  Options opts;
  opts.host_sockets = true;
  Mount(opts);  // The server's host_sockets stays false.
  ASSERT_NE(fs_->host_sockets(), nullptr);
  vfs::Inode& root = RootInode();
  absl::MutexLock l(&fs_->tree_mu());
  EXPECT_EQ(fs_->BindSocket(root, "s.sock", SocketAttrs(), SOCK_STREAM).error(),
            kEACCES);
  struct stat st;
  EXPECT_NE(lstat(Host("s.sock").c_str(), &st), 0);
}

TEST_F(HostSocketTest, BindAndConnectOnTheHost) {
  Options opts;
  opts.host_sockets = true;
  opts.exclusive = false;  // as runsc do's binds
  Mount(opts, ::gofer::ServerOptions{.host_sockets = true});
  vfs::HostSockets* hs = fs_->host_sockets();
  ASSERT_NE(hs, nullptr);
  KResult<vfs::HostSocketBinding> b = [&] {
    absl::MutexLock l(&fs_->tree_mu());
    return hs->BindSocket(RootInode(), "s.sock", SocketAttrs(), SOCK_STREAM);
  }();
  ASSERT_TRUE(b.ok()) << b.error().name();
  EXPECT_EQ(b->node->type(), static_cast<uint32_t>(S_IFSOCK));
  ASSERT_TRUE(b->fd.valid());
  struct stat st;
  ASSERT_EQ(lstat(Host("s.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode, S_IFSOCK | 0750);
  // The VFS finds the node too.
  KResult<vfs::VirtualDentry> vd = vfs::Resolve(Base(), "/s.sock", {});
  ASSERT_TRUE(vd.ok());
  EXPECT_EQ(vd->dentry->inode().type(), static_cast<uint32_t>(S_IFSOCK));
  // A host client reaches the donated socket.
  ASSERT_EQ(listen(b->fd.get(), 4), 0);
  int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t len;
  sockaddr_un sa = Addr(dirfd_, "s.sock", &len);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&sa), len), 0);
  pollfd p = {b->fd.get(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  int a = accept4(b->fd.get(), nullptr, nullptr, SOCK_CLOEXEC);
  EXPECT_GE(a, 0);
  close(a);
  close(c);
  // And ConnectSocket reaches a host listener in the tree.
  int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sa = Addr(dirfd_, "h.sock", &len);
  ASSERT_EQ(bind(l, reinterpret_cast<sockaddr*>(&sa), len), 0);
  ASSERT_EQ(listen(l, 4), 0);
  KResult<vfs::VirtualDentry> hv = vfs::Resolve(Base(), "/h.sock", {});
  ASSERT_TRUE(hv.ok());
  KResult<vfs::OwnedFd> cfd =
      hs->ConnectSocket(hv->dentry->inode(), SOCK_STREAM);
  ASSERT_TRUE(cfd.ok()) << cfd.error().name();
  p = {l, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 5000), 1);
  // A regular file is no socket: ECONNREFUSED, without a Gofer call.
  ::gofer::testing::WriteFile(Host("file"), "x");
  KResult<vfs::VirtualDentry> fv = vfs::Resolve(Base(), "/file", {});
  ASSERT_TRUE(fv.ok());
  EXPECT_EQ(hs->ConnectSocket(fv->dentry->inode(), SOCK_STREAM).error(),
            kECONNREFUSED);
  close(l);
}

}  // namespace
}  // namespace sandbox::fs::gofer
