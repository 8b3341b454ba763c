// The socket calls on a descriptor that is not a socket: EBADF for one that
// is not open (or O_PATH), ENOTSOCK for any other file, after the checks
// Linux makes before the descriptor lookup. (Sockets themselves are not
// here: the sandbox has none yet.)
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr unsigned kMsgCmsgCompat = 0x80000000u;

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
}

}  // namespace
}  // namespace sandbox::testutil
