// AF_UNIX socket options and ioctls: SO_TYPE, SO_DOMAIN, SO_PROTOCOL,
// SO_ACCEPTCONN, SO_ERROR; SO_SNDBUF/SO_RCVBUF (Linux doubles the value,
// caps it at the sysctl maximum and has a floor) and the send room they
// give; SO_RCVTIMEO/SO_SNDTIMEO (EAGAIN after the timeout, EDOM, readback);
// SO_PEEK_OFF with MSG_PEEK on a stream; FIONREAD/SIOCINQ/SIOCOUTQ; the
// listen backlog (backlog + 1 pending connections, then EAGAIN).
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/socket_util.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

int GetInt(int fd, int opt) {
  int v = -12345;
  socklen_t len = sizeof(v);
  if (getsockopt(fd, SOL_SOCKET, opt, &v, &len) != 0) {
    ADD_FAILURE() << "getsockopt " << opt << ": " << strerror(errno);
  }
  EXPECT_EQ(len, sizeof(v));
  return v;
}

int SetInt(int fd, int opt, int v) {
  return setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// A /proc/sys integer, or -1 if it cannot be read.
long SysctlOrMinus1(const std::string& path) {
  std::string s = ReadFileOrEmpty(path);
  if (s.empty()) return -1;
  return strtol(s.c_str(), nullptr, 10);
}

TEST(UnixOptsTest, TypeDomainProtocol) {
  for (int type : {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET}) {
    FileDescriptor fd = UnixSocket(type);
    ASSERT_TRUE(fd.valid());
    EXPECT_EQ(GetInt(fd.get(), SO_TYPE), type);
    EXPECT_EQ(GetInt(fd.get(), SO_DOMAIN), AF_UNIX);
    EXPECT_EQ(GetInt(fd.get(), SO_PROTOCOL), 0);
    EXPECT_EQ(GetInt(fd.get(), SO_ERROR), 0);
    EXPECT_EQ(GetInt(fd.get(), SO_ACCEPTCONN), 0);
  }
  // Protocols 0 and PF_UNIX (1) are the only ones.
  FileDescriptor one(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, PF_UNIX));
  EXPECT_TRUE(one.valid()) << strerror(errno);
  EXPECT_THAT(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 2),
              SyscallFailsWithErrno(EPROTONOSUPPORT));
}

TEST(UnixOptsTest, AcceptconnAfterListen) {
  for (int type : {SOCK_STREAM, SOCK_SEQPACKET}) {
    UnixAddr addr = UnixAddr::Abstract(AbstractName("acceptconn"));
    FileDescriptor l = Listener(type, addr);
    ASSERT_TRUE(l.valid());
    EXPECT_EQ(GetInt(l.get(), SO_ACCEPTCONN), 1);
    FileDescriptor c = ConnectTo(type, addr);
    ASSERT_TRUE(c.valid());
    FileDescriptor s(accept(l.get(), nullptr, nullptr));
    ASSERT_TRUE(s.valid());
    EXPECT_EQ(GetInt(s.get(), SO_ACCEPTCONN), 0);
    EXPECT_EQ(GetInt(c.get(), SO_ACCEPTCONN), 0);
  }
}

TEST(UnixOptsTest, ReadOnlyAndUnknownOptions) {
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  EXPECT_THAT(SetInt(fd.get(), SO_TYPE, SOCK_DGRAM),
              SyscallFailsWithErrno(ENOPROTOOPT));
  EXPECT_THAT(SetInt(fd.get(), SO_ACCEPTCONN, 1),
              SyscallFailsWithErrno(ENOPROTOOPT));
  int v;
  socklen_t len = sizeof(v);
  EXPECT_THAT(getsockopt(fd.get(), SOL_SOCKET, 0x7777, &v, &len),
              SyscallFailsWithErrno(ENOPROTOOPT));
  EXPECT_THAT(SetInt(fd.get(), 0x7777, 1), SyscallFailsWithErrno(ENOPROTOOPT));
  socklen_t bad = static_cast<socklen_t>(-1);
  EXPECT_THAT(getsockopt(fd.get(), SOL_SOCKET, SO_TYPE, &v, &bad),
              SyscallFailsWithErrno(EINVAL));
  // An int option needs an int.
  short s = 1;
  EXPECT_THAT(setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &s, sizeof(s)),
              SyscallFailsWithErrno(EINVAL));
}

TEST(UnixOptsTest, BooleanOptionsReadBack) {
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  for (int opt : {SO_REUSEADDR, SO_PASSCRED, SO_KEEPALIVE}) {
    EXPECT_EQ(GetInt(fd.get(), opt), 0) << opt;
    ASSERT_THAT(SetInt(fd.get(), opt, 7), SyscallSucceeds()) << opt;
    EXPECT_EQ(GetInt(fd.get(), opt), 1) << opt;
    ASSERT_THAT(SetInt(fd.get(), opt, 0), SyscallSucceeds()) << opt;
    EXPECT_EQ(GetInt(fd.get(), opt), 0) << opt;
  }
}

TEST(UnixOptsTest, LingerReadsBack) {
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  linger l = {-1, -1};
  socklen_t len = sizeof(l);
  ASSERT_THAT(getsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &l, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, sizeof(l));
  EXPECT_EQ(l.l_onoff, 0);
  EXPECT_EQ(l.l_linger, 0);
  linger set = {1, 5};
  ASSERT_THAT(setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &set, sizeof(set)),
              SyscallSucceeds());
  ASSERT_THAT(getsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &l, &len),
              SyscallSucceeds());
  EXPECT_EQ(l.l_onoff, 1);
  EXPECT_EQ(l.l_linger, 5);
  EXPECT_THAT(setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &set, 4),
              SyscallFailsWithErrno(EINVAL));
}

TEST(UnixOptsTest, BufferSizesAreDoubled) {
  for (int opt : {SO_SNDBUF, SO_RCVBUF}) {
    FileDescriptor fd = UnixSocket(SOCK_STREAM);
    ASSERT_THAT(SetInt(fd.get(), opt, 65536), SyscallSucceeds());
    EXPECT_EQ(GetInt(fd.get(), opt), 131072) << opt;
    ASSERT_THAT(SetInt(fd.get(), opt, 20000), SyscallSucceeds());
    EXPECT_EQ(GetInt(fd.get(), opt), 40000) << opt;
  }
}

TEST(UnixOptsTest, BufferSizesHaveAFloor) {
  for (int opt : {SO_SNDBUF, SO_RCVBUF}) {
    FileDescriptor fd = UnixSocket(SOCK_DGRAM);
    ASSERT_THAT(SetInt(fd.get(), opt, 0), SyscallSucceeds());
    int floor = GetInt(fd.get(), opt);
    // The floor is a few KiB (the size of one small buffer), not 0.
    EXPECT_GT(floor, 1024) << opt;
    EXPECT_LE(floor, 16384) << opt;
    ASSERT_THAT(SetInt(fd.get(), opt, 1), SyscallSucceeds());
    EXPECT_EQ(GetInt(fd.get(), opt), floor) << opt;
    ASSERT_THAT(SetInt(fd.get(), opt, floor / 2), SyscallSucceeds());
    EXPECT_EQ(GetInt(fd.get(), opt), floor) << opt;
  }
}

TEST(UnixOptsTest, BufferSizesAreCappedAtTheSysctl) {
  struct {
    int opt;
    const char* sysctl;
  } cases[] = {{SO_SNDBUF, "/proc/sys/net/core/wmem_max"},
               {SO_RCVBUF, "/proc/sys/net/core/rmem_max"}};
  for (const auto& c : cases) {
    long max = SysctlOrMinus1(c.sysctl);
    if (max <= 0) GTEST_SKIP() << "cannot read " << c.sysctl;
    if (max > (1 << 29)) GTEST_SKIP() << c.sysctl << " too large to double";
    FileDescriptor fd = UnixSocket(SOCK_STREAM);
    ASSERT_THAT(SetInt(fd.get(), c.opt, 0x7fffffff), SyscallSucceeds());
    EXPECT_EQ(GetInt(fd.get(), c.opt), 2 * max) << c.sysctl;
    // A negative value is taken as unsigned: the maximum too.
    ASSERT_THAT(SetInt(fd.get(), c.opt, -1), SyscallSucceeds());
    EXPECT_EQ(GetInt(fd.get(), c.opt), 2 * max) << c.sysctl;
  }
}

TEST(UnixOptsTest, DefaultBufferSizesAreTheSysctlDefaults) {
  long wdef = SysctlOrMinus1("/proc/sys/net/core/wmem_default");
  if (wdef <= 0) GTEST_SKIP() << "cannot read net.core.wmem_default";
  for (int type : {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET}) {
    FileDescriptor fd = UnixSocket(type);
    EXPECT_EQ(GetInt(fd.get(), SO_SNDBUF), wdef) << type;
  }
}

TEST(UnixOptsTest, SmallerSndbufGivesLessRoom) {
  long room[2];
  int sizes[2] = {4096, 262144};
  for (int i = 0; i < 2; ++i) {
    SocketPair p(SOCK_STREAM);
    ASSERT_TRUE(p.ok());
    ASSERT_THAT(SetInt(p.a.get(), SO_SNDBUF, sizes[i]), SyscallSucceeds());
    room[i] = FillWithDontwait(p.a.get(), 1024);
    ASSERT_GT(room[i], 0);
  }
  EXPECT_LT(room[0], room[1]);
  // The room stays within a small multiple of the (doubled) buffer.
  EXPECT_LE(room[0], 4 * 2 * sizes[0]);
}

TEST(UnixOptsTest, RcvtimeoReadsBackAndRejectsBadValues) {
  FileDescriptor fd = UnixSocket(SOCK_STREAM);
  timeval tv = {7, 7};
  socklen_t len = sizeof(tv);
  ASSERT_THAT(getsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, &len),
              SyscallSucceeds());
  EXPECT_EQ(tv.tv_sec, 0);
  EXPECT_EQ(tv.tv_usec, 0);
  // 100 ms is a whole number of ticks at HZ 100, 250, 300 and 1000.
  timeval set = {1, 100000};
  ASSERT_THAT(setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &set, sizeof(set)),
              SyscallSucceeds());
  ASSERT_THAT(getsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, &len),
              SyscallSucceeds());
  EXPECT_EQ(tv.tv_sec, 1);
  EXPECT_EQ(tv.tv_usec, 100000);
  timeval bad = {0, 1000000};
  EXPECT_THAT(setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &bad, sizeof(bad)),
              SyscallFailsWithErrno(EDOM));
  EXPECT_THAT(setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &set, 4),
              SyscallFailsWithErrno(EINVAL));
}

TEST(UnixOptsTest, RcvtimeoEndsABlockedRecvWithEagain) {
  for (int type : {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET}) {
    SocketPair p(type);
    ASSERT_TRUE(p.ok());
    timeval tv = {0, 100000};
    ASSERT_THAT(setsockopt(p.b.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
                SyscallSucceeds());
    double start = Now();
    char c;
    EXPECT_THAT(recv(p.b.get(), &c, 1, 0), SyscallFailsWithErrno(EAGAIN));
    double took = Now() - start;
    EXPECT_GE(took, 0.09) << type;
    EXPECT_LT(took, 5.0) << type;
    // Data that arrives in time is returned.
    ASSERT_THAT(send(p.a.get(), "t", 1, 0), SyscallSucceedsWithValue(1));
    EXPECT_THAT(recv(p.b.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  }
}

TEST(UnixOptsTest, SndtimeoEndsABlockedSendWithEagain) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_GT(FillWithDontwait(p.a.get(), 4096), 0);
  timeval tv = {0, 100000};
  ASSERT_THAT(setsockopt(p.a.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)),
              SyscallSucceeds());
  double start = Now();
  char buf[4096] = {};
  EXPECT_THAT(send(p.a.get(), buf, sizeof(buf), 0),
              SyscallFailsWithErrno(EAGAIN));
  double took = Now() - start;
  EXPECT_GE(took, 0.09);
  EXPECT_LT(took, 5.0);
}

TEST(UnixOptsTest, PeekOffDefaultsOffAndAdvancesWithPeeks) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(GetInt(p.b.get(), SO_PEEK_OFF), -1);
  ASSERT_THAT(send(p.a.get(), "abcdef", 6, 0), SyscallSucceedsWithValue(6));
  ASSERT_THAT(SetInt(p.b.get(), SO_PEEK_OFF, 0), SyscallSucceeds());
  char buf[8] = {};
  ASSERT_THAT(recv(p.b.get(), buf, 2, MSG_PEEK), SyscallSucceedsWithValue(2));
  EXPECT_EQ(std::string(buf, 2), "ab");
  ASSERT_THAT(recv(p.b.get(), buf, 2, MSG_PEEK), SyscallSucceedsWithValue(2));
  EXPECT_EQ(std::string(buf, 2), "cd");
  EXPECT_EQ(GetInt(p.b.get(), SO_PEEK_OFF), 4);
  // A real read starts at the front and moves the offset back.
  ASSERT_THAT(recv(p.b.get(), buf, 2, 0), SyscallSucceedsWithValue(2));
  EXPECT_EQ(std::string(buf, 2), "ab");
  EXPECT_EQ(GetInt(p.b.get(), SO_PEEK_OFF), 2);
  ASSERT_THAT(recv(p.b.get(), buf, 8, MSG_PEEK), SyscallSucceedsWithValue(2));
  EXPECT_EQ(std::string(buf, 2), "ef");
  // Peeking at the end finds nothing more yet.
  EXPECT_THAT(recv(p.b.get(), buf, 8, MSG_PEEK | MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST(UnixOptsTest, PeekOffStartsWhereSet) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.a.get(), "0123", 4, 0), SyscallSucceedsWithValue(4));
  ASSERT_THAT(send(p.a.get(), "4567", 4, 0), SyscallSucceedsWithValue(4));
  ASSERT_THAT(SetInt(p.b.get(), SO_PEEK_OFF, 3), SyscallSucceeds());
  char buf[8] = {};
  // Across the boundary of the two writes.
  ASSERT_THAT(recv(p.b.get(), buf, 3, MSG_PEEK), SyscallSucceedsWithValue(3));
  EXPECT_EQ(std::string(buf, 3), "345");
  // Without SO_PEEK_OFF (-1) peeks start at the front again.
  ASSERT_THAT(SetInt(p.b.get(), SO_PEEK_OFF, -1), SyscallSucceeds());
  ASSERT_THAT(recv(p.b.get(), buf, 2, MSG_PEEK), SyscallSucceedsWithValue(2));
  EXPECT_EQ(std::string(buf, 2), "01");
}

TEST(UnixOptsTest, FionreadCountsQueuedStreamBytes) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  int n = -1;
  ASSERT_THAT(ioctl(p.b.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 0);
  ASSERT_THAT(send(p.a.get(), "abc", 3, 0), SyscallSucceedsWithValue(3));
  ASSERT_THAT(send(p.a.get(), "defg", 4, 0), SyscallSucceedsWithValue(4));
  ASSERT_THAT(ioctl(p.b.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 7);
  ASSERT_THAT(ioctl(p.b.get(), SIOCINQ, &n), SyscallSucceeds());
  EXPECT_EQ(n, 7);
  char buf[2];
  ASSERT_THAT(recv(p.b.get(), buf, 2, 0), SyscallSucceedsWithValue(2));
  ASSERT_THAT(ioctl(p.b.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 5);
}

TEST(UnixOptsTest, SiocoutqIsNonzeroUntilThePeerReads) {
  SocketPair p(SOCK_STREAM);
  ASSERT_TRUE(p.ok());
  int n = -1;
  ASSERT_THAT(ioctl(p.a.get(), SIOCOUTQ, &n), SyscallSucceeds());
  EXPECT_EQ(n, 0);
  ASSERT_THAT(send(p.a.get(), "abcdefgh", 8, 0), SyscallSucceedsWithValue(8));
  ASSERT_THAT(ioctl(p.a.get(), SIOCOUTQ, &n), SyscallSucceeds());
  // Linux counts the memory charged, at least the bytes queued.
  EXPECT_GE(n, 8);
  char buf[8];
  ASSERT_THAT(recv(p.b.get(), buf, 8, 0), SyscallSucceedsWithValue(8));
  ASSERT_THAT(ioctl(p.a.get(), SIOCOUTQ, &n), SyscallSucceeds());
  EXPECT_EQ(n, 0);
}

TEST(UnixOptsTest, FionreadOfAListenerIsEinval) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("fionread"));
  FileDescriptor l = Listener(SOCK_STREAM, addr);
  ASSERT_TRUE(l.valid());
  int n;
  EXPECT_THAT(ioctl(l.get(), FIONREAD, &n), SyscallFailsWithErrno(EINVAL));
}

TEST(UnixOptsTest, BacklogAllowsOneMoreThanAskedThenEagain) {
  for (int backlog : {0, 1, 3}) {
    UnixAddr addr = UnixAddr::Abstract(AbstractName("backlog"));
    FileDescriptor l = Listener(SOCK_STREAM, addr, backlog);
    ASSERT_TRUE(l.valid());
    std::vector<FileDescriptor> conns;
    int connected = 0;
    int err = 0;
    for (int i = 0; i < 64; ++i) {
      FileDescriptor c = UnixSocket(SOCK_STREAM | SOCK_NONBLOCK);
      if (connect(c.get(), addr.sa(), addr.len) != 0) {
        err = errno;
        break;
      }
      ++connected;
      conns.push_back(std::move(c));
    }
    EXPECT_EQ(err, EAGAIN) << "backlog " << backlog;
    EXPECT_EQ(connected, backlog + 1) << "backlog " << backlog;
    // Accepting one makes room for one more.
    FileDescriptor s(accept(l.get(), nullptr, nullptr));
    ASSERT_TRUE(s.valid());
    FileDescriptor c = UnixSocket(SOCK_STREAM | SOCK_NONBLOCK);
    EXPECT_THAT(connect(c.get(), addr.sa(), addr.len), SyscallSucceeds());
    FileDescriptor d = UnixSocket(SOCK_STREAM | SOCK_NONBLOCK);
    EXPECT_THAT(connect(d.get(), addr.sa(), addr.len),
                SyscallFailsWithErrno(EAGAIN));
  }
}

// A hostile client: 10,000 non-blocking connects to a listener with
// backlog 1. Two are queued, every other one is EAGAIN, and the listener
// still works afterwards.
TEST(UnixOptsTest, ManyConnectsToAFullBacklogAreEagain) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("flood"));
  FileDescriptor l = Listener(SOCK_STREAM, addr, 1);
  ASSERT_TRUE(l.valid());
  std::vector<FileDescriptor> queued;
  int eagain = 0, other = 0;
  for (int i = 0; i < 10000; ++i) {
    FileDescriptor c = UnixSocket(SOCK_STREAM | SOCK_NONBLOCK);
    if (!c.valid()) {
      ++other;
      continue;
    }
    if (connect(c.get(), addr.sa(), addr.len) == 0) {
      queued.push_back(std::move(c));
    } else if (errno == EAGAIN) {
      ++eagain;
    } else {
      ++other;
    }
  }
  EXPECT_EQ(queued.size(), 2u);
  EXPECT_EQ(eagain, 10000 - 2);
  EXPECT_EQ(other, 0);
  for (size_t i = 0; i < queued.size(); ++i) {
    FileDescriptor s(accept(l.get(), nullptr, nullptr));
    ASSERT_TRUE(s.valid()) << strerror(errno);
    ASSERT_THAT(send(queued[i].get(), "k", 1, 0), SyscallSucceedsWithValue(1));
    char c;
    EXPECT_THAT(recv(s.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  }
}

TEST(UnixOptsTest, ListenAgainRaisesTheBacklog) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("relisten"));
  FileDescriptor l = Listener(SOCK_STREAM, addr, 0);
  ASSERT_TRUE(l.valid());
  FileDescriptor c1 = UnixSocket(SOCK_STREAM | SOCK_NONBLOCK);
  ASSERT_THAT(connect(c1.get(), addr.sa(), addr.len), SyscallSucceeds());
  FileDescriptor c2 = UnixSocket(SOCK_STREAM | SOCK_NONBLOCK);
  EXPECT_THAT(connect(c2.get(), addr.sa(), addr.len),
              SyscallFailsWithErrno(EAGAIN));
  ASSERT_THAT(listen(l.get(), 5), SyscallSucceeds());
  EXPECT_THAT(connect(c2.get(), addr.sa(), addr.len), SyscallSucceeds());
}

TEST(UnixOptsTest, BlockingConnectToAFullBacklogTimesOutWithSndtimeo) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("fullblock"));
  FileDescriptor l = Listener(SOCK_STREAM, addr, 0);
  ASSERT_TRUE(l.valid());
  FileDescriptor c1 = ConnectTo(SOCK_STREAM, addr);
  ASSERT_TRUE(c1.valid());
  FileDescriptor c2 = UnixSocket(SOCK_STREAM);
  timeval tv = {0, 100000};
  ASSERT_THAT(setsockopt(c2.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)),
              SyscallSucceeds());
  double start = Now();
  EXPECT_THAT(connect(c2.get(), addr.sa(), addr.len),
              SyscallFailsWithErrno(EAGAIN));
  double took = Now() - start;
  EXPECT_GE(took, 0.09);
  EXPECT_LT(took, 5.0);
}

TEST(UnixOptsTest, BlockingConnectWaitsForAnAccept) {
  UnixAddr addr = UnixAddr::Abstract(AbstractName("waitaccept"));
  FileDescriptor l = Listener(SOCK_STREAM, addr, 0);
  ASSERT_TRUE(l.valid());
  FileDescriptor c1 = ConnectTo(SOCK_STREAM, addr);
  ASSERT_TRUE(c1.valid());
  std::thread t([&] {
    usleep(50 * 1000);
    FileDescriptor s(accept(l.get(), nullptr, nullptr));
    EXPECT_TRUE(s.valid());
  });
  FileDescriptor c2 = UnixSocket(SOCK_STREAM);
  EXPECT_THAT(connect(c2.get(), addr.sa(), addr.len), SyscallSucceeds());
  t.join();
}

TEST(UnixOptsTest, SocketTypesAndFlags) {
  // BSD's SOCK_RAW is taken as SOCK_DGRAM.
  FileDescriptor raw(socket(AF_UNIX, SOCK_RAW | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(raw.valid()) << strerror(errno);
  EXPECT_EQ(GetInt(raw.get(), SO_TYPE), SOCK_DGRAM);
  int fds[2];
  ASSERT_THAT(socketpair(AF_UNIX, SOCK_RAW | SOCK_CLOEXEC, 0, fds),
              SyscallSucceeds());
  FileDescriptor r0(fds[0]), r1(fds[1]);
  EXPECT_EQ(GetInt(r0.get(), SO_TYPE), SOCK_DGRAM);
  // Types AF_UNIX lacks, types past the last and unknown flags.
  EXPECT_THAT(socket(AF_UNIX, SOCK_RDM, 0),
              SyscallFailsWithErrno(ESOCKTNOSUPPORT));
  EXPECT_THAT(socket(AF_UNIX, 0, 0), SyscallFailsWithErrno(ESOCKTNOSUPPORT));
  EXPECT_THAT(socket(AF_UNIX, 11, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(socket(AF_UNIX, SOCK_STREAM | 0x10, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(socketpair(AF_UNIX, SOCK_RDM, 0, fds),
              SyscallFailsWithErrno(ESOCKTNOSUPPORT));
  EXPECT_THAT(socketpair(AF_UNIX, SOCK_STREAM, 2, fds),
              SyscallFailsWithErrno(EPROTONOSUPPORT));
}

TEST(UnixOptsTest, NonblockAndCloexecTypeFlags) {
  FileDescriptor plain(socket(AF_UNIX, SOCK_STREAM, 0));
  ASSERT_TRUE(plain.valid());
  EXPECT_THAT(fcntl(plain.get(), F_GETFL), SyscallSucceedsWithValue(O_RDWR));
  EXPECT_THAT(fcntl(plain.get(), F_GETFD), SyscallSucceedsWithValue(0));
  FileDescriptor both(
      socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(both.valid());
  EXPECT_THAT(fcntl(both.get(), F_GETFL),
              SyscallSucceedsWithValue(O_RDWR | O_NONBLOCK));
  EXPECT_THAT(fcntl(both.get(), F_GETFD), SyscallSucceedsWithValue(FD_CLOEXEC));
  int fds[2];
  ASSERT_THAT(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, fds),
              SyscallSucceeds());
  FileDescriptor a(fds[0]), b(fds[1]);
  for (int fd : fds) {
    EXPECT_THAT(fcntl(fd, F_GETFL),
                SyscallSucceedsWithValue(O_RDWR | O_NONBLOCK));
    EXPECT_THAT(fcntl(fd, F_GETFD), SyscallSucceedsWithValue(0));
  }
  char c;
  EXPECT_THAT(recv(a.get(), &c, 1, 0), SyscallFailsWithErrno(EAGAIN));
}

}  // namespace
}  // namespace sandbox::testutil
