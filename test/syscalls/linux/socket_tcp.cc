// AF_INET/AF_INET6 SOCK_STREAM over loopback: listen/connect/accept, names,
// byte-stream data (MSG_PEEK, MSG_WAITALL, MSG_DONTWAIT, MSG_TRUNC),
// non-blocking connect (EINPROGRESS, EALREADY, EISCONN, SO_ERROR), refused
// connections, the accept queue when full, half-close, resets (unread data
// at close, SO_LINGER 0, connect(AF_UNSPEC)), poll readiness in each state,
// dual-stack listeners and IPV6_V6ONLY, SO_REUSEADDR/SO_REUSEPORT, bind
// conflicts and ephemeral ports. Every address is on loopback.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <ostream>
#include <set>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/socket_util.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

// An AF_INET or AF_INET6 address with its length.
struct InetAddr {
  sockaddr_storage ss = {};
  socklen_t len = sizeof(sockaddr_storage);

  sockaddr* sa() { return reinterpret_cast<sockaddr*>(&ss); }
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&ss); }
  int family() const { return ss.ss_family; }
  sockaddr_in* in() { return reinterpret_cast<sockaddr_in*>(&ss); }
  sockaddr_in6* in6() { return reinterpret_cast<sockaddr_in6*>(&ss); }
  const sockaddr_in* in() const {
    return reinterpret_cast<const sockaddr_in*>(&ss);
  }
  const sockaddr_in6* in6() const {
    return reinterpret_cast<const sockaddr_in6*>(&ss);
  }

  static InetAddr V4(uint32_t host_order, uint16_t port) {
    InetAddr a;
    a.in()->sin_family = AF_INET;
    a.in()->sin_addr.s_addr = htonl(host_order);
    a.in()->sin_port = htons(port);
    a.len = sizeof(sockaddr_in);
    return a;
  }
  static InetAddr V6Any(uint16_t port) {
    InetAddr a;
    a.in6()->sin6_family = AF_INET6;
    a.in6()->sin6_addr = in6addr_any;
    a.in6()->sin6_port = htons(port);
    a.len = sizeof(sockaddr_in6);
    return a;
  }
  static InetAddr V6Loopback(uint16_t port) {
    InetAddr a = V6Any(port);
    a.in6()->sin6_addr = in6addr_loopback;
    return a;
  }
  static InetAddr V4Mapped(uint32_t host_order, uint16_t port) {
    InetAddr a = V6Any(port);
    a.in6()->sin6_addr.s6_addr[10] = 0xff;
    a.in6()->sin6_addr.s6_addr[11] = 0xff;
    uint32_t n = htonl(host_order);
    memcpy(&a.in6()->sin6_addr.s6_addr[12], &n, 4);
    return a;
  }

  uint16_t port() const {
    return ntohs(family() == AF_INET ? in()->sin_port : in6()->sin6_port);
  }
  InetAddr WithPort(uint16_t p) const {
    InetAddr a = *this;
    if (family() == AF_INET) {
      a.in()->sin_port = htons(p);
    } else {
      a.in6()->sin6_port = htons(p);
    }
    return a;
  }
  bool IsAny() const {
    if (family() == AF_INET) return in()->sin_addr.s_addr == INADDR_ANY;
    return memcmp(&in6()->sin6_addr, &in6addr_any, 16) == 0;
  }
  std::string ToString() const {
    char buf[INET6_ADDRSTRLEN] = {};
    if (family() == AF_INET) {
      inet_ntop(AF_INET, &in()->sin_addr, buf, sizeof(buf));
      return std::string(buf) + ":" + std::to_string(port());
    }
    if (family() == AF_INET6) {
      inet_ntop(AF_INET6, &in6()->sin6_addr, buf, sizeof(buf));
      return "[" + std::string(buf) + "]:" + std::to_string(port());
    }
    return "family " + std::to_string(family());
  }
  bool operator==(const InetAddr& o) const {
    return ToString() == o.ToString();
  }
};

std::ostream& operator<<(std::ostream& os, const InetAddr& a) {
  return os << a.ToString();
}

// 127.0.0.1 or ::1, port `port`.
InetAddr Loopback(int family, uint16_t port = 0) {
  return family == AF_INET ? InetAddr::V4(INADDR_LOOPBACK, port)
                           : InetAddr::V6Loopback(port);
}

FileDescriptor TcpSocket(int family, int flags = 0) {
  FileDescriptor fd(socket(family, SOCK_STREAM | SOCK_CLOEXEC | flags, 0));
  EXPECT_TRUE(fd.valid()) << strerror(errno);
  return fd;
}

InetAddr SockName(int fd) {
  InetAddr a;
  EXPECT_EQ(getsockname(fd, a.sa(), &a.len), 0) << strerror(errno);
  return a;
}

InetAddr PeerName(int fd) {
  InetAddr a;
  EXPECT_EQ(getpeername(fd, a.sa(), &a.len), 0) << strerror(errno);
  return a;
}

// A listener on the family's loopback address, an ephemeral port.
FileDescriptor TcpListener(int family, int backlog = 16) {
  FileDescriptor fd = TcpSocket(family);
  InetAddr a = Loopback(family);
  if (!fd.valid() || bind(fd.get(), a.sa(), a.len) != 0 ||
      listen(fd.get(), backlog) != 0) {
    ADD_FAILURE() << "listener: " << strerror(errno);
    return FileDescriptor();
  }
  return fd;
}

int IntOpt(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof(v);
  EXPECT_EQ(getsockopt(fd, level, name, &v, &len), 0) << strerror(errno);
  return v;
}

void SetInt(int fd, int level, int name, int v) {
  EXPECT_EQ(setsockopt(fd, level, name, &v, sizeof(v)), 0) << strerror(errno);
}

// A connected client and the server side accepted from a listener.
struct ConnectedPair {
  explicit ConnectedPair(int family) {
    FileDescriptor l = TcpListener(family);
    if (!l.valid()) return;
    InetAddr la = SockName(l.get());
    client = TcpSocket(family);
    if (connect(client.get(), la.sa(), la.len) != 0) {
      ADD_FAILURE() << "connect: " << strerror(errno);
      client.reset();
      return;
    }
    server = FileDescriptor(accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
    EXPECT_TRUE(server.valid()) << strerror(errno);
  }
  bool ok() const { return client.valid() && server.valid(); }
  FileDescriptor client, server;
};

// A port on loopback nobody listens on (bound by a socket just closed; the
// range is large enough that nobody takes it meanwhile).
InetAddr UnusedPort(int family) {
  FileDescriptor fd = TcpSocket(family);
  InetAddr a = Loopback(family);
  EXPECT_EQ(bind(fd.get(), a.sa(), a.len), 0) << strerror(errno);
  return SockName(fd.get());
}

// Receives exactly n bytes (or until EOF/error/5 s).
std::string RecvN(int fd, size_t n) {
  std::string s;
  char buf[4096];
  for (int i = 0; i < 10000 && s.size() < n; ++i) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 5000) != 1) break;
    ssize_t r = recv(fd, buf, std::min(sizeof(buf), n - s.size()), 0);
    if (r <= 0) break;
    s.append(buf, r);
  }
  return s;
}

// Waits (at most 5 s) until FIONREAD reports at least n bytes.
bool WaitInq(int fd, int n) {
  for (int i = 0; i < 500; ++i) {
    int inq = 0;
    if (ioctl(fd, FIONREAD, &inq) != 0) return false;
    if (inq >= n) return true;
    usleep(10000);
  }
  return false;
}

// poll(2) of one fd for `events` for at most `ms`; the revents.
short PollWait(int fd, short events, int ms) {
  pollfd p = {fd, events, 0};
  int r = poll(&p, 1, ms);
  return r < 0 ? -1 : p.revents;
}

// net.ipv4.ip_local_port_range.
std::pair<int, int> LocalPortRange() {
  int lo = 32768, hi = 60999;
  std::string s = ReadFileOrEmpty("/proc/sys/net/ipv4/ip_local_port_range");
  if (!s.empty()) sscanf(s.c_str(), "%d %d", &lo, &hi);
  return {lo, hi};
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

class TcpTest : public ::testing::TestWithParam<int> {
 protected:
  int family() const { return GetParam(); }
};

TEST_P(TcpTest, ConnectAcceptEcho) {
  FileDescriptor l = TcpListener(family());
  ASSERT_TRUE(l.valid());
  InetAddr la = SockName(l.get());
  FileDescriptor c = TcpSocket(family());
  ASSERT_THAT(connect(c.get(), la.sa(), la.len), SyscallSucceeds());
  InetAddr peer;
  FileDescriptor s(accept(l.get(), peer.sa(), &peer.len));
  ASSERT_TRUE(s.valid()) << strerror(errno);
  // accept's address is the connector's name; the names cross.
  EXPECT_EQ(peer, SockName(c.get()));
  EXPECT_EQ(PeerName(c.get()), SockName(s.get()));
  EXPECT_EQ(PeerName(s.get()), SockName(c.get()));
  EXPECT_EQ(SockName(s.get()).port(), la.port());
  ASSERT_THAT(send(c.get(), "hello", 5, 0), SyscallSucceedsWithValue(5));
  EXPECT_EQ(RecvN(s.get(), 5), "hello");
  ASSERT_THAT(write(s.get(), "back", 4), SyscallSucceedsWithValue(4));
  EXPECT_EQ(RecvN(c.get(), 4), "back");
}

TEST_P(TcpTest, AcceptedSocketKeepsListenerFamilyAndType) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(IntOpt(p.server.get(), SOL_SOCKET, SO_DOMAIN), family());
  EXPECT_EQ(IntOpt(p.server.get(), SOL_SOCKET, SO_TYPE), SOCK_STREAM);
  EXPECT_EQ(IntOpt(p.server.get(), SOL_SOCKET, SO_PROTOCOL), IPPROTO_TCP);
  EXPECT_EQ(IntOpt(p.server.get(), SOL_SOCKET, SO_ACCEPTCONN), 0);
}

// sk_clone_lock / inet_csk_clone_lock: the accepted socket starts with the
// listener's SOL_SOCKET, SOL_IP and SOL_TCP options (set before connect).
TEST_P(TcpTest, AcceptedSocketInheritsListenerOptions) {
  FileDescriptor l = TcpListener(family());
  ASSERT_TRUE(l.valid());
  SetInt(l.get(), SOL_SOCKET, SO_KEEPALIVE, 1);
  SetInt(l.get(), SOL_SOCKET, SO_PRIORITY, 3);
  SetInt(l.get(), SOL_SOCKET, SO_RCVLOWAT, 7);
  SetInt(l.get(), SOL_SOCKET, SO_SNDBUF, 65536);
  SetInt(l.get(), IPPROTO_TCP, TCP_NODELAY, 1);
  linger lg = {1, 5};
  ASSERT_EQ(setsockopt(l.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
  timeval tv = {2, 500000};
  ASSERT_EQ(setsockopt(l.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
  if (family() == AF_INET) {
    SetInt(l.get(), IPPROTO_IP, IP_TOS, 0x10);
    SetInt(l.get(), IPPROTO_IP, IP_TTL, 33);
  } else {
    SetInt(l.get(), IPPROTO_IPV6, IPV6_TCLASS, 0x10);
    SetInt(l.get(), IPPROTO_IPV6, IPV6_UNICAST_HOPS, 33);
  }
  InetAddr la = SockName(l.get());
  FileDescriptor c = TcpSocket(family());
  ASSERT_THAT(connect(c.get(), la.sa(), la.len), SyscallSucceeds());
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  ASSERT_TRUE(s.valid()) << strerror(errno);
  EXPECT_EQ(IntOpt(s.get(), SOL_SOCKET, SO_KEEPALIVE), 1);
  // The child's priority is the SYN's, not the listener's.
  EXPECT_EQ(IntOpt(s.get(), SOL_SOCKET, SO_PRIORITY), 0);
  EXPECT_EQ(IntOpt(s.get(), SOL_SOCKET, SO_RCVLOWAT), 7);
  EXPECT_EQ(IntOpt(s.get(), SOL_SOCKET, SO_SNDBUF),
            IntOpt(l.get(), SOL_SOCKET, SO_SNDBUF));
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_NODELAY), 1);
  EXPECT_EQ(IntOpt(s.get(), SOL_SOCKET, SO_ACCEPTCONN), 0);
  linger got = {};
  socklen_t len = sizeof(got);
  ASSERT_EQ(getsockopt(s.get(), SOL_SOCKET, SO_LINGER, &got, &len), 0);
  EXPECT_EQ(got.l_onoff, 1);
  EXPECT_EQ(got.l_linger, 5);
  timeval gtv = {};
  len = sizeof(gtv);
  ASSERT_EQ(getsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &gtv, &len), 0);
  EXPECT_EQ(gtv.tv_sec, 2);
  EXPECT_EQ(gtv.tv_usec, 500000);
  if (family() == AF_INET) {
    EXPECT_EQ(IntOpt(s.get(), IPPROTO_IP, IP_TOS), 0x10);
    EXPECT_EQ(IntOpt(s.get(), IPPROTO_IP, IP_TTL), 33);
  } else {
    EXPECT_EQ(IntOpt(s.get(), IPPROTO_IPV6, IPV6_TCLASS), 0x10);
    EXPECT_EQ(IntOpt(s.get(), IPPROTO_IPV6, IPV6_UNICAST_HOPS), 33);
  }
  // The connecting side keeps its own defaults.
  EXPECT_EQ(IntOpt(c.get(), SOL_SOCKET, SO_KEEPALIVE), 0);
}

TEST_P(TcpTest, BigTransferIsIntact) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  constexpr size_t kTotal = 8 << 20;
  std::thread writer([&] {
    std::string chunk(65536, 0);
    size_t off = 0;
    while (off < kTotal) {
      for (size_t i = 0; i < chunk.size(); ++i) {
        chunk[i] = static_cast<char>((off + i) * 7 + 3);
      }
      ssize_t n = write(p.client.get(), chunk.data(), chunk.size());
      if (n <= 0) return;
      // Keep the pattern aligned to the bytes really written.
      off += n;
    }
  });
  size_t got = 0;
  bool same = true;
  char buf[65536];
  while (got < kTotal) {
    ssize_t n = read(p.server.get(), buf, sizeof(buf));
    if (n <= 0) break;
    for (ssize_t i = 0; i < n && same; ++i) {
      same = buf[i] == static_cast<char>((got + i) * 7 + 3);
    }
    got += n;
  }
  writer.join();
  EXPECT_EQ(got, kTotal);
  EXPECT_TRUE(same);
}

TEST_P(TcpTest, PeekWaitallDontwaitTrunc) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  char buf[16] = {};
  EXPECT_THAT(recv(p.server.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
  ASSERT_THAT(send(p.client.get(), "abcdef", 6, 0),
              SyscallSucceedsWithValue(6));
  ASSERT_TRUE(WaitInq(p.server.get(), 6));
  int inq = -1;
  ASSERT_THAT(ioctl(p.server.get(), FIONREAD, &inq), SyscallSucceeds());
  EXPECT_EQ(inq, 6);
  ASSERT_THAT(recv(p.server.get(), buf, 3, MSG_PEEK),
              SyscallSucceedsWithValue(3));
  EXPECT_EQ(std::string(buf, 3), "abc");
  // MSG_TRUNC on TCP discards without copying.
  ASSERT_THAT(recv(p.server.get(), nullptr, 2, MSG_TRUNC),
              SyscallSucceedsWithValue(2));
  ASSERT_THAT(recv(p.server.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(buf, 4), "cdef");
  // MSG_WAITALL gathers several writes.
  std::thread t([&] {
    for (int i = 0; i < 4; ++i) {
      usleep(20000);
      (void)send(p.client.get(), "xy", 2, 0);
    }
  });
  ASSERT_THAT(recv(p.server.get(), buf, 8, MSG_WAITALL),
              SyscallSucceedsWithValue(8));
  t.join();
  EXPECT_EQ(std::string(buf, 8), "xyxyxyxy");
}

TEST_P(TcpTest, RcvlowatHoldsPollAndRecv) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  int lowat = 10;
  ASSERT_THAT(setsockopt(p.server.get(), SOL_SOCKET, SO_RCVLOWAT, &lowat,
                         sizeof(lowat)),
              SyscallSucceeds());
  ASSERT_THAT(send(p.client.get(), "12345", 5, 0), SyscallSucceedsWithValue(5));
  ASSERT_TRUE(WaitInq(p.server.get(), 5));
  EXPECT_EQ(PollNow(p.server.get(), POLLIN) & POLLIN, 0);
  ASSERT_THAT(send(p.client.get(), "67890", 5, 0), SyscallSucceedsWithValue(5));
  ASSERT_TRUE(WaitInq(p.server.get(), 10));
  EXPECT_EQ(PollNow(p.server.get(), POLLIN) & POLLIN, POLLIN);
  char buf[32];
  EXPECT_THAT(recv(p.server.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(10));
}

TEST_P(TcpTest, NonblockingConnectCompletes) {
  FileDescriptor l = TcpListener(family());
  ASSERT_TRUE(l.valid());
  InetAddr la = SockName(l.get());
  FileDescriptor c = TcpSocket(family(), SOCK_NONBLOCK);
  ASSERT_THAT(connect(c.get(), la.sa(), la.len),
              SyscallFailsWithErrno(EINPROGRESS));
  pollfd pfd = {c.get(), POLLOUT, 0};
  ASSERT_THAT(poll(&pfd, 1, 5000), SyscallSucceedsWithValue(1));
  EXPECT_EQ(pfd.revents, POLLOUT);
  EXPECT_EQ(IntOpt(c.get(), SOL_SOCKET, SO_ERROR), 0);
  // __inet_stream_connect: the first connect after the handshake completed
  // reports success (SS_CONNECTING -> SS_CONNECTED), later ones EISCONN.
  EXPECT_THAT(connect(c.get(), la.sa(), la.len), SyscallSucceeds());
  EXPECT_THAT(connect(c.get(), la.sa(), la.len),
              SyscallFailsWithErrno(EISCONN));
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  EXPECT_TRUE(s.valid());
}

TEST_P(TcpTest, ConnectToClosedPortIsRefused) {
  InetAddr dead = UnusedPort(family());
  FileDescriptor c = TcpSocket(family());
  EXPECT_THAT(connect(c.get(), dead.sa(), dead.len),
              SyscallFailsWithErrno(ECONNREFUSED));
  // The socket is closed again: a second try is refused again.
  EXPECT_THAT(connect(c.get(), dead.sa(), dead.len),
              SyscallFailsWithErrno(ECONNREFUSED));
}

TEST_P(TcpTest, NonblockingConnectToClosedPort) {
  InetAddr dead = UnusedPort(family());
  FileDescriptor c = TcpSocket(family(), SOCK_NONBLOCK);
  ASSERT_THAT(connect(c.get(), dead.sa(), dead.len),
              SyscallFailsWithErrno(EINPROGRESS));
  pollfd pfd = {c.get(), POLLIN | POLLOUT | POLLRDHUP, 0};
  ASSERT_THAT(poll(&pfd, 1, 5000), SyscallSucceedsWithValue(1));
  // tcp_poll after tcp_reset: the state is TCP_CLOSE and sk_shutdown is
  // SHUTDOWN_MASK, with sk_err pending.
  EXPECT_EQ(pfd.revents, POLLIN | POLLOUT | POLLRDHUP | POLLERR | POLLHUP);
  EXPECT_EQ(IntOpt(c.get(), SOL_SOCKET, SO_ERROR), ECONNREFUSED);
  EXPECT_EQ(IntOpt(c.get(), SOL_SOCKET, SO_ERROR), 0);
  EXPECT_EQ(PollNow(c.get(), POLLIN | POLLOUT) & POLLERR, 0);
}

TEST_P(TcpTest, FullBacklogHoldsConnectUntilAccept) {
  FileDescriptor l = TcpListener(family(), /*backlog=*/0);
  ASSERT_TRUE(l.valid());
  InetAddr la = SockName(l.get());
  // Backlog 0 holds one connection (sk_acceptq_is_full: more than 0).
  FileDescriptor c1 = TcpSocket(family());
  ASSERT_THAT(connect(c1.get(), la.sa(), la.len), SyscallSucceeds());
  ASSERT_EQ(PollWait(l.get(), POLLIN, 5000), POLLIN);
  // The next SYN is dropped: a non-blocking connect stays in progress.
  FileDescriptor c2 = TcpSocket(family(), SOCK_NONBLOCK);
  ASSERT_THAT(connect(c2.get(), la.sa(), la.len),
              SyscallFailsWithErrno(EINPROGRESS));
  usleep(100000);
  EXPECT_EQ(PollNow(c2.get(), POLLIN | POLLOUT), 0);
  EXPECT_THAT(connect(c2.get(), la.sa(), la.len),
              SyscallFailsWithErrno(EALREADY));
  // Accepting makes room; the retried SYN gets through.
  FileDescriptor s1(accept(l.get(), nullptr, nullptr));
  ASSERT_TRUE(s1.valid());
  EXPECT_EQ(PollWait(c2.get(), POLLOUT, 10000), POLLOUT);
  EXPECT_EQ(IntOpt(c2.get(), SOL_SOCKET, SO_ERROR), 0);
  FileDescriptor s2(accept(l.get(), nullptr, nullptr));
  EXPECT_TRUE(s2.valid());
}

TEST_P(TcpTest, BlockingConnectToFullBacklogSucceedsAfterAccept) {
  FileDescriptor l = TcpListener(family(), /*backlog=*/0);
  ASSERT_TRUE(l.valid());
  InetAddr la = SockName(l.get());
  FileDescriptor c1 = TcpSocket(family());
  ASSERT_THAT(connect(c1.get(), la.sa(), la.len), SyscallSucceeds());
  ASSERT_EQ(PollWait(l.get(), POLLIN, 5000), POLLIN);
  std::thread acceptor([&] {
    usleep(200000);
    int s = accept(l.get(), nullptr, nullptr);
    if (s >= 0) close(s);
  });
  FileDescriptor c2 = TcpSocket(family());
  EXPECT_THAT(connect(c2.get(), la.sa(), la.len), SyscallSucceeds());
  acceptor.join();
}

TEST_P(TcpTest, HalfClose) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.client.get(), "req", 3, 0), SyscallSucceedsWithValue(3));
  ASSERT_THAT(shutdown(p.client.get(), SHUT_WR), SyscallSucceeds());
  EXPECT_EQ(RecvN(p.server.get(), 3), "req");
  char buf[8];
  EXPECT_THAT(read(p.server.get(), buf, sizeof(buf)),
              SyscallSucceedsWithValue(0));
  EXPECT_EQ(PollNow(p.server.get(), POLLIN | POLLOUT | POLLRDHUP),
            POLLIN | POLLOUT | POLLRDHUP);
  // The closer may still read; its own side reports POLLOUT (tcp_poll gives
  // it once SEND_SHUTDOWN is set).
  EXPECT_EQ(PollNow(p.client.get(), POLLIN | POLLOUT | POLLRDHUP), POLLOUT);
  ASSERT_THAT(send(p.server.get(), "resp", 4, 0), SyscallSucceedsWithValue(4));
  EXPECT_EQ(RecvN(p.client.get(), 4), "resp");
  IgnoreSigpipe ign;
  EXPECT_THAT(send(p.client.get(), "x", 1, 0), SyscallFailsWithErrno(EPIPE));
  // Both sides shut: POLLHUP.
  ASSERT_THAT(shutdown(p.server.get(), SHUT_WR), SyscallSucceeds());
  EXPECT_EQ(PollWait(p.client.get(), POLLRDHUP, 5000) & POLLRDHUP, POLLRDHUP);
  EXPECT_EQ(PollNow(p.client.get(), POLLIN | POLLOUT | POLLRDHUP),
            POLLIN | POLLOUT | POLLRDHUP | POLLHUP);
}

TEST_P(TcpTest, CloseWithUnreadDataResetsPeer) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.client.get(), "unread", 6, 0),
              SyscallSucceedsWithValue(6));
  ASSERT_TRUE(WaitInq(p.server.get(), 6));
  p.server.reset();
  ASSERT_NE(PollWait(p.client.get(), POLLIN, 5000) & POLLERR, 0);
  EXPECT_EQ(PollNow(p.client.get(), POLLIN | POLLOUT | POLLRDHUP),
            POLLIN | POLLOUT | POLLRDHUP | POLLERR | POLLHUP);
  char buf[8];
  EXPECT_THAT(read(p.client.get(), buf, sizeof(buf)),
              SyscallFailsWithErrno(ECONNRESET));
  EXPECT_THAT(read(p.client.get(), buf, sizeof(buf)),
              SyscallSucceedsWithValue(0));
  EXPECT_THAT(send(p.client.get(), "x", 1, MSG_NOSIGNAL),
              SyscallFailsWithErrno(EPIPE));
}

TEST_P(TcpTest, WriteAfterResetRaisesSigpipe) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  linger lg = {1, 0};
  ASSERT_THAT(
      setsockopt(p.server.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
      SyscallSucceeds());
  p.server.reset();
  int c = p.client.get();
  EXPECT_THAT(InForkedChild([c] {
                // A reset consumed by a read, then a write: EPIPE, SIGPIPE.
                pollfd pfd = {c, POLLIN, 0};
                poll(&pfd, 1, 5000);
                char b;
                if (read(c, &b, 1) != -1 || errno != ECONNRESET) _exit(3);
                (void)write(c, "x", 1);
                _exit(4);
              }),
              KilledBySignal(SIGPIPE));
}

TEST_P(TcpTest, LingerZeroResetsPeer) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  linger lg = {1, 0};
  ASSERT_THAT(
      setsockopt(p.client.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
      SyscallSucceeds());
  p.client.reset();
  ASSERT_NE(PollWait(p.server.get(), POLLIN, 5000) & POLLERR, 0);
  char buf[8];
  EXPECT_THAT(read(p.server.get(), buf, sizeof(buf)),
              SyscallFailsWithErrno(ECONNRESET));
}

TEST_P(TcpTest, FirstWriteAfterResetIsEconnreset) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  linger lg = {1, 0};
  ASSERT_THAT(
      setsockopt(p.client.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
      SyscallSucceeds());
  p.client.reset();
  ASSERT_NE(PollWait(p.server.get(), POLLIN, 5000) & POLLERR, 0);
  // sk_stream_error: the pending error first, EPIPE after.
  EXPECT_THAT(send(p.server.get(), "x", 1, MSG_NOSIGNAL),
              SyscallFailsWithErrno(ECONNRESET));
  EXPECT_THAT(send(p.server.get(), "x", 1, MSG_NOSIGNAL),
              SyscallFailsWithErrno(EPIPE));
}

TEST_P(TcpTest, OrderlyCloseGivesEof) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.client.get(), "bye", 3, 0), SyscallSucceedsWithValue(3));
  p.client.reset();
  EXPECT_EQ(RecvN(p.server.get(), 3), "bye");
  char buf[8];
  EXPECT_THAT(read(p.server.get(), buf, sizeof(buf)),
              SyscallSucceedsWithValue(0));
  EXPECT_EQ(PollNow(p.server.get(), POLLIN | POLLRDHUP), POLLIN | POLLRDHUP);
}

TEST_P(TcpTest, DisconnectWithAfUnspec) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  sockaddr unspec = {};
  unspec.sa_family = AF_UNSPEC;
  ASSERT_THAT(connect(p.client.get(), &unspec, sizeof(unspec)),
              SyscallSucceeds());
  InetAddr a;
  EXPECT_THAT(getpeername(p.client.get(), a.sa(), &a.len),
              SyscallFailsWithErrno(ENOTCONN));
  ASSERT_NE(PollWait(p.server.get(), POLLIN, 5000) & POLLERR, 0);
  char buf[8];
  EXPECT_THAT(read(p.server.get(), buf, sizeof(buf)),
              SyscallFailsWithErrno(ECONNRESET));
  // tcp_disconnect of a connection that needed a reset leaves sk_err
  // ECONNRESET; then the socket polls as a fresh one.
  EXPECT_EQ(PollNow(p.client.get(), POLLIN | POLLOUT),
            POLLOUT | POLLERR | POLLHUP);
  EXPECT_EQ(IntOpt(p.client.get(), SOL_SOCKET, SO_ERROR), ECONNRESET);
  EXPECT_EQ(PollNow(p.client.get(), POLLIN | POLLOUT), POLLOUT | POLLHUP);
}

TEST_P(TcpTest, CloseOfListenerResetsPendingConnections) {
  FileDescriptor l = TcpListener(family());
  ASSERT_TRUE(l.valid());
  InetAddr la = SockName(l.get());
  FileDescriptor c = TcpSocket(family());
  ASSERT_THAT(connect(c.get(), la.sa(), la.len), SyscallSucceeds());
  ASSERT_EQ(PollWait(l.get(), POLLIN, 5000), POLLIN);
  l.reset();
  ASSERT_NE(PollWait(c.get(), POLLIN, 5000) & POLLERR, 0);
  char buf[8];
  EXPECT_THAT(read(c.get(), buf, sizeof(buf)),
              SyscallFailsWithErrno(ECONNRESET));
}

TEST_P(TcpTest, PollStates) {
  FileDescriptor fresh = TcpSocket(family());
  const short all = POLLIN | POLLOUT | POLLRDHUP | POLLPRI;
  EXPECT_EQ(PollNow(fresh.get(), all), POLLOUT | POLLHUP);
  FileDescriptor l = TcpListener(family());
  ASSERT_TRUE(l.valid());
  EXPECT_EQ(PollNow(l.get(), all), 0);
  InetAddr la = SockName(l.get());
  FileDescriptor c = TcpSocket(family());
  ASSERT_THAT(connect(c.get(), la.sa(), la.len), SyscallSucceeds());
  EXPECT_EQ(PollWait(l.get(), POLLIN, 5000), POLLIN);
  EXPECT_EQ(PollNow(c.get(), all), POLLOUT);
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  ASSERT_TRUE(s.valid());
  EXPECT_EQ(PollNow(l.get(), all), 0);
  EXPECT_EQ(PollNow(s.get(), all), POLLOUT);
  ASSERT_THAT(send(c.get(), "z", 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(PollWait(s.get(), POLLIN, 5000), POLLIN);
  EXPECT_EQ(PollNow(s.get(), all), POLLIN | POLLOUT);
}

TEST_P(TcpTest, EpollEdgeTriggeredIn) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  FileDescriptor ep(epoll_create1(EPOLL_CLOEXEC));
  ASSERT_TRUE(ep.valid());
  epoll_event ev = {};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.fd = p.server.get();
  ASSERT_THAT(epoll_ctl(ep.get(), EPOLL_CTL_ADD, p.server.get(), &ev),
              SyscallSucceeds());
  epoll_event out[2];
  EXPECT_THAT(epoll_wait(ep.get(), out, 2, 0), SyscallSucceedsWithValue(0));
  ASSERT_THAT(send(p.client.get(), "a", 1, 0), SyscallSucceedsWithValue(1));
  ASSERT_THAT(epoll_wait(ep.get(), out, 2, 5000), SyscallSucceedsWithValue(1));
  EXPECT_EQ(out[0].events, static_cast<uint32_t>(EPOLLIN));
  EXPECT_THAT(epoll_wait(ep.get(), out, 2, 0), SyscallSucceedsWithValue(0));
  ASSERT_THAT(send(p.client.get(), "b", 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_THAT(epoll_wait(ep.get(), out, 2, 5000), SyscallSucceedsWithValue(1));
}

TEST_P(TcpTest, WrongStateErrnos) {
  FileDescriptor s = TcpSocket(family());
  char buf[4];
  EXPECT_THAT(recv(s.get(), buf, sizeof(buf), 0),
              SyscallFailsWithErrno(ENOTCONN));
  EXPECT_THAT(send(s.get(), "x", 1, MSG_NOSIGNAL),
              SyscallFailsWithErrno(EPIPE));
  EXPECT_THAT(shutdown(s.get(), SHUT_RDWR), SyscallFailsWithErrno(ENOTCONN));
  InetAddr a;
  EXPECT_THAT(getpeername(s.get(), a.sa(), &a.len),
              SyscallFailsWithErrno(ENOTCONN));
  EXPECT_THAT(accept(s.get(), nullptr, nullptr), SyscallFailsWithErrno(EINVAL));
  FileDescriptor l = TcpListener(family());
  ASSERT_TRUE(l.valid());
  EXPECT_THAT(recv(l.get(), buf, sizeof(buf), 0),
              SyscallFailsWithErrno(ENOTCONN));
  InetAddr la = SockName(l.get());
  EXPECT_THAT(connect(l.get(), la.sa(), la.len),
              SyscallFailsWithErrno(EISCONN));
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(listen(p.client.get(), 5), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(connect(p.client.get(), la.sa(), la.len),
              SyscallFailsWithErrno(EISCONN));
  InetAddr any = Loopback(family());
  EXPECT_THAT(bind(p.client.get(), any.sa(), any.len),
              SyscallFailsWithErrno(EINVAL));
}

TEST_P(TcpTest, ListenTwiceAndAcceptNonblocking) {
  FileDescriptor l = TcpListener(family());
  ASSERT_TRUE(l.valid());
  EXPECT_THAT(listen(l.get(), 100), SyscallSucceeds());
  EXPECT_EQ(IntOpt(l.get(), SOL_SOCKET, SO_ACCEPTCONN), 1);
  ASSERT_THAT(fcntl(l.get(), F_SETFL, O_NONBLOCK), SyscallSucceeds());
  EXPECT_THAT(accept(l.get(), nullptr, nullptr), SyscallFailsWithErrno(EAGAIN));
}

TEST_P(TcpTest, ListenWithoutBindPicksEphemeralPort) {
  FileDescriptor l = TcpSocket(family());
  ASSERT_THAT(listen(l.get(), 5), SyscallSucceeds());
  InetAddr a = SockName(l.get());
  EXPECT_NE(a.port(), 0);
  EXPECT_TRUE(a.IsAny());
  auto [lo, hi] = LocalPortRange();
  EXPECT_GE(a.port(), lo);
  EXPECT_LE(a.port(), hi);
}

TEST_P(TcpTest, ConnectAutobindsInRange) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  InetAddr a = SockName(p.client.get());
  auto [lo, hi] = LocalPortRange();
  EXPECT_GE(a.port(), lo);
  EXPECT_LE(a.port(), hi);
  EXPECT_EQ(a.WithPort(0), Loopback(family()));
}

TEST_P(TcpTest, BindConflicts) {
  FileDescriptor a = TcpSocket(family());
  InetAddr lo = Loopback(family());
  ASSERT_THAT(bind(a.get(), lo.sa(), lo.len), SyscallSucceeds());
  InetAddr bound = SockName(a.get());
  FileDescriptor b = TcpSocket(family());
  EXPECT_THAT(bind(b.get(), bound.sa(), bound.len),
              SyscallFailsWithErrno(EADDRINUSE));
  // SO_REUSEADDR on both: a second bind is fine while neither listens, and
  // the second listen is refused.
  FileDescriptor c = TcpSocket(family());
  FileDescriptor d = TcpSocket(family());
  SetInt(c.get(), SOL_SOCKET, SO_REUSEADDR, 1);
  SetInt(d.get(), SOL_SOCKET, SO_REUSEADDR, 1);
  ASSERT_THAT(bind(c.get(), lo.sa(), lo.len), SyscallSucceeds());
  InetAddr cb = SockName(c.get());
  ASSERT_THAT(bind(d.get(), cb.sa(), cb.len), SyscallSucceeds());
  ASSERT_THAT(listen(c.get(), 5), SyscallSucceeds());
  EXPECT_THAT(listen(d.get(), 5), SyscallFailsWithErrno(EADDRINUSE));
  // A listener's port is taken even for SO_REUSEADDR sockets.
  FileDescriptor e = TcpSocket(family());
  SetInt(e.get(), SOL_SOCKET, SO_REUSEADDR, 1);
  EXPECT_THAT(bind(e.get(), cb.sa(), cb.len),
              SyscallFailsWithErrno(EADDRINUSE));
}

TEST_P(TcpTest, ReuseportSpreadsAccepts) {
  FileDescriptor l1 = TcpSocket(family());
  FileDescriptor l2 = TcpSocket(family());
  SetInt(l1.get(), SOL_SOCKET, SO_REUSEPORT, 1);
  SetInt(l2.get(), SOL_SOCKET, SO_REUSEPORT, 1);
  InetAddr lo = Loopback(family());
  ASSERT_THAT(bind(l1.get(), lo.sa(), lo.len), SyscallSucceeds());
  InetAddr la = SockName(l1.get());
  ASSERT_THAT(bind(l2.get(), la.sa(), la.len), SyscallSucceeds());
  ASSERT_THAT(listen(l1.get(), 64), SyscallSucceeds());
  ASSERT_THAT(listen(l2.get(), 64), SyscallSucceeds());
  ASSERT_THAT(fcntl(l1.get(), F_SETFL, O_NONBLOCK), SyscallSucceeds());
  ASSERT_THAT(fcntl(l2.get(), F_SETFL, O_NONBLOCK), SyscallSucceeds());
  std::vector<FileDescriptor> clients;
  for (int i = 0; i < 32; ++i) {
    FileDescriptor c = TcpSocket(family());
    ASSERT_THAT(connect(c.get(), la.sa(), la.len), SyscallSucceeds());
    clients.push_back(std::move(c));
  }
  usleep(50000);
  int n1 = 0, n2 = 0;
  for (int i = 0; i < 64; ++i) {
    int s = accept4(l1.get(), nullptr, nullptr, 0);
    if (s < 0) break;
    close(s);
    ++n1;
  }
  for (int i = 0; i < 64; ++i) {
    int s = accept4(l2.get(), nullptr, nullptr, 0);
    if (s < 0) break;
    close(s);
    ++n2;
  }
  EXPECT_EQ(n1 + n2, 32);
  EXPECT_GT(n1, 0);
  EXPECT_GT(n2, 0);
}

TEST_P(TcpTest, SendfileIntoSocket) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  TempPath f = TempPath::CreateFile();
  {
    FileDescriptor w(open(f.path().c_str(), O_WRONLY));
    ASSERT_TRUE(w.valid());
    ASSERT_THAT(write(w.get(), "file-body", 9), SyscallSucceedsWithValue(9));
  }
  FileDescriptor r(open(f.path().c_str(), O_RDONLY));
  ASSERT_TRUE(r.valid());
  ASSERT_THAT(sendfile(p.client.get(), r.get(), nullptr, 9),
              SyscallSucceedsWithValue(9));
  EXPECT_EQ(RecvN(p.server.get(), 9), "file-body");
}

TEST_P(TcpTest, OutqOfIdleConnectionIsEmpty) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.client.get(), "abc", 3, 0), SyscallSucceedsWithValue(3));
  EXPECT_EQ(RecvN(p.server.get(), 3), "abc");
  // Acknowledged soon after it was read (bounded wait).
  int outq = -1;
  for (int i = 0; i < 500; ++i) {
    ASSERT_THAT(ioctl(p.client.get(), SIOCOUTQ, &outq), SyscallSucceeds());
    if (outq == 0) break;
    usleep(10000);
  }
  EXPECT_EQ(outq, 0);
  ASSERT_THAT(ioctl(p.client.get(), SIOCOUTQNSD, &outq), SyscallSucceeds());
  EXPECT_EQ(outq, 0);
}

TEST_P(TcpTest, UrgentByte) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  char c = 0;
  EXPECT_THAT(recv(p.server.get(), &c, 1, MSG_OOB),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(send(p.client.get(), "abc", 3, 0), SyscallSucceedsWithValue(3));
  ASSERT_THAT(send(p.client.get(), "d", 1, MSG_OOB),
              SyscallSucceedsWithValue(1));
  ASSERT_EQ(PollWait(p.server.get(), POLLPRI, 5000) & POLLPRI, POLLPRI);
  int mark = -1;
  ASSERT_THAT(ioctl(p.server.get(), SIOCATMARK, &mark), SyscallSucceeds());
  EXPECT_EQ(mark, 0);
  char buf[16];
  // The in-band read stops at the mark.
  ASSERT_THAT(recv(p.server.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(3));
  EXPECT_EQ(std::string(buf, 3), "abc");
  ASSERT_THAT(ioctl(p.server.get(), SIOCATMARK, &mark), SyscallSucceeds());
  EXPECT_EQ(mark, 1);
  ASSERT_THAT(recv(p.server.get(), &c, 1, MSG_OOB),
              SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'd');
  EXPECT_THAT(recv(p.server.get(), &c, 1, MSG_OOB),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(recv(p.server.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

TEST_P(TcpTest, UrgentByteInline) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  SetInt(p.server.get(), SOL_SOCKET, SO_OOBINLINE, 1);
  ASSERT_THAT(send(p.client.get(), "ab", 2, 0), SyscallSucceedsWithValue(2));
  ASSERT_THAT(send(p.client.get(), "c", 1, MSG_OOB),
              SyscallSucceedsWithValue(1));
  ASSERT_TRUE(WaitInq(p.server.get(), 3));
  char c;
  EXPECT_THAT(recv(p.server.get(), &c, 1, MSG_OOB),
              SyscallFailsWithErrno(EINVAL));
  char buf[8];
  // The read stops before the urgent byte, which then reads in line.
  ASSERT_THAT(recv(p.server.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(2));
  int mark = -1;
  ASSERT_THAT(ioctl(p.server.get(), SIOCATMARK, &mark), SyscallSucceeds());
  EXPECT_EQ(mark, 1);
  ASSERT_THAT(recv(p.server.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(1));
  EXPECT_EQ(buf[0], 'c');
}

TEST_P(TcpTest, BadBuffersAreEfault) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  // Raw syscalls: the wrappers may touch the pointer themselves.
  EXPECT_THAT(syscall(SYS_write, p.client.get(), nullptr, 5),
              SyscallFailsWithErrno(EFAULT));
  ASSERT_THAT(send(p.client.get(), "abcde", 5, 0), SyscallSucceedsWithValue(5));
  ASSERT_TRUE(WaitInq(p.server.get(), 5));
  EXPECT_THAT(syscall(SYS_read, p.server.get(), nullptr, 5),
              SyscallFailsWithErrno(EFAULT));
  // Nothing was consumed.
  EXPECT_EQ(RecvN(p.server.get(), 5), "abcde");
}

TEST_P(TcpTest, ReadvWritevAcrossSegments) {
  ConnectedPair p(family());
  ASSERT_TRUE(p.ok());
  char a[] = "abc", b[] = "defgh";
  iovec w[2] = {{a, 3}, {b, 5}};
  ASSERT_THAT(writev(p.client.get(), w, 2), SyscallSucceedsWithValue(8));
  ASSERT_TRUE(WaitInq(p.server.get(), 8));
  char x[2], y[6];
  iovec r[2] = {{x, 2}, {y, 6}};
  ASSERT_THAT(readv(p.server.get(), r, 2), SyscallSucceedsWithValue(8));
  EXPECT_EQ(std::string(x, 2) + std::string(y, 6), "abcdefgh");
}

INSTANTIATE_TEST_SUITE_P(V4V6, TcpTest, ::testing::Values(AF_INET, AF_INET6),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return i.param == AF_INET ? "V4" : "V6";
                         });

// ---- Addresses across the families. ----

TEST(TcpAddrTest, AnyLoopbackAddressReachesWildcardListener) {
  FileDescriptor l = TcpSocket(AF_INET);
  InetAddr any = InetAddr::V4(INADDR_ANY, 0);
  ASSERT_THAT(bind(l.get(), any.sa(), any.len), SyscallSucceeds());
  ASSERT_THAT(listen(l.get(), 5), SyscallSucceeds());
  uint16_t port = SockName(l.get()).port();
  InetAddr dst = InetAddr::V4(0x7f050607, port);  // 127.5.6.7
  FileDescriptor c = TcpSocket(AF_INET);
  ASSERT_THAT(connect(c.get(), dst.sa(), dst.len), SyscallSucceeds());
  // The source is lo's preferred source, 127.0.0.1 (the local route of
  // 127.0.0.0/8 has src 127.0.0.1).
  EXPECT_EQ(SockName(c.get()).WithPort(0), InetAddr::V4(INADDR_LOOPBACK, 0));
  FileDescriptor s(accept(l.get(), nullptr, nullptr));
  ASSERT_TRUE(s.valid());
  EXPECT_EQ(SockName(s.get()), dst);
}

TEST(TcpAddrTest, BindToOther127Address) {
  FileDescriptor l = TcpSocket(AF_INET);
  InetAddr a = InetAddr::V4(0x7f000002, 0);
  ASSERT_THAT(bind(l.get(), a.sa(), a.len), SyscallSucceeds());
  ASSERT_THAT(listen(l.get(), 5), SyscallSucceeds());
  InetAddr la = SockName(l.get());
  EXPECT_EQ(la.WithPort(0), a);
  // 127.0.0.1 on that port: nobody.
  FileDescriptor c = TcpSocket(AF_INET);
  InetAddr other = InetAddr::V4(0x7f000001, la.port());
  EXPECT_THAT(connect(c.get(), other.sa(), other.len),
              SyscallFailsWithErrno(ECONNREFUSED));
  FileDescriptor c2 = TcpSocket(AF_INET);
  EXPECT_THAT(connect(c2.get(), la.sa(), la.len), SyscallSucceeds());
}

TEST(TcpAddrTest, DualStackListenerSeesMappedPeer) {
  FileDescriptor l = TcpSocket(AF_INET6);
  InetAddr any = InetAddr::V6Any(0);
  ASSERT_THAT(bind(l.get(), any.sa(), any.len), SyscallSucceeds());
  ASSERT_THAT(listen(l.get(), 5), SyscallSucceeds());
  uint16_t port = SockName(l.get()).port();
  FileDescriptor c = TcpSocket(AF_INET);
  InetAddr dst = InetAddr::V4(INADDR_LOOPBACK, port);
  ASSERT_THAT(connect(c.get(), dst.sa(), dst.len), SyscallSucceeds());
  InetAddr peer;
  FileDescriptor s(accept(l.get(), peer.sa(), &peer.len));
  ASSERT_TRUE(s.valid());
  ASSERT_EQ(peer.family(), AF_INET6);
  EXPECT_EQ(peer.ToString(),
            "[::ffff:127.0.0.1]:" + std::to_string(SockName(c.get()).port()));
  EXPECT_EQ(SockName(s.get()).ToString(),
            "[::ffff:127.0.0.1]:" + std::to_string(port));
  // A v6 socket may connect to a v4-mapped address too.
  FileDescriptor c6 = TcpSocket(AF_INET6);
  InetAddr mapped = InetAddr::V4Mapped(INADDR_LOOPBACK, port);
  ASSERT_THAT(connect(c6.get(), mapped.sa(), mapped.len), SyscallSucceeds());
  EXPECT_EQ(SockName(c6.get()).WithPort(0).ToString(), "[::ffff:127.0.0.1]:0");
}

TEST(TcpAddrTest, V6OnlyListenerRefusesV4) {
  FileDescriptor l = TcpSocket(AF_INET6);
  SetInt(l.get(), IPPROTO_IPV6, IPV6_V6ONLY, 1);
  InetAddr any = InetAddr::V6Any(0);
  ASSERT_THAT(bind(l.get(), any.sa(), any.len), SyscallSucceeds());
  ASSERT_THAT(listen(l.get(), 5), SyscallSucceeds());
  uint16_t port = SockName(l.get()).port();
  FileDescriptor c = TcpSocket(AF_INET);
  InetAddr dst = InetAddr::V4(INADDR_LOOPBACK, port);
  EXPECT_THAT(connect(c.get(), dst.sa(), dst.len),
              SyscallFailsWithErrno(ECONNREFUSED));
  // And its port is free for an AF_INET socket.
  FileDescriptor v4 = TcpSocket(AF_INET);
  InetAddr any4 = InetAddr::V4(INADDR_ANY, port);
  EXPECT_THAT(bind(v4.get(), any4.sa(), any4.len), SyscallSucceeds());
}

TEST(TcpAddrTest, DualStackPortConflictsWithV4) {
  FileDescriptor l = TcpSocket(AF_INET6);
  InetAddr any = InetAddr::V6Any(0);
  ASSERT_THAT(bind(l.get(), any.sa(), any.len), SyscallSucceeds());
  uint16_t port = SockName(l.get()).port();
  FileDescriptor v4 = TcpSocket(AF_INET);
  InetAddr lo4 = InetAddr::V4(INADDR_LOOPBACK, port);
  EXPECT_THAT(bind(v4.get(), lo4.sa(), lo4.len),
              SyscallFailsWithErrno(EADDRINUSE));
}

TEST(TcpAddrTest, ProcNetTcpListsListener) {
  FileDescriptor l = TcpListener(AF_INET);
  ASSERT_TRUE(l.valid());
  uint16_t port = SockName(l.get()).port();
  std::string table = ReadFileOrEmpty("/proc/net/tcp");
  char want[32];
  // "0100007F:PORT 00000000:0000 0A": 127.0.0.1, listening.
  snprintf(want, sizeof(want), "0100007F:%04X 00000000:0000 0A", port);
  EXPECT_NE(table.find(want), std::string::npos) << table;
}

// ---- SOL_TCP and the buffer options. ----

// The n-th (0-based) number of a /proc/sys file, or `def` if unreadable.
int SysctlField(const std::string& path, int n, int def) {
  std::string s = ReadFileOrEmpty(path);
  if (s.empty()) return def;
  int v[3] = {def, def, def};
  if (sscanf(s.c_str(), "%d %d %d", &v[0], &v[1], &v[2]) < n + 1) return def;
  return v[n];
}

TEST(TcpOptTest, BufferDefaultsAreTcpRmemWmem) {
  FileDescriptor s = TcpSocket(AF_INET);
  EXPECT_EQ(IntOpt(s.get(), SOL_SOCKET, SO_RCVBUF),
            SysctlField("/proc/sys/net/ipv4/tcp_rmem", 1, 131072));
  EXPECT_EQ(IntOpt(s.get(), SOL_SOCKET, SO_SNDBUF),
            SysctlField("/proc/sys/net/ipv4/tcp_wmem", 1, 16384));
}

TEST(TcpOptTest, NodelayCorkQuickack) {
  FileDescriptor s = TcpSocket(AF_INET);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_NODELAY), 0);
  SetInt(s.get(), IPPROTO_TCP, TCP_NODELAY, 5);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_NODELAY), 1);
  SetInt(s.get(), IPPROTO_TCP, TCP_CORK, 1);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_CORK), 1);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_QUICKACK), 1);
  char c = 1;
  EXPECT_THAT(setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &c, 1),
              SyscallFailsWithErrno(EINVAL));
  int v = 1;
  EXPECT_THAT(setsockopt(s.get(), IPPROTO_TCP, 200, &v, sizeof(v)),
              SyscallFailsWithErrno(ENOPROTOOPT));
}

TEST(TcpOptTest, KeepaliveRanges) {
  FileDescriptor s = TcpSocket(AF_INET6);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_KEEPIDLE),
            SysctlField("/proc/sys/net/ipv4/tcp_keepalive_time", 0, 7200));
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_KEEPINTVL),
            SysctlField("/proc/sys/net/ipv4/tcp_keepalive_intvl", 0, 75));
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_KEEPCNT),
            SysctlField("/proc/sys/net/ipv4/tcp_keepalive_probes", 0, 9));
  SetInt(s.get(), IPPROTO_TCP, TCP_KEEPIDLE, 10);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_KEEPIDLE), 10);
  int v = 0;
  EXPECT_THAT(setsockopt(s.get(), IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v)),
              SyscallFailsWithErrno(EINVAL));
  v = 32768;
  EXPECT_THAT(setsockopt(s.get(), IPPROTO_TCP, TCP_KEEPINTVL, &v, sizeof(v)),
              SyscallFailsWithErrno(EINVAL));
  v = 128;
  EXPECT_THAT(setsockopt(s.get(), IPPROTO_TCP, TCP_KEEPCNT, &v, sizeof(v)),
              SyscallFailsWithErrno(EINVAL));
  SetInt(s.get(), SOL_SOCKET, SO_KEEPALIVE, 1);
  EXPECT_EQ(IntOpt(s.get(), SOL_SOCKET, SO_KEEPALIVE), 1);
}

TEST(TcpOptTest, TimersAndCounts) {
  FileDescriptor s = TcpSocket(AF_INET);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_SYNCNT),
            SysctlField("/proc/sys/net/ipv4/tcp_syn_retries", 0, 6));
  int v = 0;
  EXPECT_THAT(setsockopt(s.get(), IPPROTO_TCP, TCP_SYNCNT, &v, sizeof(v)),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_LINGER2),
            SysctlField("/proc/sys/net/ipv4/tcp_fin_timeout", 0, 60));
  SetInt(s.get(), IPPROTO_TCP, TCP_LINGER2, -5);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_LINGER2), -1);
  SetInt(s.get(), IPPROTO_TCP, TCP_LINGER2, 1000);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_LINGER2), 120);
  // Seconds become SYN-ACK retransmits and back: 5 s -> 3 -> 1+2+4 s.
  SetInt(s.get(), IPPROTO_TCP, TCP_DEFER_ACCEPT, 5);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_DEFER_ACCEPT), 7);
  v = -1;
  EXPECT_THAT(setsockopt(s.get(), IPPROTO_TCP, TCP_USER_TIMEOUT, &v, sizeof(v)),
              SyscallFailsWithErrno(EINVAL));
  SetInt(s.get(), IPPROTO_TCP, TCP_USER_TIMEOUT, 5000);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_USER_TIMEOUT), 5000);
  SetInt(s.get(), IPPROTO_TCP, TCP_NOTSENT_LOWAT, 16384);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_NOTSENT_LOWAT), 16384);
  SetInt(s.get(), IPPROTO_TCP, TCP_FASTOPEN, 5);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_FASTOPEN), 5);
}

TEST(TcpOptTest, Maxseg) {
  FileDescriptor s = TcpSocket(AF_INET);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_MAXSEG), 536);
  int v = 87;
  EXPECT_THAT(setsockopt(s.get(), IPPROTO_TCP, TCP_MAXSEG, &v, sizeof(v)),
              SyscallFailsWithErrno(EINVAL));
  SetInt(s.get(), IPPROTO_TCP, TCP_MAXSEG, 1000);
  EXPECT_EQ(IntOpt(s.get(), IPPROTO_TCP, TCP_MAXSEG), 1000);
}

TEST(TcpOptTest, MaxsegOfLoopbackConnection) {
  // At most lo's MTU (65536) less the IP and TCP headers and the
  // timestamps (tcp_bound_to_half_wnd may halve it), above the default.
  ConnectedPair p4(AF_INET);
  ASSERT_TRUE(p4.ok());
  EXPECT_LE(IntOpt(p4.client.get(), IPPROTO_TCP, TCP_MAXSEG), 65483);
  EXPECT_GT(IntOpt(p4.client.get(), IPPROTO_TCP, TCP_MAXSEG), 536);
  ConnectedPair p6(AF_INET6);
  ASSERT_TRUE(p6.ok());
  EXPECT_LE(IntOpt(p6.client.get(), IPPROTO_TCP, TCP_MAXSEG), 65464);
  EXPECT_GT(IntOpt(p6.client.get(), IPPROTO_TCP, TCP_MAXSEG), 536);
}

TEST(TcpOptTest, Congestion) {
  FileDescriptor s = TcpSocket(AF_INET);
  std::string def =
      ReadFileOrEmpty("/proc/sys/net/ipv4/tcp_congestion_control");
  if (!def.empty() && def.back() == '\n') def.pop_back();
  if (def.empty()) def = "cubic";
  char name[32] = {};
  socklen_t len = sizeof(name);
  ASSERT_THAT(getsockopt(s.get(), IPPROTO_TCP, TCP_CONGESTION, name, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, 16u);  // TCP_CA_NAME_MAX
  EXPECT_EQ(std::string(name), def);
  ASSERT_THAT(setsockopt(s.get(), IPPROTO_TCP, TCP_CONGESTION, "reno", 4),
              SyscallSucceeds());
  len = sizeof(name);
  ASSERT_THAT(getsockopt(s.get(), IPPROTO_TCP, TCP_CONGESTION, name, &len),
              SyscallSucceeds());
  EXPECT_EQ(std::string(name), "reno");
  EXPECT_THAT(setsockopt(s.get(), IPPROTO_TCP, TCP_CONGESTION, "nosuch", 6),
              SyscallFailsWithErrno(ENOENT));
}

TEST(TcpOptTest, InfoState) {
  auto state = [](int fd) {
    uint8_t info[256] = {};
    socklen_t len = sizeof(info);
    EXPECT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &len), 0);
    EXPECT_GE(len, 104u);
    return info[0];
  };
  FileDescriptor s = TcpSocket(AF_INET);
  EXPECT_EQ(state(s.get()), TCP_CLOSE);
  FileDescriptor l = TcpListener(AF_INET);
  ASSERT_TRUE(l.valid());
  EXPECT_EQ(state(l.get()), TCP_LISTEN);
  ConnectedPair p(AF_INET);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(state(p.client.get()), TCP_ESTABLISHED);
  EXPECT_EQ(state(p.server.get()), TCP_ESTABLISHED);
  ASSERT_THAT(shutdown(p.client.get(), SHUT_WR), SyscallSucceeds());
  ASSERT_EQ(PollWait(p.server.get(), POLLRDHUP, 5000) & POLLRDHUP, POLLRDHUP);
  EXPECT_EQ(state(p.server.get()), TCP_CLOSE_WAIT);
  // FIN_WAIT1 until the FIN's ACK arrives (it may be delayed).
  const uint8_t closer = state(p.client.get());
  EXPECT_TRUE(closer == TCP_FIN_WAIT1 || closer == TCP_FIN_WAIT2) << closer;
  // A short buffer gets the first bytes.
  uint8_t one = 0xff;
  socklen_t len = 1;
  ASSERT_THAT(getsockopt(p.server.get(), IPPROTO_TCP, TCP_INFO, &one, &len),
              SyscallSucceeds());
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(one, TCP_CLOSE_WAIT);
}

TEST(TcpOptTest, InfoCountsBytes) {
  ConnectedPair p(AF_INET);
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(send(p.client.get(), "0123456789", 10, 0),
              SyscallSucceedsWithValue(10));
  EXPECT_EQ(RecvN(p.server.get(), 10), "0123456789");
  // struct tcp_info of Linux >= 4.1: tcpi_bytes_acked at 120,
  // tcpi_bytes_received at 128.
  auto field = [](int fd, size_t off) {
    uint8_t info[256] = {};
    socklen_t len = sizeof(info);
    EXPECT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &len), 0);
    uint64_t v = 0;
    memcpy(&v, info + off, sizeof(v));
    return v;
  };
  EXPECT_EQ(field(p.server.get(), 128), 10u);
  uint64_t acked = 0;
  for (int i = 0; i < 500; ++i) {
    acked = field(p.client.get(), 120);
    if (acked == 11) break;
    usleep(10000);
  }
  EXPECT_EQ(acked, 11u);
}

}  // namespace
}  // namespace sandbox::testutil
