// UDP ancillary data over loopback: IP_PKTINFO / IPV6_RECVPKTINFO, IP_TOS
// and IP_TTL sent as cmsgs and received with IP_RECVTOS / IP_RECVTTL,
// IPV6_TCLASS and IPV6_HOPLIMIT both ways, the socket options as the
// defaults of what is sent, SO_TIMESTAMP and SO_TIMESTAMPNS, and
// MSG_CTRUNC for a short control buffer.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

struct Addr {
  sockaddr_storage ss = {};
  socklen_t len = 0;
  sockaddr* sa() { return reinterpret_cast<sockaddr*>(&ss); }
};

Addr Loopback(int family, const char* ip = nullptr) {
  Addr a;
  if (family == AF_INET) {
    auto* s = reinterpret_cast<sockaddr_in*>(&a.ss);
    s->sin_family = AF_INET;
    inet_pton(AF_INET, ip ? ip : "127.0.0.1", &s->sin_addr);
    a.len = sizeof(*s);
  } else {
    auto* s = reinterpret_cast<sockaddr_in6*>(&a.ss);
    s->sin6_family = AF_INET6;
    inet_pton(AF_INET6, ip ? ip : "::1", &s->sin6_addr);
    a.len = sizeof(*s);
  }
  return a;
}

struct Pair {
  explicit Pair(int family, const char* bind_ip = nullptr) {
    r = FileDescriptor(socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    s = FileDescriptor(socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    EXPECT_TRUE(r.valid() && s.valid());
    Addr a = Loopback(family, bind_ip);
    EXPECT_EQ(bind(r.get(), a.sa(), a.len), 0) << strerror(errno);
    to.len = sizeof(to.ss);
    EXPECT_EQ(getsockname(r.get(), to.sa(), &to.len), 0);
  }
  FileDescriptor r, s;
  Addr to;
};

int SetInt(int fd, int level, int name, int v) {
  return setsockopt(fd, level, name, &v, sizeof(v));
}

// One received message: data and its cmsgs as (level, type, bytes).
struct Received {
  ssize_t n = -1;
  int flags = 0;
  std::string data;
  struct C {
    int level, type;
    std::string bytes;
  };
  std::vector<C> cmsgs;
  const C* Find(int level, int type) const {
    for (const C& c : cmsgs) {
      if (c.level == level && c.type == type) return &c;
    }
    return nullptr;
  }
  template <typename T>
  T Get(int level, int type) const {
    T v{};
    const C* c = Find(level, type);
    if (c != nullptr)
      memcpy(&v, c->bytes.data(), std::min(sizeof(T), c->bytes.size()));
    return v;
  }
};

Received Recv(int fd, size_t ctl_len = 512) {
  Received out;
  pollfd p = {fd, POLLIN, 0};
  if (poll(&p, 1, 10000) != 1) return out;
  char buf[256];
  std::vector<char> ctl(ctl_len);
  iovec iov = {buf, sizeof(buf)};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl.data();
  m.msg_controllen = ctl.size();
  out.n = recvmsg(fd, &m, MSG_DONTWAIT);
  if (out.n < 0) return out;
  out.flags = m.msg_flags;
  out.data.assign(buf, out.n);
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    out.cmsgs.push_back({c->cmsg_level, c->cmsg_type,
                         std::string(reinterpret_cast<char*>(CMSG_DATA(c)),
                                     c->cmsg_len - CMSG_LEN(0))});
  }
  return out;
}

// Sends "d" to `to` with one int cmsg (level, type, value), or none if
// level < 0.
ssize_t SendWithInt(int fd, Addr& to, int level, int type, int value) {
  char d = 'd';
  iovec iov = {&d, 1};
  msghdr m = {};
  m.msg_name = to.sa();
  m.msg_namelen = to.len;
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
  if (level >= 0) {
    m.msg_control = ctl;
    m.msg_controllen = sizeof(ctl);
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = level;
    c->cmsg_type = type;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &value, sizeof(value));
  }
  return sendmsg(fd, &m, 0);
}

TEST(UdpCmsgTest, IpPktinfo) {
  // Bound to the wildcard, sent to 127.0.0.3: ipi_addr is the header's
  // destination, ipi_spec_dst the local address that answers, ifindex lo.
  FileDescriptor r(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  Addr any = Loopback(AF_INET, "0.0.0.0");
  ASSERT_THAT(bind(r.get(), any.sa(), any.len), SyscallSucceeds());
  Addr port;
  port.len = sizeof(port.ss);
  ASSERT_THAT(getsockname(r.get(), port.sa(), &port.len), SyscallSucceeds());
  ASSERT_THAT(SetInt(r.get(), SOL_IP, IP_PKTINFO, 1), SyscallSucceeds());
  Addr to = Loopback(AF_INET, "127.0.0.3");
  reinterpret_cast<sockaddr_in*>(&to.ss)->sin_port =
      reinterpret_cast<sockaddr_in*>(&port.ss)->sin_port;
  FileDescriptor s(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_THAT(SendWithInt(s.get(), to, -1, 0, 0), SyscallSucceedsWithValue(1));
  Received got = Recv(r.get());
  ASSERT_EQ(got.n, 1);
  ASSERT_NE(got.Find(SOL_IP, IP_PKTINFO), nullptr);
  EXPECT_EQ(got.Find(SOL_IP, IP_PKTINFO)->bytes.size(), sizeof(in_pktinfo));
  in_pktinfo pi = got.Get<in_pktinfo>(SOL_IP, IP_PKTINFO);
  EXPECT_EQ(pi.ipi_ifindex, 1);
  EXPECT_EQ(ntohl(pi.ipi_addr.s_addr), 0x7f000003u);
  EXPECT_EQ(ntohl(pi.ipi_spec_dst.s_addr), 0x7f000003u);
  EXPECT_EQ(got.cmsgs.size(), 1u);
}

TEST(UdpCmsgTest, Ipv6RecvPktinfo) {
  Pair p(AF_INET6);
  ASSERT_THAT(SetInt(p.r.get(), SOL_IPV6, IPV6_RECVPKTINFO, 1),
              SyscallSucceeds());
  ASSERT_THAT(SendWithInt(p.s.get(), p.to, -1, 0, 0),
              SyscallSucceedsWithValue(1));
  Received got = Recv(p.r.get());
  ASSERT_EQ(got.n, 1);
  const Received::C* c = got.Find(SOL_IPV6, IPV6_PKTINFO);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->bytes.size(), sizeof(in6_pktinfo));
  in6_pktinfo pi = got.Get<in6_pktinfo>(SOL_IPV6, IPV6_PKTINFO);
  EXPECT_EQ(pi.ipi6_ifindex, 1u);
  EXPECT_TRUE(IN6_IS_ADDR_LOOPBACK(&pi.ipi6_addr));
}

TEST(UdpCmsgTest, TosAndTtlBothWays) {
  Pair p(AF_INET);
  ASSERT_THAT(SetInt(p.r.get(), SOL_IP, IP_RECVTOS, 1), SyscallSucceeds());
  ASSERT_THAT(SetInt(p.r.get(), SOL_IP, IP_RECVTTL, 1), SyscallSucceeds());
  // Defaults: TOS 0, TTL 64 (net.ipv4.ip_default_ttl).
  ASSERT_THAT(SendWithInt(p.s.get(), p.to, -1, 0, 0),
              SyscallSucceedsWithValue(1));
  Received got = Recv(p.r.get());
  ASSERT_EQ(got.n, 1);
  ASSERT_NE(got.Find(SOL_IP, IP_TOS), nullptr);
  EXPECT_EQ(got.Find(SOL_IP, IP_TOS)->bytes.size(), 1u);
  EXPECT_EQ(got.Get<uint8_t>(SOL_IP, IP_TOS), 0);
  ASSERT_NE(got.Find(SOL_IP, IP_TTL), nullptr);
  EXPECT_EQ(got.Find(SOL_IP, IP_TTL)->bytes.size(), sizeof(int));
  EXPECT_EQ(got.Get<int>(SOL_IP, IP_TTL), 64);
  // The cmsgs of a send.
  ASSERT_THAT(SendWithInt(p.s.get(), p.to, SOL_IP, IP_TOS, 0x10),
              SyscallSucceedsWithValue(1));
  got = Recv(p.r.get());
  EXPECT_EQ(got.Get<uint8_t>(SOL_IP, IP_TOS), 0x10);
  ASSERT_THAT(SendWithInt(p.s.get(), p.to, SOL_IP, IP_TTL, 7),
              SyscallSucceedsWithValue(1));
  got = Recv(p.r.get());
  EXPECT_EQ(got.Get<int>(SOL_IP, IP_TTL), 7);
  // The socket options.
  ASSERT_THAT(SetInt(p.s.get(), SOL_IP, IP_TOS, 0x20), SyscallSucceeds());
  ASSERT_THAT(SetInt(p.s.get(), SOL_IP, IP_TTL, 9), SyscallSucceeds());
  ASSERT_THAT(SendWithInt(p.s.get(), p.to, -1, 0, 0),
              SyscallSucceedsWithValue(1));
  got = Recv(p.r.get());
  EXPECT_EQ(got.Get<uint8_t>(SOL_IP, IP_TOS), 0x20);
  EXPECT_EQ(got.Get<int>(SOL_IP, IP_TTL), 9);
  // ip_cmsg_send's checks: a TTL outside 1..255 is EINVAL.
  EXPECT_THAT(SendWithInt(p.s.get(), p.to, SOL_IP, IP_TTL, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(SendWithInt(p.s.get(), p.to, SOL_IP, IP_TTL, 256),
              SyscallFailsWithErrno(EINVAL));
}

TEST(UdpCmsgTest, TclassAndHoplimitBothWays) {
  Pair p(AF_INET6);
  ASSERT_THAT(SetInt(p.r.get(), SOL_IPV6, IPV6_RECVTCLASS, 1),
              SyscallSucceeds());
  ASSERT_THAT(SetInt(p.r.get(), SOL_IPV6, IPV6_RECVHOPLIMIT, 1),
              SyscallSucceeds());
  ASSERT_THAT(SendWithInt(p.s.get(), p.to, -1, 0, 0),
              SyscallSucceedsWithValue(1));
  Received got = Recv(p.r.get());
  ASSERT_EQ(got.n, 1);
  ASSERT_NE(got.Find(SOL_IPV6, IPV6_TCLASS), nullptr);
  EXPECT_EQ(got.Get<int>(SOL_IPV6, IPV6_TCLASS), 0);
  ASSERT_NE(got.Find(SOL_IPV6, IPV6_HOPLIMIT), nullptr);
  EXPECT_EQ(got.Get<int>(SOL_IPV6, IPV6_HOPLIMIT), 64);
  ASSERT_THAT(SendWithInt(p.s.get(), p.to, SOL_IPV6, IPV6_TCLASS, 0x28),
              SyscallSucceedsWithValue(1));
  got = Recv(p.r.get());
  EXPECT_EQ(got.Get<int>(SOL_IPV6, IPV6_TCLASS), 0x28);
  ASSERT_THAT(SendWithInt(p.s.get(), p.to, SOL_IPV6, IPV6_HOPLIMIT, 3),
              SyscallSucceedsWithValue(1));
  got = Recv(p.r.get());
  EXPECT_EQ(got.Get<int>(SOL_IPV6, IPV6_HOPLIMIT), 3);
  ASSERT_THAT(SetInt(p.s.get(), SOL_IPV6, IPV6_UNICAST_HOPS, 5),
              SyscallSucceeds());
  ASSERT_THAT(SetInt(p.s.get(), SOL_IPV6, IPV6_TCLASS, 0x40),
              SyscallSucceeds());
  ASSERT_THAT(SendWithInt(p.s.get(), p.to, -1, 0, 0),
              SyscallSucceedsWithValue(1));
  got = Recv(p.r.get());
  EXPECT_EQ(got.Get<int>(SOL_IPV6, IPV6_HOPLIMIT), 5);
  EXPECT_EQ(got.Get<int>(SOL_IPV6, IPV6_TCLASS), 0x40);
  // ip6_datagram_send_ctl: hop limits above 255 and below -1 are EINVAL.
  EXPECT_THAT(SendWithInt(p.s.get(), p.to, SOL_IPV6, IPV6_HOPLIMIT, 256),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(SendWithInt(p.s.get(), p.to, SOL_IPV6, IPV6_TCLASS, 256),
              SyscallFailsWithErrno(EINVAL));
}

TEST(UdpCmsgTest, SoTimestampAndTimestampns) {
  Pair p(AF_INET);
  ASSERT_THAT(SetInt(p.r.get(), SOL_SOCKET, SO_TIMESTAMP, 1),
              SyscallSucceeds());
  timeval before;
  gettimeofday(&before, nullptr);
  ASSERT_THAT(SendWithInt(p.s.get(), p.to, -1, 0, 0),
              SyscallSucceedsWithValue(1));
  Received got = Recv(p.r.get());
  ASSERT_EQ(got.n, 1);
  const Received::C* c = got.Find(SOL_SOCKET, SCM_TIMESTAMP);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->bytes.size(), sizeof(timeval));
  timeval tv = got.Get<timeval>(SOL_SOCKET, SCM_TIMESTAMP);
  EXPECT_GE(tv.tv_sec, before.tv_sec);
  EXPECT_LE(tv.tv_sec, before.tv_sec + 10);

  ASSERT_THAT(SetInt(p.r.get(), SOL_SOCKET, SO_TIMESTAMPNS, 1),
              SyscallSucceeds());
  ASSERT_THAT(SendWithInt(p.s.get(), p.to, -1, 0, 0),
              SyscallSucceedsWithValue(1));
  got = Recv(p.r.get());
  c = got.Find(SOL_SOCKET, SCM_TIMESTAMPNS);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->bytes.size(), sizeof(timespec));
  timespec ts = got.Get<timespec>(SOL_SOCKET, SCM_TIMESTAMPNS);
  EXPECT_GE(ts.tv_sec, before.tv_sec);
  EXPECT_LT(ts.tv_nsec, 1000000000);
  // SO_TIMESTAMPNS replaced SO_TIMESTAMP (one sock flag pair).
  EXPECT_EQ(got.Find(SOL_SOCKET, SCM_TIMESTAMP), nullptr);
}

TEST(UdpCmsgTest, ShortControlBufferIsCtrunc) {
  Pair p(AF_INET);
  ASSERT_THAT(SetInt(p.r.get(), SOL_IP, IP_RECVTTL, 1), SyscallSucceeds());
  ASSERT_THAT(SetInt(p.r.get(), SOL_IP, IP_PKTINFO, 1), SyscallSucceeds());
  ASSERT_THAT(SendWithInt(p.s.get(), p.to, -1, 0, 0),
              SyscallSucceedsWithValue(1));
  Received got = Recv(p.r.get(), CMSG_SPACE(sizeof(in_pktinfo)));
  ASSERT_EQ(got.n, 1);
  EXPECT_EQ(got.flags & MSG_CTRUNC, MSG_CTRUNC);
  // ip_cmsg_recv_offset: IP_PKTINFO comes before IP_TTL.
  ASSERT_GE(got.cmsgs.size(), 1u);
  EXPECT_EQ(got.cmsgs[0].type, IP_PKTINFO);
}

TEST(UdpCmsgTest, UnknownIpCmsgOnSendIsEinval) {
  Pair p(AF_INET);
  EXPECT_THAT(SendWithInt(p.s.get(), p.to, SOL_IP, 12345, 0),
              SyscallFailsWithErrno(EINVAL));
}

}  // namespace
}  // namespace sandbox::testutil
