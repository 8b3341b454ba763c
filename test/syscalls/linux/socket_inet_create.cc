// socket(2) and socketpair(2) of AF_INET and AF_INET6: inet_create's
// choice of protocol and its errnos (a type without protocols, a protocol
// the type lacks, the protocol range), raw and packet sockets without
// CAP_NET_RAW, and socketpair's EOPNOTSUPP.
#include <errno.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr int kFamilies[] = {AF_INET, AF_INET6};

// socket(2)'s result: 0 on success (the socket closed), else errno.
int SocketErrno(int family, int type, int protocol) {
  int fd = socket(family, type | SOCK_CLOEXEC, protocol);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

TEST(InetCreateTest, StreamAndDatagramProtocols) {
  for (int f : kFamilies) {
    EXPECT_EQ(SocketErrno(f, SOCK_STREAM, 0), 0) << f;
    EXPECT_EQ(SocketErrno(f, SOCK_STREAM, IPPROTO_TCP), 0) << f;
    EXPECT_EQ(SocketErrno(f, SOCK_DGRAM, 0), 0) << f;
    EXPECT_EQ(SocketErrno(f, SOCK_DGRAM, IPPROTO_UDP), 0) << f;
    EXPECT_EQ(SocketErrno(f, SOCK_STREAM, IPPROTO_UDP), EPROTONOSUPPORT) << f;
    EXPECT_EQ(SocketErrno(f, SOCK_DGRAM, IPPROTO_TCP), EPROTONOSUPPORT) << f;
  }
  // ICMP is IPv4's ping protocol, ICMPv6 IPv6's.
  EXPECT_EQ(SocketErrno(AF_INET, SOCK_DGRAM, IPPROTO_ICMPV6), EPROTONOSUPPORT);
  EXPECT_EQ(SocketErrno(AF_INET6, SOCK_DGRAM, IPPROTO_ICMP), EPROTONOSUPPORT);
}

TEST(InetCreateTest, TypesWithoutProtocols) {
  for (int f : kFamilies) {
    // SOCK_SEQPACKET and SOCK_RDM have no protocol without SCTP/RDS
    // modules; a loaded SCTP module answers SOCK_SEQPACKET.
    const int seq = SocketErrno(f, SOCK_SEQPACKET, 0);
    if (seq != 0) EXPECT_EQ(seq, ESOCKTNOSUPPORT) << f;
    const int rdm = SocketErrno(f, SOCK_RDM, 0);
    if (rdm != 0) EXPECT_EQ(rdm, ESOCKTNOSUPPORT) << f;
  }
}

TEST(InetCreateTest, ProtocolRange) {
  for (int f : kFamilies) {
    EXPECT_EQ(SocketErrno(f, SOCK_STREAM, -1), EINVAL) << f;
    EXPECT_EQ(SocketErrno(f, SOCK_DGRAM, 263), EINVAL) << f;  // IPPROTO_MAX
    EXPECT_EQ(SocketErrno(f, SOCK_DGRAM, 1000), EINVAL) << f;
  }
}

TEST(InetCreateTest, RawProtocolZero) {
  // inet_create: the raw entry is a wildcard that IPPROTO_IP cannot pick.
  for (int f : kFamilies) {
    EXPECT_EQ(SocketErrno(f, SOCK_RAW, 0), EPROTONOSUPPORT) << f;
  }
}

TEST(InetCreateTest, SctpWithoutTheModule) {
  const int e = SocketErrno(AF_INET, SOCK_STREAM, IPPROTO_SCTP);
  if (e == 0) GTEST_SKIP() << "the host has SCTP";
  EXPECT_EQ(e, EPROTONOSUPPORT);
}

// In a child without CAP_NET_RAW (effective set emptied): raw and packet
// sockets are EPERM.
TEST(InetCreateTest, RawAndPacketNeedCapNetRaw) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct d[2] = {};
    if (syscall(SYS_capget, &h, d) != 0) _exit(10);
    d[0].effective = 0;
    d[1].effective = 0;
    if (syscall(SYS_capset, &h, d) != 0) _exit(11);
    if (SocketErrno(AF_INET, SOCK_RAW, IPPROTO_ICMP) != EPERM) _exit(12);
    if (SocketErrno(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6) != EPERM) _exit(13);
    if (SocketErrno(AF_INET, SOCK_RAW, IPPROTO_UDP) != EPERM) _exit(14);
    if (SocketErrno(AF_PACKET, SOCK_RAW, 0) != EPERM) _exit(15);
    if (SocketErrno(AF_PACKET, SOCK_DGRAM, 0) != EPERM) _exit(16);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(InetCreateTest, SocketpairIsEopnotsupp) {
  int fds[2];
  for (int f : kFamilies) {
    EXPECT_THAT(socketpair(f, SOCK_STREAM, 0, fds),
                SyscallFailsWithErrno(EOPNOTSUPP));
    EXPECT_THAT(socketpair(f, SOCK_DGRAM, 0, fds),
                SyscallFailsWithErrno(EOPNOTSUPP));
  }
}

}  // namespace
}  // namespace sandbox::testutil
