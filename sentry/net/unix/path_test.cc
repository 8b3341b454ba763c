// Path sockets on tmpfs: bind makes the node, connect finds the socket by
// the node's identity.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/testing.h"
#include "sentry/net/unix/registry.h"
#include "sentry/net/unix/testing.h"

namespace sandbox::net::unix {
namespace {

class PathTest : public fs::tmpfs::TmpfsTest, public testing::UnixHelper {
 protected:
  void SetUp() override {
    TmpfsTest::SetUp();
    Init();
    Use(root_);
  }
  void Use(const kernel::Credentials& creds) {
    scoped_.reset();
    PathContext pc;
    pc.creds = &creds;
    pc.root = root_vd_;
    pc.cwd = root_vd_;
    pc.umask = 022;
    scoped_ = std::make_unique<testing::ScopedFs>(pc);
  }
  void TearDown() override { scoped_.reset(); }
  std::unique_ptr<testing::ScopedFs> scoped_;
};

TEST_F(PathTest, BindMakesASocketNodeAndConnectFindsIt) {
  auto l = Make(SOCK_STREAM);
  ASSERT_OK(l->Bind(c_, Path("/sock")));
  auto st = vfs::StatAt(Base(), "/sock", 0);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->st_mode, S_IFSOCK | 0755u);
  SockAddr name = l->GetSockName(c_).value();
  EXPECT_EQ(name.len, 2u + 5 + 1);
  EXPECT_EQ(NameOf(name), std::string("/sock\0", 6));
  ASSERT_OK(l->Listen(c_, 1));
  auto cl = Make(SOCK_STREAM);
  ASSERT_OK(cl->Connect(c_, Path("/sock")));
  EXPECT_EQ(NameOf(cl->GetPeerName(c_).value()), std::string("/sock\0", 6));
  auto f = l->Accept(c_, 0, nullptr);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(NameOf(AsUnixSocket(f->get())->GetSockName(c_).value()),
            std::string("/sock\0", 6));
}

TEST_F(PathTest, BindErrors) {
  auto a = Make(SOCK_STREAM);
  ASSERT_OK(a->Bind(c_, Path("/s")));
  auto b = Make(SOCK_STREAM);
  EXPECT_ERRNO(b->Bind(c_, Path("/s")), kEADDRINUSE);
  WriteFile("/file", "x");
  EXPECT_ERRNO(b->Bind(c_, Path("/file")), kEADDRINUSE);
  EXPECT_ERRNO(b->Bind(c_, Path("/missing/s")), kENOENT);
  EXPECT_ERRNO(b->Bind(c_, Path("/file/s")), kENOTDIR);
  // A bound socket: EINVAL, and no node is left behind; an existing name is
  // still EADDRINUSE first.
  EXPECT_ERRNO(a->Bind(c_, Path("/t")), kEINVAL);
  EXPECT_EQ(StatErr("/t"), kENOENT);
  EXPECT_ERRNO(a->Bind(c_, Path("/file")), kEADDRINUSE);
  ASSERT_OK(Mkdir("/ro", 0555));
  Use(user_);
  EXPECT_ERRNO(b->Bind(c_, Path("/ro/s")), kEACCES);
}

TEST_F(PathTest, ConnectErrors) {
  auto s = Make(SOCK_STREAM);
  EXPECT_ERRNO(s->Connect(c_, Path("/none")), kENOENT);
  WriteFile("/file", "x");
  EXPECT_ERRNO(s->Connect(c_, Path("/file")), kECONNREFUSED);
  auto d = Make(SOCK_DGRAM);
  ASSERT_OK(d->Bind(c_, Path("/dg")));
  EXPECT_ERRNO(s->Connect(c_, Path("/dg")), kEPROTOTYPE);
  auto nl = Make(SOCK_STREAM);
  ASSERT_OK(nl->Bind(c_, Path("/notlistening")));
  EXPECT_ERRNO(s->Connect(c_, Path("/notlistening")), kECONNREFUSED);
  // A closed socket leaves its node, which refuses.
  nl.reset();
  EXPECT_EQ(StatErr("/notlistening"), Errno(0));
  EXPECT_ERRNO(s->Connect(c_, Path("/notlistening")), kECONNREFUSED);
  // Write permission on the node.
  auto l = Make(SOCK_STREAM);
  ASSERT_OK(l->Bind(c_, Path("/l")));
  ASSERT_OK(l->Listen(c_, 4));
  ASSERT_OK(vfs::ChmodAt(Base(), "/l", 0755, 0));
  Use(user_);
  auto u = Make(SOCK_STREAM);
  EXPECT_ERRNO(u->Connect(c_, Path("/l")), kEACCES);
  Use(root_);
  ASSERT_OK(u->Connect(c_, Path("/l")));
}

TEST_F(PathTest, UnlinkRenameAndLink) {
  auto d = Make(SOCK_DGRAM);
  ASSERT_OK(d->Bind(c_, Path("/a")));
  auto cl = Make(SOCK_DGRAM);
  SockAddr a = Path("/a");
  ASSERT_EQ(Send(*cl, "1", 0, {}, &a).value(), 1u);
  ASSERT_OK(vfs::RenameAt(Base(), "/a", Base(), "/b", 0));
  SockAddr b = Path("/b");
  EXPECT_ERRNO(Send(*cl, "x", 0, {}, &a), kENOENT);
  ASSERT_EQ(Send(*cl, "2", 0, {}, &b).value(), 1u);
  ASSERT_OK(vfs::LinkAt(Base(), "/b", Base(), "/c", 0));
  SockAddr cc = Path("/c");
  ASSERT_EQ(Send(*cl, "3", 0, {}, &cc).value(), 1u);
  ASSERT_OK(vfs::UnlinkAt(Base(), "/b", 0));
  ASSERT_OK(vfs::UnlinkAt(Base(), "/c", 0));
  EXPECT_ERRNO(Send(*cl, "x", 0, {}, &cc), kENOENT);
  // A new socket may bind the old name; the old one is unreachable.
  auto n = Make(SOCK_DGRAM);
  ASSERT_OK(n->Bind(c_, Path("/b")));
  ASSERT_EQ(Send(*cl, "4", 0, {}, &b).value(), 1u);
  EXPECT_EQ(Recv(*n, 10).data, "4");
  EXPECT_EQ(Recv(*d, 10).data, "1");
  EXPECT_EQ(Recv(*d, 10).data, "2");
  EXPECT_EQ(Recv(*d, 10).data, "3");
  // The sender's name is the path it bound, even after the unlink.
  auto named = Make(SOCK_DGRAM);
  ASSERT_OK(named->Bind(c_, Path("/named")));
  ASSERT_OK(vfs::UnlinkAt(Base(), "/named", 0));
  ASSERT_EQ(Send(*named, "5", 0, {}, &b).value(), 1u);
  EXPECT_EQ(NameOf(Recv(*n, 10).from), std::string("/named\0", 7));
}

}  // namespace
}  // namespace sandbox::net::unix
