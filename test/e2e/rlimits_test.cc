// The guest starts with the caller's resource limits, as a container
// runtime passes them (sentry/kernel/limits.h LimitSet::FromCaller): the
// same program prints the same limits natively and in `runsc do`, after
// the test changed some of its own; and `nice -n 5` works.
#include <sys/resource.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace {

using ::sandbox::e2e::Program;
using ::sandbox::e2e::Result;
using ::sandbox::e2e::RunNative;
using ::sandbox::e2e::RunRunsc;

// Lowers the soft limit of `r` to at most `v` (always allowed).
void LowerSoft(int r, rlim_t v) {
  struct rlimit l;
  ASSERT_EQ(getrlimit(r, &l), 0);
  if (l.rlim_cur == RLIM_INFINITY || l.rlim_cur > v) l.rlim_cur = v;
  if (l.rlim_max != RLIM_INFINITY && l.rlim_cur > l.rlim_max) {
    l.rlim_cur = l.rlim_max;
  }
  ASSERT_EQ(setrlimit(r, &l), 0);
}

TEST(CallerLimitsTest, GuestHasTheCallersLimits) {
  Result probe = RunRunsc({"do", "--", Program("rlimits")});
  if (probe.status == 125 && probe.err.find("platform") != std::string::npos) {
    GTEST_SKIP() << "the systrap platform cannot run here: " << probe.err;
  }
  // Limits unlike Linux's defaults for init (NOFILE 1024/4096, CORE 0,
  // STACK 8 MiB), so a sandbox that ignored the caller's shows.
  LowerSoft(RLIMIT_NOFILE, 777);
  LowerSoft(RLIMIT_STACK, 6 << 20);
  LowerSoft(RLIMIT_FSIZE, 1 << 30);
  LowerSoft(RLIMIT_CORE, 0);
  Result native = RunNative({Program("rlimits")});
  ASSERT_EQ(native.status, 0);
  Result r = RunRunsc({"do", "--", Program("rlimits")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, native.out);
  EXPECT_NE(r.out.find("\n7 777 "), std::string::npos) << r.out;
}

// `nice -n 5 CMD` (setpriority, then exec) and the nice value it leaves,
// as natively: coreutils' nice prints its nice value without arguments.
TEST(CallerLimitsTest, NiceRunsTheProgramNiced) {
  if (access("/usr/bin/nice", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/nice";
  Result probe = RunRunsc({"do", "--", Program("rlimits")});
  if (probe.status == 125 && probe.err.find("platform") != std::string::npos) {
    GTEST_SKIP() << "the systrap platform cannot run here: " << probe.err;
  }
  Result r =
      RunRunsc({"do", "--", "/usr/bin/nice", "-n", "5", "/usr/bin/nice"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "5\n");
  EXPECT_EQ(r.err, "");
  r = RunRunsc({"do", "--", "/usr/bin/nice", "-n", "5", "/bin/true"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out + r.err, "");
}

}  // namespace
