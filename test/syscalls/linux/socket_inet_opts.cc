// SOL_IP and SOL_IPV6 options of TCP and UDP sockets (do_ip_setsockopt,
// do_ip_getsockopt, do_ipv6_setsockopt, do_ipv6_getsockopt): defaults,
// ranges, value sizes (an int or one byte for IP_*), the ECN bits of
// IP_TOS/IPV6_TCLASS, the errnos of options a socket type lacks, and
// IPV6_V6ONLY once bound.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

#ifndef IP_LOCAL_PORT_RANGE
constexpr int IP_LOCAL_PORT_RANGE = 51;
#endif
// linux/in6.h's IPV6_PREFER_SRC_* (not in the C library's headers).
constexpr int kPreferSrcTmp = 0x1, kPreferSrcPublic = 0x2,
              kPreferSrcPubtmpDefault = 0x100, kPreferSrcHome = 0x400;

int SetInt(int fd, int level, int name, int v) {
  return setsockopt(fd, level, name, &v, sizeof(v));
}
int GetInt(int fd, int level, int name) {
  int v = -12345;
  socklen_t len = sizeof(v);
  if (getsockopt(fd, level, name, &v, &len) != 0) return -12345;
  EXPECT_EQ(len, sizeof(v));
  return v;
}

class InetOptsTest : public ::testing::TestWithParam<int> {
 protected:
  int type() const { return GetParam(); }
  FileDescriptor Sock(int family) {
    FileDescriptor fd(socket(family, type() | SOCK_CLOEXEC, 0));
    EXPECT_TRUE(fd.valid()) << strerror(errno);
    return fd;
  }
};

TEST_P(InetOptsTest, Ttl) {
  FileDescriptor s = Sock(AF_INET);
  ASSERT_TRUE(s.valid());
  int def = 64;
  std::ifstream("/proc/sys/net/ipv4/ip_default_ttl") >> def;
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_TTL), def);
  EXPECT_THAT(SetInt(s.get(), SOL_IP, IP_TTL, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(SetInt(s.get(), SOL_IP, IP_TTL, 256),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(SetInt(s.get(), SOL_IP, IP_TTL, 7), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_TTL), 7);
  ASSERT_THAT(SetInt(s.get(), SOL_IP, IP_TTL, -1), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_TTL), def);
  // One byte in, one byte out.
  unsigned char b = 9;
  ASSERT_THAT(setsockopt(s.get(), SOL_IP, IP_TTL, &b, 1), SyscallSucceeds());
  unsigned char out[2] = {0, 0xee};
  socklen_t len = 1;
  ASSERT_THAT(getsockopt(s.get(), SOL_IP, IP_TTL, out, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(out[0], 9);
  EXPECT_EQ(out[1], 0xee);
  EXPECT_THAT(setsockopt(s.get(), SOL_IP, IP_TTL, &b, 0),
              SyscallFailsWithErrno(EINVAL));
}

TEST_P(InetOptsTest, TosKeepsEcnOnStreams) {
  FileDescriptor s = Sock(AF_INET);
  ASSERT_TRUE(s.valid());
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_TOS), 0);
  ASSERT_THAT(SetInt(s.get(), SOL_IP, IP_TOS, 0x13), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_TOS),
            type() == SOCK_STREAM ? 0x10 : 0x13);
}

TEST_P(InetOptsTest, FlagsAndRanges) {
  FileDescriptor s = Sock(AF_INET);
  ASSERT_TRUE(s.valid());
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_PKTINFO), 0);
  ASSERT_THAT(SetInt(s.get(), SOL_IP, IP_PKTINFO, 5), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_PKTINFO), 1);
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_MTU_DISCOVER), IP_PMTUDISC_WANT);
  EXPECT_THAT(SetInt(s.get(), SOL_IP, IP_MTU_DISCOVER, 6),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_MULTICAST_LOOP), 1);
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_MULTICAST_ALL), 1);
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_MULTICAST_TTL), 1);
  EXPECT_THAT(SetInt(s.get(), SOL_IP, IP_MULTICAST_ALL, 2),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(SetInt(s.get(), SOL_IP, IP_MINTTL, 256),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(SetInt(s.get(), SOL_IP, IP_HDRINCL, 1),
              SyscallFailsWithErrno(ENOPROTOOPT));
  EXPECT_THAT(SetInt(s.get(), SOL_IP, 9999, 1),
              SyscallFailsWithErrno(ENOPROTOOPT));
  int v;
  socklen_t len = sizeof(v);
  EXPECT_THAT(getsockopt(s.get(), SOL_IP, IP_MTU, &v, &len),
              SyscallFailsWithErrno(ENOTCONN));
  // SOL_IPV6 is not an AF_INET socket's level.
  EXPECT_THAT(SetInt(s.get(), SOL_IPV6, IPV6_V6ONLY, 1),
              SyscallFailsWithErrno(ENOPROTOOPT));
  if (type() == SOCK_STREAM) {
    EXPECT_THAT(SetInt(s.get(), SOL_IP, IP_MULTICAST_TTL, 2),
                SyscallFailsWithErrno(EINVAL));
  } else {
    ASSERT_THAT(SetInt(s.get(), SOL_IP, IP_MULTICAST_TTL, -1),
                SyscallSucceeds());
    EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_MULTICAST_TTL), 1);
  }
}

// IP_PROTOCOL reads inet_num: 0, then the local port once bound.
TEST_P(InetOptsTest, IpProtocolIsTheBoundPort) {
  constexpr int kIpProtocol = 52;
  FileDescriptor s = Sock(AF_INET);
  ASSERT_TRUE(s.valid());
  int v = -1;
  socklen_t len = sizeof(v);
  if (getsockopt(s.get(), SOL_IP, kIpProtocol, &v, &len) != 0) {
    GTEST_SKIP() << "no IP_PROTOCOL: " << strerror(errno);
  }
  EXPECT_EQ(v, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_THAT(bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)),
              SyscallSucceeds());
  len = sizeof(a);
  ASSERT_THAT(getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len),
              SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SOL_IP, kIpProtocol), ntohs(a.sin_port));
}

TEST_P(InetOptsTest, LocalPortRange) {
  FileDescriptor s = Sock(AF_INET);
  ASSERT_TRUE(s.valid());
  if (SetInt(s.get(), SOL_IP, IP_LOCAL_PORT_RANGE, 0) != 0 &&
      errno == ENOPROTOOPT) {
    GTEST_SKIP() << "IP_LOCAL_PORT_RANGE needs Linux 6.3";
  }
  EXPECT_THAT(SetInt(s.get(), SOL_IP, IP_LOCAL_PORT_RANGE, 40000 | 30000 << 16),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(SetInt(s.get(), SOL_IP, IP_LOCAL_PORT_RANGE, 40000 | 40001 << 16),
              SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_LOCAL_PORT_RANGE), 40000 | 40001 << 16);
}

TEST_P(InetOptsTest, Ipv6Options) {
  FileDescriptor s(socket(AF_INET6, type() | SOCK_CLOEXEC, 0));
  if (!s.valid()) GTEST_SKIP() << "no IPv6";
  int def = 0;
  std::ifstream("/proc/sys/net/ipv6/bindv6only") >> def;
  EXPECT_EQ(GetInt(s.get(), SOL_IPV6, IPV6_V6ONLY), def != 0);
  EXPECT_EQ(GetInt(s.get(), SOL_IPV6, IPV6_UNICAST_HOPS), 64);
  EXPECT_THAT(SetInt(s.get(), SOL_IPV6, IPV6_UNICAST_HOPS, 256),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(SetInt(s.get(), SOL_IPV6, IPV6_TCLASS, 0x13), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SOL_IPV6, IPV6_TCLASS),
            type() == SOCK_STREAM ? 0x10 : 0x13);
  EXPECT_THAT(SetInt(s.get(), SOL_IPV6, IPV6_TCLASS, 256),
              SyscallFailsWithErrno(EINVAL));
  if (type() == SOCK_STREAM) {
    EXPECT_THAT(SetInt(s.get(), SOL_IPV6, IPV6_MULTICAST_HOPS, 1),
                SyscallFailsWithErrno(ENOPROTOOPT));
  }
  // A short int is EINVAL for SOL_IPV6.
  unsigned char b = 1;
  EXPECT_THAT(setsockopt(s.get(), SOL_IPV6, IPV6_V6ONLY, &b, 1),
              SyscallFailsWithErrno(EINVAL));
  // SOL_IP reaches an AF_INET6 socket (whose IPv4 MC_ALL bit is clear:
  // inet6_create does not set it).
  ASSERT_THAT(SetInt(s.get(), SOL_IP, IP_TTL, 5), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_TTL), 5);
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_MULTICAST_ALL), 0);
  EXPECT_EQ(GetInt(s.get(), SOL_IPV6, IPV6_MULTICAST_ALL), 1);
  EXPECT_EQ(GetInt(s.get(), SOL_IPV6, IPV6_ADDR_PREFERENCES),
            kPreferSrcPubtmpDefault | kPreferSrcHome);
  EXPECT_THAT(SetInt(s.get(), SOL_IPV6, IPV6_ADDR_PREFERENCES,
                     kPreferSrcTmp | kPreferSrcPublic),
              SyscallFailsWithErrno(EINVAL));
  // IPV6_V6ONLY cannot change once bound.
  ASSERT_THAT(SetInt(s.get(), SOL_IPV6, IPV6_V6ONLY, 1), SyscallSucceeds());
  sockaddr_in6 a = {};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_any;
  ASSERT_THAT(bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)),
              SyscallSucceeds());
  EXPECT_THAT(SetInt(s.get(), SOL_IPV6, IPV6_V6ONLY, 0),
              SyscallFailsWithErrno(EINVAL));
}

TEST_P(InetOptsTest, IpOptions) {
  FileDescriptor s = Sock(AF_INET);
  ASSERT_TRUE(s.valid());
  const unsigned char rr[] = {7, 11, 4, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  ASSERT_THAT(setsockopt(s.get(), SOL_IP, IP_OPTIONS, rr, sizeof(rr)),
              SyscallSucceeds());
  unsigned char out[40] = {};
  socklen_t len = sizeof(out);
  ASSERT_THAT(getsockopt(s.get(), SOL_IP, IP_OPTIONS, out, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, 12u);
  EXPECT_EQ(memcmp(out, rr, sizeof(rr)), 0);
  const unsigned char bad[] = {7, 12, 4, 0};
  EXPECT_THAT(setsockopt(s.get(), SOL_IP, IP_OPTIONS, bad, sizeof(bad)),
              SyscallFailsWithErrno(EINVAL));
  unsigned char big[41] = {};
  EXPECT_THAT(setsockopt(s.get(), SOL_IP, IP_OPTIONS, big, sizeof(big)),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(setsockopt(s.get(), SOL_IP, IP_OPTIONS, nullptr, 0),
              SyscallSucceeds());
  len = sizeof(out);
  ASSERT_THAT(getsockopt(s.get(), SOL_IP, IP_OPTIONS, out, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, 0u);
}

INSTANTIATE_TEST_SUITE_P(TcpAndUdp, InetOptsTest,
                         ::testing::Values(SOCK_STREAM, SOCK_DGRAM),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return i.param == SOCK_STREAM ? "Tcp" : "Udp";
                         });

}  // namespace
}  // namespace sandbox::testutil
