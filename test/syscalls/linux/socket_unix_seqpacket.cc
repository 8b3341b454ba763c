// AF_UNIX SOCK_SEQPACKET: connection-oriented like a stream, with record
// boundaries like a datagram: truncation with MSG_TRUNC, zero-length
// records, listen/connect/accept, EOF and EPIPE at shutdown and close, the
// errno of an unconnected socket, and a destination address that is
// ignored once connected.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/socket_util.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

TEST(UnixSeqpacketTest, RecordsKeepTheirBoundaries) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "abc", 3, 0), SyscallSucceedsWithValue(3));
  ASSERT_THAT(send(p.a.get(), "defg", 4, 0), SyscallSucceedsWithValue(4));
  char buf[16];
  EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(3));
  EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "defg");
}

TEST(UnixSeqpacketTest, ShortBufferTruncatesTheRecord) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "abcdef", 6, 0), SyscallSucceedsWithValue(6));
  ASSERT_THAT(send(p.a.get(), "next", 4, 0), SyscallSucceedsWithValue(4));
  char buf[2];
  iovec iov = {buf, 2};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  EXPECT_THAT(recvmsg(p.b.get(), &m, 0), SyscallSucceedsWithValue(2));
  EXPECT_EQ(m.msg_flags & MSG_TRUNC, MSG_TRUNC);
  EXPECT_EQ(std::string(buf, 2), "ab");
  char rest[8];
  EXPECT_THAT(recv(p.b.get(), rest, sizeof(rest), 0),
              SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(rest, 4), "next");
}

TEST(UnixSeqpacketTest, MsgTruncFlagReturnsTheRecordLength) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "0123456789", 10, 0),
              SyscallSucceedsWithValue(10));
  char buf[4];
  EXPECT_THAT(recv(p.b.get(), buf, 4, MSG_TRUNC), SyscallSucceedsWithValue(10));
  EXPECT_EQ(std::string(buf, 4), "0123");
}

TEST(UnixSeqpacketTest, ZeroLengthRecordIsDelivered) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "", 0, 0), SyscallSucceedsWithValue(0));
  ASSERT_THAT(send(p.a.get(), "z", 1, 0), SyscallSucceedsWithValue(1));
  char buf[4];
  EXPECT_THAT(recv(p.b.get(), buf, 4, MSG_DONTWAIT),
              SyscallSucceedsWithValue(0));
  EXPECT_THAT(recv(p.b.get(), buf, 4, MSG_DONTWAIT),
              SyscallSucceedsWithValue(1));
  EXPECT_THAT(recv(p.b.get(), buf, 4, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST(UnixSeqpacketTest, MsgEorIsAcceptedOnSend) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(send(p.a.get(), "eor", 3, MSG_EOR), SyscallSucceedsWithValue(3));
  char buf[4];
  EXPECT_THAT(recv(p.b.get(), buf, 4, 0), SyscallSucceedsWithValue(3));
}

TEST(UnixSeqpacketTest, WritevIsOneRecord) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  char x[] = "ab", y[] = "cd";
  iovec v[2] = {{x, 2}, {y, 2}};
  ASSERT_THAT(writev(p.a.get(), v, 2), SyscallSucceedsWithValue(4));
  char buf[8];
  EXPECT_THAT(read(p.b.get(), buf, 8), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "abcd");
}

TEST(UnixSeqpacketTest, ListenConnectAcceptOverAPath) {
  UnixAddr addr = UnixAddr::Path(SocketPath());
  FileDescriptor l = Listener(SOCK_SEQPACKET, addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor c = ConnectTo(SOCK_SEQPACKET, addr);
  ASSERT_TRUE(c.valid()) << strerror(errno);
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  ASSERT_TRUE(s.valid()) << strerror(errno);
  ASSERT_THAT(send(c.get(), "r1", 2, 0), SyscallSucceedsWithValue(2));
  ASSERT_THAT(send(c.get(), "r22", 3, 0), SyscallSucceedsWithValue(3));
  char buf[8];
  EXPECT_THAT(recv(s.get(), buf, 8, 0), SyscallSucceedsWithValue(2));
  EXPECT_THAT(recv(s.get(), buf, 8, 0), SyscallSucceedsWithValue(3));
  int type = 0;
  socklen_t len = sizeof(type);
  ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, SO_TYPE, &type, &len),
              SyscallSucceeds());
  EXPECT_EQ(type, SOCK_SEQPACKET);
  unlink(addr.addr.sun_path);
}

TEST(UnixSeqpacketTest, AbstractListener) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("seq"));
  FileDescriptor l = Listener(SOCK_SEQPACKET, addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor c = ConnectTo(SOCK_SEQPACKET, addr);
  ASSERT_TRUE(c.valid()) << strerror(errno);
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  ASSERT_TRUE(s.valid());
  ASSERT_THAT(send(s.get(), "hey", 3, 0), SyscallSucceedsWithValue(3));
  char buf[4];
  EXPECT_THAT(recv(c.get(), buf, 4, 0), SyscallSucceedsWithValue(3));
}

TEST(UnixSeqpacketTest, UnconnectedIsEnotconnBothWays) {
  FileDescriptor s = UnixSocket(SOCK_SEQPACKET);
  ASSERT_TRUE(s.valid());
  char c = 0;
  EXPECT_THAT(send(s.get(), &c, 1, MSG_NOSIGNAL),
              SyscallFailsWithErrno(ENOTCONN));
  EXPECT_THAT(recv(s.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(ENOTCONN));
  UnixAddr abs = UnixAddr::Abstract(AbstractName("noconn"));
  EXPECT_THAT(sendto(s.get(), &c, 1, MSG_NOSIGNAL, abs.sa(), abs.len),
              SyscallFailsWithErrno(ENOTCONN));
}

TEST(UnixSeqpacketTest, ConnectedSendtoIgnoresTheAddress) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  UnixAddr nowhere = UnixAddr::Abstract(AbstractName("ignored"));
  EXPECT_THAT(sendto(p.a.get(), "i", 1, 0, nowhere.sa(), nowhere.len),
              SyscallSucceedsWithValue(1));
  char c;
  EXPECT_THAT(recv(p.b.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
}

TEST(UnixSeqpacketTest, PeerShutdownWriteIsEofEvenNonblocking) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "q", 1, 0), SyscallSucceedsWithValue(1));
  ASSERT_THAT(shutdown(p.a.get(), SHUT_WR), SyscallSucceeds());
  char c;
  EXPECT_THAT(recv(p.b.get(), &c, 1, MSG_DONTWAIT),
              SyscallSucceedsWithValue(1));
  EXPECT_THAT(recv(p.b.get(), &c, 1, MSG_DONTWAIT),
              SyscallSucceedsWithValue(0));
  EXPECT_THAT(recv(p.b.get(), &c, 1, 0), SyscallSucceedsWithValue(0));
  EXPECT_THAT(send(p.a.get(), "q", 1, MSG_NOSIGNAL),
              SyscallFailsWithErrno(EPIPE));
}

TEST(UnixSeqpacketTest, PeerCloseIsEofAndEpipeAndSigpipe) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  p.b.reset();
  char c;
  EXPECT_THAT(recv(p.a.get(), &c, 1, 0), SyscallSucceedsWithValue(0));
  EXPECT_THAT(send(p.a.get(), "x", 1, MSG_NOSIGNAL),
              SyscallFailsWithErrno(EPIPE));
  // Unlike a stream, a record socket's EPIPE raises no SIGPIPE.
  EXPECT_THAT(InForkedChild([&] {
                if (write(p.a.get(), "x", 1) != -1 || errno != EPIPE) _exit(3);
              }),
              ExitedWithCode(0));
}

TEST(UnixSeqpacketTest, BlockedReaderWakesAtPeerClose) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  std::thread t([&] {
    usleep(50 * 1000);
    p.b.reset();
  });
  char c;
  EXPECT_THAT(recv(p.a.get(), &c, 1, 0), SyscallSucceedsWithValue(0));
  t.join();
}

TEST(UnixSeqpacketTest, OverSndbufIsEmsgsize) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  int sndbuf = 0;
  socklen_t len = sizeof(sndbuf);
  ASSERT_THAT(getsockopt(p.a.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, &len),
              SyscallSucceeds());
  std::string big(sndbuf, 'b');
  EXPECT_THAT(send(p.a.get(), big.data(), big.size(), 0),
              SyscallFailsWithErrno(EMSGSIZE));
}

TEST(UnixSeqpacketTest, ConnectToAStreamListenerIsEprototype) {
  UnixAddr addr = UnixAddr::Path(SocketPath());
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor s = UnixSocket(SOCK_SEQPACKET);
  EXPECT_THAT(connect(s.get(), addr.sa(), addr.len),
              SyscallFailsWithErrno(EPROTOTYPE));
  unlink(addr.addr.sun_path);
}

// Abstract names are looked up per socket type: a stream listener's name
// is not there for a record socket.
TEST(UnixSeqpacketTest, ConnectToAnAbstractStreamListenerIsEconnrefused) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("seq2stream"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor s = UnixSocket(SOCK_SEQPACKET);
  EXPECT_THAT(connect(s.get(), addr.sa(), addr.len),
              SyscallFailsWithErrno(ECONNREFUSED));
}

TEST(UnixSeqpacketTest, PendingConnectionOfAClosedListenerIsReset) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("seqembryo"));
  FileDescriptor l = Listener(SOCK_SEQPACKET, addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor c = ConnectTo(SOCK_SEQPACKET, addr);
  ASSERT_TRUE(c.valid());
  l.reset();
  char ch;
  EXPECT_THAT(recv(c.get(), &ch, 1, 0), SyscallFailsWithErrno(ECONNRESET));
}

TEST(UnixSeqpacketTest, TruncatedPeekKeepsTheRecord) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "abcdef", 6, 0), SyscallSucceedsWithValue(6));
  char buf[8] = {};
  EXPECT_THAT(recv(p.b.get(), buf, 2, MSG_PEEK), SyscallSucceedsWithValue(2));
  EXPECT_THAT(recv(p.b.get(), buf, 2, MSG_PEEK | MSG_TRUNC),
              SyscallSucceedsWithValue(6));
  EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(6));
  EXPECT_EQ(std::string(buf, 6), "abcdef");
}

TEST(UnixSeqpacketTest, WaitallStillReturnsOneRecord) {
  SocketPair p(SOCK_SEQPACKET);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "ab", 2, 0), SyscallSucceedsWithValue(2));
  ASSERT_THAT(send(p.a.get(), "cd", 2, 0), SyscallSucceedsWithValue(2));
  char buf[4];
  EXPECT_THAT(recv(p.b.get(), buf, 4, MSG_WAITALL),
              SyscallSucceedsWithValue(2));
  EXPECT_THAT(recv(p.b.get(), buf, 4, MSG_WAITALL),
              SyscallSucceedsWithValue(2));
}

TEST(UnixSeqpacketTest, BacklogAllowsOneMoreThanAskedThenEagain) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("seqbacklog"));
  FileDescriptor l = Listener(SOCK_SEQPACKET, addr, 1);
  ASSERT_TRUE(l.valid());
  FileDescriptor c1 = UnixSocket(SOCK_SEQPACKET | SOCK_NONBLOCK);
  FileDescriptor c2 = UnixSocket(SOCK_SEQPACKET | SOCK_NONBLOCK);
  FileDescriptor c3 = UnixSocket(SOCK_SEQPACKET | SOCK_NONBLOCK);
  EXPECT_THAT(connect(c1.get(), addr.sa(), addr.len), SyscallSucceeds());
  EXPECT_THAT(connect(c2.get(), addr.sa(), addr.len), SyscallSucceeds());
  EXPECT_THAT(connect(c3.get(), addr.sa(), addr.len),
              SyscallFailsWithErrno(EAGAIN));
  // A connected socket may send before it is accepted.
  EXPECT_THAT(send(c1.get(), "early", 5, 0), SyscallSucceedsWithValue(5));
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  ASSERT_TRUE(s.valid());
  char buf[8];
  EXPECT_THAT(recv(s.get(), buf, sizeof(buf), 0), SyscallSucceedsWithValue(5));
}

}  // namespace
}  // namespace sandbox::testutil
