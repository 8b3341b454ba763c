// AF_UNIX SOCK_DGRAM: message boundaries (MSG_TRUNC both ways, zero-length
// datagrams), addressing (sendto a bound socket, the sender's name or none
// in recvfrom), connect, disconnect with AF_UNSPEC, EPERM towards a socket
// connected elsewhere, ECONNREFUSED after the peer closed, EMSGSIZE, shutdown
// and the receive queue's FIONREAD.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/socket_util.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

// A datagram socket bound to a fresh path, unlinked when destroyed.
struct BoundDgram {
  BoundDgram()
      : addr(UnixAddr::Path(SocketPath())), fd(UnixSocket(SOCK_DGRAM)) {
    EXPECT_TRUE(fd.valid());
    EXPECT_THAT(bind(fd.get(), addr.sa(), addr.len), SyscallSucceeds());
  }
  ~BoundDgram() { unlink(addr.addr.sun_path); }
  UnixAddr addr;
  FileDescriptor fd;
};

TEST(UnixDgramTest, SocketpairKeepsMessageBoundaries) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "abc", 3, 0), SyscallSucceedsWithValue(3));
  ASSERT_THAT(send(p.a.get(), "de", 2, 0), SyscallSucceedsWithValue(2));
  char buf[16] = {};
  EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(3));
  EXPECT_EQ(std::string(buf, 3), "abc");
  EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(2));
  EXPECT_EQ(std::string(buf, 2), "de");
}

TEST(UnixDgramTest, ShortBufferTruncatesAndDiscardsTheRest) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "abcdef", 6, 0), SyscallSucceedsWithValue(6));
  ASSERT_THAT(send(p.a.get(), "gh", 2, 0), SyscallSucceedsWithValue(2));
  char buf[4] = {};
  iovec iov = {buf, 4};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  EXPECT_THAT(recvmsg(p.b.get(), &m, 0), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "abcd");
  EXPECT_EQ(m.msg_flags & MSG_TRUNC, MSG_TRUNC);
  m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  EXPECT_THAT(recvmsg(p.b.get(), &m, 0), SyscallSucceedsWithValue(2));
  EXPECT_EQ(std::string(buf, 2), "gh");
  EXPECT_EQ(m.msg_flags & MSG_TRUNC, 0);
}

TEST(UnixDgramTest, MsgTruncFlagReturnsTheFullLength) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "abcdefgh", 8, 0), SyscallSucceedsWithValue(8));
  char buf[3];
  EXPECT_THAT(recv(p.b.get(), buf, 3, MSG_TRUNC | MSG_PEEK),
              SyscallSucceedsWithValue(8));
  EXPECT_THAT(recv(p.b.get(), buf, 3, MSG_TRUNC), SyscallSucceedsWithValue(8));
  EXPECT_EQ(std::string(buf, 3), "abc");
  EXPECT_THAT(recv(p.b.get(), buf, 3, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST(UnixDgramTest, ZeroLengthDatagramIsAMessage) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "", 0, 0), SyscallSucceedsWithValue(0));
  ASSERT_THAT(send(p.a.get(), "x", 1, 0), SyscallSucceedsWithValue(1));
  char buf[4];
  EXPECT_THAT(recv(p.b.get(), buf, 4, MSG_DONTWAIT),
              SyscallSucceedsWithValue(0));
  EXPECT_THAT(recv(p.b.get(), buf, 4, MSG_DONTWAIT),
              SyscallSucceedsWithValue(1));
  EXPECT_THAT(recv(p.b.get(), buf, 4, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST(UnixDgramTest, PeekDoesNotConsume) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "one", 3, 0), SyscallSucceedsWithValue(3));
  ASSERT_THAT(send(p.a.get(), "second", 6, 0), SyscallSucceedsWithValue(6));
  char buf[16];
  EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), MSG_PEEK),
              SyscallSucceedsWithValue(3));
  EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(3));
  EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), MSG_PEEK),
              SyscallSucceedsWithValue(6));
}

TEST(UnixDgramTest, FionreadIsTheNextDatagramsSize) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  int n = -1;
  ASSERT_THAT(ioctl(p.b.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 0);
  ASSERT_THAT(send(p.a.get(), "abcde", 5, 0), SyscallSucceedsWithValue(5));
  ASSERT_THAT(send(p.a.get(), "xy", 2, 0), SyscallSucceedsWithValue(2));
  ASSERT_THAT(ioctl(p.b.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 5);
  char buf[8];
  ASSERT_THAT(recv(p.b.get(), buf, 8, 0), SyscallSucceedsWithValue(5));
  ASSERT_THAT(ioctl(p.b.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 2);
}

TEST(UnixDgramTest, SendtoABoundSocketFromAnUnnamedOne) {
  BoundDgram r;
  FileDescriptor s = UnixSocket(SOCK_DGRAM);
  ASSERT_TRUE(s.valid());
  ASSERT_THAT(sendto(s.get(), "hi", 2, 0, r.addr.sa(), r.addr.len),
              SyscallSucceedsWithValue(2));
  char buf[8];
  sockaddr_un from;
  memset(&from, 0x55, sizeof(from));
  socklen_t len = sizeof(from);
  ASSERT_THAT(recvfrom(r.fd.get(), buf, sizeof(buf), 0,
                       reinterpret_cast<sockaddr*>(&from), &len),
              SyscallSucceedsWithValue(2));
  // An unbound sender has no address at all.
  EXPECT_EQ(len, 0u);
}

TEST(UnixDgramTest, RecvfromNamesABoundSender) {
  BoundDgram r, s;
  ASSERT_THAT(sendto(s.fd.get(), "hi", 2, 0, r.addr.sa(), r.addr.len),
              SyscallSucceedsWithValue(2));
  char buf[8];
  sockaddr_un from = {};
  socklen_t len = sizeof(from);
  ASSERT_THAT(recvfrom(r.fd.get(), buf, sizeof(buf), 0,
                       reinterpret_cast<sockaddr*>(&from), &len),
              SyscallSucceedsWithValue(2));
  EXPECT_EQ(len, s.addr.len);
  EXPECT_EQ(from.sun_family, AF_UNIX);
  EXPECT_STREQ(from.sun_path, s.addr.addr.sun_path);
  // Reply to the name we got.
  ASSERT_THAT(
      sendto(r.fd.get(), "yo", 2, 0, reinterpret_cast<sockaddr*>(&from), len),
      SyscallSucceedsWithValue(2));
  EXPECT_THAT(recv(s.fd.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(2));
}

TEST(UnixDgramTest, AbstractReceiverAndSender) {
  UnixAddr ra = UnixAddr::Abstract(AbstractName("dgr"));
  UnixAddr sa = UnixAddr::Abstract(AbstractName("dgs"));
  FileDescriptor r = UnixSocket(SOCK_DGRAM), s = UnixSocket(SOCK_DGRAM);
  ASSERT_THAT(bind(r.get(), ra.sa(), ra.len), SyscallSucceeds());
  ASSERT_THAT(bind(s.get(), sa.sa(), sa.len), SyscallSucceeds());
  ASSERT_THAT(sendto(s.get(), "a", 1, 0, ra.sa(), ra.len),
              SyscallSucceedsWithValue(1));
  char buf[4];
  sockaddr_un from = {};
  socklen_t len = sizeof(from);
  ASSERT_THAT(recvfrom(r.get(), buf, sizeof(buf), 0,
                       reinterpret_cast<sockaddr*>(&from), &len),
              SyscallSucceedsWithValue(1));
  ASSERT_EQ(len, sa.len);
  EXPECT_EQ(memcmp(&from, &sa.addr, len), 0);
}

TEST(UnixDgramTest, ConnectedSendNeedsNoAddress) {
  BoundDgram r;
  FileDescriptor s = ConnectTo(SOCK_DGRAM, r.addr);
  ASSERT_TRUE(s.valid()) << strerror(errno);
  ASSERT_THAT(send(s.get(), "c", 1, 0), SyscallSucceedsWithValue(1));
  ASSERT_THAT(write(s.get(), "w", 1), SyscallSucceedsWithValue(1));
  char buf[4];
  EXPECT_THAT(recv(r.fd.get(), buf, 4, 0), SyscallSucceedsWithValue(1));
  EXPECT_THAT(read(r.fd.get(), buf, 4), SyscallSucceedsWithValue(1));
  sockaddr_un peer = {};
  socklen_t len = sizeof(peer);
  ASSERT_THAT(getpeername(s.get(), reinterpret_cast<sockaddr*>(&peer), &len),
              SyscallSucceeds());
  EXPECT_EQ(len, r.addr.len);
  EXPECT_STREQ(peer.sun_path, r.addr.addr.sun_path);
}

TEST(UnixDgramTest, ConnectedSocketMaySendtoAnotherAddress) {
  BoundDgram r1, r2;
  FileDescriptor s = ConnectTo(SOCK_DGRAM, r1.addr);
  ASSERT_TRUE(s.valid());
  ASSERT_THAT(sendto(s.get(), "2", 1, 0, r2.addr.sa(), r2.addr.len),
              SyscallSucceedsWithValue(1));
  char c;
  EXPECT_THAT(recv(r2.fd.get(), &c, 1, MSG_DONTWAIT),
              SyscallSucceedsWithValue(1));
  EXPECT_THAT(recv(r1.fd.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST(UnixDgramTest, ConnectedReceiverOnlyTakesFromItsPeer) {
  BoundDgram r, peer;
  ASSERT_THAT(connect(r.fd.get(), peer.addr.sa(), peer.addr.len),
              SyscallSucceeds());
  FileDescriptor other = UnixSocket(SOCK_DGRAM);
  ASSERT_TRUE(other.valid());
  EXPECT_THAT(sendto(other.get(), "x", 1, 0, r.addr.sa(), r.addr.len),
              SyscallFailsWithErrno(EPERM));
  // Its peer may send to it.
  EXPECT_THAT(sendto(peer.fd.get(), "x", 1, 0, r.addr.sa(), r.addr.len),
              SyscallSucceedsWithValue(1));
}

TEST(UnixDgramTest, DisconnectWithAfUnspec) {
  BoundDgram r;
  FileDescriptor s = ConnectTo(SOCK_DGRAM, r.addr);
  ASSERT_TRUE(s.valid());
  sockaddr unspec = {};
  unspec.sa_family = AF_UNSPEC;
  ASSERT_THAT(connect(s.get(), &unspec, sizeof(unspec)), SyscallSucceeds());
  EXPECT_THAT(send(s.get(), "x", 1, 0), SyscallFailsWithErrno(ENOTCONN));
  sockaddr_un peer;
  socklen_t len = sizeof(peer);
  EXPECT_THAT(getpeername(s.get(), reinterpret_cast<sockaddr*>(&peer), &len),
              SyscallFailsWithErrno(ENOTCONN));
  // And it can connect again.
  EXPECT_THAT(connect(s.get(), r.addr.sa(), r.addr.len), SyscallSucceeds());
  EXPECT_THAT(send(s.get(), "x", 1, 0), SyscallSucceedsWithValue(1));
}

TEST(UnixDgramTest, ReconnectMovesThePeer) {
  BoundDgram r1, r2;
  FileDescriptor s = ConnectTo(SOCK_DGRAM, r1.addr);
  ASSERT_TRUE(s.valid());
  ASSERT_THAT(connect(s.get(), r2.addr.sa(), r2.addr.len), SyscallSucceeds());
  ASSERT_THAT(send(s.get(), "x", 1, 0), SyscallSucceedsWithValue(1));
  char c;
  EXPECT_THAT(recv(r2.fd.get(), &c, 1, MSG_DONTWAIT),
              SyscallSucceedsWithValue(1));
  EXPECT_THAT(recv(r1.fd.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST(UnixDgramTest, UnconnectedSendWithoutAddressIsEnotconn) {
  FileDescriptor s = UnixSocket(SOCK_DGRAM);
  ASSERT_TRUE(s.valid());
  EXPECT_THAT(send(s.get(), "x", 1, 0), SyscallFailsWithErrno(ENOTCONN));
  EXPECT_THAT(write(s.get(), "x", 1), SyscallFailsWithErrno(ENOTCONN));
}

TEST(UnixDgramTest, SendtoMissingTargets) {
  FileDescriptor s = UnixSocket(SOCK_DGRAM);
  ASSERT_TRUE(s.valid());
  UnixAddr missing = UnixAddr::Path(SocketPath());
  EXPECT_THAT(sendto(s.get(), "x", 1, 0, missing.sa(), missing.len),
              SyscallFailsWithErrno(ENOENT));
  UnixAddr abs = UnixAddr::Abstract(AbstractName("nobody"));
  EXPECT_THAT(sendto(s.get(), "x", 1, 0, abs.sa(), abs.len),
              SyscallFailsWithErrno(ECONNREFUSED));
  EXPECT_THAT(connect(s.get(), abs.sa(), abs.len),
              SyscallFailsWithErrno(ECONNREFUSED));
}

TEST(UnixDgramTest, SendToAClosedPeerIsEconnrefusedThenEnotconn) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  p.b.reset();
  EXPECT_THAT(send(p.a.get(), "x", 1, 0), SyscallFailsWithErrno(ECONNREFUSED));
  EXPECT_THAT(send(p.a.get(), "x", 1, 0), SyscallFailsWithErrno(ENOTCONN));
}

TEST(UnixDgramTest, ClosedPeerIsNoEofForTheReader) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.b.get(), "last", 4, 0), SyscallSucceedsWithValue(4));
  p.b.reset();
  char buf[8];
  // What was queued is still there; then nothing, not EOF.
  EXPECT_THAT(recv(p.a.get(), buf, 8, MSG_DONTWAIT),
              SyscallSucceedsWithValue(4));
  EXPECT_THAT(recv(p.a.get(), buf, 8, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST(UnixDgramTest, OverSndbufIsEmsgsize) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  int sndbuf = 0;
  socklen_t len = sizeof(sndbuf);
  ASSERT_THAT(getsockopt(p.a.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, &len),
              SyscallSucceeds());
  ASSERT_GT(sndbuf, 0);
  std::string big(sndbuf, 'b');
  EXPECT_THAT(send(p.a.get(), big.data(), big.size(), 0),
              SyscallFailsWithErrno(EMSGSIZE));
  // A datagram well under it goes.
  EXPECT_THAT(send(p.a.get(), big.data(), sndbuf / 4, 0),
              SyscallSucceedsWithValue(sndbuf / 4));
}

TEST(UnixDgramTest, LargeDatagramArrivesWhole) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  std::string msg(60000, '\0');
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<char>(i);
  ASSERT_THAT(send(p.a.get(), msg.data(), msg.size(), 0),
              SyscallSucceedsWithValue(msg.size()));
  std::string got(70000, '\0');
  ASSERT_THAT(recv(p.b.get(), got.data(), got.size(), 0),
              SyscallSucceedsWithValue(msg.size()));
  got.resize(msg.size());
  EXPECT_TRUE(got == msg);
}

TEST(UnixDgramTest, ShutdownWriteIsEpipeForItsOwnSends) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(shutdown(p.a.get(), SHUT_WR), SyscallSucceeds());
  EXPECT_THAT(send(p.a.get(), "x", 1, MSG_NOSIGNAL),
              SyscallFailsWithErrno(EPIPE));
  // A datagram socket's EPIPE raises no SIGPIPE.
  EXPECT_THAT(InForkedChild([&] {
                if (send(p.a.get(), "x", 1, 0) != -1 || errno != EPIPE) {
                  _exit(3);
                }
              }),
              ExitedWithCode(0));
  // A datagram shutdown is not passed on to the peer: it can still send.
  EXPECT_THAT(send(p.b.get(), "y", 1, 0), SyscallSucceedsWithValue(1));
  char c;
  EXPECT_THAT(recv(p.b.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST(UnixDgramTest, BlockingRecvWakesForADatagram) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  std::thread t([&] {
    usleep(50 * 1000);
    EXPECT_THAT(send(p.a.get(), "wake", 4, 0), SyscallSucceedsWithValue(4));
  });
  char buf[8];
  EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(4));
  t.join();
}

TEST(UnixDgramTest, ListenAndAcceptAreEopnotsupp) {
  FileDescriptor s = UnixSocket(SOCK_DGRAM);
  ASSERT_TRUE(s.valid());
  EXPECT_THAT(listen(s.get(), 1), SyscallFailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(accept(s.get(), nullptr, nullptr),
              SyscallFailsWithErrno(EOPNOTSUPP));
}

TEST(UnixDgramTest, SendmmsgAndRecvmmsgMoveSeveral) {
  SocketPair p(SOCK_DGRAM);
  ASSERT_TRUE(p.ok());
  char d0[] = "zero", d1[] = "one";
  iovec wv[2] = {{d0, 4}, {d1, 3}};
  mmsghdr out[2] = {};
  out[0].msg_hdr.msg_iov = &wv[0];
  out[0].msg_hdr.msg_iovlen = 1;
  out[1].msg_hdr.msg_iov = &wv[1];
  out[1].msg_hdr.msg_iovlen = 1;
  ASSERT_THAT(sendmmsg(p.a.get(), out, 2, 0), SyscallSucceedsWithValue(2));
  EXPECT_EQ(out[0].msg_len, 4u);
  EXPECT_EQ(out[1].msg_len, 3u);
  char r0[8], r1[8];
  iovec rv[2] = {{r0, 8}, {r1, 8}};
  mmsghdr in[2] = {};
  in[0].msg_hdr.msg_iov = &rv[0];
  in[0].msg_hdr.msg_iovlen = 1;
  in[1].msg_hdr.msg_iov = &rv[1];
  in[1].msg_hdr.msg_iovlen = 1;
  ASSERT_THAT(recvmmsg(p.b.get(), in, 2, MSG_DONTWAIT, nullptr),
              SyscallSucceedsWithValue(2));
  EXPECT_EQ(in[0].msg_len, 4u);
  EXPECT_EQ(in[1].msg_len, 3u);
  EXPECT_EQ(std::string(r0, 4), "zero");
  EXPECT_EQ(std::string(r1, 3), "one");
}

// A receiver with a full queue (bound, not connected back to the sender).
struct FullReceiver {
  FullReceiver()
      : addr(UnixAddr::Abstract(AbstractName("full"))),
        r(UnixSocket(SOCK_DGRAM)) {
    EXPECT_THAT(bind(r.get(), addr.sa(), addr.len), SyscallSucceeds());
    s = ConnectTo(SOCK_DGRAM, addr);
    EXPECT_TRUE(s.valid());
    EXPECT_GT(FillWithDontwait(s.get(), 1, 100000), 0);
  }
  UnixAddr addr;
  FileDescriptor r, s;
};

TEST(UnixDgramTest, SendToAFullReceiverTimesOutWithSndtimeo) {
  FullReceiver f;
  timeval tv = {0, 100000};
  ASSERT_THAT(setsockopt(f.s.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)),
              SyscallSucceeds());
  timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  EXPECT_THAT(send(f.s.get(), "x", 1, 0), SyscallFailsWithErrno(EAGAIN));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double took = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  EXPECT_GE(took, 0.09);
  EXPECT_LT(took, 5.0);
}

// Drained, not read once: with a long net.unix.max_dgram_qlen the sender's
// own buffer is the limit, and Linux wakes a writer only when a quarter of
// it is free.
TEST(UnixDgramTest, BlockedSendToAFullReceiverWakesWhenItDrains) {
  FullReceiver f;
  std::thread t([&] {
    usleep(50 * 1000);
    EXPECT_GT(DrainWithDontwait(f.r.get()), 0);
  });
  EXPECT_THAT(send(f.s.get(), "x", 1, 0), SyscallSucceedsWithValue(1));
  t.join();
}

TEST(UnixDgramTest, AddressLengthsOfSendtoAndRecvfrom) {
  BoundDgram r;
  FileDescriptor s = UnixSocket(SOCK_DGRAM);
  UnixAddr sa = UnixAddr::Abstract(AbstractName("lens"));
  ASSERT_THAT(bind(s.get(), sa.sa(), sa.len), SyscallSucceeds());
  EXPECT_THAT(sendto(s.get(), "x", 1, 0, r.addr.sa(), 1),
              SyscallFailsWithErrno(EINVAL));
  sockaddr_storage big = {};
  memcpy(&big, &r.addr.addr, sizeof(r.addr.addr));
  EXPECT_THAT(sendto(s.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(&big),
                     sizeof(sockaddr_un) + 1),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(sendto(s.get(), "x", 1, 0, r.addr.sa(), r.addr.len),
              SyscallSucceedsWithValue(1));
  // A short address buffer gets the start of the name and its full length.
  char buf[sizeof(sockaddr_un)];
  memset(buf, 'Z', sizeof(buf));
  socklen_t len = 4;
  char c;
  ASSERT_THAT(
      recvfrom(r.fd.get(), &c, 1, 0, reinterpret_cast<sockaddr*>(buf), &len),
      SyscallSucceedsWithValue(1));
  EXPECT_EQ(len, sa.len);
  EXPECT_EQ(memcmp(buf, &sa.addr, 4), 0);
  EXPECT_EQ(buf[4], 'Z');
}

}  // namespace
}  // namespace sandbox::testutil
