// End-to-end: modules of CPython's own regression suite (Debian's
// libpython3.11-testsuite) pass in `runsc do` as they pass natively
// (issue 18). Each module runs natively first: a native failure is the
// host's, and the case is skipped with its output; the sandboxed run must
// then succeed too. Modules that need sockets (test_multiprocessing_*,
// test_concurrent_futures) are not listed until the socket layer exists.
// test_io's test_interrupted_write_* need SIGALRM's handler to run on the
// return of the write it interrupted (test/syscalls/linux/
// signal_interrupt.cc).
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kSuite[] = "/usr/lib/python3.11/test/regrtest.py";
constexpr char kSuccess[] = "Tests result: SUCCESS";

class CpythonSuiteTest : public ::testing::TestWithParam<const char*> {};

std::string Tail(const std::string& s) {
  return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
}

TEST_P(CpythonSuiteTest, PassesAsNatively) {
  if (access(kPython, X_OK) != 0 || access(kSuite, R_OK) != 0) {
    GTEST_SKIP() << "SKIP: needs " << kPython << " and " << kSuite
                 << " (apt-get install libpython3.11-testsuite)";
  }
  const std::string module = GetParam();
  // regrtest enables no resource (network included) unless -u asks.
  Result native = RunNative({kPython, "-m", "test", module});
  if (native.status != 0 || native.out.find(kSuccess) == std::string::npos) {
    GTEST_SKIP() << "SKIP: " << module << " fails natively on this host:\n"
                 << Tail(native.out + native.err);
  }
  Result sandboxed =
      RunRunsc({"do", "--", kPython, "-m", "test", "-u-network", module});
  EXPECT_EQ(sandboxed.status, 0) << Tail(sandboxed.out + sandboxed.err);
  EXPECT_NE(sandboxed.out.find(kSuccess), std::string::npos)
      << Tail(sandboxed.out + sandboxed.err);
}

INSTANTIATE_TEST_SUITE_P(Modules, CpythonSuiteTest,
                         ::testing::Values("test_fcntl", "test_time",
                                           "test_posix", "test_shutil",
                                           "test_io", "test_subprocess"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param);
                         });

}  // namespace
}  // namespace sandbox::e2e
