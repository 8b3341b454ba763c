// End-to-end: the sandbox's /proc/cpuinfo against the host kernel's own.
// A host kernel clears features it finds broken or disabled (Linux 6.18
// hides RDSEED on some AMD parts) while CPUID still reports them; the
// sandbox must not show a flag the host kernel does not.
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

std::set<std::string> FirstFlags(const std::string& cpuinfo) {
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream words(line.substr(colon + 1));
    std::set<std::string> out;
    for (std::string w; words >> w;) out.insert(w);
    return out;
  }
  return {};
}

TEST(ProcCpuinfoTest, FlagsAreASubsetOfTheHostKernels) {
  std::ifstream f("/proc/cpuinfo");
  std::stringstream host_text;
  host_text << f.rdbuf();
  std::set<std::string> host = FirstFlags(host_text.str());
  if (host.empty()) GTEST_SKIP() << "the host's /proc/cpuinfo has no flags";

  Result r = RunscDo({"/bin/cat", "/proc/cpuinfo"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::set<std::string> sandbox = FirstFlags(r.out);
  ASSERT_FALSE(sandbox.empty()) << r.out;
  for (const std::string& flag : sandbox) {
    EXPECT_TRUE(host.count(flag)) << flag << ": shown in the sandbox, but the "
                                  << "host kernel does not show it";
  }
  // Base features every x86-64 CPU has appear in both (the filter does not
  // empty the list).
  for (const char* base : {"fpu", "sse", "sse2", "lm"}) {
    if (host.count(base)) EXPECT_TRUE(sandbox.count(base)) << base;
  }
}

}  // namespace
}  // namespace sandbox::e2e
