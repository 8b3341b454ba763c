// End-to-end: modules of CPython's own regression suite (Debian's
// libpython3.11-testsuite) pass in `runsc do` as they pass natively
// (issue 18). Each module runs natively first: a native failure is the
// host's, and the case is skipped with its output; the sandboxed run must
// then succeed too. The long modules of processes, sockets and event loops
// (test_concurrent_futures, test_multiprocessing_fork and _spawn,
// test_asyncio: AF_UNIX and AF_INET sockets, SCM_RIGHTS, shared-memory
// semaphores) run as their own target (cpython_concurrency_suite_test,
// several minutes each). test_asyncio's pty tests are ignored, both ways,
// until the sandbox has terminals (issue 23: ExtraOptions).
// test_io's test_interrupted_write_* need SIGALRM's handler to run on the
// return of the write it interrupted (test/syscalls/linux/
// signal_interrupt.cc).
#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kSuite[] = "/usr/lib/python3.11/test/regrtest.py";
constexpr char kSuccess[] = "Tests result: SUCCESS";

class CpythonSuiteTest : public ::testing::TestWithParam<const char*> {};

// A module may print nothing for minutes (regrtest reports a module when
// it ends): wait up to 20 minutes without output.
constexpr int kQuietMs = 20 * 60 * 1000;

Result Native(const std::vector<std::string>& argv) {
  Child c(Child::Native{}, argv);
  c.CloseStdin();
  return c.Finish(kQuietMs);
}

Result Sandboxed(const std::vector<std::string>& args) {
  Child c(args);
  c.CloseStdin();
  return c.Finish(kQuietMs);
}

std::string Tail(const std::string& s) {
  return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
}

// regrtest options a module runs with, both ways: cases that wait for a
// feature of a later issue, ignored by name (-i).
std::vector<std::string> ExtraOptions(const std::string& module) {
  // os.openpty is ENXIO until the sandbox has terminals (issue 23):
  // test_events' {Epoll,Poll,Select}EventLoopTests.test_*_pty*.
  if (module == "test_asyncio") return {"-i", "*_pty*"};
  return {};
}

TEST_P(CpythonSuiteTest, PassesAsNatively) {
  if (access(kPython, X_OK) != 0 || access(kSuite, R_OK) != 0) {
    GTEST_SKIP() << "SKIP: needs " << kPython << " and " << kSuite
                 << " (apt-get install libpython3.11-testsuite)";
  }
  const std::string module = GetParam();
  std::vector<std::string> native_argv = {kPython, "-m", "test"};
  std::vector<std::string> sandbox_argv = {"do", "--",   kPython,
                                           "-m", "test", "-u-network"};
  for (const std::string& opt : ExtraOptions(module)) {
    native_argv.push_back(opt);
    sandbox_argv.push_back(opt);
  }
  native_argv.push_back(module);
  sandbox_argv.push_back(module);
  // regrtest enables no resource (network included) unless -u asks.
  Result native = Native(native_argv);
  if (native.status != 0 || native.out.find(kSuccess) == std::string::npos) {
    GTEST_SKIP() << "SKIP: " << module << " fails natively on this host:\n"
                 << Tail(native.out + native.err);
  }
  Result sandboxed = Sandboxed(sandbox_argv);
  EXPECT_EQ(sandboxed.status, 0) << Tail(sandboxed.out + sandboxed.err);
  EXPECT_NE(sandboxed.out.find(kSuccess), std::string::npos)
      << Tail(sandboxed.out + sandboxed.err);
}

#ifndef CPYTHON_SUITE_MODULES
#define CPYTHON_SUITE_MODULES                                        \
  "test_fcntl", "test_time", "test_posix", "test_shutil", "test_io", \
      "test_subprocess"
#endif

INSTANTIATE_TEST_SUITE_P(Modules, CpythonSuiteTest,
                         ::testing::Values(CPYTHON_SUITE_MODULES),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param);
                         });

}  // namespace
}  // namespace sandbox::e2e
