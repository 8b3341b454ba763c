// SOL_SOCKET options as every family shares them (sk_setsockopt and
// sk_getsockopt in net/core/sock.c), on AF_UNIX sockets: identity, SO_ERROR,
// the buffer sizes' doubling and limits, timeouts, SO_LINGER, the boolean
// flags, privileged options, truncation and unknown names. The cases skip
// when the sandbox has no AF_UNIX family.
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

#define UNIX_SOCKET_OR_SKIP(var, type)                                 \
  FileDescriptor var(socket(AF_UNIX, (type) | SOCK_CLOEXEC, 0));       \
  do {                                                                 \
    if (!var.valid()) {                                                \
      if (errno == EAFNOSUPPORT) GTEST_SKIP() << "no AF_UNIX sockets"; \
      FAIL() << "socket: " << strerror(errno);                         \
    }                                                                  \
  } while (0)

int GetInt(int fd, int name) {
  int v = -12345;
  socklen_t len = sizeof(v);
  if (getsockopt(fd, SOL_SOCKET, name, &v, &len) != 0) return -errno - 100000;
  EXPECT_EQ(len, sizeof(v)) << name;
  return v;
}

int SetInt(int fd, int name, int v) {
  return setsockopt(fd, SOL_SOCKET, name, &v, sizeof(v));
}

// A /proc/sys/net/core value, or -1 when the file is missing.
long Sysctl(const char* name) {
  std::string s = ReadFileOrEmpty(std::string("/proc/sys/net/core/") + name);
  if (s.empty()) return -1;
  return std::strtol(s.c_str(), nullptr, 10);
}

TEST(SocketOptsTest, Identity) {
  for (int type : {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET}) {
    UNIX_SOCKET_OR_SKIP(s, type);
    EXPECT_EQ(GetInt(s.get(), SO_TYPE), type);
    EXPECT_EQ(GetInt(s.get(), SO_DOMAIN), AF_UNIX);
    EXPECT_EQ(GetInt(s.get(), SO_PROTOCOL), 0);
    EXPECT_EQ(GetInt(s.get(), SO_ACCEPTCONN), 0);
    EXPECT_EQ(GetInt(s.get(), SO_ERROR), 0);
    for (int ro : {SO_TYPE, SO_DOMAIN, SO_PROTOCOL, SO_ERROR}) {
      EXPECT_THAT(SetInt(s.get(), ro, 1), SyscallFailsWithErrno(ENOPROTOOPT))
          << ro;
    }
  }
}

TEST(SocketOptsTest, AcceptconnOnAListener) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_STREAM);
  struct {
    sa_family_t family;
    char path[32];
  } addr = {AF_UNIX, {}};
  std::string name = "socket_opts_test_" + std::to_string(getpid());
  memcpy(addr.path + 1, name.data(), name.size());
  ASSERT_THAT(bind(s.get(), reinterpret_cast<sockaddr*>(&addr),
                   sizeof(sa_family_t) + 1 + name.size()),
              SyscallSucceeds());
  ASSERT_THAT(listen(s.get(), 4), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_ACCEPTCONN), 1);
}

TEST(SocketOptsTest, UnknownNamesAndLevels) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_STREAM);
  int v = 1;
  socklen_t len = sizeof(v);
  EXPECT_THAT(SetInt(s.get(), 9999, 1), SyscallFailsWithErrno(ENOPROTOOPT));
  EXPECT_THAT(getsockopt(s.get(), SOL_SOCKET, 9999, &v, &len),
              SyscallFailsWithErrno(ENOPROTOOPT));
  // Not settable (1003.1g): SO_SNDLOWAT reads 1.
  EXPECT_THAT(SetInt(s.get(), SO_SNDLOWAT, 1),
              SyscallFailsWithErrno(ENOPROTOOPT));
  EXPECT_EQ(GetInt(s.get(), SO_SNDLOWAT), 1);
  // Options of other levels: AF_UNIX has none.
  EXPECT_THAT(setsockopt(s.get(), SOL_IP, 1, &v, sizeof(v)),
              SyscallFailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(getsockopt(s.get(), SOL_IP, 1, &v, &len),
              SyscallFailsWithErrno(EOPNOTSUPP));
  // Internet-only options.
  EXPECT_THAT(SetInt(s.get(), SO_REUSEPORT, 1),
              SyscallFailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(SetInt(s.get(), SO_REUSEPORT, 0), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_REUSEPORT), 0);
  EXPECT_THAT(SetInt(s.get(), SO_ZEROCOPY, 1),
              SyscallFailsWithErrno(EOPNOTSUPP));
}

TEST(SocketOptsTest, ShortAndTruncatedValues) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_DGRAM);
  int v = 1;
  EXPECT_THAT(setsockopt(s.get(), SOL_SOCKET, SO_KEEPALIVE, &v, 3),
              SyscallFailsWithErrno(EINVAL));
  // A longer value is fine: the first int counts.
  long long big = 1;
  EXPECT_THAT(setsockopt(s.get(), SOL_SOCKET, SO_KEEPALIVE, &big, sizeof(big)),
              SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_KEEPALIVE), 1);
  // getsockopt copies min(len, size) and reports that length.
  unsigned char two[4] = {0xaa, 0xaa, 0xaa, 0xaa};
  socklen_t len = 2;
  ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, SO_TYPE, two, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, 2u);
  EXPECT_EQ(two[0], SOCK_DGRAM);
  EXPECT_EQ(two[2], 0xaa);
  len = 0;
  ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, SO_TYPE, nullptr, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, 0u);
  len = 100;
  int out[25];
  ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, SO_TYPE, out, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, sizeof(int));
}

TEST(SocketOptsTest, BooleanFlags) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_STREAM);
  for (int name : {SO_KEEPALIVE, SO_REUSEADDR, SO_BROADCAST, SO_OOBINLINE,
                   SO_DONTROUTE, SO_PASSCRED, SO_TIMESTAMP, SO_TIMESTAMPNS}) {
    EXPECT_EQ(GetInt(s.get(), name), 0) << name;
    ASSERT_THAT(SetInt(s.get(), name, 5), SyscallSucceeds()) << name;
    EXPECT_EQ(GetInt(s.get(), name), 1) << name;
    ASSERT_THAT(SetInt(s.get(), name, 0), SyscallSucceeds()) << name;
    EXPECT_EQ(GetInt(s.get(), name), 0) << name;
  }
}

TEST(SocketOptsTest, TimestampVariantsShareOneFlag) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_DGRAM);
  ASSERT_THAT(SetInt(s.get(), SO_TIMESTAMPNS, 1), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_TIMESTAMPNS), 1);
  EXPECT_EQ(GetInt(s.get(), SO_TIMESTAMP), 0);  // ns wins over the plain one
  ASSERT_THAT(SetInt(s.get(), SO_TIMESTAMP, 1), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_TIMESTAMP), 1);
  EXPECT_EQ(GetInt(s.get(), SO_TIMESTAMPNS), 0);
  constexpr int kSoTimestampNew = 63;  // asm-generic/socket.h
  EXPECT_EQ(GetInt(s.get(), kSoTimestampNew), 0);
}

TEST(SocketOptsTest, BuffersDoubleWithinTheLimits) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_DGRAM);
  ASSERT_THAT(SetInt(s.get(), SO_RCVBUF, 10000), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_RCVBUF), 20000);
  ASSERT_THAT(SetInt(s.get(), SO_SNDBUF, 10000), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_SNDBUF), 20000);
  // The minimums: SOCK_MIN_RCVBUF and SOCK_MIN_SNDBUF.
  ASSERT_THAT(SetInt(s.get(), SO_RCVBUF, 0), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_RCVBUF), 2304);
  ASSERT_THAT(SetInt(s.get(), SO_SNDBUF, 1), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_SNDBUF), 4608);
  const long rmem_max = Sysctl("rmem_max"), wmem_max = Sysctl("wmem_max");
  if (rmem_max < 0 || wmem_max < 0) {
    GTEST_SKIP() << "no /proc/sys/net/core/{r,w}mem_max";
  }
  // The maximums (a negative value is a huge unsigned one).
  ASSERT_THAT(SetInt(s.get(), SO_RCVBUF, INT_MAX), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_RCVBUF), 2 * rmem_max);
  ASSERT_THAT(SetInt(s.get(), SO_SNDBUF, -1), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_SNDBUF), 2 * wmem_max);
}

TEST(SocketOptsTest, ForcedBuffersNeedCapNetAdmin) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_DGRAM);
  if (SetInt(s.get(), SO_RCVBUFFORCE, 1 << 20) != 0) {
    ASSERT_EQ(errno, EPERM);
    GTEST_SKIP() << "not privileged";
  }
  EXPECT_EQ(GetInt(s.get(), SO_RCVBUF), 2 << 20);
  ASSERT_THAT(SetInt(s.get(), SO_SNDBUFFORCE, -7), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_SNDBUF), 4608);
  EXPECT_THAT(InForkedChild([&] {
                if (!DropCapabilities(false)) _exit(2);
                if (SetInt(s.get(), SO_RCVBUFFORCE, 1) == 0 || errno != EPERM)
                  _exit(3);
                if (SetInt(s.get(), SO_SNDBUFFORCE, 1) == 0 || errno != EPERM)
                  _exit(4);
                if (SetInt(s.get(), SO_MARK, 1) == 0 || errno != EPERM)
                  _exit(5);
                if (SetInt(s.get(), SO_PRIORITY, 7) == 0 || errno != EPERM)
                  _exit(6);
                if (SetInt(s.get(), SO_PRIORITY, 6) != 0) _exit(7);
                if (SetInt(s.get(), SO_DEBUG, 1) == 0 || errno != EACCES)
                  _exit(8);
                if (SetInt(s.get(), SO_DEBUG, 0) != 0) _exit(9);
              }),
              ExitedWithCode(0));
  EXPECT_EQ(GetInt(s.get(), SO_PRIORITY), 6);
}

struct Tv64 {
  long long sec, usec;
};
constexpr int kSoRcvtimeoNew = 66, kSoSndtimeoNew = 67;

TEST(SocketOptsTest, Timeouts) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_STREAM);
  for (int name : {SO_RCVTIMEO, SO_SNDTIMEO}) {
    timeval tv = {7, 7};
    socklen_t len = sizeof(tv);
    ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, name, &tv, &len),
                SyscallSucceeds());
    EXPECT_EQ(len, sizeof(tv));
    EXPECT_EQ(tv.tv_sec, 0);
    EXPECT_EQ(tv.tv_usec, 0);
    tv = {2, 500000};
    ASSERT_THAT(setsockopt(s.get(), SOL_SOCKET, name, &tv, sizeof(tv)),
                SyscallSucceeds());
    tv = {};
    ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, name, &tv, &len),
                SyscallSucceeds());
    EXPECT_EQ(tv.tv_sec, 2);
    EXPECT_EQ(tv.tv_usec, 500000);
    tv = {0, 1000000};
    EXPECT_THAT(setsockopt(s.get(), SOL_SOCKET, name, &tv, sizeof(tv)),
                SyscallFailsWithErrno(EDOM));
    tv = {0, -1};
    EXPECT_THAT(setsockopt(s.get(), SOL_SOCKET, name, &tv, sizeof(tv)),
                SyscallFailsWithErrno(EDOM));
    EXPECT_THAT(setsockopt(s.get(), SOL_SOCKET, name, &tv, sizeof(tv) - 1),
                SyscallFailsWithErrno(EINVAL));
    // A negative tv_sec is "do not wait", read back as zero.
    tv = {-5, 0};
    ASSERT_THAT(setsockopt(s.get(), SOL_SOCKET, name, &tv, sizeof(tv)),
                SyscallSucceeds());
    ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, name, &tv, &len),
                SyscallSucceeds());
    EXPECT_EQ(tv.tv_sec, 0);
    EXPECT_EQ(tv.tv_usec, 0);
    // A short buffer is truncated.
    len = 4;
    ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, name, &tv, &len),
                SyscallSucceeds());
    EXPECT_EQ(len, 4u);
  }
  // The _NEW names take 64-bit fields (the same layout on x86-64).
  Tv64 t = {3, 200000};  // whole jiffies at HZ 100, 250, 300, 1000
  ASSERT_THAT(setsockopt(s.get(), SOL_SOCKET, kSoRcvtimeoNew, &t, sizeof(t)),
              SyscallSucceeds());
  timeval tv = {};
  socklen_t len = sizeof(tv);
  ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, &len),
              SyscallSucceeds());
  EXPECT_EQ(tv.tv_sec, 3);
  EXPECT_EQ(tv.tv_usec, 200000);
  Tv64 back = {};
  len = sizeof(back);
  ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, kSoSndtimeoNew, &back, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, sizeof(back));
}

TEST(SocketOptsTest, Linger) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_STREAM);
  linger lg = {7, 7};
  socklen_t len = sizeof(lg);
  ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, SO_LINGER, &lg, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, sizeof(lg));
  EXPECT_EQ(lg.l_onoff, 0);
  EXPECT_EQ(lg.l_linger, 0);
  lg = {5, 9};
  ASSERT_THAT(setsockopt(s.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
              SyscallSucceeds());
  ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, SO_LINGER, &lg, &len),
              SyscallSucceeds());
  EXPECT_EQ(lg.l_onoff, 1);
  EXPECT_EQ(lg.l_linger, 9);
  EXPECT_THAT(setsockopt(s.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof(int)),
              SyscallFailsWithErrno(EINVAL));
  // Off keeps the time.
  lg = {0, 3};
  ASSERT_THAT(setsockopt(s.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
              SyscallSucceeds());
  ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, SO_LINGER, &lg, &len),
              SyscallSucceeds());
  EXPECT_EQ(lg.l_onoff, 0);
  EXPECT_EQ(lg.l_linger, 9);
}

TEST(SocketOptsTest, RcvlowatAndPriority) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_STREAM);
  EXPECT_EQ(GetInt(s.get(), SO_RCVLOWAT), 1);
  ASSERT_THAT(SetInt(s.get(), SO_RCVLOWAT, 0), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_RCVLOWAT), 1);
  ASSERT_THAT(SetInt(s.get(), SO_RCVLOWAT, -1), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_RCVLOWAT), INT_MAX);
  ASSERT_THAT(SetInt(s.get(), SO_RCVLOWAT, 100), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_RCVLOWAT), 100);
  EXPECT_EQ(GetInt(s.get(), SO_PRIORITY), 0);
  ASSERT_THAT(SetInt(s.get(), SO_PRIORITY, 3), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SO_PRIORITY), 3);
  EXPECT_EQ(GetInt(s.get(), SO_MARK), 0);
}

TEST(SocketOptsTest, BindToDevice) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_DGRAM);
  char dev[IFNAMSIZ] = "x";
  socklen_t len = sizeof(dev);
  ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, SO_BINDTODEVICE, dev, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, 0u);
  ASSERT_THAT(setsockopt(s.get(), SOL_SOCKET, SO_BINDTODEVICE, "lo", 2),
              SyscallSucceeds());
  len = IFNAMSIZ - 1;
  EXPECT_THAT(getsockopt(s.get(), SOL_SOCKET, SO_BINDTODEVICE, dev, &len),
              SyscallFailsWithErrno(EINVAL));
  len = sizeof(dev);
  ASSERT_THAT(getsockopt(s.get(), SOL_SOCKET, SO_BINDTODEVICE, dev, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, 3u);
  EXPECT_STREQ(dev, "lo");
  EXPECT_THAT(
      setsockopt(s.get(), SOL_SOCKET, SO_BINDTODEVICE, "nosuchdev0", 10),
      SyscallFailsWithErrno(ENODEV));
  // Unbinding a bound socket needs CAP_NET_RAW in the network namespace's
  // user namespace; a socket never bound may always "unbind".
  UNIX_SOCKET_OR_SKIP(fresh, SOCK_DGRAM);
  ASSERT_THAT(setsockopt(fresh.get(), SOL_SOCKET, SO_BINDTODEVICE, "", 0),
              SyscallSucceeds());
  len = sizeof(dev);
  ASSERT_THAT(getsockopt(fresh.get(), SOL_SOCKET, SO_BINDTODEVICE, dev, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, 0u);
}

TEST(SocketOptsTest, Cookie) {
  UNIX_SOCKET_OR_SKIP(a, SOCK_DGRAM);
  UNIX_SOCKET_OR_SKIP(b, SOCK_DGRAM);
  unsigned long long c1 = 0, c2 = 0, again = 0;
  socklen_t len = 4;
  EXPECT_THAT(getsockopt(a.get(), SOL_SOCKET, SO_COOKIE, &c1, &len),
              SyscallFailsWithErrno(EINVAL));
  len = sizeof(c1);
  ASSERT_THAT(getsockopt(a.get(), SOL_SOCKET, SO_COOKIE, &c1, &len),
              SyscallSucceeds());
  ASSERT_THAT(getsockopt(b.get(), SOL_SOCKET, SO_COOKIE, &c2, &len),
              SyscallSucceeds());
  ASSERT_THAT(getsockopt(a.get(), SOL_SOCKET, SO_COOKIE, &again, &len),
              SyscallSucceeds());
  EXPECT_NE(c1, 0u);
  EXPECT_NE(c1, c2);
  EXPECT_EQ(c1, again);
}

TEST(SocketOptsTest, SoErrorStartsClearAndFiltersAreAbsent) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_DGRAM);
  EXPECT_EQ(GetInt(s.get(), SO_ERROR), 0);
  int v = 0;
  EXPECT_THAT(setsockopt(s.get(), SOL_SOCKET, SO_DETACH_FILTER, &v, sizeof(v)),
              SyscallFailsWithErrno(ENOENT));
  EXPECT_EQ(GetInt(s.get(), SO_LOCK_FILTER), 0);
  ASSERT_THAT(SetInt(s.get(), SO_LOCK_FILTER, 1), SyscallSucceeds());
  EXPECT_THAT(SetInt(s.get(), SO_LOCK_FILTER, 0), SyscallFailsWithErrno(EPERM));
}

}  // namespace
}  // namespace sandbox::testutil
