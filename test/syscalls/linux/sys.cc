// /sys: the CPU lists, transparent_hugepage, the cgroup mount point.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <regex>
#include <set>
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

// The CPUs of a list ("0-3,6\n").
std::set<int> CpuSet(const std::string& list) {
  std::set<int> out;
  std::regex range("(\\d+)(-(\\d+))?");
  for (std::sregex_iterator it(list.begin(), list.end(), range), end; it != end;
       ++it) {
    int a = std::stoi((*it)[1]);
    int b = (*it)[3].matched ? std::stoi((*it)[3]) : a;
    for (int c = a; c <= b; ++c) out.insert(c);
  }
  return out;
}

// online is within present, within possible; /proc/cpuinfo shows the
// online CPUs, numbered as the list says.
TEST(SysTest, CpuListsNestAndMatchCpuinfo) {
  std::set<int> online = CpuSet(ReadFile("/sys/devices/system/cpu/online"));
  std::set<int> present = CpuSet(ReadFile("/sys/devices/system/cpu/present"));
  std::set<int> possible = CpuSet(ReadFile("/sys/devices/system/cpu/possible"));
  ASSERT_FALSE(online.empty());
  for (int c : online) EXPECT_TRUE(present.count(c)) << c;
  for (int c : present) EXPECT_TRUE(possible.count(c)) << c;
  std::set<int> listed;
  std::string info;
  {
    FileDescriptor fd(open("/proc/cpuinfo", O_RDONLY));
    ASSERT_TRUE(fd.valid());
    char buf[4096];
    for (ssize_t n; (n = read(fd.get(), buf, sizeof(buf))) > 0;) {
      info.append(buf, n);
    }
  }
  std::regex proc_re("(^|\n)processor\t: (\\d+)\n");
  for (std::sregex_iterator it(info.begin(), info.end(), proc_re), end;
       it != end; ++it) {
    listed.insert(std::stoi((*it)[2]));
  }
  EXPECT_EQ(listed, online);
}

TEST(SysTest, TransparentHugepageHasOneChoice) {
  const char* path = "/sys/kernel/mm/transparent_hugepage/enabled";
  if (access(path, F_OK) != 0 && errno == ENOENT) {
    GTEST_SKIP() << path << " is missing (no CONFIG_TRANSPARENT_HUGEPAGE)";
  }
  std::string s = ReadFile(path);
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
