// /proc/net (a link to self/net), /proc/PID/net: dev, if_inet6, netlink,
// unix; /proc/sys/net/core and /proc/sys/net/unix sysctls, read and
// written. Writes happen only where they cannot change the host: natively
// in a new network namespace (unshare), in the sandbox (no unshare(2):
// ENOSYS) in its own, restoring the values.
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(ProcNetTest, NetIsALinkToSelfNet) {
  char buf[64];
  ssize_t n = readlink("/proc/net", buf, sizeof(buf));
  ASSERT_GT(n, 0) << strerror(errno);
  EXPECT_EQ(std::string(buf, n), "self/net");
  struct stat st;
  ASSERT_THAT(stat("/proc/net", &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  std::string own = "/proc/" + std::to_string(getpid()) + "/net/dev";
  EXPECT_EQ(ReadFileOrEmpty(own).substr(0, 7), "Inter-|");
}

TEST(ProcNetTest, Dev) {
  std::vector<std::string> l = Lines(ReadFileOrEmpty("/proc/net/dev"));
  ASSERT_GE(l.size(), 3u);
  EXPECT_EQ(l[0],
            "Inter-|   Receive                                                "
            "|  Transmit");
  EXPECT_EQ(l[1],
            " face |bytes    packets errs drop fifo frame compressed "
            "multicast|bytes    packets errs drop fifo colls carrier "
            "compressed");
  std::regex row(" *[^ :]+:( +\\d+){16}");
  bool lo = false;
  for (size_t i = 2; i < l.size(); ++i) {
    EXPECT_TRUE(std::regex_match(l[i], row)) << l[i];
    if (l[i].find(" lo:") != std::string::npos || l[i].rfind("lo:", 0) == 0) {
      lo = true;
      EXPECT_EQ(l[i].substr(0, 7), "    lo:");
    }
  }
  EXPECT_TRUE(lo);
}

TEST(ProcNetTest, IfInet6) {
  std::vector<std::string> l = Lines(ReadFileOrEmpty("/proc/net/if_inet6"));
  std::regex row(
      "[0-9a-f]{32} [0-9a-f]{2} [0-9a-f]{2} [0-9a-f]{2} "
      "[0-9a-f]{2} +[^ ]+");
  bool lo = false;
  for (const std::string& s : l) {
    EXPECT_TRUE(std::regex_match(s, row)) << s;
    if (s.rfind("00000000000000000000000000000001 ", 0) == 0) {
      lo = true;
      char idx[8];
      snprintf(idx, sizeof(idx), "%02x", if_nametoindex("lo"));
      EXPECT_EQ(s.substr(33), std::string(idx) + " 80 10 80       lo");
    }
  }
  EXPECT_TRUE(lo);
}

TEST(ProcNetTest, NetlinkListsBoundSockets) {
  FileDescriptor fd(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
  ASSERT_TRUE(fd.valid());
  sockaddr_nl a = {};
  a.nl_family = AF_NETLINK;
  a.nl_groups = 1;
  ASSERT_THAT(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)),
              SyscallSucceeds());
  socklen_t len = sizeof(a);
  ASSERT_THAT(getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len),
              SyscallSucceeds());
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  std::vector<std::string> l = Lines(ReadFileOrEmpty("/proc/net/netlink"));
  ASSERT_GE(l.size(), 2u);
  EXPECT_EQ(l[0],
            "sk               Eth Pid        Groups   Rmem     Wmem     Dump  "
            "Locks    Drops    Inode");
  std::regex row(
      "[0-9a-f]{16} (\\d+) +(\\d+) +([0-9a-f]{8}) +\\d+ +\\d+ +"
      "\\d+ +\\d+ +\\d+ +(\\d+) *");
  bool mine = false;
  for (size_t i = 1; i < l.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l[i], m, row)) << l[i];
    if (m[4] == std::to_string(st.st_ino)) {
      mine = true;
      EXPECT_EQ(m[1], "0");
      EXPECT_EQ(m[2], std::to_string(a.nl_pid));
      EXPECT_EQ(m[3], "00000001");
    }
  }
  EXPECT_TRUE(mine);
}

TEST(ProcNetTest, UnixHeader) {
  std::vector<std::string> l = Lines(ReadFileOrEmpty("/proc/net/unix"));
  ASSERT_GE(l.size(), 1u);
  EXPECT_EQ(l[0], "Num       RefCount Protocol Flags    Type St Inode Path");
}

const char* const kSysctls[] = {
    "/proc/sys/net/core/somaxconn",    "/proc/sys/net/core/rmem_max",
    "/proc/sys/net/core/wmem_max",     "/proc/sys/net/core/rmem_default",
    "/proc/sys/net/core/wmem_default", "/proc/sys/net/unix/max_dgram_qlen",
};

TEST(ProcSysNetTest, ReadAsIntegers) {
  std::regex value("-?\\d+\n");
  for (const char* path : kSysctls) {
    std::string s = ReadFileOrEmpty(path);
    EXPECT_TRUE(std::regex_match(s, value)) << path << ": " << s;
    struct stat st;
    ASSERT_THAT(stat(path, &st), SyscallSucceeds()) << path;
    EXPECT_TRUE(S_ISREG(st.st_mode));
  }
}

TEST(ProcSysNetTest, NewSocketsGetRmemDefault) {
  long rmem = std::stol(ReadFileOrEmpty("/proc/sys/net/core/rmem_default"));
  FileDescriptor fd(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
  ASSERT_TRUE(fd.valid());
  int v = 0;
  socklen_t len = sizeof(v);
  ASSERT_THAT(getsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &v, &len),
              SyscallSucceeds());
  EXPECT_EQ(v, rmem);
}

// Runs fn in a child where writing the net sysctls changes nothing of the
// host; false (the reason in *why) where there is none.
bool InPrivateNetwork(const std::function<bool()>& fn, std::string* why) {
  pid_t pid = fork();
  if (pid < 0) {
    *why = "fork failed";
    return false;
  }
  if (pid == 0) {
    if (unshare(CLONE_NEWNET) != 0 && errno != ENOSYS) _exit(77);
    _exit(fn() ? 0 : 1);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid) {
    *why = "waitpid failed";
    return false;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    *why = "no private network namespace (unshare(CLONE_NEWNET) failed)";
    return false;
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "child status " << status;
  return true;
}

// Writes `s` to `path` in one write; the result or -errno.
long WriteFile(const char* path, const std::string& s) {
  int fd = open(path, O_WRONLY);
  if (fd < 0) return -errno;
  long n = write(fd, s.data(), s.size());
  long r = n < 0 ? -errno : n;
  close(fd);
  return r;
}

TEST(ProcSysNetTest, WriteRoundTripAndRestore) {
  std::string why;
  bool ran = InPrivateNetwork(
      [] {
        bool ok = true;
        for (const char* path : kSysctls) {
          std::string before = ReadFileOrEmpty(path);
          long v = std::stol(before);
          long w = WriteFile(path, std::to_string(v + 1000) + "\n");
          if (w == -EACCES) {
            // A new namespace's rmem/wmem are read-only (Linux 6.x).
            continue;
          }
          if (w != static_cast<long>(std::to_string(v + 1000).size() + 1)) {
            fprintf(stderr, "%s: write gave %ld\n", path, w);
            ok = false;
            continue;
          }
          if (std::stol(ReadFileOrEmpty(path)) != v + 1000) {
            fprintf(stderr, "%s: not written\n", path);
            ok = false;
          }
          // Garbage is EINVAL and changes nothing.
          if (WriteFile(path, "12abc") != -EINVAL) {
            fprintf(stderr, "%s: garbage accepted\n", path);
            ok = false;
          }
          if (std::stol(ReadFileOrEmpty(path)) != v + 1000) ok = false;
          if (WriteFile(path, "  " + std::to_string(v) + " \n") < 0) {
            ok = false;
          }
          if (ReadFileOrEmpty(path) != before) {
            fprintf(stderr, "%s: not restored\n", path);
            ok = false;
          }
        }
        // somaxconn has a minimum of 0; max_dgram_qlen takes any int.
        const char* som = "/proc/sys/net/core/somaxconn";
        std::string before = ReadFileOrEmpty(som);
        if (WriteFile(som, "-5") != -EINVAL) ok = false;
        if (ReadFileOrEmpty(som) != before) ok = false;
        return ok;
      },
      &why);
  if (!ran) GTEST_SKIP() << why;
}

}  // namespace
}  // namespace sandbox::testutil
