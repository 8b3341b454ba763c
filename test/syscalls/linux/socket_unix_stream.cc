// AF_UNIX SOCK_STREAM: socketpair and listen/connect/accept data transfer,
// byte-stream semantics (coalescing, MSG_PEEK, MSG_DONTWAIT, MSG_WAITALL),
// blocking with threads, shutdown (EOF, EPIPE, SIGPIPE, MSG_NOSIGNAL),
// ECONNRESET when a peer closes with unread data, the errno of calls in
// the wrong state, read/write/readv/writev, fstat and /proc/self/fd, dup
// and fork sharing.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/socket_util.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

// Reads exactly n bytes (or until EOF/error).
std::string ReadN(int fd, size_t n) {
  std::string s;
  char buf[65536];
  while (s.size() < n) {
    ssize_t r = read(fd, buf, std::min(sizeof(buf), n - s.size()));
    if (r <= 0) break;
    s.append(buf, r);
  }
  return s;
}

// Ignores SIGPIPE for the life of the object.
class IgnoreSigpipe {
 public:
  IgnoreSigpipe() {
    struct sigaction sa = {};
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, &old_);
  }
  ~IgnoreSigpipe() { sigaction(SIGPIPE, &old_, nullptr); }

 private:
  struct sigaction old_ = {};
};

TEST(UnixStreamTest, SocketpairCarriesBytesBothWays) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "hello", 5, 0), SyscallSucceedsWithValue(5));
  char buf[16] = {};
  ASSERT_THAT(recv(p.b.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(5));
  EXPECT_EQ(std::string(buf, 5), "hello");
  ASSERT_THAT(send(p.b.get(), "back", 4, 0), SyscallSucceedsWithValue(4));
  ASSERT_THAT(recv(p.a.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "back");
}

TEST(UnixStreamTest, WritesCoalesceIntoOneRead) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(write(p.a.get(), "abc", 3), SyscallSucceedsWithValue(3));
  ASSERT_THAT(write(p.a.get(), "def", 3), SyscallSucceedsWithValue(3));
  char buf[16] = {};
  ASSERT_THAT(read(p.b.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(6));
  EXPECT_EQ(std::string(buf, 6), "abcdef");
}

TEST(UnixStreamTest, ShortReadsSplitAWrite) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(write(p.a.get(), "abcdef", 6), SyscallSucceedsWithValue(6));
  char buf[4] = {};
  ASSERT_THAT(read(p.b.get(), buf, 4), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "abcd");
  ASSERT_THAT(read(p.b.get(), buf, 4), SyscallSucceedsWithValue(2));
  EXPECT_EQ(std::string(buf, 2), "ef");
}

TEST(UnixStreamTest, PeekLeavesTheData) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "xyz", 3, 0), SyscallSucceedsWithValue(3));
  char buf[8] = {};
  ASSERT_THAT(recv(p.b.get(), buf, sizeof(buf), MSG_PEEK),
              SyscallSucceedsWithValue(3));
  ASSERT_THAT(recv(p.b.get(), buf, sizeof(buf), MSG_PEEK),
              SyscallSucceedsWithValue(3));
  ASSERT_THAT(recv(p.b.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(3));
  EXPECT_EQ(std::string(buf, 3), "xyz");
  EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST(UnixStreamTest, DontwaitOnEmptyIsEagainAndNonblockToo) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  char c;
  EXPECT_THAT(recv(p.a.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
  ASSERT_THAT(fcntl(p.a.get(), F_SETFL, O_NONBLOCK), SyscallSucceeds());
  EXPECT_THAT(read(p.a.get(), &c, 1), SyscallFailsWithErrno(EAGAIN));
}

TEST(UnixStreamTest, ReadvAndWritevScatterAndGather) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  char w1[] = "ab", w2[] = "cde";
  iovec wv[2] = {{w1, 2}, {w2, 3}};
  ASSERT_THAT(writev(p.a.get(), wv, 2), SyscallSucceedsWithValue(5));
  char r1[3] = {}, r2[2] = {};
  iovec rv[2] = {{r1, 3}, {r2, 2}};
  ASSERT_THAT(readv(p.b.get(), rv, 2), SyscallSucceedsWithValue(5));
  EXPECT_EQ(std::string(r1, 3), "abc");
  EXPECT_EQ(std::string(r2, 2), "de");
}

TEST(UnixStreamTest, ZeroLengthSendIsZeroAndQueuesNothing) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(send(p.a.get(), "", 0, 0), SyscallSucceedsWithValue(0));
  char c;
  EXPECT_THAT(recv(p.b.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST(UnixStreamTest, RecvBlocksUntilAThreadSends) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  std::thread t([&] {
    usleep(50 * 1000);
    EXPECT_THAT(send(p.a.get(), "late", 4, 0), SyscallSucceedsWithValue(4));
  });
  char buf[8] = {};
  EXPECT_THAT(recv(p.b.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(4));
  t.join();
  EXPECT_EQ(std::string(buf, 4), "late");
}

TEST(UnixStreamTest, SendLargerThanTheBufferCompletesAsTheReaderDrains) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  constexpr size_t kSize = 4 << 20;  // Far over the default buffers.
  std::string data(kSize, '\0');
  for (size_t i = 0; i < kSize; ++i) data[i] = static_cast<char>(i * 7);
  std::string got;
  std::thread reader([&] { got = ReadN(p.b.get(), kSize); });
  EXPECT_THAT(send(p.a.get(), data.data(), kSize, 0),
              SyscallSucceedsWithValue(kSize));
  reader.join();
  EXPECT_TRUE(got == data) << "got " << got.size() << " bytes";
}

TEST(UnixStreamTest, NonblockingSendFillsThenEagain) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  long sent = FillWithDontwait(p.a.get(), 4096);
  ASSERT_GT(sent, 0);
  char c = 0;
  EXPECT_THAT(send(p.a.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
  EXPECT_EQ(DrainWithDontwait(p.b.get()), sent);
  EXPECT_THAT(send(p.a.get(), &c, 1, MSG_DONTWAIT),
              SyscallSucceedsWithValue(1));
}

TEST(UnixStreamTest, WaitallCollectsPiecesFromAThread) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  std::thread t([&] {
    for (const char* piece : {"ab", "cd", "ef"}) {
      usleep(20 * 1000);
      EXPECT_THAT(send(p.a.get(), piece, 2, 0), SyscallSucceedsWithValue(2));
    }
  });
  char buf[6] = {};
  EXPECT_THAT(recv(p.b.get(), buf, 6, MSG_WAITALL),
              SyscallSucceedsWithValue(6));
  t.join();
  EXPECT_EQ(std::string(buf, 6), "abcdef");
}

TEST(UnixStreamTest, WaitallReturnsShortAtEof) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "abc", 3, 0), SyscallSucceedsWithValue(3));
  ASSERT_THAT(shutdown(p.a.get(), SHUT_WR), SyscallSucceeds());
  char buf[10];
  EXPECT_THAT(recv(p.b.get(), buf, 10, MSG_WAITALL),
              SyscallSucceedsWithValue(3));
}

TEST(UnixStreamTest, ShutdownWriteGivesThePeerEofAfterTheData) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "z", 1, 0), SyscallSucceedsWithValue(1));
  ASSERT_THAT(shutdown(p.a.get(), SHUT_WR), SyscallSucceeds());
  char c;
  EXPECT_THAT(read(p.b.get(), &c, 1), SyscallSucceedsWithValue(1));
  EXPECT_THAT(read(p.b.get(), &c, 1), SyscallSucceedsWithValue(0));
  EXPECT_THAT(read(p.b.get(), &c, 1), SyscallSucceedsWithValue(0));
  // The other direction still works.
  ASSERT_THAT(send(p.b.get(), "y", 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_THAT(read(p.a.get(), &c, 1), SyscallSucceedsWithValue(1));
}

TEST(UnixStreamTest, WriteAfterOwnShutdownIsEpipeWithMsgNosignal) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(shutdown(p.a.get(), SHUT_WR), SyscallSucceeds());
  EXPECT_THAT(send(p.a.get(), "x", 1, MSG_NOSIGNAL),
              SyscallFailsWithErrno(EPIPE));
}

TEST(UnixStreamTest, WriteAfterShutdownRaisesSigpipe) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(shutdown(p.a.get(), SHUT_WR), SyscallSucceeds());
  EXPECT_THAT(InForkedChild([&] { (void)write(p.a.get(), "x", 1); }),
              KilledBySignal(SIGPIPE));
  EXPECT_THAT(InForkedChild([&] { (void)send(p.a.get(), "x", 1, 0); }),
              KilledBySignal(SIGPIPE));
  EXPECT_THAT(
      InForkedChild([&] {
        if (send(p.a.get(), "x", 1, MSG_NOSIGNAL) != -1 || errno != EPIPE) {
          _exit(3);
        }
      }),
      ExitedWithCode(0));
}

TEST(UnixStreamTest, IgnoredSigpipeStillEpipe) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  IgnoreSigpipe ignore;
  ASSERT_THAT(shutdown(p.b.get(), SHUT_RD), SyscallSucceeds());
  // The reader's SHUT_RD shuts the writer's sending side too.
  EXPECT_THAT(write(p.a.get(), "x", 1), SyscallFailsWithErrno(EPIPE));
}

TEST(UnixStreamTest, ShutdownReadStillReturnsQueuedDataThenEof) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "ab", 2, 0), SyscallSucceedsWithValue(2));
  ASSERT_THAT(shutdown(p.b.get(), SHUT_RD), SyscallSucceeds());
  char buf[4];
  EXPECT_THAT(recv(p.b.get(), buf, 4, 0), SyscallSucceedsWithValue(2));
  EXPECT_THAT(recv(p.b.get(), buf, 4, 0), SyscallSucceedsWithValue(0));
}

TEST(UnixStreamTest, PeerCloseIsEofAndThenEpipe) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  p.b.reset();
  char c;
  EXPECT_THAT(read(p.a.get(), &c, 1), SyscallSucceedsWithValue(0));
  EXPECT_THAT(send(p.a.get(), "x", 1, MSG_NOSIGNAL),
              SyscallFailsWithErrno(EPIPE));
}

TEST(UnixStreamTest, CloseWithUnreadDataIsEconnresetOnceForThePeer) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "unread", 6, 0), SyscallSucceedsWithValue(6));
  p.b.reset();  // Closes with "unread" in its receive queue.
  char c;
  EXPECT_THAT(read(p.a.get(), &c, 1), SyscallFailsWithErrno(ECONNRESET));
  EXPECT_THAT(read(p.a.get(), &c, 1), SyscallSucceedsWithValue(0));
}

TEST(UnixStreamTest, CloseWithUnreadDataSetsSoError) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "unread", 6, 0), SyscallSucceedsWithValue(6));
  p.b.reset();
  int err = -1;
  socklen_t len = sizeof(err);
  ASSERT_THAT(getsockopt(p.a.get(), SOL_SOCKET, SO_ERROR, &err, &len),
              SyscallSucceeds());
  EXPECT_EQ(err, ECONNRESET);
  // Reading SO_ERROR clears it.
  ASSERT_THAT(getsockopt(p.a.get(), SOL_SOCKET, SO_ERROR, &err, &len),
              SyscallSucceeds());
  EXPECT_EQ(err, 0);
}

TEST(UnixStreamTest, BlockedReaderWakesAtPeerClose) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  std::thread t([&] {
    usleep(50 * 1000);
    p.b.reset();
  });
  char c;
  EXPECT_THAT(read(p.a.get(), &c, 1), SyscallSucceedsWithValue(0));
  t.join();
}

TEST(UnixStreamTest, ListenConnectAcceptTransfer) {
  UnixAddr addr = UnixAddr::Path(SocketPath());
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor c = ConnectTo(SOCK_STREAM, addr);
  ASSERT_TRUE(c.valid()) << strerror(errno);
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  ASSERT_TRUE(s.valid()) << strerror(errno);
  ASSERT_THAT(send(c.get(), "ping", 4, 0), SyscallSucceedsWithValue(4));
  char buf[8] = {};
  ASSERT_THAT(recv(s.get(), buf, 8, 0), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "ping");
  ASSERT_THAT(send(s.get(), "pong", 4, 0), SyscallSucceedsWithValue(4));
  ASSERT_THAT(recv(c.get(), buf, 8, 0), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "pong");
  unlink(addr.addr.sun_path);
}

TEST(UnixStreamTest, AcceptedSocketOfAnAbstractListener) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("stream"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor c = ConnectTo(SOCK_STREAM, addr);
  ASSERT_TRUE(c.valid()) << strerror(errno);
  sockaddr_un peer = {};
  socklen_t len = sizeof(peer);
  FileDescriptor s(accept(l.get(), reinterpret_cast<sockaddr*>(&peer), &len));
  ASSERT_TRUE(s.valid()) << strerror(errno);
  // The connector is unnamed.
  EXPECT_EQ(len, sizeof(sa_family_t));
  EXPECT_EQ(peer.sun_family, AF_UNIX);
}

TEST(UnixStreamTest, Accept4AppliesItsFlags) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("accept4"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor c1 = ConnectTo(SOCK_STREAM, addr);
  FileDescriptor c2 = ConnectTo(SOCK_STREAM, addr);
  ASSERT_TRUE(c1.valid() && c2.valid());
  FileDescriptor s1(
      accept4(l.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  ASSERT_TRUE(s1.valid()) << strerror(errno);
  EXPECT_THAT(fcntl(s1.get(), F_GETFL),
              SyscallSucceedsWithValue(O_RDWR | O_NONBLOCK));
  EXPECT_THAT(fcntl(s1.get(), F_GETFD), SyscallSucceedsWithValue(FD_CLOEXEC));
  FileDescriptor s2(accept4(l.get(), nullptr, nullptr, 0));
  ASSERT_TRUE(s2.valid()) << strerror(errno);
  EXPECT_THAT(fcntl(s2.get(), F_GETFL), SyscallSucceedsWithValue(O_RDWR));
  EXPECT_THAT(fcntl(s2.get(), F_GETFD), SyscallSucceedsWithValue(0));
  EXPECT_THAT(accept4(l.get(), nullptr, nullptr, 0x40000000),
              SyscallFailsWithErrno(EINVAL));
}

TEST(UnixStreamTest, AcceptWithNothingPendingIsEagainWhenNonblocking) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("eagain"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  ASSERT_THAT(fcntl(l.get(), F_SETFL, O_NONBLOCK), SyscallSucceeds());
  EXPECT_THAT(accept(l.get(), nullptr, nullptr), SyscallFailsWithErrno(EAGAIN));
  EXPECT_THAT(accept4(UnixSocket(SOCK_DGRAM).get(), nullptr, nullptr, 0),
              SyscallFailsWithErrno(EOPNOTSUPP));
}

TEST(UnixStreamTest, BlockingAcceptWakesOnConnect) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("blockaccept"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  std::thread t([&] {
    usleep(50 * 1000);
    FileDescriptor c = ConnectTo(SOCK_STREAM, addr);
    EXPECT_TRUE(c.valid()) << strerror(errno);
    EXPECT_THAT(send(c.get(), "q", 1, 0), SyscallSucceedsWithValue(1));
  });
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  ASSERT_TRUE(s.valid()) << strerror(errno);
  t.join();
  char c;
  EXPECT_THAT(recv(s.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
}

TEST(UnixStreamTest, WrongStateErrnos) {
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  ASSERT_TRUE(fd.valid());
  char c = 0;
  // Not connected.
  EXPECT_THAT(send(fd.get(), &c, 1, MSG_NOSIGNAL),
              SyscallFailsWithErrno(ENOTCONN));
  EXPECT_THAT(write(fd.get(), &c, 1), SyscallFailsWithErrno(ENOTCONN));
  EXPECT_THAT(recv(fd.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EINVAL));
  sockaddr_un peer;
  socklen_t len = sizeof(peer);
  EXPECT_THAT(getpeername(fd.get(), reinterpret_cast<sockaddr*>(&peer), &len),
              SyscallFailsWithErrno(ENOTCONN));
  // accept on a socket that is not listening.
  EXPECT_THAT(accept(fd.get(), nullptr, nullptr),
              SyscallFailsWithErrno(EINVAL));
  // A connected socket cannot listen or connect again.
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(listen(p.a.get(), 1), SyscallFailsWithErrno(EINVAL));
  UnixAddr addr = UnixAddr::Abstract(AbstractName("isconn"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  EXPECT_THAT(connect(p.a.get(), addr.sa(), addr.len),
              SyscallFailsWithErrno(EISCONN));
  // sendto with an address: EISCONN when connected, EOPNOTSUPP when not.
  EXPECT_THAT(sendto(p.a.get(), &c, 1, 0, addr.sa(), addr.len),
              SyscallFailsWithErrno(EISCONN));
  EXPECT_THAT(sendto(fd.get(), &c, 1, MSG_NOSIGNAL, addr.sa(), addr.len),
              SyscallFailsWithErrno(EOPNOTSUPP));
  // Reading a listening socket.
  EXPECT_THAT(recv(l.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EINVAL));
}

TEST(UnixStreamTest, ConnectedSocketStaysConnectedAfterTheListenerCloses) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("lclose"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor c = ConnectTo(SOCK_STREAM, addr);
  ASSERT_TRUE(c.valid());
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  ASSERT_TRUE(s.valid());
  l.reset();
  ASSERT_THAT(send(c.get(), "k", 1, 0), SyscallSucceedsWithValue(1));
  char ch;
  EXPECT_THAT(recv(s.get(), &ch, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_THAT(connect(UnixSocket(SOCK_STREAM).get(), addr.sa(), addr.len),
              SyscallFailsWithErrno(ECONNREFUSED));
}

TEST(UnixStreamTest, PendingConnectionOfAClosedListenerIsReset) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("embryo"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  FileDescriptor c = ConnectTo(SOCK_STREAM, addr);
  ASSERT_TRUE(c.valid());
  l.reset();  // Never accepted.
  char ch;
  EXPECT_THAT(recv(c.get(), &ch, 1, 0), SyscallFailsWithErrno(ECONNRESET));
  EXPECT_THAT(recv(c.get(), &ch, 1, 0), SyscallSucceedsWithValue(0));
}

TEST(UnixStreamTest, FstatIsASocketMatchingProcSelfFd) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  struct stat a, b;
  ASSERT_THAT(fstat(p.a.get(), &a), SyscallSucceeds());
  ASSERT_THAT(fstat(p.b.get(), &b), SyscallSucceeds());
  EXPECT_TRUE(S_ISSOCK(a.st_mode)) << std::oct << a.st_mode;
  EXPECT_NE(a.st_ino, b.st_ino);
  EXPECT_EQ(a.st_dev, b.st_dev);
  char link[64] = {};
  std::string proc = "/proc/self/fd/" + std::to_string(p.a.get());
  ASSERT_THAT(readlink(proc.c_str(), link, sizeof(link) - 1),
              SyscallSucceeds());
  EXPECT_EQ(std::string(link), "socket:[" + std::to_string(a.st_ino) + "]");
  // stat through the magic link reaches the same inode.
  struct stat via;
  ASSERT_THAT(stat(proc.c_str(), &via), SyscallSucceeds());
  EXPECT_EQ(via.st_ino, a.st_ino);
  EXPECT_TRUE(S_ISSOCK(via.st_mode));
}

TEST(UnixStreamTest, DupSharesTheSocket) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  FileDescriptor d(dup(p.a.get()));
  ASSERT_TRUE(d.valid());
  p.a.reset();  // The dup keeps it open: no EOF for the peer.
  char c;
  EXPECT_THAT(recv(p.b.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
  ASSERT_THAT(send(d.get(), "d", 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_THAT(recv(p.b.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  d.reset();
  EXPECT_THAT(recv(p.b.get(), &c, 1, 0), SyscallSucceedsWithValue(0));
}

TEST(UnixStreamTest, ForkedChildSharesTheSocket) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  pid_t pid = fork();
  ASSERT_THAT(pid, SyscallSucceeds());
  if (pid == 0) {
    char c;
    if (read(p.b.get(), &c, 1) != 1) _exit(2);
    c = static_cast<char>(c + 1);
    if (write(p.b.get(), &c, 1) != 1) _exit(3);
    _exit(0);
  }
  p.b.reset();  // Only the child's copy remains.
  char c = 'a';
  ASSERT_THAT(write(p.a.get(), &c, 1), SyscallSucceedsWithValue(1));
  ASSERT_THAT(read(p.a.get(), &c, 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'b');
  int status;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
  // The child exited: its copy was the last, so EOF.
  EXPECT_THAT(read(p.a.get(), &c, 1), SyscallSucceedsWithValue(0));
}

TEST(UnixStreamTest, SendmsgAndRecvmsgWithIovecs) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  char a[] = "12", b[] = "345";
  iovec wv[2] = {{a, 2}, {b, 3}};
  msghdr m = {};
  m.msg_iov = wv;
  m.msg_iovlen = 2;
  ASSERT_THAT(sendmsg(p.a.get(), &m, 0), SyscallSucceedsWithValue(5));
  char r[8] = {};
  iovec rv = {r, sizeof(r)};
  msghdr rm = {};
  rm.msg_iov = &rv;
  rm.msg_iovlen = 1;
  ASSERT_THAT(recvmsg(p.b.get(), &rm, 0), SyscallSucceedsWithValue(5));
  EXPECT_EQ(std::string(r, 5), "12345");
  EXPECT_EQ(rm.msg_flags, 0);
  EXPECT_EQ(rm.msg_namelen, 0u);  // A socketpair peer has no name.
}

TEST(UnixStreamTest, BadBufferIsEfault) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(send(p.a.get(), reinterpret_cast<void*>(8), 4, 0),
              SyscallFailsWithErrno(EFAULT));
  ASSERT_THAT(send(p.a.get(), "abcd", 4, 0), SyscallSucceedsWithValue(4));
  EXPECT_THAT(recv(p.b.get(), reinterpret_cast<void*>(8), 4, 0),
              SyscallFailsWithErrno(EFAULT));
}

TEST(UnixStreamTest, ListenAndConnectInTheWrongState) {
  // An unbound socket cannot listen.
  FileDescriptor unbound = UnixSocket(SOCK_STREAM);
  EXPECT_THAT(listen(unbound.get(), 1), SyscallFailsWithErrno(EINVAL));
  // A listener cannot connect.
  UnixAddr addr = UnixAddr::Abstract(AbstractName("lconn"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  EXPECT_THAT(connect(l.get(), addr.sa(), addr.len),
              SyscallFailsWithErrno(EINVAL));
  // Listening again is allowed.
  EXPECT_THAT(listen(l.get(), 4), SyscallSucceeds());
}

TEST(UnixStreamTest, ShutdownArguments) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(shutdown(p.a.get(), 3), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(shutdown(p.a.get(), -1), SyscallFailsWithErrno(EINVAL));
  // AF_UNIX lets an unconnected socket shut down (nothing to tell).
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  EXPECT_THAT(shutdown(fd.get(), SHUT_RDWR), SyscallSucceeds());
  // Shutting down twice is fine too.
  EXPECT_THAT(shutdown(p.a.get(), SHUT_WR), SyscallSucceeds());
  EXPECT_THAT(shutdown(p.a.get(), SHUT_WR), SyscallSucceeds());
}

TEST(UnixStreamTest, NonblockingLargeSendIsPartial) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  std::string big(8 << 20, 'p');
  ssize_t n = send(p.a.get(), big.data(), big.size(), MSG_DONTWAIT);
  ASSERT_GT(n, 0) << strerror(errno);
  EXPECT_LT(static_cast<size_t>(n), big.size());
  EXPECT_EQ(DrainWithDontwait(p.b.get()), n);
}

}  // namespace
}  // namespace sandbox::testutil
