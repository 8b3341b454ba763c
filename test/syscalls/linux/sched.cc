// getpriority(2), setpriority(2) and the sched_* calls: nice values,
// policies, priorities and CPU masks are kept per thread, inherited by
// fork, checked as Linux checks them. Every change runs in a forked child.
#include <errno.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr int kResetOnFork = 0x40000000;
constexpr int kSchedDeadline = 6;

// Fails the child (exit 1) unless `cond`; the line is the exit code's
// message.
#define CHILD_CHECK(cond)                                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: %s (errno %d)\n", __FILE__, __LINE__, #cond, \
              errno);                                                      \
      _exit(1);                                                            \
    }                                                                      \
  } while (0)

void InChild(const std::function<void()>& fn) {
  EXPECT_THAT(InForkedChild(fn), ExitedWithCode(0));
}

long RawGetpriority(int which, int who) {
  return syscall(SYS_getpriority, which, who);
}

int Nice() { return 20 - static_cast<int>(RawGetpriority(PRIO_PROCESS, 0)); }

// Field `n` (1-based, as proc(5) numbers them) of /proc/self/stat.
std::string StatField(int n) {
  std::string s = ReadFileOrEmpty("/proc/self/stat");
  size_t p = s.rfind(')');
  if (p == std::string::npos) return "";
  std::istringstream in(s.substr(p + 2));
  std::string tok;
  for (int i = 3; i <= n && (in >> tok); ++i) {
  }
  return tok;
}

TEST(PriorityTest, SetAndGetOwnNice) {
  InChild([] {
    CHILD_CHECK(setpriority(PRIO_PROCESS, 0, 5) == 0);
    CHILD_CHECK(Nice() == 5);
    CHILD_CHECK(RawGetpriority(PRIO_PROCESS, getpid()) == 15);
    // /proc/PID/stat: priority (20 + nice) and nice.
    CHILD_CHECK(StatField(18) == "25");
    CHILD_CHECK(StatField(19) == "5");
    CHILD_CHECK(setpriority(PRIO_PROCESS, 0, 6) == 0);
    // A fork inherits the nice value.
    pid_t pid = fork();
    if (pid == 0) _exit(Nice() == 6 ? 0 : 1);
    int status;
    CHILD_CHECK(waitpid(pid, &status, 0) == pid);
    CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    // Out-of-range values are clamped.
    CHILD_CHECK(setpriority(PRIO_PROCESS, 0, 100) == 0);
    CHILD_CHECK(Nice() == 19);
  });
}

// Lowering below RLIMIT_NICE needs CAP_SYS_NICE over the init user
// namespace, which the native run may lack (then EACCES: skipped); the
// sandbox's root has it.
TEST(PriorityTest, LoweringWithCapSysNice) {
  int status = InForkedChild([] {
    if (setpriority(PRIO_PROCESS, 0, -100) != 0) {
      _exit(errno == EACCES ? 77 : 1);
    }
    CHILD_CHECK(Nice() == -20);
    CHILD_CHECK(RawGetpriority(PRIO_PROCESS, 0) == 40);
  });
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    GTEST_SKIP() << "no CAP_SYS_NICE over the host here (EACCES)";
  }
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(PriorityTest, ProcessGroup) {
  InChild([] {
    CHILD_CHECK(setpgid(0, 0) == 0);
    CHILD_CHECK(setpriority(PRIO_PGRP, 0, 7) == 0);
    CHILD_CHECK(Nice() == 7);
    CHILD_CHECK(RawGetpriority(PRIO_PGRP, getpgrp()) == 13);
  });
}

TEST(PriorityTest, Errors) {
  EXPECT_THAT(RawGetpriority(3, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(RawGetpriority(-1, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_setpriority, 3, 0, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(RawGetpriority(PRIO_PROCESS, 0x3ffffff0),
              SyscallFailsWithErrno(ESRCH));
  EXPECT_THAT(syscall(SYS_setpriority, PRIO_PROCESS, 0x3ffffff0, 0),
              SyscallFailsWithErrno(ESRCH));
  EXPECT_THAT(RawGetpriority(PRIO_PGRP, 0x3ffffff0),
              SyscallFailsWithErrno(ESRCH));
  EXPECT_THAT(RawGetpriority(PRIO_USER, 0), SyscallSucceeds());
}

TEST(PriorityTest, LoweringNeedsRlimitNiceOrCapSysNice) {
  InChild([] {
    struct rlimit zero = {0, 0};
    CHILD_CHECK(setrlimit(RLIMIT_NICE, &zero) == 0);
    CHILD_CHECK(DropCapabilities(false));
    CHILD_CHECK(setpriority(PRIO_PROCESS, 0, 10) == 0);  // raising: fine
    errno = 0;
    CHILD_CHECK(setpriority(PRIO_PROCESS, 0, 9) == -1 && errno == EACCES);
    CHILD_CHECK(Nice() == 10);
  });
  int status = InForkedChild([] {
    // RLIMIT_NICE 30 allows nice values down to 20 - 30 = -10.
    struct rlimit r = {30, 30};
    if (setrlimit(RLIMIT_NICE, &r) != 0) _exit(errno == EPERM ? 77 : 1);
    CHILD_CHECK(DropCapabilities(false));
    CHILD_CHECK(setpriority(PRIO_PROCESS, 0, -10) == 0);
    errno = 0;
    CHILD_CHECK(setpriority(PRIO_PROCESS, 0, -11) == -1 && errno == EACCES);
  });
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    GTEST_SKIP() << "cannot raise RLIMIT_NICE here (no CAP_SYS_RESOURCE)";
  }
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(SchedTest, FairPoliciesAreRecorded) {
  InChild([] {
    sched_param p = {0};
    // SCHED_IDLE last: leaving it needs RLIMIT_NICE >= 20 or CAP_SYS_NICE.
    for (int policy : {SCHED_BATCH, SCHED_OTHER, SCHED_IDLE}) {
      CHILD_CHECK(sched_setscheduler(0, policy, &p) == 0);
      CHILD_CHECK(sched_getscheduler(0) == policy);
      CHILD_CHECK(syscall(SYS_sched_getscheduler, getpid()) == policy);
      sched_param got = {-1};
      CHILD_CHECK(sched_getparam(0, &got) == 0 && got.sched_priority == 0);
      CHILD_CHECK(StatField(41) == std::to_string(policy));  // policy
    }
    pid_t pid = fork();
    if (pid == 0) _exit(sched_getscheduler(0) == SCHED_IDLE ? 0 : 1);
    int status;
    CHILD_CHECK(waitpid(pid, &status, 0) == pid);
    CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  });
}

TEST(SchedTest, RealtimePoliciesAndResetOnFork) {
  int status = InForkedChild([] {
    sched_param p = {10};
    if (sched_setscheduler(0, SCHED_FIFO | kResetOnFork, &p) != 0) {
      _exit(errno == EPERM ? 77 : 1);  // no rt budget for this cgroup
    }
    CHILD_CHECK(sched_getscheduler(0) == (SCHED_FIFO | kResetOnFork));
    sched_param got = {};
    CHILD_CHECK(sched_getparam(0, &got) == 0 && got.sched_priority == 10);
    p.sched_priority = 20;
    CHILD_CHECK(sched_setparam(0, &p) == 0);
    CHILD_CHECK(sched_getparam(0, &got) == 0 && got.sched_priority == 20);
    CHILD_CHECK(sched_getscheduler(0) == (SCHED_FIFO | kResetOnFork));
    // The child of a SCHED_RESET_ON_FORK task starts as SCHED_OTHER.
    pid_t pid = fork();
    if (pid == 0) _exit(sched_getscheduler(0) == SCHED_OTHER ? 0 : 1);
    int st;
    CHILD_CHECK(waitpid(pid, &st, 0) == pid);
    CHILD_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    p.sched_priority = 0;
    CHILD_CHECK(sched_setscheduler(0, SCHED_OTHER, &p) == 0);
  });
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    GTEST_SKIP() << "SCHED_FIFO is EPERM here (no rt runtime for the cgroup)";
  }
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(SchedTest, SetschedulerErrors) {
  sched_param p = {0};
  sched_param one = {1};
  sched_param big = {100};
  sched_param neg = {-1};
  EXPECT_THAT(sched_setscheduler(0, SCHED_OTHER, &one),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(sched_setscheduler(0, SCHED_OTHER, &neg),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(sched_setscheduler(0, SCHED_FIFO, &p),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(sched_setscheduler(0, SCHED_RR, &big),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(sched_setscheduler(0, 4, &p), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(sched_setscheduler(0, -1, &p), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(sched_setscheduler(0, kSchedDeadline, &p),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, nullptr),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(sched_setscheduler(-1, SCHED_OTHER, &p),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, 8),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(sched_setscheduler(0x3ffffff0, SCHED_OTHER, &p),
              SyscallFailsWithErrno(ESRCH));
  EXPECT_THAT(sched_getscheduler(-1), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(sched_getscheduler(0x3ffffff0), SyscallFailsWithErrno(ESRCH));
  EXPECT_THAT(syscall(SYS_sched_getparam, 0, nullptr),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_sched_getparam, 0, 8), SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(sched_getparam(0x3ffffff0, &p), SyscallFailsWithErrno(ESRCH));
}

TEST(SchedTest, RealtimeWithoutCapSysNiceIsEperm) {
  InChild([] {
    struct rlimit zero = {0, 0};
    CHILD_CHECK(setrlimit(RLIMIT_RTPRIO, &zero) == 0);
    CHILD_CHECK(DropCapabilities(false));
    sched_param p = {1};
    errno = 0;
    CHILD_CHECK(sched_setscheduler(0, SCHED_FIFO, &p) == -1 && errno == EPERM);
    CHILD_CHECK(sched_getscheduler(0) != SCHED_FIFO);
  });
}

TEST(SchedTest, PriorityRanges) {
  EXPECT_THAT(sched_get_priority_max(SCHED_FIFO), SyscallSucceedsWithValue(99));
  EXPECT_THAT(sched_get_priority_min(SCHED_FIFO), SyscallSucceedsWithValue(1));
  EXPECT_THAT(sched_get_priority_max(SCHED_RR), SyscallSucceedsWithValue(99));
  EXPECT_THAT(sched_get_priority_min(SCHED_RR), SyscallSucceedsWithValue(1));
  for (int policy : {SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, kSchedDeadline}) {
    EXPECT_THAT(sched_get_priority_max(policy), SyscallSucceedsWithValue(0));
    EXPECT_THAT(sched_get_priority_min(policy), SyscallSucceedsWithValue(0));
  }
  // (7 is SCHED_EXT since Linux 6.12.)
  for (int policy : {-1, 4, 8, 100}) {
    EXPECT_THAT(sched_get_priority_max(policy), SyscallFailsWithErrno(EINVAL));
    EXPECT_THAT(sched_get_priority_min(policy), SyscallFailsWithErrno(EINVAL));
  }
}

TEST(SchedTest, RrGetInterval) {
  timespec ts = {-1, -1};
  ASSERT_THAT(sched_rr_get_interval(0, &ts), SyscallSucceeds());
  EXPECT_GE(ts.tv_sec, 0);
  EXPECT_GE(ts.tv_nsec, 0);
  EXPECT_LT(ts.tv_nsec, 1000000000);
  EXPECT_THAT(sched_rr_get_interval(-1, &ts), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(sched_rr_get_interval(0x3ffffff0, &ts),
              SyscallFailsWithErrno(ESRCH));
  EXPECT_THAT(syscall(SYS_sched_rr_get_interval, 0, 8),
              SyscallFailsWithErrno(EFAULT));
}

TEST(SchedTest, Affinity) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_THAT(sched_getaffinity(0, sizeof(all), &all), SyscallSucceeds());
  int first = -1, count = CPU_COUNT(&all);
  for (int i = 0; i < CPU_SETSIZE && first < 0; ++i) {
    if (CPU_ISSET(i, &all)) first = i;
  }
  ASSERT_GE(first, 0);
  InChild([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    CHILD_CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);
    cpu_set_t got;
    CPU_ZERO(&got);
    CHILD_CHECK(sched_getaffinity(0, sizeof(got), &got) == 0);
    CHILD_CHECK(CPU_EQUAL(&got, &one));
    // Inherited by fork.
    pid_t pid = fork();
    if (pid == 0) {
      cpu_set_t c;
      CPU_ZERO(&c);
      _exit(sched_getaffinity(0, sizeof(c), &c) == 0 && CPU_EQUAL(&c, &one)
                ? 0
                : 1);
    }
    int st;
    CHILD_CHECK(waitpid(pid, &st, 0) == pid);
    CHILD_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    // An empty mask, or one of no allowed CPU, is EINVAL.
    cpu_set_t none;
    CPU_ZERO(&none);
    errno = 0;
    CHILD_CHECK(sched_setaffinity(0, sizeof(none), &none) == -1 &&
                errno == EINVAL);
    CHILD_CHECK(sched_setaffinity(0, sizeof(all), &all) == 0);
    CPU_ZERO(&got);
    CHILD_CHECK(sched_getaffinity(0, sizeof(got), &got) == 0);
    CHILD_CHECK(CPU_EQUAL(&got, &all));
  });
  if (count < 64) {
    InChild([&] {
      // Only CPUs this process may not use.
      cpu_set_t others;
      CPU_ZERO(&others);
      for (int i = 0; i < 64; ++i) {
        if (!CPU_ISSET(i, &all)) CPU_SET(i, &others);
      }
      errno = 0;
      CHILD_CHECK(sched_setaffinity(0, sizeof(others), &others) == -1 &&
                  errno == EINVAL);
    });
  }
  cpu_set_t buf;
  EXPECT_THAT(syscall(SYS_sched_getaffinity, 0, 4, &buf),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_sched_getaffinity, 0, sizeof(buf) - 4, &buf),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(sched_getaffinity(0x3ffffff0, sizeof(buf), &buf),
              SyscallFailsWithErrno(ESRCH));
  EXPECT_THAT(sched_setaffinity(0x3ffffff0, sizeof(all), &all),
              SyscallFailsWithErrno(ESRCH));
  EXPECT_THAT(syscall(SYS_sched_setaffinity, 0, sizeof(buf), 8),
              SyscallFailsWithErrno(EFAULT));
}

}  // namespace
}  // namespace sandbox::testutil
