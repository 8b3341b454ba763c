// HostEndpoint and HostUnixSocket over host sockets made here (a
// socketpair, an abstract listener) in place of the Gofer's.
#include "sentry/net/hostunix/host_endpoint.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "sentry/net/hostunix/host_socket.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::net::hostunix {
namespace {

SockAddr PathAddr(const std::string& p) {
  sockaddr_un sa = {};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, p.data(), p.size());
  return SockAddr::From(&sa, static_cast<uint32_t>(2 + p.size() + 1));
}

// A HostUnixSocket over one end of a host socketpair of `type`; *other is
// the host's end.
std::shared_ptr<HostUnixSocket> Pair(int type, int* other,
                                     uint32_t flags = O_RDWR) {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  *other = sv[1];
  auto ep = std::make_shared<HostEndpoint>(
      vfs::OwnedFd(sv[0]), platform::HostFdHold::Take(1), type,
      HostEndpoint::Kind::kConnected, UnnamedAddr(), PathAddr("/h/s.sock"));
  return std::make_shared<HostUnixSocket>(ep, flags, Ucred{});
}

std::string Recv(Socket& s, Caller& c, size_t n, int flags = 0,
                 int* msg_flags = nullptr) {
  std::string buf(n, '\0');
  SpanIo io(absl::MakeSpan(reinterpret_cast<uint8_t*>(buf.data()), n));
  RecvRequest req;
  req.flags = flags;
  KResult<size_t> r = s.RecvMsg(c, io, req);
  if (msg_flags != nullptr) *msg_flags = req.msg_flags;
  if (!r.ok()) return "errno " + std::to_string(r.error().number());
  buf.resize(*r);
  return buf;
}

KResult<size_t> Send(Socket& s, Caller& c, std::string_view data,
                     int flags = 0) {
  SpanIo io(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(data.data()),
                                data.size()));
  SendRequest req;
  req.flags = flags;
  return s.SendMsg(c, io, req);
}

TEST(HostEndpointTest, StreamSendAndReceive) {
  int host;
  auto s = Pair(SOCK_STREAM, &host);
  Caller c;
  ASSERT_EQ(Send(*s, c, "hello").value(), 5u);
  char buf[16] = {};
  ASSERT_EQ(read(host, buf, sizeof(buf)), 5);
  EXPECT_STREQ(buf, "hello");
  ASSERT_EQ(write(host, "world!", 6), 6);
  EXPECT_EQ(Recv(*s, c, 3, MSG_PEEK), "wor");
  EXPECT_EQ(Recv(*s, c, 64), "world!");
  // Nothing more: MSG_DONTWAIT gives EAGAIN, as the O_NONBLOCK file would.
  EXPECT_EQ(Recv(*s, c, 4, MSG_DONTWAIT), "errno " + std::to_string(EAGAIN));
  EXPECT_EQ(s->Readiness(vfs::kPollIn | vfs::kPollOut), vfs::kPollOut);
  ASSERT_EQ(write(host, "x", 1), 1);
  EXPECT_EQ(s->Readiness(vfs::kPollIn), vfs::kPollIn);
  EXPECT_EQ(s->HostPollFd(), s->endpoint()->fd());
  // The names are the guest's.
  EXPECT_EQ(s->GetPeerName(c).value().len, PathAddr("/h/s.sock").len);
  EXPECT_EQ(s->GetSockName(c).value().len, 2u);
  // EOF after the host's shutdown.
  EXPECT_EQ(Recv(*s, c, 4), "x");
  ASSERT_EQ(shutdown(host, SHUT_WR), 0);
  EXPECT_EQ(Recv(*s, c, 4), "");
  close(host);
  // EPIPE to a closed peer (the syscall layer raises SIGPIPE).
  EXPECT_EQ(Send(*s, c, "x").error(), kEPIPE);
}

TEST(HostEndpointTest, WaitAllGathersAndBlockingWaitsAreInterruptible) {
  int host;
  auto s = Pair(SOCK_STREAM, &host);
  Caller c;
  int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  c.io.interrupt_fd = efd;
  ASSERT_EQ(write(host, "ab", 2), 2);
  // MSG_WAITALL for 4 bytes: 2 there, then interrupted: the 2.
  uint64_t one = 1;
  ASSERT_EQ(write(efd, &one, sizeof(one)), 8);
  EXPECT_EQ(Recv(*s, c, 4, MSG_WAITALL), "ab");
  // Interrupted with nothing: ERESTARTSYS (no timeout set).
  EXPECT_EQ(Recv(*s, c, 4), "errno " + std::to_string(kERestartSys.number()));
  uint64_t v;
  ASSERT_EQ(read(efd, &v, sizeof(v)), 8);
  // A deadline: EAGAIN when it passes.
  c.deadline_ns = vfs::MonotonicNowNs() + 20'000'000;
  EXPECT_EQ(Recv(*s, c, 4), "errno " + std::to_string(EAGAIN));
  close(efd);
  close(host);
}

TEST(HostEndpointTest, RightsNeverCross) {
  int host;
  auto s = Pair(SOCK_STREAM, &host);
  Caller c;
  // The sandbox's descriptions cannot go to the host.
  SpanIo io(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>("x"), 1));
  SendRequest req;
  req.control.rights.push_back(s);
  EXPECT_EQ(s->SendMsg(c, io, req).error(), kEPERM);
  // The host's descriptors are closed unseen: MSG_CTRUNC.
  int pipefd[2];
  ASSERT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
  char byte = 'y';
  iovec iov = {&byte, 1};
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))] = {};
  msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cbuf;
  mh.msg_controllen = sizeof(cbuf);
  cmsghdr* cm = CMSG_FIRSTHDR(&mh);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cm), &pipefd[0], sizeof(int));
  ASSERT_EQ(sendmsg(host, &mh, 0), 1);
  close(pipefd[0]);
  int flags = 0;
  EXPECT_EQ(Recv(*s, c, 4, 0, &flags), "y");
  EXPECT_TRUE(flags & MSG_CTRUNC);
  // The pipe's read end is gone everywhere: its write end sees EPIPE.
  signal(SIGPIPE, SIG_IGN);
  EXPECT_EQ(write(pipefd[1], "z", 1), -1);
  EXPECT_EQ(errno, EPIPE);
  close(pipefd[1]);
  close(host);
}

TEST(HostEndpointTest, DatagramsKeepBoundaries) {
  int host;
  auto s = Pair(SOCK_SEQPACKET, &host);
  Caller c;
  ASSERT_EQ(Send(*s, c, "one").value(), 3u);
  ASSERT_EQ(Send(*s, c, "").value(), 0u);
  char buf[8];
  EXPECT_EQ(read(host, buf, sizeof(buf)), 3);
  EXPECT_EQ(read(host, buf, sizeof(buf)), 0);
  ASSERT_EQ(write(host, "abcdef", 6), 6);
  int flags = 0;
  EXPECT_EQ(Recv(*s, c, 2, 0, &flags), "ab");
  EXPECT_TRUE(flags & MSG_TRUNC);
  close(host);
}

TEST(HostEndpointTest, ListenAndAccept) {
  // An abstract host listener stands in for one the Gofer bound.
  int l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un sa = {};
  sa.sun_family = AF_UNIX;
  std::string name = "hostunix-test-" + std::to_string(getpid());
  std::memcpy(sa.sun_path + 1, name.data(), name.size());
  socklen_t len = static_cast<socklen_t>(2 + 1 + name.size());
  ASSERT_EQ(bind(l, reinterpret_cast<sockaddr*>(&sa), len), 0);
  auto ep = std::make_shared<HostEndpoint>(
      vfs::OwnedFd(l), platform::HostFdHold::Take(1), SOCK_STREAM,
      HostEndpoint::Kind::kBound, PathAddr("/h/srv.sock"), UnnamedAddr());
  auto s = std::make_shared<HostUnixSocket>(ep, O_RDWR | O_NONBLOCK, Ucred{});
  Caller c;
  EXPECT_EQ(s->GetPeerName(c).error(), kENOTCONN);
  ASSERT_TRUE(s->Listen(c, 8).ok());
  EXPECT_EQ(s->Accept(c, 0, nullptr).error(), kEAGAIN);  // O_NONBLOCK
  EXPECT_EQ(s->Readiness(vfs::kPollIn), 0u);
  int client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&sa), len), 0);
  EXPECT_EQ(s->Readiness(vfs::kPollIn), vfs::kPollIn);
  SockAddr peer;
  KResult<vfs::FileRef> a = s->Accept(c, O_NONBLOCK, &peer);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(peer.len, 2u);  // A host peer is unnamed.
  Socket* as = AsSocket(*a);
  ASSERT_NE(as, nullptr);
  EXPECT_TRUE(as->nonblocking());
  EXPECT_EQ(as->GetSockName(c).value().len, PathAddr("/h/srv.sock").len);
  ASSERT_EQ(write(client, "hi", 2), 2);
  EXPECT_EQ(Recv(*as, c, 8), "hi");
  // An accepted socket is connected: no bind, no connect.
  EXPECT_EQ(as->Bind(c, PathAddr("/x")).error(), kEINVAL);
  EXPECT_EQ(as->Connect(c, PathAddr("/x")).error(), kEISCONN);
  close(client);
}

}  // namespace
}  // namespace sandbox::net::hostunix
