// /sys: the CPU lists, transparent_hugepage, the cgroup mount point.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <regex>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

std::string ReadFile(const std::string& path) {
  FileDescriptor fd(open(path.c_str(), O_RDONLY));
  if (!fd.valid()) {
    ADD_FAILURE() << path;
    return "";
  }
  char buf[4096];
  ssize_t n = read(fd.get(), buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, n);
}

TEST(SysTest, CpuLists) {
  std::regex list("\\d+(-\\d+)?(,\\d+(-\\d+)?)*\n");
  for (const char* name : {"online", "possible", "present"}) {
    std::string s = ReadFile(std::string("/sys/devices/system/cpu/") + name);
    EXPECT_TRUE(std::regex_match(s, list)) << name << ": " << s;
  }
  // glibc's sysconf reads the same list.
  std::string online = ReadFile("/sys/devices/system/cpu/online");
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  std::string expected = n == 1 ? "0\n" : "0-" + std::to_string(n - 1) + "\n";
  if (online.find(',') == std::string::npos) EXPECT_EQ(online, expected);
}

TEST(SysTest, TransparentHugepageHasOneChoice) {
  std::string s = ReadFile("/sys/kernel/mm/transparent_hugepage/enabled");
  EXPECT_TRUE(std::regex_match(
      s, std::regex("(\\[always\\] madvise never|always \\[madvise\\] never|"
                    "always madvise \\[never\\])\n")))
      << s;
}

TEST(SysTest, CgroupMountPointIsADirectory) {
  struct stat st;
  ASSERT_THAT(stat("/sys/fs/cgroup", &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISDIR(st.st_mode));
}

}  // namespace
}  // namespace sandbox::testutil
