// AF_INET / AF_INET6 SOCK_DGRAM (UDP) over loopback: bind and autobind,
// sendto/recvfrom/sendmsg/recvmsg/sendmmsg/recvmmsg, datagram boundaries,
// MSG_TRUNC both ways, MSG_PEEK, zero-length datagrams, EMSGSIZE, connect
// and disconnect (AF_UNSPEC), delivery rules (a connected socket hears only
// its peer and wins over unconnected ones; SO_REUSEADDR, SO_REUSEPORT),
// v4-mapped delivery and IPV6_V6ONLY, ECONNREFUSED and IP_RECVERR's error
// queue, SO_BROADCAST, the receive buffer's drops, readiness, FIONREAD and
// SIOCOUTQ, shutdown, and the rows of /proc/net/udp(6).
//
// Every address is on loopback. Each case runs for AF_INET and AF_INET6
// (UdpTest) unless it is about one family.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <linux/sockios.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

// An Internet socket address and its length.
struct Addr {
  sockaddr_storage ss = {};
  socklen_t len = 0;
  sockaddr* sa() { return reinterpret_cast<sockaddr*>(&ss); }
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&ss); }
  int family() const { return ss.ss_family; }
  uint16_t port() const {
    if (ss.ss_family == AF_INET) {
      return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
    }
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  }
  void set_port(uint16_t p) {
    if (ss.ss_family == AF_INET) {
      reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(p);
    } else {
      reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(p);
    }
  }
  static Addr V4(const char* ip, uint16_t port) {
    Addr a;
    auto* s = reinterpret_cast<sockaddr_in*>(&a.ss);
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    inet_pton(AF_INET, ip, &s->sin_addr);
    a.len = sizeof(sockaddr_in);
    return a;
  }
  static Addr V6(const char* ip, uint16_t port) {
    Addr a;
    auto* s = reinterpret_cast<sockaddr_in6*>(&a.ss);
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    inet_pton(AF_INET6, ip, &s->sin6_addr);
    a.len = sizeof(sockaddr_in6);
    return a;
  }
  static Addr Loopback(int family, uint16_t port = 0) {
    return family == AF_INET ? V4("127.0.0.1", port) : V6("::1", port);
  }
  static Addr Any(int family, uint16_t port = 0) {
    return family == AF_INET ? V4("0.0.0.0", port) : V6("::", port);
  }
  std::string ip() const {
    char buf[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr,
                buf, sizeof(buf));
    } else {
      inet_ntop(AF_INET6,
                &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, buf,
                sizeof(buf));
    }
    return buf;
  }
};

FileDescriptor Udp(int family, int flags = 0) {
  int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | flags, 0);
  EXPECT_GE(fd, 0) << strerror(errno);
  return FileDescriptor(fd);
}

Addr SockName(int fd) {
  Addr a;
  a.len = sizeof(a.ss);
  EXPECT_EQ(getsockname(fd, a.sa(), &a.len), 0) << strerror(errno);
  return a;
}

// A socket bound to the loopback address of `family`, port 0.
FileDescriptor BoundUdp(int family, Addr* out, int flags = 0) {
  FileDescriptor fd = Udp(family, flags);
  Addr a = Addr::Loopback(family);
  EXPECT_EQ(bind(fd.get(), a.sa(), a.len), 0) << strerror(errno);
  *out = SockName(fd.get());
  return fd;
}

// Waits (bounded: 10 s) until `fd` has one of `events`; returns revents.
short PollFor(int fd, short events, int timeout_ms = 10000) {
  pollfd p = {fd, events, 0};
  int r = poll(&p, 1, timeout_ms);
  if (r <= 0) return 0;
  return p.revents;
}

int SetInt(int fd, int level, int name, int v) {
  return setsockopt(fd, level, name, &v, sizeof(v));
}
int GetInt(int fd, int level, int name) {
  int v = -1;
  socklen_t l = sizeof(v);
  EXPECT_EQ(getsockopt(fd, level, name, &v, &l), 0) << strerror(errno);
  return v;
}

// A port on loopback nobody is bound to: bound once, then closed.
uint16_t ClosedPort(int family) {
  Addr a;
  FileDescriptor fd = BoundUdp(family, &a);
  return a.port();
}

class UdpTest : public ::testing::TestWithParam<int> {
 protected:
  int F() const { return GetParam(); }
  bool V6() const { return GetParam() == AF_INET6; }
  int IpLevel() const { return V6() ? SOL_IPV6 : SOL_IP; }
};

TEST_P(UdpTest, BindPortZeroPicksEphemeralPort) {
  Addr a;
  FileDescriptor fd = BoundUdp(F(), &a);
  EXPECT_EQ(a.family(), F());
  EXPECT_EQ(a.len, V6() ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
  int lo = 0, hi = 0;
  FILE* f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  if (f != nullptr) {
    EXPECT_EQ(fscanf(f, "%d %d", &lo, &hi), 2);
    fclose(f);
    EXPECT_GE(a.port(), lo);
    EXPECT_LE(a.port(), hi);
  }
  EXPECT_NE(a.port(), 0);
  EXPECT_EQ(a.ip(), V6() ? "::1" : "127.0.0.1");
}

TEST_P(UdpTest, BindTwiceIsEinval) {
  Addr a;
  FileDescriptor fd = BoundUdp(F(), &a);
  Addr b = Addr::Loopback(F());
  EXPECT_THAT(bind(fd.get(), b.sa(), b.len), SyscallFailsWithErrno(EINVAL));
}

TEST_P(UdpTest, BindConflictNeedsReuseAddrOnBoth) {
  Addr a;
  FileDescriptor x = BoundUdp(F(), &a);
  FileDescriptor y = Udp(F());
  EXPECT_THAT(bind(y.get(), a.sa(), a.len), SyscallFailsWithErrno(EADDRINUSE));
  FileDescriptor p = Udp(F()), q = Udp(F());
  ASSERT_THAT(SetInt(p.get(), SOL_SOCKET, SO_REUSEADDR, 1), SyscallSucceeds());
  ASSERT_THAT(SetInt(q.get(), SOL_SOCKET, SO_REUSEADDR, 1), SyscallSucceeds());
  Addr lo = Addr::Loopback(F());
  ASSERT_THAT(bind(p.get(), lo.sa(), lo.len), SyscallSucceeds());
  Addr pa = SockName(p.get());
  EXPECT_THAT(bind(q.get(), pa.sa(), pa.len), SyscallSucceeds());
}

TEST_P(UdpTest, UnboundGetsocknameIsWildcardPortZero) {
  FileDescriptor fd = Udp(F());
  Addr a = SockName(fd.get());
  EXPECT_EQ(a.port(), 0);
  EXPECT_EQ(a.ip(), V6() ? "::" : "0.0.0.0");
  Addr p;
  p.len = sizeof(p.ss);
  EXPECT_THAT(getpeername(fd.get(), p.sa(), &p.len),
              SyscallFailsWithErrno(ENOTCONN));
}

TEST_P(UdpTest, SendtoRecvfromRoundTrip) {
  Addr ra, sa;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = BoundUdp(F(), &sa);
  ASSERT_THAT(sendto(s.get(), "hello", 5, 0, ra.sa(), ra.len),
              SyscallSucceedsWithValue(5));
  char buf[16] = {};
  Addr from;
  from.len = sizeof(from.ss);
  ASSERT_THAT(recvfrom(r.get(), buf, sizeof(buf), 0, from.sa(), &from.len),
              SyscallSucceedsWithValue(5));
  EXPECT_EQ(std::string(buf, 5), "hello");
  EXPECT_EQ(from.len, sa.len);
  EXPECT_EQ(from.port(), sa.port());
  EXPECT_EQ(from.ip(), sa.ip());
  // And back, to the address recvfrom gave.
  ASSERT_THAT(sendto(r.get(), "ok", 2, 0, from.sa(), from.len),
              SyscallSucceedsWithValue(2));
  ASSERT_THAT(recv(s.get(), buf, sizeof(buf), 0), SyscallSucceedsWithValue(2));
}

TEST_P(UdpTest, FirstSendAutobinds) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = Udp(F());
  ASSERT_THAT(sendto(s.get(), "x", 1, 0, ra.sa(), ra.len),
              SyscallSucceedsWithValue(1));
  Addr sa = SockName(s.get());
  EXPECT_NE(sa.port(), 0);
  // Autobind binds the wildcard address.
  EXPECT_EQ(sa.ip(), V6() ? "::" : "0.0.0.0");
  Addr from;
  from.len = sizeof(from.ss);
  char c;
  ASSERT_THAT(recvfrom(r.get(), &c, 1, 0, from.sa(), &from.len),
              SyscallSucceedsWithValue(1));
  EXPECT_EQ(from.port(), sa.port());
  EXPECT_EQ(from.ip(), V6() ? "::1" : "127.0.0.1");
}

TEST_P(UdpTest, DatagramBoundariesKept) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = Udp(F());
  ASSERT_THAT(sendto(s.get(), "abc", 3, 0, ra.sa(), ra.len), SyscallSucceeds());
  ASSERT_THAT(sendto(s.get(), "defgh", 5, 0, ra.sa(), ra.len),
              SyscallSucceeds());
  char buf[16];
  EXPECT_THAT(recv(r.get(), buf, sizeof(buf), 0), SyscallSucceedsWithValue(3));
  EXPECT_EQ(std::string(buf, 3), "abc");
  EXPECT_THAT(recv(r.get(), buf, sizeof(buf), 0), SyscallSucceedsWithValue(5));
  EXPECT_EQ(std::string(buf, 5), "defgh");
}

TEST_P(UdpTest, TruncationFlagsAndRealLength) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = Udp(F());
  for (int i = 0; i < 2; ++i) {
    ASSERT_THAT(sendto(s.get(), "0123456789", 10, 0, ra.sa(), ra.len),
                SyscallSucceeds());
  }
  char buf[4];
  iovec iov = {buf, sizeof(buf)};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  EXPECT_THAT(recvmsg(r.get(), &m, 0), SyscallSucceedsWithValue(4));
  EXPECT_EQ(m.msg_flags & MSG_TRUNC, MSG_TRUNC);
  EXPECT_EQ(std::string(buf, 4), "0123");
  // MSG_TRUNC as a flag: the real length; the rest of the datagram is gone.
  m.msg_flags = 0;
  EXPECT_THAT(recvmsg(r.get(), &m, MSG_TRUNC), SyscallSucceedsWithValue(10));
  EXPECT_EQ(m.msg_flags & MSG_TRUNC, MSG_TRUNC);
  EXPECT_THAT(recv(r.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST_P(UdpTest, PeekLeavesDatagramQueued) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = Udp(F());
  ASSERT_THAT(sendto(s.get(), "peek", 4, 0, ra.sa(), ra.len),
              SyscallSucceeds());
  char buf[8] = {};
  EXPECT_THAT(recv(r.get(), buf, 2, MSG_PEEK), SyscallSucceedsWithValue(2));
  EXPECT_THAT(recv(r.get(), buf, 2, MSG_PEEK | MSG_TRUNC),
              SyscallSucceedsWithValue(4));
  EXPECT_THAT(recv(r.get(), buf, sizeof(buf), 0), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "peek");
}

TEST_P(UdpTest, PeekOffset) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  EXPECT_EQ(GetInt(r.get(), SOL_SOCKET, SO_PEEK_OFF), -1);
  ASSERT_THAT(SetInt(r.get(), SOL_SOCKET, SO_PEEK_OFF, 0), SyscallSucceeds());
  FileDescriptor s = Udp(F());
  ASSERT_THAT(sendto(s.get(), "abcdef", 6, 0, ra.sa(), ra.len),
              SyscallSucceeds());
  ASSERT_THAT(sendto(s.get(), "XYZ", 3, 0, ra.sa(), ra.len), SyscallSucceeds());
  ASSERT_EQ(PollFor(r.get(), POLLIN) & POLLIN, POLLIN);
  char buf[16];
  // Each peek continues where the last stopped, across datagrams.
  ASSERT_THAT(recv(r.get(), buf, 2, MSG_PEEK), SyscallSucceedsWithValue(2));
  EXPECT_EQ(std::string(buf, 2), "ab");
  ASSERT_THAT(recv(r.get(), buf, 2, MSG_PEEK), SyscallSucceedsWithValue(2));
  EXPECT_EQ(std::string(buf, 2), "cd");
  ASSERT_THAT(recv(r.get(), buf, 10, MSG_PEEK), SyscallSucceedsWithValue(2));
  EXPECT_EQ(std::string(buf, 2), "ef");
  ASSERT_THAT(recv(r.get(), buf, 10, MSG_PEEK), SyscallSucceedsWithValue(3));
  EXPECT_EQ(std::string(buf, 3), "XYZ");
  EXPECT_EQ(GetInt(r.get(), SOL_SOCKET, SO_PEEK_OFF), 9);
  // A read takes the first datagram and moves the offset back by its
  // length.
  ASSERT_THAT(recv(r.get(), buf, 10, 0), SyscallSucceedsWithValue(6));
  EXPECT_EQ(std::string(buf, 6), "abcdef");
  EXPECT_EQ(GetInt(r.get(), SOL_SOCKET, SO_PEEK_OFF), 3);
  EXPECT_THAT(recv(r.get(), buf, 10, MSG_PEEK | MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
  ASSERT_THAT(recv(r.get(), buf, 10, 0), SyscallSucceedsWithValue(3));
  EXPECT_EQ(GetInt(r.get(), SOL_SOCKET, SO_PEEK_OFF), 0);
}

TEST_P(UdpTest, ZeroLengthDatagram) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = Udp(F());
  ASSERT_THAT(sendto(s.get(), nullptr, 0, 0, ra.sa(), ra.len),
              SyscallSucceedsWithValue(0));
  EXPECT_EQ(PollFor(r.get(), POLLIN) & POLLIN, POLLIN);
  int n = -1;
  ASSERT_THAT(ioctl(r.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 0);
  char buf[4];
  EXPECT_THAT(recv(r.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallSucceedsWithValue(0));
  EXPECT_THAT(recv(r.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST_P(UdpTest, LargestDatagramAndEmsgsize) {
  const size_t max = V6() ? 65527 : 65507;
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = Udp(F());
  std::vector<char> big(max + 1, 'z');
  EXPECT_THAT(sendto(s.get(), big.data(), max + 1, 0, ra.sa(), ra.len),
              SyscallFailsWithErrno(EMSGSIZE));
  ASSERT_THAT(sendto(s.get(), big.data(), max, 0, ra.sa(), ra.len),
              SyscallSucceedsWithValue(max));
  std::vector<char> in(max + 16);
  EXPECT_THAT(recv(r.get(), in.data(), in.size(), 0),
              SyscallSucceedsWithValue(max));
}

TEST(UdpV6Test, V4MappedDestinationHasV4Limit) {
  Addr ra;
  FileDescriptor r = BoundUdp(AF_INET, &ra);
  FileDescriptor s = Udp(AF_INET6);
  Addr to = Addr::V6("::ffff:127.0.0.1", ra.port());
  std::vector<char> big(65508, 'z');
  EXPECT_THAT(sendto(s.get(), big.data(), 65508, 0, to.sa(), to.len),
              SyscallFailsWithErrno(EMSGSIZE));
  EXPECT_THAT(sendto(s.get(), big.data(), 65507, 0, to.sa(), to.len),
              SyscallSucceedsWithValue(65507));
}

TEST_P(UdpTest, SendWithoutAddressUnconnectedIsEdestaddrreq) {
  FileDescriptor s = Udp(F());
  EXPECT_THAT(send(s.get(), "x", 1, 0), SyscallFailsWithErrno(EDESTADDRREQ));
  EXPECT_THAT(write(s.get(), "x", 1), SyscallFailsWithErrno(EDESTADDRREQ));
}

TEST_P(UdpTest, MsgOob) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = Udp(F());
  if (!V6()) {
    // udp_sendmsg refuses it; udpv6_sendmsg does not look.
    EXPECT_THAT(sendto(s.get(), "x", 1, MSG_OOB, ra.sa(), ra.len),
                SyscallFailsWithErrno(EOPNOTSUPP));
  } else {
    EXPECT_THAT(sendto(s.get(), "x", 1, MSG_OOB, ra.sa(), ra.len),
                SyscallSucceedsWithValue(1));
    // To a v4-mapped address it is udp_sendmsg's.
    Addr ra4;
    FileDescriptor r4 = BoundUdp(AF_INET, &ra4);
    Addr mapped = Addr::V6("::ffff:127.0.0.1", ra4.port());
    EXPECT_THAT(sendto(s.get(), "x", 1, MSG_OOB, mapped.sa(), mapped.len),
                SyscallFailsWithErrno(EOPNOTSUPP));
  }
}

TEST_P(UdpTest, ConnectSetsPeerAndSourceAddress) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = Udp(F());
  ASSERT_THAT(connect(s.get(), ra.sa(), ra.len), SyscallSucceeds());
  Addr p;
  p.len = sizeof(p.ss);
  ASSERT_THAT(getpeername(s.get(), p.sa(), &p.len), SyscallSucceeds());
  EXPECT_EQ(p.port(), ra.port());
  Addr la = SockName(s.get());
  EXPECT_NE(la.port(), 0);
  EXPECT_EQ(la.ip(), V6() ? "::1" : "127.0.0.1");
  ASSERT_THAT(send(s.get(), "c", 1, 0), SyscallSucceedsWithValue(1));
  ASSERT_THAT(write(s.get(), "w", 1), SyscallSucceedsWithValue(1));
  char buf[4];
  EXPECT_THAT(read(r.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(1));
  EXPECT_EQ(buf[0], 'c');
  EXPECT_THAT(read(r.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(1));
  EXPECT_EQ(buf[0], 'w');
}

TEST_P(UdpTest, ConnectedSocketHearsOnlyItsPeer) {
  Addr ra, pa, oa;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor peer = BoundUdp(F(), &pa);
  FileDescriptor other = BoundUdp(F(), &oa);
  ASSERT_THAT(connect(r.get(), pa.sa(), pa.len), SyscallSucceeds());
  ASSERT_THAT(sendto(other.get(), "o", 1, 0, ra.sa(), ra.len),
              SyscallSucceeds());
  ASSERT_THAT(sendto(peer.get(), "p", 1, 0, ra.sa(), ra.len),
              SyscallSucceeds());
  char c = 0;
  ASSERT_THAT(recv(r.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'p');
  EXPECT_THAT(recv(r.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST_P(UdpTest, SendtoOtherAddressWhileConnected) {
  Addr ra, xa;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor x = BoundUdp(F(), &xa);
  FileDescriptor s = Udp(F());
  ASSERT_THAT(connect(s.get(), ra.sa(), ra.len), SyscallSucceeds());
  ASSERT_THAT(sendto(s.get(), "x", 1, 0, xa.sa(), xa.len), SyscallSucceeds());
  char c = 0;
  ASSERT_THAT(recv(x.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'x');
}

TEST_P(UdpTest, ConnectedBeatsUnconnectedOnOnePort) {
  Addr pa, qa;
  FileDescriptor peer = BoundUdp(F(), &pa);
  FileDescriptor stranger = BoundUdp(F(), &qa);
  FileDescriptor a = Udp(F()), b = Udp(F());
  ASSERT_THAT(SetInt(a.get(), SOL_SOCKET, SO_REUSEADDR, 1), SyscallSucceeds());
  ASSERT_THAT(SetInt(b.get(), SOL_SOCKET, SO_REUSEADDR, 1), SyscallSucceeds());
  Addr lo = Addr::Loopback(F());
  ASSERT_THAT(bind(a.get(), lo.sa(), lo.len), SyscallSucceeds());
  Addr port = SockName(a.get());
  ASSERT_THAT(bind(b.get(), port.sa(), port.len), SyscallSucceeds());
  // b hears `peer` only; a, bound earlier, everything else.
  ASSERT_THAT(connect(b.get(), pa.sa(), pa.len), SyscallSucceeds());
  ASSERT_THAT(sendto(peer.get(), "P", 1, 0, port.sa(), port.len),
              SyscallSucceeds());
  ASSERT_THAT(sendto(stranger.get(), "S", 1, 0, port.sa(), port.len),
              SyscallSucceeds());
  char c = 0;
  ASSERT_THAT(recv(b.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'P');
  ASSERT_THAT(recv(a.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'S');
  EXPECT_THAT(recv(a.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
  EXPECT_THAT(recv(b.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST_P(UdpTest, ReuseAddrNewestSocketWins) {
  // Two unconnected SO_REUSEADDR sockets on one address and port: the one
  // bound last is first in the hash chain (hlist_add_head_rcu) and gets
  // every unicast datagram.
  FileDescriptor a = Udp(F()), b = Udp(F());
  ASSERT_THAT(SetInt(a.get(), SOL_SOCKET, SO_REUSEADDR, 1), SyscallSucceeds());
  ASSERT_THAT(SetInt(b.get(), SOL_SOCKET, SO_REUSEADDR, 1), SyscallSucceeds());
  Addr lo = Addr::Loopback(F());
  ASSERT_THAT(bind(a.get(), lo.sa(), lo.len), SyscallSucceeds());
  Addr port = SockName(a.get());
  ASSERT_THAT(bind(b.get(), port.sa(), port.len), SyscallSucceeds());
  FileDescriptor s = Udp(F());
  for (int i = 0; i < 3; ++i) {
    ASSERT_THAT(sendto(s.get(), "n", 1, 0, port.sa(), port.len),
                SyscallSucceeds());
  }
  char c;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(PollFor(b.get(), POLLIN) & POLLIN, POLLIN);
    EXPECT_THAT(recv(b.get(), &c, 1, MSG_DONTWAIT), SyscallSucceeds());
  }
  EXPECT_EQ(PollFor(a.get(), POLLIN, 50), 0);
}

TEST_P(UdpTest, DisconnectWithAfUnspec) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  sockaddr unspec = {};
  unspec.sa_family = AF_UNSPEC;
  // __udp_disconnect: the address is kept if bind(2) chose it, the port if
  // bind(2) named it; otherwise they are given up.
  Addr sa;
  FileDescriptor s = BoundUdp(F(), &sa);  // address chosen, port 0
  FileDescriptor t = Udp(F());            // autobound by connect
  FileDescriptor u = Udp(F());            // port chosen, wildcard address
  const uint16_t port = ClosedPort(F());
  Addr up = Addr::Any(F(), port);
  ASSERT_THAT(bind(u.get(), up.sa(), up.len), SyscallSucceeds());
  for (int fd : {s.get(), t.get(), u.get()}) {
    ASSERT_THAT(connect(fd, ra.sa(), ra.len), SyscallSucceeds());
    EXPECT_NE(SockName(fd).port(), 0);
    EXPECT_EQ(SockName(fd).ip(), V6() ? "::1" : "127.0.0.1");
    ASSERT_THAT(connect(fd, &unspec, sizeof(unspec)), SyscallSucceeds());
    Addr p;
    p.len = sizeof(p.ss);
    EXPECT_THAT(getpeername(fd, p.sa(), &p.len),
                SyscallFailsWithErrno(ENOTCONN));
  }
  Addr s2 = SockName(s.get());
  EXPECT_EQ(s2.port(), 0);
  EXPECT_EQ(s2.ip(), sa.ip());
  Addr t2 = SockName(t.get());
  EXPECT_EQ(t2.port(), 0);
  EXPECT_EQ(t2.ip(), V6() ? "::" : "0.0.0.0");
  Addr u2 = SockName(u.get());
  EXPECT_EQ(u2.port(), port);
  EXPECT_EQ(u2.ip(), V6() ? "::" : "0.0.0.0");
  // A send without an address: EDESTADDRREQ (after the autobind of
  // inet_send_prepare, which gives `s` a new port).
  EXPECT_THAT(send(s.get(), "x", 1, 0), SyscallFailsWithErrno(EDESTADDRREQ));
  EXPECT_NE(SockName(s.get()).port(), 0);
  EXPECT_THAT(send(u.get(), "x", 1, 0), SyscallFailsWithErrno(EDESTADDRREQ));
  EXPECT_EQ(SockName(u.get()).port(), port);
  // Disconnecting an unconnected socket is fine too.
  FileDescriptor v = Udp(F());
  EXPECT_THAT(connect(v.get(), &unspec, sizeof(unspec)), SyscallSucceeds());
  EXPECT_THAT(connect(v.get(), &unspec, 1), SyscallFailsWithErrno(EINVAL));
}

TEST_P(UdpTest, ConnectBadAddresses) {
  FileDescriptor s = Udp(F());
  Addr lo = Addr::Loopback(F(), 9);
  // sizeof(sockaddr_in) / SIN6_LEN_RFC2133 (24) at least.
  EXPECT_THAT(connect(s.get(), lo.sa(), V6() ? 23 : lo.len - 1),
              SyscallFailsWithErrno(EINVAL));
  Addr bad = lo;
  bad.ss.ss_family = AF_UNIX;
  EXPECT_THAT(connect(s.get(), bad.sa(), bad.len),
              SyscallFailsWithErrno(EAFNOSUPPORT));
  if (!V6()) {
    Addr six = Addr::V6("::1", 9);
    EXPECT_THAT(connect(s.get(), six.sa(), six.len),
                SyscallFailsWithErrno(EAFNOSUPPORT));
  }
}

TEST_P(UdpTest, SendtoAddressChecks) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = Udp(F());
  Addr shortaddr = ra;
  EXPECT_THAT(sendto(s.get(), "x", 1, 0, shortaddr.sa(), V6() ? 23 : 15),
              SyscallFailsWithErrno(EINVAL));
  Addr port0 = Addr::Loopback(F(), 0);
  EXPECT_THAT(sendto(s.get(), "x", 1, 0, port0.sa(), port0.len),
              SyscallFailsWithErrno(EINVAL));
  Addr unix_family = ra;
  unix_family.ss.ss_family = AF_UNIX;
  // udp_sendmsg: EAFNOSUPPORT; udpv6_sendmsg: EINVAL.
  EXPECT_THAT(sendto(s.get(), "x", 1, 0, unix_family.sa(), unix_family.len),
              SyscallFailsWithErrno(V6() ? EINVAL : EAFNOSUPPORT));
  // AF_UNSPEC: udp_sendmsg reads it as AF_INET; udpv6_sendmsg as "no
  // address" (EDESTADDRREQ unconnected).
  Addr unspec = ra;
  unspec.ss.ss_family = AF_UNSPEC;
  if (!V6()) {
    ASSERT_THAT(sendto(s.get(), "u", 1, 0, unspec.sa(), unspec.len),
                SyscallSucceedsWithValue(1));
    char c;
    ASSERT_THAT(recv(r.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  } else {
    EXPECT_THAT(sendto(s.get(), "u", 1, 0, unspec.sa(), unspec.len),
                SyscallFailsWithErrno(EDESTADDRREQ));
  }
  // The wildcard destination is loopback.
  Addr any = Addr::Any(F(), ra.port());
  ASSERT_THAT(sendto(s.get(), "w", 1, 0, any.sa(), any.len),
              SyscallSucceedsWithValue(1));
  char c;
  ASSERT_EQ(PollFor(r.get(), POLLIN) & POLLIN, POLLIN);
  ASSERT_THAT(recv(r.get(), &c, 1, MSG_DONTWAIT), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'w');
}

TEST(UdpV6Test, ConnectWithSockaddrIn) {
  // ip6_datagram_connect takes an AF_INET address as its v4-mapped form.
  Addr ra;
  FileDescriptor r = BoundUdp(AF_INET, &ra);
  FileDescriptor s = Udp(AF_INET6);
  ASSERT_THAT(connect(s.get(), ra.sa(), ra.len), SyscallSucceeds());
  Addr p;
  p.len = sizeof(p.ss);
  ASSERT_THAT(getpeername(s.get(), p.sa(), &p.len), SyscallSucceeds());
  EXPECT_EQ(p.family(), AF_INET6);
  EXPECT_EQ(p.ip(), "::ffff:127.0.0.1");
  EXPECT_EQ(p.port(), ra.port());
  EXPECT_EQ(SockName(s.get()).ip(), "::ffff:127.0.0.1");
  ASSERT_THAT(send(s.get(), "4", 1, 0), SyscallSucceedsWithValue(1));
  char c;
  ASSERT_THAT(recv(r.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  FileDescriptor only = Udp(AF_INET6);
  ASSERT_THAT(SetInt(only.get(), SOL_IPV6, IPV6_V6ONLY, 1), SyscallSucceeds());
  EXPECT_THAT(connect(only.get(), ra.sa(), ra.len),
              SyscallFailsWithErrno(EAFNOSUPPORT));
}

TEST_P(UdpTest, ConnectionRefusedReportedOnNextCall) {
  Addr to = Addr::Loopback(F(), ClosedPort(F()));
  FileDescriptor s = Udp(F());
  ASSERT_THAT(connect(s.get(), to.sa(), to.len), SyscallSucceeds());
  ASSERT_THAT(send(s.get(), "x", 1, 0), SyscallSucceedsWithValue(1));
  // The ICMP port unreachable comes back over loopback; POLLERR once it is
  // in (bounded wait).
  EXPECT_EQ(PollFor(s.get(), POLLERR) & POLLERR, POLLERR);
  char c;
  EXPECT_THAT(recv(s.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(ECONNREFUSED));
  // Reported once.
  EXPECT_THAT(recv(s.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
  // Again through send (which then sends nothing: sock_alloc_send_pskb
  // takes the error first), then SO_ERROR.
  ASSERT_THAT(send(s.get(), "x", 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(PollFor(s.get(), POLLERR) & POLLERR, POLLERR);
  EXPECT_THAT(send(s.get(), "x", 1, 0), SyscallFailsWithErrno(ECONNREFUSED));
  EXPECT_EQ(PollFor(s.get(), POLLERR, 100), 0);
  ASSERT_THAT(send(s.get(), "x", 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(PollFor(s.get(), POLLERR) & POLLERR, POLLERR);
  EXPECT_EQ(GetInt(s.get(), SOL_SOCKET, SO_ERROR), ECONNREFUSED);
  EXPECT_EQ(GetInt(s.get(), SOL_SOCKET, SO_ERROR), 0);
}

TEST_P(UdpTest, UnconnectedSendToClosedPortReportsNothing) {
  Addr to = Addr::Loopback(F(), ClosedPort(F()));
  FileDescriptor s = Udp(F());
  ASSERT_THAT(sendto(s.get(), "x", 1, 0, to.sa(), to.len),
              SyscallSucceedsWithValue(1));
  ASSERT_THAT(sendto(s.get(), "x", 1, 0, to.sa(), to.len),
              SyscallSucceedsWithValue(1));
  EXPECT_EQ(PollFor(s.get(), POLLIN | POLLERR, 100), 0);
  EXPECT_EQ(GetInt(s.get(), SOL_SOCKET, SO_ERROR), 0);
}

TEST_P(UdpTest, RecvErrQueueGivesIcmpError) {
  const uint16_t port = ClosedPort(F());
  Addr to = Addr::Loopback(F(), port);
  FileDescriptor s = Udp(F());
  ASSERT_THAT(SetInt(s.get(), IpLevel(), V6() ? IPV6_RECVERR : IP_RECVERR, 1),
              SyscallSucceeds());
  ASSERT_THAT(connect(s.get(), to.sa(), to.len), SyscallSucceeds());
  ASSERT_THAT(send(s.get(), "payload", 7, 0), SyscallSucceedsWithValue(7));
  EXPECT_EQ(PollFor(s.get(), POLLERR) & POLLERR, POLLERR);
  char data[64] = {};
  char ctl[256] = {};
  Addr name;
  iovec iov = {data, sizeof(data)};
  msghdr m = {};
  m.msg_name = name.sa();
  m.msg_namelen = sizeof(name.ss);
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof(ctl);
  ASSERT_THAT(recvmsg(s.get(), &m, MSG_ERRQUEUE), SyscallSucceedsWithValue(7));
  EXPECT_EQ(std::string(data, 7), "payload");
  EXPECT_EQ(m.msg_flags & MSG_ERRQUEUE, MSG_ERRQUEUE);
  // msg_name: the destination of the datagram that failed.
  EXPECT_EQ(name.family(), F());
  EXPECT_EQ(name.port(), port);
  EXPECT_EQ(name.ip(), V6() ? "::1" : "127.0.0.1");
  cmsghdr* cm = CMSG_FIRSTHDR(&m);
  ASSERT_NE(cm, nullptr);
  EXPECT_EQ(cm->cmsg_level, IpLevel());
  EXPECT_EQ(cm->cmsg_type, V6() ? IPV6_RECVERR : IP_RECVERR);
  const size_t off_len = V6() ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  EXPECT_EQ(cm->cmsg_len, CMSG_LEN(sizeof(sock_extended_err) + off_len));
  sock_extended_err ee;
  memcpy(&ee, CMSG_DATA(cm), sizeof(ee));
  EXPECT_EQ(ee.ee_errno, static_cast<uint32_t>(ECONNREFUSED));
  EXPECT_EQ(ee.ee_origin, V6() ? SO_EE_ORIGIN_ICMP6 : SO_EE_ORIGIN_ICMP);
  EXPECT_EQ(ee.ee_type, V6() ? 1 : 3);  // destination unreachable
  EXPECT_EQ(ee.ee_code, V6() ? 4 : 3);  // port unreachable
  EXPECT_EQ(ee.ee_info, 0u);
  // The offender: who sent the ICMP error (loopback).
  Addr off;
  memcpy(&off.ss, CMSG_DATA(cm) + sizeof(ee), off_len);
  EXPECT_EQ(off.family(), F());
  EXPECT_EQ(off.ip(), V6() ? "::1" : "127.0.0.1");
  EXPECT_EQ(CMSG_NXTHDR(&m, cm), nullptr);
  // Reading the queue cleared the pending error.
  EXPECT_EQ(GetInt(s.get(), SOL_SOCKET, SO_ERROR), 0);
  EXPECT_THAT(recvmsg(s.get(), &m, MSG_ERRQUEUE | MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
  EXPECT_EQ(PollFor(s.get(), POLLERR, 0), 0);
}

TEST_P(UdpTest, ErrQueueCarriesTheIcmpPacketsCmsgs) {
  Addr to = Addr::Loopback(F(), ClosedPort(F()));
  FileDescriptor s = Udp(F());
  if (!V6()) {
    ASSERT_THAT(SetInt(s.get(), SOL_IP, IP_RECVERR, 1), SyscallSucceeds());
    ASSERT_THAT(SetInt(s.get(), SOL_IP, IP_PKTINFO, 1), SyscallSucceeds());
    ASSERT_THAT(SetInt(s.get(), SOL_IP, IP_RECVTTL, 1), SyscallSucceeds());
    ASSERT_THAT(SetInt(s.get(), SOL_IP, IP_RECVTOS, 1), SyscallSucceeds());
  } else {
    ASSERT_THAT(SetInt(s.get(), SOL_IPV6, IPV6_RECVERR, 1), SyscallSucceeds());
    ASSERT_THAT(SetInt(s.get(), SOL_IPV6, IPV6_RECVPKTINFO, 1),
                SyscallSucceeds());
    ASSERT_THAT(SetInt(s.get(), SOL_IPV6, IPV6_RECVHOPLIMIT, 1),
                SyscallSucceeds());
    ASSERT_THAT(SetInt(s.get(), SOL_IPV6, IPV6_RECVTCLASS, 1),
                SyscallSucceeds());
  }
  ASSERT_THAT(SetInt(s.get(), SOL_SOCKET, SO_TIMESTAMP, 1), SyscallSucceeds());
  ASSERT_THAT(sendto(s.get(), "e", 1, 0, to.sa(), to.len), SyscallSucceeds());
  ASSERT_EQ(PollFor(s.get(), POLLERR) & POLLERR, POLLERR);
  char data[8];
  alignas(cmsghdr) char ctl[512];
  iovec iov = {data, sizeof(data)};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof(ctl);
  ASSERT_THAT(recvmsg(s.get(), &m, MSG_ERRQUEUE), SyscallSucceedsWithValue(1));
  // The timestamp, the ICMP packet's cmsgs, then the report.
  std::vector<std::pair<int, int>> got;
  int ttl = -1, tclass = -1;
  uint8_t tos = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    got.push_back({c->cmsg_level, c->cmsg_type});
    if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_TTL) {
      memcpy(&ttl, CMSG_DATA(c), sizeof(ttl));
    }
    if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_TOS) tos = *CMSG_DATA(c);
    if (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_HOPLIMIT) {
      memcpy(&ttl, CMSG_DATA(c), sizeof(ttl));
    }
    if (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_TCLASS) {
      memcpy(&tclass, CMSG_DATA(c), sizeof(tclass));
    }
  }
  std::vector<std::pair<int, int>> want;
  if (!V6()) {
    want = {{SOL_SOCKET, SCM_TIMESTAMP},
            {SOL_IP, IP_PKTINFO},
            {SOL_IP, IP_TTL},
            {SOL_IP, IP_TOS},
            {SOL_IP, IP_RECVERR}};
  } else {
    want = {{SOL_SOCKET, SCM_TIMESTAMP},
            {SOL_IPV6, IPV6_PKTINFO},
            {SOL_IPV6, IPV6_HOPLIMIT},
            {SOL_IPV6, IPV6_TCLASS},
            {SOL_IPV6, IPV6_RECVERR}};
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(ttl, 64);
  if (!V6()) {
    EXPECT_EQ(tos, 0xc0);  // IPTOS_PREC_INTERNETCONTROL
  } else {
    EXPECT_EQ(tclass, 0);
  }
}

TEST_P(UdpTest, RecvErrOnUnconnectedSocket) {
  Addr to = Addr::Loopback(F(), ClosedPort(F()));
  FileDescriptor s = Udp(F());
  ASSERT_THAT(SetInt(s.get(), IpLevel(), V6() ? IPV6_RECVERR : IP_RECVERR, 1),
              SyscallSucceeds());
  ASSERT_THAT(sendto(s.get(), "ab", 2, 0, to.sa(), to.len),
              SyscallSucceedsWithValue(2));
  EXPECT_EQ(PollFor(s.get(), POLLERR) & POLLERR, POLLERR);
  // With IP_RECVERR the error is also pending for the next call.
  char buf[8];
  EXPECT_THAT(recv(s.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallFailsWithErrno(ECONNREFUSED));
  // The queue still holds the report; a short buffer truncates it.
  char ctl[256];
  iovec iov = {buf, 1};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof(ctl);
  EXPECT_THAT(recvmsg(s.get(), &m, MSG_ERRQUEUE), SyscallSucceedsWithValue(1));
  EXPECT_EQ(m.msg_flags & (MSG_TRUNC | MSG_ERRQUEUE), MSG_TRUNC | MSG_ERRQUEUE);
}

TEST_P(UdpTest, ReadinessExact) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  pollfd p = {r.get(),
              static_cast<short>(POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM |
                                 POLLWRBAND | POLLPRI | POLLRDHUP),
              0};
  ASSERT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents, POLLOUT | POLLWRNORM | POLLWRBAND);
  FileDescriptor fresh = Udp(F());
  p.fd = fresh.get();
  ASSERT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents, POLLOUT | POLLWRNORM | POLLWRBAND);
  FileDescriptor s = Udp(F());
  ASSERT_THAT(sendto(s.get(), "x", 1, 0, ra.sa(), ra.len), SyscallSucceeds());
  p.fd = r.get();
  ASSERT_THAT(poll(&p, 1, 10000), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents, POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM | POLLWRBAND);
  // epoll edge-triggered: one event per arrival.
  int ep = epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  FileDescriptor epfd(ep);
  epoll_event ev = {};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.u32 = 7;
  ASSERT_THAT(epoll_ctl(ep, EPOLL_CTL_ADD, r.get(), &ev), SyscallSucceeds());
  epoll_event out[2];
  EXPECT_THAT(epoll_wait(ep, out, 2, 0), SyscallSucceedsWithValue(1));
  EXPECT_THAT(epoll_wait(ep, out, 2, 0), SyscallSucceedsWithValue(0));
  ASSERT_THAT(sendto(s.get(), "y", 1, 0, ra.sa(), ra.len), SyscallSucceeds());
  ASSERT_THAT(epoll_wait(ep, out, 2, 10000), SyscallSucceedsWithValue(1));
  EXPECT_EQ(out[0].data.u32, 7u);
  EXPECT_EQ(out[0].events, static_cast<uint32_t>(EPOLLIN));
  char buf[4];
  ASSERT_THAT(recv(r.get(), buf, sizeof(buf), 0), SyscallSucceeds());
  ASSERT_THAT(recv(r.get(), buf, sizeof(buf), 0), SyscallSucceeds());
  p.fd = r.get();
  ASSERT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents, POLLOUT | POLLWRNORM | POLLWRBAND);
}

TEST_P(UdpTest, BlockingRecvWokenBySend) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  std::thread sender([&] {
    usleep(50 * 1000);
    FileDescriptor s = Udp(F());
    sendto(s.get(), "late", 4, 0, ra.sa(), ra.len);
  });
  timeval tv = {10, 0};
  ASSERT_THAT(setsockopt(r.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
              SyscallSucceeds());
  char buf[8];
  EXPECT_THAT(recv(r.get(), buf, sizeof(buf), 0), SyscallSucceedsWithValue(4));
  sender.join();
}

void NoopHandler(int) {}

TEST_P(UdpTest, BlockingRecvInterruptedBySignal) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  struct sigaction sa = {}, old = {};
  sa.sa_handler = NoopHandler;  // no SA_RESTART
  ASSERT_THAT(sigaction(SIGUSR1, &sa, &old), SyscallSucceeds());
  // SO_RCVTIMEO bounds the wait (and makes the interrupted wait EINTR).
  timeval tv = {10, 0};
  ASSERT_THAT(setsockopt(r.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
              SyscallSucceeds());
  const pthread_t self = pthread_self();
  std::thread killer([self] {
    usleep(50 * 1000);
    pthread_kill(self, SIGUSR1);
  });
  char c;
  EXPECT_THAT(recv(r.get(), &c, 1, 0), SyscallFailsWithErrno(EINTR));
  killer.join();
  sigaction(SIGUSR1, &old, nullptr);
}

TEST_P(UdpTest, RecvTimeout) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  timeval tv = {0, 20000};
  ASSERT_THAT(setsockopt(r.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
              SyscallSucceeds());
  char buf[8];
  EXPECT_THAT(recv(r.get(), buf, sizeof(buf), 0),
              SyscallFailsWithErrno(EAGAIN));
}

TEST_P(UdpTest, FionreadIsNextDatagramSize) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  int n = -1;
  ASSERT_THAT(ioctl(r.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 0);
  FileDescriptor s = Udp(F());
  ASSERT_THAT(sendto(s.get(), "abc", 3, 0, ra.sa(), ra.len), SyscallSucceeds());
  ASSERT_THAT(sendto(s.get(), "0123456789", 10, 0, ra.sa(), ra.len),
              SyscallSucceeds());
  ASSERT_EQ(PollFor(r.get(), POLLIN) & POLLIN, POLLIN);
  ASSERT_THAT(ioctl(r.get(), SIOCINQ, &n), SyscallSucceeds());
  EXPECT_EQ(n, 3);
  char buf[16];
  ASSERT_THAT(recv(r.get(), buf, sizeof(buf), 0), SyscallSucceeds());
  ASSERT_THAT(ioctl(r.get(), FIONREAD, &n), SyscallSucceeds());
  EXPECT_EQ(n, 10);
  // Nothing waits in the send queue of a loopback sender.
  ASSERT_THAT(ioctl(s.get(), SIOCOUTQ, &n), SyscallSucceeds());
  EXPECT_EQ(n, 0);
}

TEST_P(UdpTest, LoopbackSendNeverBlocksAndFullReceiverDrops) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  ASSERT_THAT(SetInt(r.get(), SOL_SOCKET, SO_RCVBUF, 4096), SyscallSucceeds());
  const int rcvbuf = GetInt(r.get(), SOL_SOCKET, SO_RCVBUF);
  FileDescriptor s = Udp(F(), SOCK_NONBLOCK);
  ASSERT_THAT(SetInt(s.get(), SOL_SOCKET, SO_SNDBUF, 1), SyscallSucceeds());
  std::vector<char> d(1000, 'd');
  const int kSent = 100;
  for (int i = 0; i < kSent; ++i) {
    ASSERT_THAT(sendto(s.get(), d.data(), d.size(), 0, ra.sa(), ra.len),
                SyscallSucceedsWithValue(d.size()))
        << i;
  }
  // A datagram larger than SO_SNDBUF goes too (the send buffer is empty).
  std::vector<char> big(16000, 'b');
  ASSERT_THAT(sendto(s.get(), big.data(), big.size(), 0, ra.sa(), ra.len),
              SyscallSucceedsWithValue(big.size()));
  int got = 0;
  char buf[2048];
  while (recv(r.get(), buf, sizeof(buf), MSG_DONTWAIT) >= 0 && got <= kSent) {
    ++got;
  }
  EXPECT_GE(got, 1);
  EXPECT_LT(got, kSent);
  EXPECT_LE(got * 1000, rcvbuf + 1000);
  // The drops column of /proc/net/udp(6) counts the rest.
  struct stat st;
  ASSERT_THAT(fstat(r.get(), &st), SyscallSucceeds());
  std::string path = V6() ? "/proc/net/udp6" : "/proc/net/udp";
  std::istringstream in(ReadFileOrEmpty(path));
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::vector<std::string> col;
    std::string w;
    while (f >> w) col.push_back(w);
    // sl local rem st tx:rx tr:tm retrnsmt uid timeout inode ref ptr drops
    if (col.size() < 13 || col[9] != std::to_string(st.st_ino)) continue;
    found = true;
    EXPECT_EQ(std::stoll(col[12]), kSent + 1 - got);
  }
  EXPECT_TRUE(found) << path;
}

// A counter of the Udp MIB: /proc/net/snmp's "Udp:" lines (IPv4) or
// /proc/net/snmp6's "Udp6NAME N" (IPv6); -1 if absent.
long long UdpCounter(bool v6, const std::string& name) {
  if (v6) {
    std::istringstream in(ReadFileOrEmpty("/proc/net/snmp6"));
    std::string k;
    long long v;
    while (in >> k >> v) {
      if (k == "Udp6" + name) return v;
    }
    return -1;
  }
  std::istringstream in(ReadFileOrEmpty("/proc/net/snmp"));
  std::string line, names;
  while (std::getline(in, line)) {
    if (line.rfind("Udp: ", 0) != 0) continue;
    if (names.empty()) {
      names = line;
      continue;
    }
    std::istringstream n(names), v(line);
    std::string key, val;
    while (n >> key && v >> val) {
      if (key == name) return std::stoll(val);
    }
  }
  return -1;
}

TEST_P(UdpTest, SnmpCountersMove) {
  const long long in0 = UdpCounter(V6(), "InDatagrams");
  const long long out0 = UdpCounter(V6(), "OutDatagrams");
  const long long noports0 = UdpCounter(V6(), "NoPorts");
  if (in0 < 0 || out0 < 0 || noports0 < 0) {
    GTEST_SKIP() << "no Udp counters in /proc/net/snmp(6)";
  }
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = Udp(F());
  ASSERT_THAT(sendto(s.get(), "c", 1, 0, ra.sa(), ra.len), SyscallSucceeds());
  char c;
  ASSERT_THAT(recv(r.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  Addr closed = Addr::Loopback(F(), ClosedPort(F()));
  ASSERT_THAT(sendto(s.get(), "c", 1, 0, closed.sa(), closed.len),
              SyscallSucceeds());
  // Other processes may count too: at least ours.
  EXPECT_GE(UdpCounter(V6(), "InDatagrams"), in0 + 1);
  EXPECT_GE(UdpCounter(V6(), "OutDatagrams"), out0 + 2);
  EXPECT_GE(UdpCounter(V6(), "NoPorts"), noports0 + 1);
}

TEST_P(UdpTest, FullReceiverCountsRcvbufErrors) {
  const long long before = UdpCounter(V6(), "RcvbufErrors");
  if (before < 0) GTEST_SKIP() << "no Udp counters in /proc/net/snmp(6)";
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  ASSERT_THAT(SetInt(r.get(), SOL_SOCKET, SO_RCVBUF, 4096), SyscallSucceeds());
  FileDescriptor s = Udp(F());
  std::vector<char> d(1000, 'd');
  for (int i = 0; i < 50; ++i) {
    ASSERT_THAT(sendto(s.get(), d.data(), d.size(), 0, ra.sa(), ra.len),
                SyscallSucceeds());
  }
  int got = 0;
  char buf[2048];
  while (got <= 50 && recv(r.get(), buf, sizeof(buf), MSG_DONTWAIT) >= 0) ++got;
  ASSERT_LT(got, 50);
  EXPECT_GE(UdpCounter(V6(), "RcvbufErrors"), before + (50 - got));
}

TEST_P(UdpTest, SoBroadcastNeededForLoopbackBroadcast) {
  if (V6()) GTEST_SKIP() << "IPv6 has no broadcast";
  Addr ra;
  FileDescriptor r = Udp(AF_INET);
  Addr any = Addr::Any(AF_INET);
  ASSERT_THAT(bind(r.get(), any.sa(), any.len), SyscallSucceeds());
  ra = SockName(r.get());
  // 127.255.255.255 is lo's broadcast address (the local table's
  // "broadcast 127.255.255.255 dev lo"); 255.255.255.255 from a socket
  // bound to 127.0.0.1 routes out of lo.
  Addr bcast = Addr::V4("127.255.255.255", ra.port());
  Addr limited = Addr::V4("255.255.255.255", ra.port());
  Addr sa;
  FileDescriptor s = BoundUdp(AF_INET, &sa);
  EXPECT_EQ(GetInt(s.get(), SOL_SOCKET, SO_BROADCAST), 0);
  EXPECT_THAT(sendto(s.get(), "b", 1, 0, bcast.sa(), bcast.len),
              SyscallFailsWithErrno(EACCES));
  EXPECT_THAT(sendto(s.get(), "b", 1, 0, limited.sa(), limited.len),
              SyscallFailsWithErrno(EACCES));
  EXPECT_THAT(connect(s.get(), bcast.sa(), bcast.len),
              SyscallFailsWithErrno(EACCES));
  ASSERT_THAT(SetInt(s.get(), SOL_SOCKET, SO_BROADCAST, 1), SyscallSucceeds());
  ASSERT_THAT(sendto(s.get(), "B", 1, 0, bcast.sa(), bcast.len),
              SyscallSucceedsWithValue(1));
  char c = 0;
  ASSERT_EQ(PollFor(r.get(), POLLIN) & POLLIN, POLLIN);
  ASSERT_THAT(recv(r.get(), &c, 1, MSG_DONTWAIT), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'B');
}

TEST(UdpV4Test, MulticastOverLoopback) {
  // A group joined on lo (by its address 127.0.0.1) and a sender whose
  // source is on lo: the sockets on the port get one copy each.
  const uint16_t port = ClosedPort(AF_INET);
  auto receiver = [&](bool join) {
    FileDescriptor r = Udp(AF_INET);
    EXPECT_THAT(SetInt(r.get(), SOL_SOCKET, SO_REUSEADDR, 1),
                SyscallSucceeds());
    Addr any = Addr::Any(AF_INET, port);
    EXPECT_THAT(bind(r.get(), any.sa(), any.len), SyscallSucceeds());
    if (join) {
      ip_mreq m = {};
      inet_pton(AF_INET, "224.1.1.1", &m.imr_multiaddr);
      inet_pton(AF_INET, "127.0.0.1", &m.imr_interface);
      EXPECT_THAT(setsockopt(r.get(), SOL_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m)),
                  SyscallSucceeds());
    }
    return r;
  };
  FileDescriptor joined = receiver(true);
  FileDescriptor other = receiver(false);
  ASSERT_THAT(SetInt(joined.get(), SOL_IP, IP_RECVTTL, 1), SyscallSucceeds());
  Addr sa;
  FileDescriptor s = BoundUdp(AF_INET, &sa);
  Addr group = Addr::V4("224.1.1.1", port);
  ASSERT_THAT(sendto(s.get(), "mc", 2, 0, group.sa(), group.len),
              SyscallSucceedsWithValue(2));
  char buf[8];
  char ctl[64];
  iovec iov = {buf, sizeof(buf)};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof(ctl);
  ASSERT_EQ(PollFor(joined.get(), POLLIN) & POLLIN, POLLIN);
  ASSERT_THAT(recvmsg(joined.get(), &m, MSG_DONTWAIT),
              SyscallSucceedsWithValue(2));
  cmsghdr* cm = CMSG_FIRSTHDR(&m);
  ASSERT_NE(cm, nullptr);
  int ttl = 0;
  memcpy(&ttl, CMSG_DATA(cm), sizeof(ttl));
  EXPECT_EQ(ttl, 1);  // IP_MULTICAST_TTL's default
  // IP_MULTICAST_ALL (default on): a socket on the port that did not join
  // gets it too; exactly one copy each.
  ASSERT_EQ(PollFor(other.get(), POLLIN) & POLLIN, POLLIN);
  EXPECT_THAT(recv(other.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallSucceedsWithValue(2));
  EXPECT_EQ(PollFor(joined.get(), POLLIN, 50), 0);
  EXPECT_EQ(PollFor(other.get(), POLLIN, 0), 0);
  // IP_MULTICAST_IF naming lo lets an unbound socket send to the group.
  FileDescriptor u = Udp(AF_INET);
  in_addr lo;
  inet_pton(AF_INET, "127.0.0.1", &lo);
  ASSERT_THAT(setsockopt(u.get(), SOL_IP, IP_MULTICAST_IF, &lo, sizeof(lo)),
              SyscallSucceeds());
  ASSERT_THAT(sendto(u.get(), "if", 2, 0, group.sa(), group.len),
              SyscallSucceeds());
  ASSERT_EQ(PollFor(joined.get(), POLLIN) & POLLIN, POLLIN);
  EXPECT_THAT(recv(joined.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallSucceedsWithValue(2));
  ASSERT_EQ(PollFor(other.get(), POLLIN) & POLLIN, POLLIN);
  EXPECT_THAT(recv(other.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallSucceedsWithValue(2));
  // Without IP_MULTICAST_ALL only members hear it.
  ASSERT_THAT(SetInt(other.get(), SOL_IP, IP_MULTICAST_ALL, 0),
              SyscallSucceeds());
  ASSERT_THAT(sendto(s.get(), "m2", 2, 0, group.sa(), group.len),
              SyscallSucceeds());
  ASSERT_EQ(PollFor(joined.get(), POLLIN) & POLLIN, POLLIN);
  EXPECT_EQ(PollFor(other.get(), POLLIN, 50), 0);
  // A group nobody joined on lo: sent, heard by nobody.
  Addr group2 = Addr::V4("224.2.2.2", port);
  ASSERT_THAT(recv(joined.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallSucceeds());
  ASSERT_THAT(sendto(s.get(), "no", 2, 0, group2.sa(), group2.len),
              SyscallSucceedsWithValue(2));
  EXPECT_EQ(PollFor(joined.get(), POLLIN, 50), 0);
}

TEST_P(UdpTest, NoRouteOffLoopback) {
  // TEST-NET addresses: ENETUNREACH where nothing routes them (a namespace
  // with only lo, the sandbox's --network=none); a host with a default
  // route connects, and the case is skipped.
  FileDescriptor probe = Udp(F());
  Addr far = V6() ? Addr::V6("2001:db8::1", 9) : Addr::V4("192.0.2.1", 9);
  if (connect(probe.get(), far.sa(), far.len) == 0) {
    GTEST_SKIP() << "this host routes " << far.ip();
  }
  EXPECT_EQ(errno, ENETUNREACH);
  FileDescriptor s = Udp(F());
  EXPECT_THAT(sendto(s.get(), "x", 1, 0, far.sa(), far.len),
              SyscallFailsWithErrno(ENETUNREACH));
  // Multicast without a source on lo: no route either.
  Addr group = V6() ? Addr::V6("ff0e::1", 9) : Addr::V4("239.1.2.3", 9);
  EXPECT_THAT(sendto(s.get(), "x", 1, 0, group.sa(), group.len),
              SyscallFailsWithErrno(ENETUNREACH));
}

TEST_P(UdpTest, ReusePortSpreadsBySourceAndKeepsFlows) {
  FileDescriptor a = Udp(F()), b = Udp(F());
  ASSERT_THAT(SetInt(a.get(), SOL_SOCKET, SO_REUSEPORT, 1), SyscallSucceeds());
  ASSERT_THAT(SetInt(b.get(), SOL_SOCKET, SO_REUSEPORT, 1), SyscallSucceeds());
  Addr lo = Addr::Loopback(F());
  ASSERT_THAT(bind(a.get(), lo.sa(), lo.len), SyscallSucceeds());
  Addr port = SockName(a.get());
  ASSERT_THAT(bind(b.get(), port.sa(), port.len), SyscallSucceeds());
  const int kSenders = 32;
  std::vector<FileDescriptor> senders;
  for (int i = 0; i < kSenders; ++i) senders.push_back(Udp(F()));
  int at_a = 0, at_b = 0;
  char c;
  for (int round = 0; round < 2; ++round) {
    int ra = 0, rb = 0;
    for (auto& s : senders) {
      ASSERT_THAT(sendto(s.get(), "r", 1, 0, port.sa(), port.len),
                  SyscallSucceeds());
    }
    for (int i = 0; i < kSenders + 1; ++i) {
      if (recv(a.get(), &c, 1, MSG_DONTWAIT) == 1) ++ra;
      if (recv(b.get(), &c, 1, MSG_DONTWAIT) == 1) ++rb;
    }
    EXPECT_EQ(ra + rb, kSenders);
    if (round == 0) {
      at_a = ra;
      at_b = rb;
    } else {
      // The same sources reach the same sockets.
      EXPECT_EQ(ra, at_a);
      EXPECT_EQ(rb, at_b);
    }
  }
  // A hash of 32 sources puts some on each (all on one: p = 2^-31).
  EXPECT_GT(at_a, 0);
  EXPECT_GT(at_b, 0);
}

TEST_P(UdpTest, MsgMoreAndCorkBuildOneDatagram) {
  Addr ra, xa;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor x = BoundUdp(F(), &xa);
  FileDescriptor s = Udp(F());
  ASSERT_THAT(sendto(s.get(), "ab", 2, MSG_MORE, ra.sa(), ra.len),
              SyscallSucceedsWithValue(2));
  // Appended: the address of a later send is not looked at.
  ASSERT_THAT(sendto(s.get(), "cd", 2, MSG_MORE, xa.sa(), xa.len),
              SyscallSucceedsWithValue(2));
  EXPECT_EQ(PollFor(r.get(), POLLIN, 50), 0);
  int outq = -1;
  ASSERT_THAT(ioctl(s.get(), SIOCOUTQ, &outq), SyscallSucceeds());
  EXPECT_GT(outq, 0);
  ASSERT_THAT(send(s.get(), "ef", 2, 0), SyscallSucceedsWithValue(2));
  char buf[16];
  ASSERT_THAT(recv(r.get(), buf, sizeof(buf), 0), SyscallSucceedsWithValue(6));
  EXPECT_EQ(std::string(buf, 6), "abcdef");
  EXPECT_EQ(PollFor(x.get(), POLLIN, 0), 0);
  ASSERT_THAT(ioctl(s.get(), SIOCOUTQ, &outq), SyscallSucceeds());
  EXPECT_EQ(outq, 0);

  ASSERT_THAT(SetInt(s.get(), SOL_UDP, UDP_CORK, 1), SyscallSucceeds());
  EXPECT_EQ(GetInt(s.get(), SOL_UDP, UDP_CORK), 1);
  ASSERT_THAT(sendto(s.get(), "12", 2, 0, ra.sa(), ra.len), SyscallSucceeds());
  ASSERT_THAT(sendto(s.get(), "34", 2, 0, ra.sa(), ra.len), SyscallSucceeds());
  EXPECT_EQ(PollFor(r.get(), POLLIN, 50), 0);
  ASSERT_THAT(SetInt(s.get(), SOL_UDP, UDP_CORK, 0), SyscallSucceeds());
  ASSERT_THAT(recv(r.get(), buf, sizeof(buf), 0), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "1234");
}

TEST_P(UdpTest, UdpSegmentSplitsASend) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = Udp(F());
  if (SetInt(s.get(), SOL_UDP, UDP_SEGMENT, 100) != 0) {
    GTEST_SKIP() << "UDP_SEGMENT: " << strerror(errno);
  }
  EXPECT_EQ(GetInt(s.get(), SOL_UDP, UDP_SEGMENT), 100);
  std::vector<char> d(250, 'g');
  ASSERT_THAT(sendto(s.get(), d.data(), d.size(), 0, ra.sa(), ra.len),
              SyscallSucceedsWithValue(250));
  char buf[512];
  for (int want : {100, 100, 50}) {
    ASSERT_EQ(PollFor(r.get(), POLLIN) & POLLIN, POLLIN);
    EXPECT_THAT(recv(r.get(), buf, sizeof(buf), MSG_DONTWAIT),
                SyscallSucceedsWithValue(want));
  }
}

TEST_P(UdpTest, SolUdpOptions) {
  FileDescriptor s = Udp(F());
  EXPECT_EQ(GetInt(s.get(), SOL_UDP, UDP_CORK), 0);
  char small = 1;
  EXPECT_THAT(setsockopt(s.get(), SOL_UDP, UDP_CORK, &small, 1),
              SyscallFailsWithErrno(EINVAL));
  int v = 1;
  EXPECT_THAT(setsockopt(s.get(), SOL_UDP, 12345, &v, sizeof(v)),
              SyscallFailsWithErrno(ENOPROTOOPT));
  socklen_t l = sizeof(v);
  EXPECT_THAT(getsockopt(s.get(), SOL_UDP, 12345, &v, &l),
              SyscallFailsWithErrno(ENOPROTOOPT));
}

TEST_P(UdpTest, SendmmsgRecvmmsg) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = Udp(F());
  const char* words[3] = {"one", "three", "fifteen"};
  mmsghdr out[3] = {};
  iovec oiov[3];
  for (int i = 0; i < 3; ++i) {
    oiov[i] = {const_cast<char*>(words[i]), strlen(words[i])};
    out[i].msg_hdr.msg_iov = &oiov[i];
    out[i].msg_hdr.msg_iovlen = 1;
    out[i].msg_hdr.msg_name = ra.sa();
    out[i].msg_hdr.msg_namelen = ra.len;
  }
  ASSERT_THAT(sendmmsg(s.get(), out, 3, 0), SyscallSucceedsWithValue(3));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[i].msg_len, strlen(words[i]));
  char bufs[4][16];
  iovec iiov[4];
  mmsghdr in[4] = {};
  for (int i = 0; i < 4; ++i) {
    iiov[i] = {bufs[i], sizeof(bufs[i])};
    in[i].msg_hdr.msg_iov = &iiov[i];
    in[i].msg_hdr.msg_iovlen = 1;
  }
  ASSERT_EQ(PollFor(r.get(), POLLIN) & POLLIN, POLLIN);
  ASSERT_THAT(recvmmsg(r.get(), in, 4, MSG_DONTWAIT, nullptr),
              SyscallSucceedsWithValue(3));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(std::string(bufs[i], in[i].msg_len), words[i]);
  }
}

TEST_P(UdpTest, ShutdownOfUnconnectedSocket) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  // inet_shutdown: ENOTCONN for a socket that is not connected, but the
  // shutdown still takes effect.
  EXPECT_THAT(shutdown(r.get(), SHUT_RD), SyscallFailsWithErrno(ENOTCONN));
  pollfd p = {r.get(), static_cast<short>(POLLIN | POLLRDHUP | POLLOUT), 0};
  ASSERT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents, POLLIN | POLLRDHUP | POLLOUT);
  char c;
  EXPECT_THAT(recv(r.get(), &c, 1, 0), SyscallSucceedsWithValue(0));
}

TEST_P(UdpTest, ShutdownReadOfConnectedSocket) {
  Addr ra, pa;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor peer = BoundUdp(F(), &pa);
  ASSERT_THAT(connect(r.get(), pa.sa(), pa.len), SyscallSucceeds());
  ASSERT_THAT(sendto(peer.get(), "q", 1, 0, ra.sa(), ra.len),
              SyscallSucceeds());
  ASSERT_THAT(shutdown(r.get(), SHUT_RD), SyscallSucceeds());
  char c = 0;
  // What was queued is still read; then EOF.
  EXPECT_THAT(recv(r.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_THAT(recv(r.get(), &c, 1, 0), SyscallSucceedsWithValue(0));
  EXPECT_THAT(recv(r.get(), &c, 1, MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
  ASSERT_THAT(shutdown(r.get(), SHUT_WR), SyscallSucceeds());
  pollfd p = {r.get(), static_cast<short>(POLLIN | POLLOUT), 0};
  ASSERT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents & POLLHUP, POLLHUP);
}

TEST_P(UdpTest, ProcNetUdpRows) {
  Addr ra, pa;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor c = BoundUdp(F(), &pa);
  ASSERT_THAT(connect(c.get(), ra.sa(), ra.len), SyscallSucceeds());
  struct stat rs, cs;
  ASSERT_THAT(fstat(r.get(), &rs), SyscallSucceeds());
  ASSERT_THAT(fstat(c.get(), &cs), SyscallSucceeds());
  const std::string text =
      ReadFileOrEmpty(V6() ? "/proc/net/udp6" : "/proc/net/udp");
  std::istringstream in(text);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_THAT(line, ::testing::HasSubstr(
                        "st tx_queue rx_queue tr tm->when retrnsmt   uid  "
                        "timeout inode ref pointer drops"));
  char lo_hex[64];
  if (V6()) {
    snprintf(lo_hex, sizeof(lo_hex), "00000000000000000000000001000000");
  } else {
    snprintf(lo_hex, sizeof(lo_hex), "0100007F");
  }
  char want_r[128], want_c_local[128], want_c_rem[128];
  snprintf(want_r, sizeof(want_r), "%s:%04X", lo_hex, ra.port());
  snprintf(want_c_local, sizeof(want_c_local), "%s:%04X", lo_hex, pa.port());
  snprintf(want_c_rem, sizeof(want_c_rem), "%s:%04X", lo_hex, ra.port());
  int seen = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::vector<std::string> col;
    std::string w;
    while (f >> w) col.push_back(w);
    ASSERT_GE(col.size(), 13u) << line;
    if (col[9] == std::to_string(rs.st_ino)) {
      ++seen;
      EXPECT_EQ(col[1], want_r);
      EXPECT_EQ(col[3], "07");
      EXPECT_EQ(col[4], "00000000:00000000");
    } else if (col[9] == std::to_string(cs.st_ino)) {
      ++seen;
      EXPECT_EQ(col[1], want_c_local);
      EXPECT_EQ(col[2], want_c_rem);
      EXPECT_EQ(col[3], "01");
    }
  }
  EXPECT_EQ(seen, 2) << text;
}

TEST_P(UdpTest, RcvbufQueuedBytesInProcNet) {
  Addr ra;
  FileDescriptor r = BoundUdp(F(), &ra);
  FileDescriptor s = Udp(F());
  ASSERT_THAT(sendto(s.get(), "0123456789", 10, 0, ra.sa(), ra.len),
              SyscallSucceeds());
  ASSERT_EQ(PollFor(r.get(), POLLIN) & POLLIN, POLLIN);
  struct stat st;
  ASSERT_THAT(fstat(r.get(), &st), SyscallSucceeds());
  std::istringstream in(
      ReadFileOrEmpty(V6() ? "/proc/net/udp6" : "/proc/net/udp"));
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::vector<std::string> col;
    std::string w;
    while (f >> w) col.push_back(w);
    if (col.size() < 13 || col[9] != std::to_string(st.st_ino)) continue;
    found = true;
    // tx_queue:rx_queue: rx is the memory the queue holds (truesize), so
    // only "more than the payload" is certain.
    unsigned tx = 0, rx = 0;
    ASSERT_EQ(sscanf(col[4].c_str(), "%x:%x", &tx, &rx), 2);
    EXPECT_EQ(tx, 0u);
    EXPECT_GE(rx, 10u);
  }
  EXPECT_TRUE(found);
}

TEST(UdpV6Test, V4MappedDeliveryAndV6Only) {
  FileDescriptor six = Udp(AF_INET6);
  Addr any = Addr::Any(AF_INET6);
  ASSERT_THAT(bind(six.get(), any.sa(), any.len), SyscallSucceeds());
  Addr port = SockName(six.get());
  FileDescriptor four = Udp(AF_INET);
  Addr to = Addr::V4("127.0.0.1", port.port());
  ASSERT_THAT(sendto(four.get(), "m", 1, 0, to.sa(), to.len),
              SyscallSucceeds());
  Addr from;
  from.len = sizeof(from.ss);
  char c;
  ASSERT_THAT(recvfrom(six.get(), &c, 1, 0, from.sa(), &from.len),
              SyscallSucceedsWithValue(1));
  EXPECT_EQ(from.family(), AF_INET6);
  EXPECT_EQ(from.ip(), "::ffff:127.0.0.1");
  EXPECT_EQ(from.port(), SockName(four.get()).port());
  // The v6 socket answers through the mapped address.
  ASSERT_THAT(sendto(six.get(), "n", 1, 0, from.sa(), from.len),
              SyscallSucceeds());
  ASSERT_THAT(recv(four.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'n');

  FileDescriptor only = Udp(AF_INET6);
  ASSERT_THAT(SetInt(only.get(), SOL_IPV6, IPV6_V6ONLY, 1), SyscallSucceeds());
  ASSERT_THAT(bind(only.get(), any.sa(), any.len), SyscallSucceeds());
  Addr oport = SockName(only.get());
  Addr to2 = Addr::V4("127.0.0.1", oport.port());
  ASSERT_THAT(sendto(four.get(), "m", 1, 0, to2.sa(), to2.len),
              SyscallSucceeds());
  EXPECT_EQ(PollFor(only.get(), POLLIN, 100), 0);
  // A v6-only socket cannot send to a mapped address.
  EXPECT_THAT(sendto(only.get(), "m", 1, 0, from.sa(), from.len),
              SyscallFailsWithErrno(ENETUNREACH));
}

TEST(UdpV4Test, OtherLoopbackAddresses) {
  FileDescriptor r = Udp(AF_INET);
  Addr any = Addr::Any(AF_INET);
  ASSERT_THAT(bind(r.get(), any.sa(), any.len), SyscallSucceeds());
  Addr port = SockName(r.get());
  FileDescriptor s = Udp(AF_INET);
  Addr src = Addr::V4("127.0.0.5", 0);
  ASSERT_THAT(bind(s.get(), src.sa(), src.len), SyscallSucceeds());
  Addr to = Addr::V4("127.1.2.3", port.port());
  ASSERT_THAT(sendto(s.get(), "x", 1, 0, to.sa(), to.len), SyscallSucceeds());
  Addr from;
  from.len = sizeof(from.ss);
  char c;
  ASSERT_THAT(recvfrom(r.get(), &c, 1, 0, from.sa(), &from.len),
              SyscallSucceedsWithValue(1));
  EXPECT_EQ(from.ip(), "127.0.0.5");
  // A socket bound to one loopback address does not hear another.
  Addr ba;
  FileDescriptor b = Udp(AF_INET);
  Addr b_addr = Addr::V4("127.0.0.7", 0);
  ASSERT_THAT(bind(b.get(), b_addr.sa(), b_addr.len), SyscallSucceeds());
  ba = SockName(b.get());
  Addr wrong = Addr::V4("127.0.0.8", ba.port());
  ASSERT_THAT(sendto(s.get(), "y", 1, 0, wrong.sa(), wrong.len),
              SyscallSucceeds());
  EXPECT_EQ(PollFor(b.get(), POLLIN, 100), 0);
}

INSTANTIATE_TEST_SUITE_P(Families, UdpTest,
                         ::testing::Values(AF_INET, AF_INET6),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return i.param == AF_INET ? "V4" : "V6";
                         });

}  // namespace
}  // namespace sandbox::testutil
