// End-to-end: python's signal.alarm works in `runsc do` as natively: the
// process dies of SIGALRM about a second in (not after its 5 s sleep); a
// handler sees it at 1 s.
//
// Needs the host's /usr/bin/python3 and `runsc do` serving the host's root
// file system; skips with a message otherwise.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

double Seconds() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

TEST(AlarmE2eTest, PythonSignalAlarmKillsAfterOneSecond) {
  if (access(kPython, X_OK) != 0 || access("/bin/sh", X_OK) != 0) {
    GTEST_SKIP() << "SKIP: no " << kPython << " or /bin/sh on this host";
  }
  if (RunscDo({"/bin/true"}).status != 0) {
    GTEST_SKIP() << "SKIP: runsc do does not serve the host's root file "
                    "system here (needed for python3)";
  }
  const std::string py =
      std::string(kPython) +
      " -c 'import signal,time; signal.alarm(1); time.sleep(5)'";
  Result native = RunNative({kPython, "-c",
                             "import signal,time; signal.alarm(1); "
                             "time.sleep(5)"});
  ASSERT_EQ(native.status, 128 + SIGALRM) << native.err;
  // The program runs under a shell, as in a terminal: the sandbox's first
  // process is its init, which (as a PID namespace's init on Linux:
  // SIGNAL_UNKILLABLE) ignores a signal it has no handler for. "; exit $?"
  // keeps the shell from exec'ing python in its place; it reports
  // 128+SIGALRM.
  const double start = Seconds();
  Result sandboxed = RunscDo({"/bin/sh", "-c", py + "; exit $?"});
  const double elapsed = Seconds() - start;
  EXPECT_EQ(sandboxed.status, 128 + SIGALRM) << sandboxed.err;
  // Never before the alarm's second. The status shows the alarm cut the
  // sleep short; the time from outside also holds start-up, which a loaded
  // host stretches (the check from inside below bounds the delivery).
  EXPECT_GE(elapsed, 1.0);

  // From inside: SIGALRM arrives at least 1 s after alarm(1), and long
  // before the sleep's 5 s.
  Result timed =
      RunscDo({kPython, "-c",
               "import signal,time\n"
               "def h(s,f):\n"
               "  print('%.3f' % (time.monotonic()-t0)); raise SystemExit(0)\n"
               "signal.signal(signal.SIGALRM, h)\n"
               "t0=time.monotonic(); signal.alarm(1); time.sleep(5)\n"});
  ASSERT_EQ(timed.status, 0) << timed.err;
  const double inside = std::stod(timed.out);
  EXPECT_GE(inside, 1.0);
  EXPECT_LT(inside, 3.0);
}

}  // namespace
}  // namespace sandbox::e2e
