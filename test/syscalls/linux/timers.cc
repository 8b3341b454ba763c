// POSIX timers: timer_create(2), timer_settime(2), timer_gettime(2),
// timer_getoverrun(2), timer_delete(2) through the raw syscalls (the
// kernel's int timer ids): default and explicit sigevents, SI_TIMER
// siginfo, SIGEV_NONE, SIGEV_THREAD_ID, absolute times, overruns, CPU
// clocks, the limit, fork and execve, /proc/PID/timers.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr char kExecCheckEnv[] = "SANDBOX_TIMERS_TEST_EXEC_CHECK";

// The exec'd image of PosixTimersAreDeletedByExec: the timer id given in
// the variable must be gone (exit 0), its signal not pending (else 2).
[[maybe_unused]] const int exec_helper = [] {
  if (const char* id = getenv(kExecCheckEnv); id != nullptr) {
    struct itimerspec cur;
    if (syscall(SYS_timer_gettime, atoi(id), &cur) == 0 || errno != EINVAL) {
      _exit(1);
    }
    sigset_t pending;
    sigpending(&pending);
    _exit(sigismember(&pending, SIGRTMIN + 2) ? 2 : 0);
  }
  return 0;
}();

int64_t MonoNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t TsNs(const struct timespec& ts) {
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct timespec NsTs(int64_t ns) {
  return {static_cast<time_t>(ns / 1000000000),
          static_cast<long>(ns % 1000000000)};
}

long Create(clockid_t clock, struct sigevent* ev, int* id) {
  return syscall(SYS_timer_create, clock, ev, id);
}
long Settime(int id, int flags, int64_t value_ns, int64_t interval_ns,
             struct itimerspec* old = nullptr) {
  struct itimerspec v = {NsTs(interval_ns), NsTs(value_ns)};
  return syscall(SYS_timer_settime, id, flags, &v, old);
}
long Gettime(int id, struct itimerspec* cur) {
  return syscall(SYS_timer_gettime, id, cur);
}
long Delete(int id) { return syscall(SYS_timer_delete, id); }

// Deletes the timer at scope end.
struct TimerScope {
  int id = -1;
  ~TimerScope() {
    if (id >= 0) Delete(id);
  }
};

// Blocks `sig` for the scope (the signal is then taken by sigtimedwait);
// drops any instance left pending at the end.
class BlockScope {
 public:
  explicit BlockScope(int sig) : sig_(sig) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    pthread_sigmask(SIG_BLOCK, &s, &old_);
  }
  ~BlockScope() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig_);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&s, nullptr, &zero) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  int sig_;
  sigset_t old_;
};

// Waits up to 20 s for `sig` (blocked).
bool WaitSignal(int sig, siginfo_t* info) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  struct timespec to = {20, 0};
  return sigtimedwait(&s, info, &to) == sig;
}

TEST(TimersTest, DefaultSigeventIsSigalrmWithTheIdAsValue) {
  BlockScope b(SIGALRM);
  TimerScope t;
  ASSERT_THAT(Create(CLOCK_MONOTONIC, nullptr, &t.id), SyscallSucceeds());
  EXPECT_GE(t.id, 0);
  const int64_t start = MonoNs();
  ASSERT_THAT(Settime(t.id, 0, 20000000, 0), SyscallSucceeds());
  siginfo_t info = {};
  ASSERT_TRUE(WaitSignal(SIGALRM, &info));
  EXPECT_GE(MonoNs() - start, 20000000);
  EXPECT_EQ(info.si_code, SI_TIMER);
  EXPECT_EQ(info.si_timerid, t.id);
  EXPECT_EQ(info.si_value.sival_int, t.id);
  EXPECT_EQ(info.si_overrun, 0);
  // A fired one-shot timer reads 0.
  struct itimerspec cur;
  ASSERT_THAT(Gettime(t.id, &cur), SyscallSucceeds());
  EXPECT_EQ(TsNs(cur.it_value), 0);
  EXPECT_EQ(TsNs(cur.it_interval), 0);
}

TEST(TimersTest, ExplicitSignalAndValue) {
  const int sig = SIGRTMIN + 1;
  BlockScope b(sig);
  struct sigevent ev = {};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = sig;
  ev.sigev_value.sival_ptr = reinterpret_cast<void*>(0x1234567890ULL);
  TimerScope t;
  ASSERT_THAT(Create(CLOCK_REALTIME, &ev, &t.id), SyscallSucceeds());
  ASSERT_THAT(Settime(t.id, 0, 1000000, 0), SyscallSucceeds());
  siginfo_t info = {};
  ASSERT_TRUE(WaitSignal(sig, &info));
  EXPECT_EQ(info.si_code, SI_TIMER);
  EXPECT_EQ(info.si_timerid, t.id);
  EXPECT_EQ(info.si_value.sival_ptr, reinterpret_cast<void*>(0x1234567890ULL));
}

TEST(TimersTest, SettimeReturnsOldValueAndGettimeCountsDown) {
  BlockScope b(SIGALRM);
  TimerScope t;
  ASSERT_THAT(Create(CLOCK_MONOTONIC, nullptr, &t.id), SyscallSucceeds());
  struct itimerspec old;
  ASSERT_THAT(Settime(t.id, 0, 10000000000LL, 3000000000LL, &old),
              SyscallSucceeds());
  EXPECT_EQ(TsNs(old.it_value), 0);
  EXPECT_EQ(TsNs(old.it_interval), 0);
  struct itimerspec cur;
  ASSERT_THAT(Gettime(t.id, &cur), SyscallSucceeds());
  EXPECT_GT(TsNs(cur.it_value), 9000000000LL);
  EXPECT_LE(TsNs(cur.it_value), 10000000000LL);
  EXPECT_EQ(TsNs(cur.it_interval), 3000000000LL);
  ASSERT_THAT(Settime(t.id, 0, 0, 0, &old), SyscallSucceeds());
  EXPECT_GT(TsNs(old.it_value), 9000000000LL);
  EXPECT_EQ(TsNs(old.it_interval), 3000000000LL);
  ASSERT_THAT(Gettime(t.id, &cur), SyscallSucceeds());
  EXPECT_EQ(TsNs(cur.it_value), 0);
}

TEST(TimersTest, SigevNonePeriodicKeepsCounting) {
  TimerScope t;
  struct sigevent ev = {};
  ev.sigev_notify = SIGEV_NONE;
  ASSERT_THAT(Create(CLOCK_MONOTONIC, &ev, &t.id), SyscallSucceeds());
  ASSERT_THAT(Settime(t.id, 0, 10000000, 10000000), SyscallSucceeds());
  struct timespec ts = {0, 35000000};
  nanosleep(&ts, nullptr);
  struct itimerspec cur;
  ASSERT_THAT(Gettime(t.id, &cur), SyscallSucceeds());
  EXPECT_GT(TsNs(cur.it_value), 0);
  EXPECT_LE(TsNs(cur.it_value), 10000000);
  // A one-shot SIGEV_NONE timer that expired reads 0.
  ASSERT_THAT(Settime(t.id, 0, 1000000, 0), SyscallSucceeds());
  ts = {0, 5000000};
  nanosleep(&ts, nullptr);
  ASSERT_THAT(Gettime(t.id, &cur), SyscallSucceeds());
  EXPECT_EQ(TsNs(cur.it_value), 0);
}

TEST(TimersTest, AbsoluteTimeInThePastFiresAtOnce) {
  BlockScope b(SIGALRM);
  TimerScope t;
  ASSERT_THAT(Create(CLOCK_REALTIME, nullptr, &t.id), SyscallSucceeds());
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  ASSERT_THAT(Settime(t.id, TIMER_ABSTIME, TsNs(now) - 1000000000LL, 0),
              SyscallSucceeds());
  siginfo_t info = {};
  const int64_t start = MonoNs();
  ASSERT_TRUE(WaitSignal(SIGALRM, &info));
  EXPECT_LT(MonoNs() - start, 10000000000LL);
  EXPECT_EQ(info.si_timerid, t.id);
}

TEST(TimersTest, AbsoluteMonotonicFiresNotBefore) {
  BlockScope b(SIGALRM);
  TimerScope t;
  ASSERT_THAT(Create(CLOCK_MONOTONIC, nullptr, &t.id), SyscallSucceeds());
  const int64_t target = MonoNs() + 50000000;
  ASSERT_THAT(Settime(t.id, TIMER_ABSTIME, target, 0), SyscallSucceeds());
  siginfo_t info = {};
  ASSERT_TRUE(WaitSignal(SIGALRM, &info));
  EXPECT_GE(MonoNs(), target);
}

TEST(TimersTest, OverrunCountsPeriodsWhileTheSignalWaits) {
  BlockScope b(SIGALRM);
  TimerScope t;
  ASSERT_THAT(Create(CLOCK_MONOTONIC, nullptr, &t.id), SyscallSucceeds());
  const int64_t start = MonoNs();
  ASSERT_THAT(Settime(t.id, 0, 1000000, 1000000), SyscallSucceeds());
  struct timespec ts = {0, 100000000};
  nanosleep(&ts, nullptr);
  siginfo_t info = {};
  ASSERT_TRUE(WaitSignal(SIGALRM, &info));
  const int64_t elapsed_ms = (MonoNs() - start) / 1000000;
  // Expiries at 1, 2, ... ms; the first queued the signal, the others
  // until the dequeue are overruns.
  EXPECT_GE(info.si_overrun, 90);
  EXPECT_LE(info.si_overrun, elapsed_ms + 1);
  EXPECT_THAT(syscall(SYS_timer_getoverrun, t.id),
              SyscallSucceedsWithValue(info.si_overrun));
  // timer_settime resets it.
  ASSERT_THAT(Settime(t.id, 0, 0, 0), SyscallSucceeds());
  EXPECT_THAT(syscall(SYS_timer_getoverrun, t.id), SyscallSucceedsWithValue(0));
}

TEST(TimersTest, PeriodicTimerKeepsDelivering) {
  const int sig = SIGRTMIN + 3;
  BlockScope b(sig);
  struct sigevent ev = {};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = sig;
  TimerScope t;
  ASSERT_THAT(Create(CLOCK_MONOTONIC, &ev, &t.id), SyscallSucceeds());
  const int64_t start = MonoNs();
  ASSERT_THAT(Settime(t.id, 0, 10000000, 10000000), SyscallSucceeds());
  int64_t expiries = 0;
  for (int i = 0; i < 5; ++i) {
    siginfo_t info = {};
    ASSERT_TRUE(WaitSignal(sig, &info));
    expiries += 1 + info.si_overrun;
  }
  EXPECT_GE(MonoNs() - start, expiries * 10000000);
}

TEST(TimersTest, ThreadIdTargetsThatThread) {
  const int sig = SIGRTMIN + 4;
  BlockScope b(sig);  // inherited by the thread
  struct Arg {
    std::atomic<pid_t> tid{0};
    std::atomic<int> got{0};
    std::atomic<int> timerid{-1};
  } arg;
  pthread_t th;
  ASSERT_EQ(pthread_create(
                &th, nullptr,
                [](void* p) -> void* {
                  auto* a = static_cast<Arg*>(p);
                  a->tid = static_cast<pid_t>(syscall(SYS_gettid));
                  siginfo_t info = {};
                  if (WaitSignal(SIGRTMIN + 4, &info)) {
                    a->timerid = info.si_timerid;
                    a->got = info.si_code;
                  }
                  return nullptr;
                },
                &arg),
            0);
  while (arg.tid == 0) sched_yield();
  struct sigevent ev = {};
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = sig;
  ev._sigev_un._tid = arg.tid;
  TimerScope t;
  ASSERT_THAT(Create(CLOCK_MONOTONIC, &ev, &t.id), SyscallSucceeds());
  ASSERT_THAT(Settime(t.id, 0, 10000000, 0), SyscallSucceeds());
  pthread_join(th, nullptr);
  EXPECT_EQ(arg.got.load(), SI_TIMER);
  EXPECT_EQ(arg.timerid.load(), t.id);
  // Not for this thread or the process.
  sigset_t pending;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, sig));
}

TEST(TimersTest, CreateErrors) {
  int id;
  EXPECT_THAT(Create(12345, nullptr, &id), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Create(10, nullptr, &id), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Create(CLOCK_MONOTONIC_RAW, nullptr, &id),
              SyscallFailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(Create(CLOCK_MONOTONIC_COARSE, nullptr, &id),
              SyscallFailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(
      Create(CLOCK_MONOTONIC, reinterpret_cast<struct sigevent*>(8), &id),
      SyscallFailsWithErrno(EFAULT));
  struct sigevent ev = {};
  ev.sigev_notify = 99;
  ev.sigev_signo = SIGALRM;
  EXPECT_THAT(Create(CLOCK_MONOTONIC, &ev, &id), SyscallFailsWithErrno(EINVAL));
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = 0;
  EXPECT_THAT(Create(CLOCK_MONOTONIC, &ev, &id), SyscallFailsWithErrno(EINVAL));
  ev.sigev_signo = 65;
  EXPECT_THAT(Create(CLOCK_MONOTONIC, &ev, &id), SyscallFailsWithErrno(EINVAL));
  // SIGEV_THREAD_ID: the thread must be in the caller's process.
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = SIGALRM;
  ev._sigev_un._tid = 0;
  EXPECT_THAT(Create(CLOCK_MONOTONIC, &ev, &id), SyscallFailsWithErrno(EINVAL));
  pid_t child = fork();
  ASSERT_THAT(child, SyscallSucceeds());
  if (child == 0) {
    pause();
    _exit(0);
  }
  ev._sigev_un._tid = child;
  EXPECT_THAT(Create(CLOCK_MONOTONIC, &ev, &id), SyscallFailsWithErrno(EINVAL));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  // SIGEV_NONE ignores the signal number.
  ev.sigev_notify = SIGEV_NONE;
  ev.sigev_signo = 0;
  TimerScope t;
  EXPECT_THAT(Create(CLOCK_MONOTONIC, &ev, &t.id), SyscallSucceeds());
  EXPECT_THAT(Create(CLOCK_MONOTONIC, nullptr, reinterpret_cast<int*>(8)),
              SyscallFailsWithErrno(EFAULT));
}

TEST(TimersTest, AlarmClocksNeedAnRtcOrCapability) {
  int id;
  long r = Create(CLOCK_REALTIME_ALARM, nullptr, &id);
  if (r == 0) {
    Delete(id);
    GTEST_SKIP() << "this kernel has an RTC and CAP_WAKE_ALARM";
  }
  EXPECT_TRUE(errno == EOPNOTSUPP || errno == EPERM) << strerror(errno);
}

TEST(TimersTest, OperationsOnBadIds) {
  struct itimerspec v = {{0, 0}, {1, 0}}, cur;
  EXPECT_THAT(syscall(SYS_timer_settime, 987654, 0, &v, nullptr),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_timer_settime, -1, 0, &v, nullptr),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Gettime(987654, &cur), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_timer_getoverrun, 987654),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Delete(987654), SyscallFailsWithErrno(EINVAL));
  int id;
  ASSERT_THAT(Create(CLOCK_MONOTONIC, nullptr, &id), SyscallSucceeds());
  EXPECT_THAT(syscall(SYS_timer_settime, id, 0, nullptr, nullptr),
              SyscallFailsWithErrno(EINVAL));
  struct itimerspec bad = {{0, 0}, {0, 1000000000}};
  EXPECT_THAT(syscall(SYS_timer_settime, id, 0, &bad, nullptr),
              SyscallFailsWithErrno(EINVAL));
  bad = {{-1, 0}, {1, 0}};
  EXPECT_THAT(syscall(SYS_timer_settime, id, 0, &bad, nullptr),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_timer_settime, id, 0, 8, nullptr),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(Gettime(id, nullptr), SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(syscall(SYS_timer_getoverrun, id), SyscallSucceedsWithValue(0));
  EXPECT_THAT(Delete(id), SyscallSucceeds());
  EXPECT_THAT(Delete(id), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Gettime(id, &cur), SyscallFailsWithErrno(EINVAL));
}

TEST(TimersTest, ProcessCpuClockTimerFiresOnCpuTime) {
  const int sig = SIGRTMIN + 5;
  BlockScope b(sig);
  struct sigevent ev = {};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = sig;
  for (clockid_t clock : {CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID}) {
    TimerScope t;
    ASSERT_THAT(Create(clock, &ev, &t.id), SyscallSucceeds());
    struct timespec cpu0;
    clock_gettime(clock, &cpu0);
    ASSERT_THAT(Settime(t.id, 0, 50000000, 0), SyscallSucceeds());
    struct itimerspec cur;
    ASSERT_THAT(Gettime(t.id, &cur), SyscallSucceeds());
    EXPECT_GT(TsNs(cur.it_value), 0);
    EXPECT_LE(TsNs(cur.it_value), 50000000);
    // Spin until the signal is pending (at most 20 s of wall time).
    const int64_t end = MonoNs() + 20000000000LL;
    sigset_t pending;
    volatile uint64_t x = 0;
    do {
      for (int i = 0; i < 100000; ++i) x = x + i;
      sigpending(&pending);
    } while (!sigismember(&pending, sig) && MonoNs() < end);
    ASSERT_TRUE(sigismember(&pending, sig));
    struct timespec cpu1;
    clock_gettime(clock, &cpu1);
    EXPECT_GE(TsNs(cpu1) - TsNs(cpu0), 50000000);
    siginfo_t info = {};
    ASSERT_TRUE(WaitSignal(sig, &info));
    EXPECT_EQ(info.si_code, SI_TIMER);
    EXPECT_EQ(info.si_timerid, t.id);
  }
}

TEST(TimersTest, LimitIsRlimitSigpending) {
  int status = InForkedChild([] {
    struct rlimit lim = {4, 4};
    if (setrlimit(RLIMIT_SIGPENDING, &lim) != 0) _exit(1);
    int n = 0, id;
    while (n < 100 && Create(CLOCK_MONOTONIC, nullptr, &id) == 0) ++n;
    // Linux counts the limit per user (other processes' pending signals
    // too): at most 4 here.
    if (n > 4) _exit(2);
    if (errno != EAGAIN) _exit(3);
  });
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(TimersTest, NotInheritedByFork) {
  TimerScope t;
  ASSERT_THAT(Create(CLOCK_MONOTONIC, nullptr, &t.id), SyscallSucceeds());
  ASSERT_THAT(Settime(t.id, 0, 30000000000LL, 0), SyscallSucceeds());
  const int id = t.id;
  int status = InForkedChild([id] {
    struct itimerspec cur;
    if (Gettime(id, &cur) == 0 || errno != EINVAL) _exit(1);
  });
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(TimersTest, PosixTimersAreDeletedByExec) {
  pid_t pid = fork();
  ASSERT_THAT(pid, SyscallSucceeds());
  if (pid == 0) {
    struct sigevent ev = {};
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGRTMIN + 2;
    int id;
    if (Create(CLOCK_MONOTONIC, &ev, &id) != 0) _exit(5);
    // Its signal is queued (blocked) at exec: flushed with the timer.
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGRTMIN + 2);
    sigprocmask(SIG_BLOCK, &s, nullptr);
    if (Settime(id, 0, 1000000, 0) != 0) _exit(6);
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, nullptr);
    setenv(kExecCheckEnv, std::to_string(id).c_str(), 1);
    execl("/proc/self/exe", "timers_test", nullptr);
    _exit(4);
  }
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(TimersTest, ProcTimersListsTheTimers) {
  if (access("/proc/self/timers", R_OK) != 0) {
    GTEST_SKIP() << "no /proc/self/timers (needs CONFIG_CHECKPOINT_RESTORE)";
  }
  struct sigevent ev = {};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGRTMIN + 1;
  ev.sigev_value.sival_ptr = reinterpret_cast<void*>(0xabc);
  TimerScope t;
  ASSERT_THAT(Create(CLOCK_MONOTONIC, &ev, &t.id), SyscallSucceeds());
  int fd = open("/proc/self/timers", O_RDONLY);
  ASSERT_THAT(fd, SyscallSucceeds());
  char buf[4096] = {};
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  ASSERT_GT(n, 0);
  char want[256];
  snprintf(want, sizeof(want),
           "ID: %d\nsignal: %d/0000000000000abc\nnotify: signal/pid.%d\n"
           "ClockID: 1\n",
           t.id, SIGRTMIN + 1, getpid());
  EXPECT_THAT(std::string(buf), ::testing::HasSubstr(want));
}

}  // namespace
}  // namespace sandbox::testutil
