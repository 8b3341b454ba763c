// The socket calls in general (net/socket.c): on a descriptor that is not a
// socket (EBADF for one that is not open or is O_PATH, ENOTSOCK for any
// other file, after the checks Linux makes before the lookup); socket(2)
// and socketpair(2)'s checks of domain, type and flags; the argument
// checks every family shares (address and option lengths, msghdr, iovecs,
// control buffers) in Linux's order; SIGPIPE; SO_RCVTIMEO and restarts;
// read/write on sockets. Families have their own files (socket_unix_*).
//
// Cases that need a socket use AF_UNIX and skip when the family is
// missing.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr unsigned kMsgCmsgCompat = 0x80000000u;
// A user address in the kernel's half: access_ok fails on it.
constexpr unsigned long kKernelAddr = 0xffffffffffff0000ul;

// A socketpair of `type` in fds, or false with errno (EAFNOSUPPORT: the
// sandbox without AF_UNIX yet; the caller skips).
bool UnixPair(int type, FileDescriptor fds[2]) {
  int sv[2];
  if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) != 0) return false;
  fds[0].reset(sv[0]);
  fds[1].reset(sv[1]);
  return true;
}

#define UNIX_PAIR_OR_SKIP(type, fds)                                   \
  do {                                                                 \
    if (!UnixPair(type, fds)) {                                        \
      if (errno == EAFNOSUPPORT) GTEST_SKIP() << "no AF_UNIX sockets"; \
      FAIL() << "socketpair: " << strerror(errno);                     \
    }                                                                  \
  } while (0)

#define UNIX_SOCKET_OR_SKIP(var, type)                                 \
  FileDescriptor var(socket(AF_UNIX, (type) | SOCK_CLOEXEC, 0));       \
  do {                                                                 \
    if (!var.valid()) {                                                \
      if (errno == EAFNOSUPPORT) GTEST_SKIP() << "no AF_UNIX sockets"; \
      FAIL() << "socket: " << strerror(errno);                         \
    }                                                                  \
  } while (0)

// Every call that takes a socket descriptor, with harmless arguments.
struct Call {
  const char* name;
  std::function<long(int)> fn;
};

std::vector<Call> Calls() {
  static sockaddr_storage addr;
  static socklen_t len = sizeof(addr);
  static char buf[16];
  static int opt = 1;
  static socklen_t optlen = sizeof(opt);
  static iovec iov = {buf, sizeof(buf)};
  static msghdr msg = {nullptr, 0, &iov, 1, nullptr, 0, 0};
  static mmsghdr mmsg = {msg, 0};
  return {
      {"bind",
       [](int fd) {
         return syscall(SYS_bind, fd, &addr, sizeof(sa_family_t) + 2);
       }},
      {"connect",
       [](int fd) {
         return syscall(SYS_connect, fd, &addr, sizeof(sa_family_t) + 2);
       }},
      {"listen", [](int fd) { return syscall(SYS_listen, fd, 1); }},
      {"accept", [](int fd) { return syscall(SYS_accept, fd, &addr, &len); }},
      {"accept4",
       [](int fd) { return syscall(SYS_accept4, fd, &addr, &len, 0); }},
      {"getsockname",
       [](int fd) { return syscall(SYS_getsockname, fd, &addr, &len); }},
      {"getpeername",
       [](int fd) { return syscall(SYS_getpeername, fd, &addr, &len); }},
      {"sendto",
       [](int fd) {
         return syscall(SYS_sendto, fd, buf, sizeof(buf), 0, nullptr, 0);
       }},
      {"recvfrom",
       [](int fd) {
         return syscall(SYS_recvfrom, fd, buf, sizeof(buf), MSG_DONTWAIT,
                        nullptr, nullptr);
       }},
      {"sendmsg", [](int fd) { return syscall(SYS_sendmsg, fd, &msg, 0); }},
      {"recvmsg",
       [](int fd) { return syscall(SYS_recvmsg, fd, &msg, MSG_DONTWAIT); }},
      {"sendmmsg",
       [](int fd) { return syscall(SYS_sendmmsg, fd, &mmsg, 1, 0); }},
      {"recvmmsg",
       [](int fd) {
         return syscall(SYS_recvmmsg, fd, &mmsg, 1, MSG_DONTWAIT, nullptr);
       }},
      {"shutdown", [](int fd) { return syscall(SYS_shutdown, fd, SHUT_RDWR); }},
      {"setsockopt",
       [](int fd) {
         return syscall(SYS_setsockopt, fd, SOL_SOCKET, SO_REUSEADDR, &opt,
                        sizeof(opt));
       }},
      {"getsockopt",
       [](int fd) {
         return syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, &opt, &optlen);
       }},
  };
}

TEST(SocketCallsTest, OnAFileAreEnotsock) {
  Pipe p;
  TempPath file = TempPath::CreateFile();
  FileDescriptor f(open(file.path().c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(f.valid());
  FileDescriptor dir(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir.valid());
  for (const Call& c : Calls()) {
    EXPECT_THAT(c.fn(p.r.get()), SyscallFailsWithErrno(ENOTSOCK)) << c.name;
    EXPECT_THAT(c.fn(f.get()), SyscallFailsWithErrno(ENOTSOCK)) << c.name;
    EXPECT_THAT(c.fn(dir.get()), SyscallFailsWithErrno(ENOTSOCK)) << c.name;
  }
}

TEST(SocketCallsTest, OnABadOrOPathDescriptorAreEbadf) {
  FileDescriptor path(open("/", O_PATH | O_CLOEXEC));
  ASSERT_TRUE(path.valid());
  for (const Call& c : Calls()) {
    EXPECT_THAT(c.fn(-1), SyscallFailsWithErrno(EBADF)) << c.name;
    EXPECT_THAT(c.fn(1000000), SyscallFailsWithErrno(EBADF)) << c.name;
    EXPECT_THAT(c.fn(path.get()), SyscallFailsWithErrno(EBADF)) << c.name;
  }
}

TEST(SocketCallsTest, ChecksBeforeTheLookup) {
  // MSG_CMSG_COMPAT is checked before the descriptor. (accept4's flags
  // and setsockopt's length moved after the lookup between 6.1 and 6.18:
  // not asserted.)
  EXPECT_THAT(syscall(SYS_sendmsg, -1, nullptr, kMsgCmsgCompat),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_recvmsg, -1, nullptr, kMsgCmsgCompat),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_sendmmsg, -1, nullptr, 1, kMsgCmsgCompat),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_recvmmsg, -1, nullptr, 1, kMsgCmsgCompat, nullptr),
              SyscallFailsWithErrno(EINVAL));
  // recvmmsg reads its timeout first.
  EXPECT_THAT(syscall(SYS_recvmmsg, -1, nullptr, 1, 0, 8),
              SyscallFailsWithErrno(EFAULT));
  // getsockopt reads its length only after the lookup.
  EXPECT_THAT(syscall(SYS_getsockopt, -1, SOL_SOCKET, SO_TYPE, nullptr, 8),
              SyscallFailsWithErrno(EBADF));
  // recvmmsg checks the timeout's value first too.
  struct timespec bad = {0, 1000000000};
  EXPECT_THAT(syscall(SYS_recvmmsg, -1, nullptr, 1, 0, &bad),
              SyscallFailsWithErrno(EINVAL));
  bad = {-1, 0};
  EXPECT_THAT(syscall(SYS_recvmmsg, -1, nullptr, 1, 0, &bad),
              SyscallFailsWithErrno(EINVAL));
  // sendto and recvfrom check their buffer's range first (import_ubuf).
  EXPECT_THAT(syscall(SYS_sendto, -1, kKernelAddr, 10, 0, nullptr, 0),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(syscall(SYS_recvfrom, -1, kKernelAddr, 10, 0, nullptr, nullptr),
              SyscallFailsWithErrno(EFAULT));
  // A bad socket(2)/socketpair(2) flag comes before anything else.
  EXPECT_THAT(socket(-1, SOCK_STREAM | 0x100000, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_socketpair, -1, SOCK_STREAM | 0x100000, 0, nullptr),
              SyscallFailsWithErrno(EINVAL));
}

TEST(SocketCallsTest, ConnectReadsItsAddressBeforeTheSocketCheck) {
  Pipe p;
  char addr[200] = {};
  // connect copies the address in before it asks for a socket; bind after.
  EXPECT_THAT(syscall(SYS_connect, p.r.get(), addr, 129),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_connect, p.r.get(), 8, 10),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(syscall(SYS_connect, -1, addr, 129),
              SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(syscall(SYS_bind, p.r.get(), addr, 129),
              SyscallFailsWithErrno(ENOTSOCK));
  EXPECT_THAT(syscall(SYS_bind, p.r.get(), 8, 10),
              SyscallFailsWithErrno(ENOTSOCK));
}

TEST(SocketCallsTest, Accept4FlagsComeBeforeTheSocketCheck) {
  Pipe p;
  EXPECT_THAT(syscall(SYS_accept4, p.r.get(), nullptr, nullptr, 0x1),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_accept4, -1, nullptr, nullptr, 0x1),
              SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(syscall(SYS_accept4, p.r.get(), nullptr, nullptr, SOCK_CLOEXEC),
              SyscallFailsWithErrno(ENOTSOCK));
}

// ---- socket(2) and socketpair(2). ----

TEST(SocketCreateTest, DomainOutOfRangeOrUnknownIsEafnosupport) {
  for (int domain :
       {-1, 46 /* AF_MAX */, 1000, INT_MAX, INT_MIN, 0 /* AF_UNSPEC */}) {
    EXPECT_THAT(socket(domain, SOCK_STREAM, 0),
                SyscallFailsWithErrno(EAFNOSUPPORT))
        << domain;
    int sv[2];
    EXPECT_THAT(socketpair(domain, SOCK_STREAM, 0, sv),
                SyscallFailsWithErrno(EAFNOSUPPORT))
        << domain;
  }
}

TEST(SocketCreateTest, TypeOutOfRangeIsEinvalAfterTheDomainRange) {
  // __sock_create: the domain's range, then the type's, then the family.
  EXPECT_THAT(socket(AF_UNSPEC, 11 /* SOCK_MAX */, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(socket(AF_UNIX, 11, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(socket(AF_UNIX, 15, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(socket(46, 11, 0), SyscallFailsWithErrno(EAFNOSUPPORT));
  // A negative type has bits beyond SOCK_TYPE_MASK: a bad flag.
  EXPECT_THAT(socket(46, -1, 0), SyscallFailsWithErrno(EINVAL));
  int sv[2];
  EXPECT_THAT(socketpair(AF_UNSPEC, 11, 0, sv), SyscallFailsWithErrno(EINVAL));
}

TEST(SocketCreateTest, SocketpairStoresItsArrayBeforeAskingTheFamily) {
  // The descriptors are taken and their numbers stored before the sockets
  // are made: a bad array is EFAULT for any family.
  EXPECT_THAT(syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, nullptr),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, kKernelAddr),
              SyscallFailsWithErrno(EFAULT));
}

TEST(SocketCreateTest, UnixTypesAndProtocols) {
  UNIX_SOCKET_OR_SKIP(probe, SOCK_STREAM);
  EXPECT_THAT(socket(AF_UNIX, SOCK_PACKET, 0),
              SyscallFailsWithErrno(ESOCKTNOSUPPORT));
  EXPECT_THAT(socket(AF_UNIX, 7, 0), SyscallFailsWithErrno(ESOCKTNOSUPPORT));
  EXPECT_THAT(socket(AF_UNIX, SOCK_STREAM, 2),
              SyscallFailsWithErrno(EPROTONOSUPPORT));
  // PF_UNIX itself is a valid protocol; SOCK_RAW is SOCK_DGRAM.
  FileDescriptor one(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, PF_UNIX));
  EXPECT_TRUE(one.valid()) << strerror(errno);
  FileDescriptor raw(socket(AF_UNIX, SOCK_RAW | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(raw.valid()) << strerror(errno);
  int type = -1;
  socklen_t len = sizeof(type);
  ASSERT_THAT(getsockopt(raw.get(), SOL_SOCKET, SO_TYPE, &type, &len),
              SyscallSucceeds());
  EXPECT_EQ(type, SOCK_DGRAM);
}

TEST(SocketCreateTest, FlagsAndTheSocketInode) {
  FileDescriptor s(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0));
  if (!s.valid() && errno == EAFNOSUPPORT) {
    GTEST_SKIP() << "no AF_UNIX sockets";
  }
  ASSERT_TRUE(s.valid()) << strerror(errno);
  EXPECT_EQ(fcntl(s.get(), F_GETFL) & (O_NONBLOCK | O_ACCMODE),
            O_NONBLOCK | O_RDWR);
  EXPECT_EQ(fcntl(s.get(), F_GETFD), 0);
  FileDescriptor c(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(c.valid());
  EXPECT_EQ(fcntl(c.get(), F_GETFD), FD_CLOEXEC);
  EXPECT_EQ(fcntl(c.get(), F_GETFL) & O_NONBLOCK, 0);
  struct stat st;
  ASSERT_THAT(fstat(s.get(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  char link[64] = {};
  std::string fd_path = "/proc/self/fd/" + std::to_string(s.get());
  ASSERT_THAT(readlink(fd_path.c_str(), link, sizeof(link) - 1),
              SyscallSucceeds());
  EXPECT_EQ(std::string(link), "socket:[" + std::to_string(st.st_ino) + "]");
  // The magic link reaches the socket's inode; opening it is ENXIO.
  struct stat via;
  ASSERT_THAT(stat(fd_path.c_str(), &via), SyscallSucceeds());
  EXPECT_EQ(via.st_ino, st.st_ino);
  EXPECT_EQ(via.st_dev, st.st_dev);
  EXPECT_TRUE(S_ISSOCK(via.st_mode));
  EXPECT_THAT(open(fd_path.c_str(), O_RDWR | O_CLOEXEC),
              SyscallFailsWithErrno(ENXIO));
  struct stat st2;
  ASSERT_THAT(fstat(c.get(), &st2), SyscallSucceeds());
  EXPECT_NE(st.st_ino, st2.st_ino);
  EXPECT_EQ(st.st_dev, st2.st_dev);
  // A socket has no file offset.
  EXPECT_THAT(lseek(s.get(), 0, SEEK_CUR), SyscallFailsWithErrno(ESPIPE));
}

// ---- Address, option and length checks (any family). ----

TEST(SocketArgsTest, AddressLengths) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_STREAM);
  char addr[200] = {};
  EXPECT_THAT(bind(s.get(), reinterpret_cast<sockaddr*>(addr), 129),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_bind, s.get(), addr, -1),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_bind, s.get(), 8, 10), SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(syscall(SYS_connect, s.get(), addr, 129),
              SyscallFailsWithErrno(EINVAL));
  // Names: the family's answer, then the guest's length (negative: EINVAL;
  // shorter than the name: truncated, the real length stored).
  int len = -1;
  EXPECT_THAT(syscall(SYS_getsockname, s.get(), addr, &len),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_getsockname, s.get(), addr, 8),
              SyscallFailsWithErrno(EFAULT));
  len = 1;
  memset(addr, 0x55, sizeof(addr));
  ASSERT_THAT(syscall(SYS_getsockname, s.get(), addr, &len), SyscallSucceeds());
  EXPECT_EQ(len, 2);  // sizeof(sa_family_t): an unbound Unix socket
  EXPECT_EQ(addr[0], AF_UNIX);
  EXPECT_EQ(addr[1], 0x55);  // only one byte copied
  len = sizeof(addr);
  EXPECT_THAT(syscall(SYS_getpeername, s.get(), addr, &len),
              SyscallFailsWithErrno(ENOTCONN));
  EXPECT_THAT(syscall(SYS_getpeername, s.get(), addr, 8),
              SyscallFailsWithErrno(ENOTCONN));
}

TEST(SocketArgsTest, ShutdownHowAndListenBacklog) {
  FileDescriptor fds[2];
  UNIX_PAIR_OR_SKIP(SOCK_STREAM, fds);
  EXPECT_THAT(shutdown(fds[0].get(), 3), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(shutdown(fds[0].get(), -1), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(shutdown(fds[0].get(), SHUT_RDWR), SyscallSucceeds());
}

TEST(SocketArgsTest, OptionLengths) {
  UNIX_SOCKET_OR_SKIP(s, SOCK_STREAM);
  int v = 1;
  socklen_t len = -1;
  EXPECT_THAT(getsockopt(s.get(), SOL_SOCKET, SO_TYPE, &v, &len),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_getsockopt, s.get(), SOL_SOCKET, SO_TYPE, &v, 8),
              SyscallFailsWithErrno(EFAULT));
  len = sizeof(v);
  EXPECT_THAT(syscall(SYS_getsockopt, s.get(), SOL_SOCKET, SO_TYPE, 8, &len),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(
      syscall(SYS_setsockopt, s.get(), SOL_SOCKET, SO_KEEPALIVE, &v, -1),
      SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(setsockopt(s.get(), SOL_SOCKET, SO_KEEPALIVE, &v, 2),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_setsockopt, s.get(), SOL_SOCKET, SO_KEEPALIVE, 8, 4),
              SyscallFailsWithErrno(EFAULT));
  // A short length with a bad pointer is the length's EINVAL.
  EXPECT_THAT(syscall(SYS_setsockopt, s.get(), SOL_SOCKET, SO_KEEPALIVE, 8, 2),
              SyscallFailsWithErrno(EINVAL));
  // AF_UNIX has no options beyond SOL_SOCKET: EOPNOTSUPP before anything
  // is read.
  EXPECT_THAT(syscall(SYS_setsockopt, s.get(), SOL_IP, 1, 8, 4),
              SyscallFailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(syscall(SYS_getsockopt, s.get(), SOL_IP, 1, 8, 8),
              SyscallFailsWithErrno(EOPNOTSUPP));
}

TEST(SocketArgsTest, MsghdrChecks) {
  FileDescriptor fds[2];
  UNIX_PAIR_OR_SKIP(SOCK_DGRAM, fds);
  char buf[8] = {};
  iovec iov = {buf, sizeof(buf)};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  EXPECT_THAT(sendmsg(fds[0].get(), nullptr, 0), SyscallFailsWithErrno(EFAULT));
  m.msg_iovlen = 1025;  // UIO_MAXIOV + 1
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallFailsWithErrno(EMSGSIZE));
  EXPECT_THAT(recvmsg(fds[0].get(), &m, MSG_DONTWAIT),
              SyscallFailsWithErrno(EMSGSIZE));
  m.msg_iovlen = 1;
  m.msg_name = buf;
  m.msg_namelen = -1;
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(recvmsg(fds[0].get(), &m, MSG_DONTWAIT),
              SyscallFailsWithErrno(EINVAL));
  m.msg_name = nullptr;  // a length without a name is ignored
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallSucceedsWithValue(8));
  m.msg_namelen = 0;
  // A negative iovec length: EINVAL; a bad iovec array: EFAULT.
  iovec two[2] = {{buf, 1}, {buf, static_cast<size_t>(-1)}};
  m.msg_iov = two;
  m.msg_iovlen = 2;
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallFailsWithErrno(EINVAL));
  m.msg_iov = reinterpret_cast<iovec*>(8);
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallFailsWithErrno(EFAULT));
  two[1] = {reinterpret_cast<void*>(kKernelAddr), 1};
  m.msg_iov = two;
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallFailsWithErrno(EFAULT));
  // Control buffers: too long for optmem_max or INT_MAX is ENOBUFS before
  // it is read; a bad cmsg_len is EINVAL.
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = reinterpret_cast<void*>(8);
  m.msg_controllen = 1ul << 31;
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallFailsWithErrno(ENOBUFS));
  m.msg_controllen = 1 << 20;
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallFailsWithErrno(ENOBUFS));
  m.msg_controllen = 32;
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallFailsWithErrno(EFAULT));
  alignas(cmsghdr) char ctl[64] = {};
  m.msg_control = ctl;
  m.msg_controllen = sizeof(cmsghdr);  // cmsg_len 0
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallFailsWithErrno(EINVAL));
  cmsghdr* c = reinterpret_cast<cmsghdr*>(ctl);
  c->cmsg_len = sizeof(ctl) + 1;
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  m.msg_controllen = sizeof(ctl);
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallFailsWithErrno(EINVAL));
  c->cmsg_len = CMSG_LEN(0);
  c->cmsg_type = 99;  // unknown SOL_SOCKET type
  m.msg_controllen = CMSG_SPACE(0);
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallFailsWithErrno(EINVAL));
  c->cmsg_level = SOL_IP;  // other levels are the protocol's: skipped
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallSucceedsWithValue(8));
  // Less than a header is no control data at all.
  m.msg_controllen = sizeof(cmsghdr) - 1;
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallSucceedsWithValue(8));
}

TEST(SocketArgsTest, RecvmsgReportsCmsgCloexecAndControllen) {
  FileDescriptor fds[2];
  UNIX_PAIR_OR_SKIP(SOCK_DGRAM, fds);
  ASSERT_THAT(send(fds[0].get(), "ab", 2, 0), SyscallSucceedsWithValue(2));
  char buf[8];
  iovec iov = {buf, sizeof(buf)};
  alignas(cmsghdr) char ctl[64];
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof(ctl);
  m.msg_flags = -1;
  ASSERT_THAT(recvmsg(fds[1].get(), &m, MSG_CMSG_CLOEXEC),
              SyscallSucceedsWithValue(2));
  EXPECT_EQ(m.msg_flags, MSG_CMSG_CLOEXEC);
  EXPECT_EQ(m.msg_controllen, 0u);
}

TEST(SocketArgsTest, RightsTruncatedAndCloexec) {
  FileDescriptor fds[2];
  UNIX_PAIR_OR_SKIP(SOCK_DGRAM, fds);
  Pipe p;
  alignas(cmsghdr) char ctl[CMSG_SPACE(3 * sizeof(int))] = {};
  cmsghdr* c = reinterpret_cast<cmsghdr*>(ctl);
  c->cmsg_len = CMSG_LEN(3 * sizeof(int));
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  int three[3] = {p.r.get(), p.w.get(), p.r.get()};
  memcpy(CMSG_DATA(c), three, sizeof(three));
  char byte = 'x';
  iovec iov = {&byte, 1};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof(ctl);
  ASSERT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallSucceedsWithValue(1));
  // Room for the header and two descriptors (plus 3 spare bytes).
  alignas(cmsghdr) char in[CMSG_LEN(2 * sizeof(int)) + 3];
  memset(in, 0, sizeof(in));
  m.msg_control = in;
  m.msg_controllen = sizeof(in);
  ASSERT_THAT(recvmsg(fds[1].get(), &m, MSG_CMSG_CLOEXEC),
              SyscallSucceedsWithValue(1));
  EXPECT_EQ(m.msg_flags, MSG_CTRUNC | MSG_CMSG_CLOEXEC);
  EXPECT_EQ(m.msg_controllen, CMSG_LEN(2 * sizeof(int)));
  c = reinterpret_cast<cmsghdr*>(in);
  ASSERT_EQ(c->cmsg_len, CMSG_LEN(2 * sizeof(int)));
  int got[2];
  memcpy(got, CMSG_DATA(c), sizeof(got));
  for (int fd : got) {
    EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC) << fd;
    close(fd);
  }
  // No control buffer at all: MSG_CTRUNC, nothing installed.
  m.msg_control = ctl;
  m.msg_controllen = sizeof(ctl);
  ASSERT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallSucceedsWithValue(1));
  msghdr none = {};
  none.msg_iov = &iov;
  none.msg_iovlen = 1;
  ASSERT_THAT(recvmsg(fds[1].get(), &none, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(none.msg_flags, MSG_CTRUNC);
}

TEST(SocketArgsTest, RightsBadDescriptorAndTooMany) {
  FileDescriptor fds[2];
  UNIX_PAIR_OR_SKIP(SOCK_DGRAM, fds);
  std::vector<char> ctl(CMSG_SPACE(254 * sizeof(int)));
  cmsghdr* c = reinterpret_cast<cmsghdr*>(ctl.data());
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  std::vector<int> many(254, fds[0].get());
  memcpy(CMSG_DATA(c), many.data(), many.size() * sizeof(int));
  c->cmsg_len = CMSG_LEN(254 * sizeof(int));  // SCM_MAX_FD + 1
  char byte = 'x';
  iovec iov = {&byte, 1};
  msghdr m = {nullptr, 0, &iov, 1, ctl.data(), ctl.size(), 0};
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallFailsWithErrno(EINVAL));
  c->cmsg_len = CMSG_LEN(sizeof(int));
  int bad = 1000000;
  memcpy(CMSG_DATA(c), &bad, sizeof(bad));
  m.msg_controllen = CMSG_SPACE(sizeof(int));
  EXPECT_THAT(sendmsg(fds[0].get(), &m, 0), SyscallFailsWithErrno(EBADF));
}

TEST(SocketArgsTest, MmsgBatches) {
  FileDescriptor fds[2];
  UNIX_PAIR_OR_SKIP(SOCK_DGRAM, fds);
  char a[4] = "abc", b[2] = "d";
  iovec iov[2] = {{a, 3}, {b, 1}};
  mmsghdr out[2] = {};
  out[0].msg_hdr.msg_iov = &iov[0];
  out[0].msg_hdr.msg_iovlen = 1;
  out[1].msg_hdr.msg_iov = &iov[1];
  out[1].msg_hdr.msg_iovlen = 1;
  EXPECT_THAT(sendmmsg(fds[0].get(), out, 0, 0), SyscallSucceedsWithValue(0));
  ASSERT_THAT(sendmmsg(fds[0].get(), out, 2, 0), SyscallSucceedsWithValue(2));
  EXPECT_EQ(out[0].msg_len, 3u);
  EXPECT_EQ(out[1].msg_len, 1u);
  char r[3][8];
  iovec riov[3] = {{r[0], 8}, {r[1], 8}, {r[2], 8}};
  mmsghdr in[3] = {};
  for (int i = 0; i < 3; ++i) {
    in[i].msg_hdr.msg_iov = &riov[i];
    in[i].msg_hdr.msg_iovlen = 1;
  }
  // MSG_WAITFORONE: after the first datagram the rest do not wait.
  ASSERT_THAT(recvmmsg(fds[1].get(), in, 3, MSG_WAITFORONE, nullptr),
              SyscallSucceedsWithValue(2));
  EXPECT_EQ(in[0].msg_len, 3u);
  EXPECT_EQ(in[1].msg_len, 1u);
  EXPECT_THAT(recvmmsg(fds[1].get(), in, 3, MSG_DONTWAIT, nullptr),
              SyscallFailsWithErrno(EAGAIN));
  // A bad entry after a good one: the count of those sent.
  mmsghdr bad[2] = {out[0], {}};
  bad[1].msg_hdr.msg_iov = reinterpret_cast<iovec*>(8);
  bad[1].msg_hdr.msg_iovlen = 1;
  EXPECT_THAT(sendmmsg(fds[0].get(), bad, 2, 0), SyscallSucceedsWithValue(1));
  struct timespec ts = {5, 0};
  ASSERT_THAT(recvmmsg(fds[1].get(), in, 1, 0, &ts),
              SyscallSucceedsWithValue(1));
  // The time left is written back.
  EXPECT_LE(ts.tv_sec, 5);
}

// ---- SIGPIPE, timeouts and restarts. ----

std::atomic<int> sigpipes{0};
void CountSigpipe(int) { sigpipes.fetch_add(1); }

TEST(SocketSignalTest, EpipeRaisesSigpipeOnStreamSocketsOnly) {
  struct sigaction sa = {}, old;
  sa.sa_handler = CountSigpipe;
  ASSERT_THAT(sigaction(SIGPIPE, &sa, &old), SyscallSucceeds());
  for (int type : {SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM}) {
    FileDescriptor fds[2];
    if (!UnixPair(type, fds)) {
      sigaction(SIGPIPE, &old, nullptr);
      GTEST_SKIP() << "no AF_UNIX sockets";
    }
    ASSERT_THAT(shutdown(fds[0].get(), SHUT_WR), SyscallSucceeds());
    sigpipes = 0;
    EXPECT_THAT(send(fds[0].get(), "x", 1, 0), SyscallFailsWithErrno(EPIPE));
    EXPECT_THAT(write(fds[0].get(), "x", 1), SyscallFailsWithErrno(EPIPE));
    EXPECT_EQ(sigpipes.load(), type == SOCK_STREAM ? 2 : 0) << type;
    sigpipes = 0;
    EXPECT_THAT(send(fds[0].get(), "x", 1, MSG_NOSIGNAL),
                SyscallFailsWithErrno(EPIPE));
    EXPECT_EQ(sigpipes.load(), 0);
  }
  sigaction(SIGPIPE, &old, nullptr);
}

void Nothing(int) {}

TEST(SocketSignalTest, TimedWaitsAreEintrUntimedOnesRestart) {
  FileDescriptor fds[2];
  UNIX_PAIR_OR_SKIP(SOCK_STREAM, fds);
  struct sigaction sa = {}, old;
  sa.sa_handler = Nothing;
  sa.sa_flags = SA_RESTART;
  ASSERT_THAT(sigaction(SIGALRM, &sa, &old), SyscallSucceeds());
  // With SO_RCVTIMEO an interrupted wait is EINTR even under SA_RESTART
  // (sock_intr_errno).
  struct timeval tv = {10, 0};
  ASSERT_THAT(
      setsockopt(fds[1].get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
      SyscallSucceeds());
  // A periodic timer: a signal comes while recv is blocked even when the
  // first one fires before it blocks (a loaded host).
  struct itimerval it = {{0, 50000}, {0, 50000}};
  ASSERT_THAT(setitimer(ITIMER_REAL, &it, nullptr), SyscallSucceeds());
  char c;
  EXPECT_THAT(recv(fds[1].get(), &c, 1, 0), SyscallFailsWithErrno(EINTR));
  // Without it, the call restarts: the byte a child sends after the
  // signal is what recv returns.
  tv = {0, 0};
  ASSERT_THAT(
      setsockopt(fds[1].get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
      SyscallSucceeds());
  pid_t child = fork();
  if (child == 0) {
    usleep(300000);
    (void)!write(fds[0].get(), "y", 1);
    _exit(0);
  }
  ASSERT_GT(child, 0);
  ASSERT_THAT(setitimer(ITIMER_REAL, &it, nullptr), SyscallSucceeds());
  EXPECT_THAT(recv(fds[1].get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'y');
  struct itimerval off = {};
  setitimer(ITIMER_REAL, &off, nullptr);
  int status;
  waitpid(child, &status, 0);
  sigaction(SIGALRM, &old, nullptr);
}

TEST(SocketSignalTest, RecvTimeoutIsEagain) {
  FileDescriptor fds[2];
  UNIX_PAIR_OR_SKIP(SOCK_STREAM, fds);
  struct timeval tv = {0, 100000};
  ASSERT_THAT(
      setsockopt(fds[1].get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
      SyscallSucceeds());
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  char c;
  EXPECT_THAT(recv(fds[1].get(), &c, 1, 0), SyscallFailsWithErrno(EAGAIN));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const int64_t ms =
      (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
  EXPECT_GE(ms, 90);
  // A negative tv_sec: never wait.
  tv = {-1, 0};
  ASSERT_THAT(
      setsockopt(fds[1].get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
      SyscallSucceeds());
  EXPECT_THAT(read(fds[1].get(), &c, 1), SyscallFailsWithErrno(EAGAIN));
}

// ---- read/write and readv/writev on sockets. ----

TEST(SocketIoTest, WritevIsOneDatagramAndReadOfNothingReceivesNothing) {
  FileDescriptor fds[2];
  UNIX_PAIR_OR_SKIP(SOCK_DGRAM, fds);
  char a[] = "abc", b[] = "defg";
  iovec iov[2] = {{a, 3}, {b, 4}};
  ASSERT_THAT(writev(fds[0].get(), iov, 2), SyscallSucceedsWithValue(7));
  // write(2) of nothing sends an empty datagram; writev(2) of nothing
  // does not.
  ASSERT_THAT(write(fds[0].get(), a, 0), SyscallSucceedsWithValue(0));
  ASSERT_THAT(writev(fds[0].get(), iov, 0), SyscallSucceedsWithValue(0));
  ASSERT_THAT(write(fds[0].get(), "z", 1), SyscallSucceedsWithValue(1));
  // A read of nothing returns 0 and takes nothing.
  char buf[16] = {};
  EXPECT_THAT(read(fds[1].get(), buf, 0), SyscallSucceedsWithValue(0));
  char x[2], y[16];
  iovec riov[2] = {{x, 2}, {y, sizeof(y)}};
  ASSERT_THAT(readv(fds[1].get(), riov, 2), SyscallSucceedsWithValue(7));
  EXPECT_EQ(std::string(x, 2) + std::string(y, 5), "abcdefg");
  EXPECT_THAT(recv(fds[1].get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallSucceedsWithValue(0));
  EXPECT_THAT(read(fds[1].get(), buf, sizeof(buf)),
              SyscallSucceedsWithValue(1));
}

TEST(SocketIoTest, LargeStreamWriteIsWhole) {
  FileDescriptor fds[2];
  UNIX_PAIR_OR_SKIP(SOCK_STREAM, fds);
  // More than the socket buffer and the Sentry's 1 MiB bounce buffer: the
  // write blocks until a reader took it all.
  const size_t kLen = 3 << 20;
  pid_t child = fork();
  if (child == 0) {
    std::vector<char> buf(1 << 16);
    size_t total = 0;
    while (total < kLen) {
      ssize_t n = read(fds[1].get(), buf.data(), buf.size());
      if (n <= 0) _exit(1);
      total += n;
    }
    _exit(total == kLen ? 0 : 2);
  }
  ASSERT_GT(child, 0);
  std::vector<char> data(kLen, 'q');
  EXPECT_THAT(write(fds[0].get(), data.data(), data.size()),
              SyscallSucceedsWithValue(kLen));
  int status;
  ASSERT_THAT(waitpid(child, &status, 0), SyscallSucceedsWithValue(child));
  EXPECT_THAT(status, ExitedWithCode(0));
}

// ---- O_ASYNC: F_SETOWN, F_SETSIG and the signal (fs/fcntl.c). ----

TEST(SocketAsyncTest, OwnerCommands) {
  FileDescriptor fds[2];
  UNIX_PAIR_OR_SKIP(SOCK_STREAM, fds);
  const int fd = fds[0].get();
  EXPECT_THAT(fcntl(fd, F_GETOWN), SyscallSucceedsWithValue(0));
  ASSERT_THAT(fcntl(fd, F_SETOWN, getpid()), SyscallSucceeds());
  EXPECT_THAT(fcntl(fd, F_GETOWN), SyscallSucceedsWithValue(getpid()));
  f_owner_ex ex = {};
  ASSERT_THAT(fcntl(fd, F_GETOWN_EX, &ex), SyscallSucceeds());
  EXPECT_EQ(ex.type, F_OWNER_PID);
  EXPECT_EQ(ex.pid, getpid());
  // A process group is a negative owner.
  ASSERT_THAT(fcntl(fd, F_SETOWN, -getpgrp()), SyscallSucceeds());
  // (F_GETOWN's -1 for group 1 reads as an error: F_GETOWN_EX tells.)
  if (getpgrp() > 1) {
    EXPECT_THAT(fcntl(fd, F_GETOWN), SyscallSucceedsWithValue(-getpgrp()));
  }
  ASSERT_THAT(fcntl(fd, F_GETOWN_EX, &ex), SyscallSucceeds());
  EXPECT_EQ(ex.type, F_OWNER_PGRP);
  EXPECT_EQ(ex.pid, getpgrp());
  EXPECT_THAT(fcntl(fd, F_SETOWN, INT_MIN), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(fcntl(fd, F_SETOWN, 0x3fffffff), SyscallFailsWithErrno(ESRCH));
  ex.type = F_OWNER_TID;
  ex.pid = static_cast<pid_t>(syscall(SYS_gettid));
  ASSERT_THAT(fcntl(fd, F_SETOWN_EX, &ex), SyscallSucceeds());
  ex.type = static_cast<__pid_type>(7);
  ex.pid = getpid();
  EXPECT_THAT(fcntl(fd, F_SETOWN_EX, &ex), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(fcntl(fd, F_SETOWN_EX, nullptr), SyscallFailsWithErrno(EFAULT));
  ASSERT_THAT(fcntl(fd, F_SETOWN, 0), SyscallSucceeds());
  EXPECT_THAT(fcntl(fd, F_GETOWN), SyscallSucceedsWithValue(0));
  EXPECT_THAT(fcntl(fd, F_GETSIG), SyscallSucceedsWithValue(0));
  ASSERT_THAT(fcntl(fd, F_SETSIG, SIGUSR1), SyscallSucceeds());
  EXPECT_THAT(fcntl(fd, F_GETSIG), SyscallSucceedsWithValue(SIGUSR1));
  EXPECT_THAT(fcntl(fd, F_SETSIG, 65), SyscallFailsWithErrno(EINVAL));
}

TEST(SocketAsyncTest, SetsigGivesTheDescriptorAndBand) {
  FileDescriptor fds[2];
  UNIX_PAIR_OR_SKIP(SOCK_STREAM, fds);
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGRTMIN + 1);
  ASSERT_THAT(pthread_sigmask(SIG_BLOCK, &set, &old), SyscallSucceeds());
  const int fd = fds[1].get();
  ASSERT_THAT(fcntl(fd, F_SETOWN, getpid()), SyscallSucceeds());
  ASSERT_THAT(fcntl(fd, F_SETSIG, SIGRTMIN + 1), SyscallSucceeds());
  ASSERT_THAT(fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK), SyscallSucceeds());
  ASSERT_THAT(send(fds[0].get(), "x", 1, 0), SyscallSucceedsWithValue(1));
  timespec wait = {10, 0};
  siginfo_t info = {};
  ASSERT_THAT(sigtimedwait(&set, &info, &wait),
              SyscallSucceedsWithValue(SIGRTMIN + 1));
  EXPECT_EQ(info.si_code, POLL_IN);
  EXPECT_EQ(info.si_fd, fd);
  EXPECT_TRUE(info.si_band & POLLIN) << info.si_band;
  // Drain anything else queued (Linux may signal more than once).
  timespec zero = {0, 0};
  while (sigtimedwait(&set, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace
}  // namespace sandbox::testutil
