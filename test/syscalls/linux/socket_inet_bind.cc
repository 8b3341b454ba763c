// bind(2) of AF_INET and AF_INET6 TCP and UDP sockets over loopback: the
// address checks (EINVAL, EAFNOSUPPORT, EADDRNOTAVAIL), the port conflicts
// (EADDRINUSE) with wildcards, IPv4 and IPv6 sockets, IPV6_V6ONLY,
// SO_REUSEADDR and SO_REUSEPORT, ephemeral ports from
// net.ipv4.ip_local_port_range, and getsockname after bind.
//
// Ports come from bind(port 0), so the tests do not assume any port free.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

sockaddr_in V4(const char* ip, uint16_t port) {
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

sockaddr_in6 V6(const char* ip, uint16_t port) {
  sockaddr_in6 a = {};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  inet_pton(AF_INET6, ip, &a.sin6_addr);
  return a;
}

template <typename T>
int Bind(int fd, const T& a, socklen_t len = sizeof(T)) {
  return bind(fd, reinterpret_cast<const sockaddr*>(&a), len);
}

// The bound port of fd (getsockname), or 0.
uint16_t PortOf(int fd) {
  sockaddr_storage ss = {};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

int SetInt(int fd, int level, int name, int v) {
  return setsockopt(fd, level, name, &v, sizeof(v));
}

// A sysctl's first integers, or false.
bool ReadInts(const char* path, int* a, int* b = nullptr) {
  std::ifstream f(path);
  if (!(f >> *a)) return false;
  if (b != nullptr && !(f >> *b)) return false;
  return true;
}

class InetBindTest : public ::testing::TestWithParam<int> {
 protected:
  int type() const { return GetParam(); }
  FileDescriptor Sock(int family) {
    FileDescriptor fd(socket(family, type() | SOCK_CLOEXEC, 0));
    EXPECT_TRUE(fd.valid()) << "socket: " << strerror(errno);
    return fd;
  }
  // An AF_INET6 socket, or a skip when the host has no IPv6 loopback.
  bool HaveV6() {
    FileDescriptor fd(socket(AF_INET6, type() | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return false;
    return Bind(fd.get(), V6("::1", 0)) == 0;
  }
};

TEST_P(InetBindTest, EphemeralPortAndGetsockname) {
  FileDescriptor s = Sock(AF_INET);
  ASSERT_TRUE(s.valid());
  ASSERT_THAT(Bind(s.get(), V4("127.0.0.1", 0)), SyscallSucceeds());
  sockaddr_in got = {};
  socklen_t len = sizeof(got);
  ASSERT_THAT(getsockname(s.get(), reinterpret_cast<sockaddr*>(&got), &len),
              SyscallSucceeds());
  EXPECT_EQ(len, sizeof(got));
  EXPECT_EQ(got.sin_family, AF_INET);
  EXPECT_EQ(ntohl(got.sin_addr.s_addr), INADDR_LOOPBACK);
  const int port = ntohs(got.sin_port);
  EXPECT_NE(port, 0);
  int lo, hi;
  if (ReadInts("/proc/sys/net/ipv4/ip_local_port_range", &lo, &hi)) {
    EXPECT_GE(port, lo);
    EXPECT_LE(port, hi);
  }
}

TEST_P(InetBindTest, UnboundGetsocknameIsWildcard) {
  FileDescriptor s = Sock(AF_INET);
  ASSERT_TRUE(s.valid());
  sockaddr_in got = {};
  socklen_t len = sizeof(got);
  ASSERT_THAT(getsockname(s.get(), reinterpret_cast<sockaddr*>(&got), &len),
              SyscallSucceeds());
  EXPECT_EQ(got.sin_family, AF_INET);
  EXPECT_EQ(got.sin_port, 0);
  EXPECT_EQ(got.sin_addr.s_addr, htonl(INADDR_ANY));
}

TEST_P(InetBindTest, SecondBindIsEinval) {
  FileDescriptor s = Sock(AF_INET);
  ASSERT_TRUE(s.valid());
  ASSERT_THAT(Bind(s.get(), V4("127.0.0.1", 0)), SyscallSucceeds());
  EXPECT_THAT(Bind(s.get(), V4("127.0.0.1", 0)), SyscallFailsWithErrno(EINVAL));
}

TEST_P(InetBindTest, AddressChecks) {
  FileDescriptor s = Sock(AF_INET);
  ASSERT_TRUE(s.valid());
  sockaddr_in a = V4("127.0.0.1", 0);
  EXPECT_THAT(Bind(s.get(), a, sizeof(a) - 1), SyscallFailsWithErrno(EINVAL));
  sockaddr_in6 six = V6("::1", 0);
  EXPECT_THAT(Bind(s.get(), six), SyscallFailsWithErrno(EAFNOSUPPORT));
  // AF_UNSPEC binds only INADDR_ANY (inet_bind's compatibility case).
  a.sin_family = AF_UNSPEC;
  EXPECT_THAT(Bind(s.get(), a), SyscallFailsWithErrno(EAFNOSUPPORT));
  int nonlocal = 0;
  ReadInts("/proc/sys/net/ipv4/ip_nonlocal_bind", &nonlocal);
  if (nonlocal == 0) {  // TEST-NET-1 is nobody's address
    EXPECT_THAT(Bind(s.get(), V4("192.0.2.1", 0)),
                SyscallFailsWithErrno(EADDRNOTAVAIL));
  }
  sockaddr_in any = V4("0.0.0.0", 0);
  any.sin_family = AF_UNSPEC;
  EXPECT_THAT(Bind(s.get(), any), SyscallSucceeds());
  EXPECT_NE(PortOf(s.get()), 0);
}

TEST_P(InetBindTest, AnyLoopbackAddressBinds) {
  FileDescriptor s = Sock(AF_INET);
  ASSERT_TRUE(s.valid());
  EXPECT_THAT(Bind(s.get(), V4("127.1.2.3", 0)), SyscallSucceeds());
}

TEST_P(InetBindTest, SamePortConflicts) {
  FileDescriptor a = Sock(AF_INET), b = Sock(AF_INET), c = Sock(AF_INET);
  ASSERT_TRUE(a.valid() && b.valid() && c.valid());
  ASSERT_THAT(Bind(a.get(), V4("127.0.0.1", 0)), SyscallSucceeds());
  const uint16_t port = PortOf(a.get());
  EXPECT_THAT(Bind(b.get(), V4("127.0.0.1", port)),
              SyscallFailsWithErrno(EADDRINUSE));
  // The wildcard overlaps the specific address.
  EXPECT_THAT(Bind(b.get(), V4("0.0.0.0", port)),
              SyscallFailsWithErrno(EADDRINUSE));
  // Another loopback address does not.
  EXPECT_THAT(Bind(c.get(), V4("127.0.0.2", port)), SyscallSucceeds());
  // After close, the port is free again.
  a.reset();
  EXPECT_THAT(Bind(b.get(), V4("127.0.0.1", port)), SyscallSucceeds());
}

TEST_P(InetBindTest, WildcardThenSpecificConflicts) {
  FileDescriptor a = Sock(AF_INET), b = Sock(AF_INET);
  ASSERT_TRUE(a.valid() && b.valid());
  ASSERT_THAT(Bind(a.get(), V4("0.0.0.0", 0)), SyscallSucceeds());
  EXPECT_THAT(Bind(b.get(), V4("127.0.0.1", PortOf(a.get()))),
              SyscallFailsWithErrno(EADDRINUSE));
}

TEST_P(InetBindTest, ReuseAddr) {
  FileDescriptor a = Sock(AF_INET), b = Sock(AF_INET);
  ASSERT_TRUE(a.valid() && b.valid());
  ASSERT_THAT(SetInt(a.get(), SOL_SOCKET, SO_REUSEADDR, 1), SyscallSucceeds());
  ASSERT_THAT(SetInt(b.get(), SOL_SOCKET, SO_REUSEADDR, 1), SyscallSucceeds());
  ASSERT_THAT(Bind(a.get(), V4("127.0.0.1", 0)), SyscallSucceeds());
  const uint16_t port = PortOf(a.get());
  ASSERT_THAT(Bind(b.get(), V4("127.0.0.1", port)), SyscallSucceeds());
  if (type() == SOCK_STREAM) {
    // Only one of them may listen.
    EXPECT_THAT(listen(a.get(), 1), SyscallSucceeds());
    EXPECT_THAT(listen(b.get(), 1), SyscallFailsWithErrno(EADDRINUSE));
    // And a third cannot bind next to the listener.
    FileDescriptor c = Sock(AF_INET);
    ASSERT_THAT(SetInt(c.get(), SOL_SOCKET, SO_REUSEADDR, 1),
                SyscallSucceeds());
    EXPECT_THAT(Bind(c.get(), V4("127.0.0.1", port)),
                SyscallFailsWithErrno(EADDRINUSE));
  }
}

TEST_P(InetBindTest, ReuseAddrOnOneSideOnly) {
  FileDescriptor a = Sock(AF_INET), b = Sock(AF_INET);
  ASSERT_TRUE(a.valid() && b.valid());
  ASSERT_THAT(SetInt(a.get(), SOL_SOCKET, SO_REUSEADDR, 1), SyscallSucceeds());
  ASSERT_THAT(Bind(a.get(), V4("127.0.0.1", 0)), SyscallSucceeds());
  EXPECT_THAT(Bind(b.get(), V4("127.0.0.1", PortOf(a.get()))),
              SyscallFailsWithErrno(EADDRINUSE));
}

TEST_P(InetBindTest, ReusePort) {
  FileDescriptor a = Sock(AF_INET), b = Sock(AF_INET), c = Sock(AF_INET);
  ASSERT_TRUE(a.valid() && b.valid() && c.valid());
  ASSERT_THAT(SetInt(a.get(), SOL_SOCKET, SO_REUSEPORT, 1), SyscallSucceeds());
  ASSERT_THAT(SetInt(b.get(), SOL_SOCKET, SO_REUSEPORT, 1), SyscallSucceeds());
  ASSERT_THAT(Bind(a.get(), V4("127.0.0.1", 0)), SyscallSucceeds());
  const uint16_t port = PortOf(a.get());
  if (type() == SOCK_STREAM) ASSERT_THAT(listen(a.get(), 1), SyscallSucceeds());
  ASSERT_THAT(Bind(b.get(), V4("127.0.0.1", port)), SyscallSucceeds());
  if (type() == SOCK_STREAM) EXPECT_THAT(listen(b.get(), 1), SyscallSucceeds());
  // A socket without SO_REUSEPORT stays out.
  EXPECT_THAT(Bind(c.get(), V4("127.0.0.1", port)),
              SyscallFailsWithErrno(EADDRINUSE));
}

TEST_P(InetBindTest, V6Loopback) {
  if (!HaveV6()) GTEST_SKIP() << "no IPv6 loopback";
  FileDescriptor s = Sock(AF_INET6);
  ASSERT_TRUE(s.valid());
  ASSERT_THAT(Bind(s.get(), V6("::1", 0)), SyscallSucceeds());
  sockaddr_in6 got = {};
  socklen_t len = sizeof(got);
  ASSERT_THAT(getsockname(s.get(), reinterpret_cast<sockaddr*>(&got), &len),
              SyscallSucceeds());
  EXPECT_EQ(len, sizeof(got));
  EXPECT_EQ(got.sin6_family, AF_INET6);
  EXPECT_TRUE(IN6_IS_ADDR_LOOPBACK(&got.sin6_addr));
  EXPECT_NE(got.sin6_port, 0);
  EXPECT_THAT(Bind(s.get(), V6("::1", 0)), SyscallFailsWithErrno(EINVAL));
  // Binding a specific IPv6 address makes the socket IPv6-only.
  int v = -1;
  socklen_t vl = sizeof(v);
  ASSERT_THAT(getsockopt(s.get(), SOL_IPV6, IPV6_V6ONLY, &v, &vl),
              SyscallSucceeds());
  EXPECT_EQ(v, 1);
}

TEST_P(InetBindTest, V6AddressChecks) {
  if (!HaveV6()) GTEST_SKIP() << "no IPv6 loopback";
  FileDescriptor s = Sock(AF_INET6);
  ASSERT_TRUE(s.valid());
  sockaddr_in6 a = V6("::1", 0);
  EXPECT_THAT(Bind(s.get(), a, 23), SyscallFailsWithErrno(EINVAL));
  sockaddr_in four = V4("127.0.0.1", 0);
  EXPECT_THAT(Bind(s.get(), four), SyscallFailsWithErrno(EINVAL));  // short
  a.sin6_family = AF_INET;
  EXPECT_THAT(Bind(s.get(), a), SyscallFailsWithErrno(EAFNOSUPPORT));
  int nonlocal = 0;
  ReadInts("/proc/sys/net/ipv6/ip_nonlocal_bind", &nonlocal);
  if (nonlocal == 0) {  // the documentation prefix
    EXPECT_THAT(Bind(s.get(), V6("2001:db8::1", 0)),
                SyscallFailsWithErrno(EADDRNOTAVAIL));
  }
  // A link-local address needs an interface.
  EXPECT_THAT(Bind(s.get(), V6("fe80::1", 0)), SyscallFailsWithErrno(EINVAL));
  // The RFC 2133 length (no scope id) is enough.
  EXPECT_THAT(Bind(s.get(), V6("::1", 0), 24), SyscallSucceeds());
}

TEST_P(InetBindTest, V6WildcardCoversV4UnlessV6only) {
  if (!HaveV6()) GTEST_SKIP() << "no IPv6 loopback";
  FileDescriptor six = Sock(AF_INET6), four = Sock(AF_INET);
  ASSERT_TRUE(six.valid() && four.valid());
  ASSERT_THAT(SetInt(six.get(), SOL_IPV6, IPV6_V6ONLY, 0), SyscallSucceeds());
  ASSERT_THAT(Bind(six.get(), V6("::", 0)), SyscallSucceeds());
  const uint16_t port = PortOf(six.get());
  EXPECT_THAT(Bind(four.get(), V4("127.0.0.1", port)),
              SyscallFailsWithErrno(EADDRINUSE));
  // IPV6_V6ONLY cannot change once bound.
  EXPECT_THAT(SetInt(six.get(), SOL_IPV6, IPV6_V6ONLY, 1),
              SyscallFailsWithErrno(EINVAL));

  FileDescriptor six2 = Sock(AF_INET6), four2 = Sock(AF_INET);
  ASSERT_THAT(SetInt(six2.get(), SOL_IPV6, IPV6_V6ONLY, 1), SyscallSucceeds());
  ASSERT_THAT(Bind(six2.get(), V6("::", 0)), SyscallSucceeds());
  EXPECT_THAT(Bind(four2.get(), V4("0.0.0.0", PortOf(six2.get()))),
              SyscallSucceeds());
}

TEST_P(InetBindTest, V4ThenV6Wildcard) {
  if (!HaveV6()) GTEST_SKIP() << "no IPv6 loopback";
  FileDescriptor four = Sock(AF_INET), six = Sock(AF_INET6),
                 six_only = Sock(AF_INET6), lo6 = Sock(AF_INET6);
  ASSERT_THAT(Bind(four.get(), V4("0.0.0.0", 0)), SyscallSucceeds());
  const uint16_t port = PortOf(four.get());
  ASSERT_THAT(SetInt(six.get(), SOL_IPV6, IPV6_V6ONLY, 0), SyscallSucceeds());
  EXPECT_THAT(Bind(six.get(), V6("::", port)),
              SyscallFailsWithErrno(EADDRINUSE));
  ASSERT_THAT(SetInt(six_only.get(), SOL_IPV6, IPV6_V6ONLY, 1),
              SyscallSucceeds());
  EXPECT_THAT(Bind(six_only.get(), V6("::", port)), SyscallSucceeds());
  // ::1 is IPv6-only (no overlap with 0.0.0.0).
  FileDescriptor four2 = Sock(AF_INET);
  ASSERT_THAT(Bind(four2.get(), V4("0.0.0.0", 0)), SyscallSucceeds());
  EXPECT_THAT(Bind(lo6.get(), V6("::1", PortOf(four2.get()))),
              SyscallSucceeds());
}

TEST_P(InetBindTest, V4MappedAddress) {
  if (!HaveV6()) GTEST_SKIP() << "no IPv6 loopback";
  FileDescriptor four = Sock(AF_INET), mapped = Sock(AF_INET6),
                 only = Sock(AF_INET6);
  ASSERT_THAT(Bind(four.get(), V4("127.0.0.1", 0)), SyscallSucceeds());
  const uint16_t port = PortOf(four.get());
  EXPECT_THAT(Bind(mapped.get(), V6("::ffff:127.0.0.1", port)),
              SyscallFailsWithErrno(EADDRINUSE));
  ASSERT_THAT(Bind(mapped.get(), V6("::ffff:127.0.0.1", 0)), SyscallSucceeds());
  sockaddr_in6 got = {};
  socklen_t len = sizeof(got);
  ASSERT_THAT(
      getsockname(mapped.get(), reinterpret_cast<sockaddr*>(&got), &len),
      SyscallSucceeds());
  EXPECT_TRUE(IN6_IS_ADDR_V4MAPPED(&got.sin6_addr));
  // An IPV6_V6ONLY socket cannot bind a v4-mapped address.
  ASSERT_THAT(SetInt(only.get(), SOL_IPV6, IPV6_V6ONLY, 1), SyscallSucceeds());
  EXPECT_THAT(Bind(only.get(), V6("::ffff:127.0.0.1", 0)),
              SyscallFailsWithErrno(EINVAL));
}

INSTANTIATE_TEST_SUITE_P(TcpAndUdp, InetBindTest,
                         ::testing::Values(SOCK_STREAM, SOCK_DGRAM),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return i.param == SOCK_STREAM ? "Tcp" : "Udp";
                         });

}  // namespace
}  // namespace sandbox::testutil
