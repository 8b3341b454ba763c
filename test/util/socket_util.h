// Helpers for the AF_UNIX syscall tests (test/syscalls/linux/socket_unix_*):
// a connected pair, sockaddr_un builders for path, abstract and unnamed
// addresses, a listener on a fresh path, and bounded send/receive loops.
//
//   SocketPair p(SOCK_STREAM);
//   ASSERT_TRUE(p.ok());
//   UnixAddr a = UnixAddr::Path(SocketPath());
//   bind(fd, a.sa(), a.len);
#ifndef TEST_UTIL_SOCKET_UTIL_H_
#define TEST_UTIL_SOCKET_UTIL_H_

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {

// A connected AF_UNIX pair from socketpair(2) (O_CLOEXEC added); both ends
// invalid (and a test failure) if it fails.
struct SocketPair {
  explicit SocketPair(int type) {
    int fds[2] = {-1, -1};
    EXPECT_EQ(socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds), 0)
        << strerror(errno);
    a.reset(fds[0]);
    b.reset(fds[1]);
  }
  bool ok() const { return a.valid() && b.valid(); }
  FileDescriptor a, b;
};

// A sockaddr_un and the length to pass with it.
struct UnixAddr {
  sockaddr_un addr = {};
  socklen_t len = 0;

  const sockaddr* sa() const {
    return reinterpret_cast<const sockaddr*>(&addr);
  }
  // A path name: the length Linux reports for it (with the NUL).
  static UnixAddr Path(const std::string& path) {
    UnixAddr a;
    a.addr.sun_family = AF_UNIX;
    memcpy(a.addr.sun_path, path.data(),
           std::min(path.size(), sizeof(a.addr.sun_path) - 1));
    a.len = offsetof(sockaddr_un, sun_path) + path.size() + 1;
    return a;
  }
  // An abstract name: a leading NUL, then `name` (no terminator).
  static UnixAddr Abstract(const std::string& name) {
    UnixAddr a;
    a.addr.sun_family = AF_UNIX;
    memcpy(a.addr.sun_path + 1, name.data(),
           std::min(name.size(), sizeof(a.addr.sun_path) - 1));
    a.len = offsetof(sockaddr_un, sun_path) + 1 + name.size();
    return a;
  }
  // Only the family: bind autobinds, getsockname of an unnamed socket.
  static UnixAddr Unnamed() {
    UnixAddr a;
    a.addr.sun_family = AF_UNIX;
    a.len = sizeof(sa_family_t);
    return a;
  }
};

// A socket path that does not exist yet, in TempDir() when that fits in
// sun_path, else relative to the working directory (the runner starts each
// run in TempDir()).
inline std::string SocketPath() {
  static std::atomic<int> counter{0};
  std::string name = "s." + std::to_string(getpid()) + "." +
                     std::to_string(counter.fetch_add(1));
  std::string abs = TempDir() + "/" + name;
  return abs.size() < 100 ? abs : name;
}

// A unique abstract name for this process.
// The abstract namespace is shared by every process of a network
// namespace, and pids repeat across the PID namespaces of parallel test
// runs: a random token per process keeps the names apart.
inline std::string AbstractName(const std::string& tag) {
  static std::atomic<int> counter{0};
  static const std::string token = [] {
    uint64_t v = 0;
    FILE* f = fopen("/dev/urandom", "re");
    if (f == nullptr || fread(&v, sizeof(v), 1, f) != 1) {
      v = static_cast<uint64_t>(time(nullptr)) ^
          (static_cast<uint64_t>(getpid()) << 32);
    }
    if (f != nullptr) fclose(f);
    char buf[17];
    snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
    return std::string(buf);
  }();
  return "sandbox-test." + tag + "." + token + "." +
         std::to_string(counter.fetch_add(1));
}

// A socket of `type` (SOCK_CLOEXEC added) or an invalid descriptor.
inline FileDescriptor UnixSocket(int type) {
  return FileDescriptor(socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
}

// A socket of `type` bound to `addr` and listening with `backlog`; invalid
// (and a test failure) on any error.
inline FileDescriptor Listener(int type, const UnixAddr& addr,
                               int backlog = 16) {
  FileDescriptor fd = UnixSocket(type);
  if (!fd.valid() || bind(fd.get(), addr.sa(), addr.len) != 0 ||
      listen(fd.get(), backlog) != 0) {
    ADD_FAILURE() << "listener: " << strerror(errno);
    return FileDescriptor();
  }
  return fd;
}

// A socket of `type` connected to `addr`, or invalid (errno kept).
inline FileDescriptor ConnectTo(int type, const UnixAddr& addr) {
  FileDescriptor fd = UnixSocket(type);
  if (!fd.valid()) return fd;
  if (connect(fd.get(), addr.sa(), addr.len) != 0) {
    int e = errno;
    fd.reset();
    errno = e;
  }
  return fd;
}

// Poll revents of `fd` for `events` without waiting.
inline short PollNow(int fd, short events) {
  pollfd p = {fd, events, 0};
  int r = poll(&p, 1, 0);
  return r < 0 ? -1 : p.revents;
}

// Sends `chunk`-byte messages with MSG_DONTWAIT until EAGAIN (at
// most `max` sends); the number of bytes sent, or -1 on another error.
inline long FillWithDontwait(int fd, size_t chunk, int max = 1 << 20) {
  std::string buf(chunk, 'f');
  long total = 0;
  for (int i = 0; i < max; ++i) {
    ssize_t n = send(fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN ? total : -1;
    total += n;
  }
  return -1;  // Never filled: not what a bounded buffer does.
}

// Receives with MSG_DONTWAIT until EAGAIN (bounded); the bytes read.
inline long DrainWithDontwait(int fd) {
  char buf[65536];
  long total = 0;
  for (int i = 0; i < 1 << 20; ++i) {
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;
    total += n;
  }
  return total;
}

}  // namespace sandbox::testutil

#endif  // TEST_UTIL_SOCKET_UTIL_H_
