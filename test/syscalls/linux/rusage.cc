// CPU time accounting: getrusage(2) (SELF, CHILDREN, THREAD), times(2),
// wait4's and waitid's rusage, SIGCHLD's si_utime/si_stime, the CPU
// clocks (CLOCK_PROCESS/THREAD_CPUTIME_ID, clock_getcpuclockid,
// pthread_getcpuclockid and the encoded clock ids' EINVAL/ESRCH rules),
// /proc/PID/stat's utime/stime/cutime/cstime.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr int64_t kMs = 1000000;

int64_t TsNs(const struct timespec& ts) {
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
int64_t TvNs(const struct timeval& tv) {
  return tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL;
}
int64_t ClockNs(clockid_t c) {
  struct timespec ts = {};
  EXPECT_THAT(clock_gettime(c, &ts), SyscallSucceeds());
  return TsNs(ts);
}
int64_t Total(const struct rusage& r) {
  return TvNs(r.ru_utime) + TvNs(r.ru_stime);
}

// Spins in user code until this thread has used `ns` more CPU time.
void SpinCpu(int64_t ns) {
  const int64_t end = ClockNs(CLOCK_THREAD_CPUTIME_ID) + ns;
  volatile uint64_t x = 0;
  while (ClockNs(CLOCK_THREAD_CPUTIME_ID) < end) {
    for (int i = 0; i < 20000; ++i) x = x + i;
  }
}

// The Linux encodings of clock_getcpuclockid / pthread_getcpuclockid.
clockid_t ProcessClock(pid_t pid, int which) {
  return static_cast<clockid_t>((~static_cast<unsigned>(pid) << 3) | which);
}
clockid_t ThreadClock(pid_t tid, int which) {
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | which | 4);
}

TEST(RusageTest, SelfCountsUserTimeOfGuestCode) {
  struct rusage before, after;
  ASSERT_THAT(getrusage(RUSAGE_SELF, &before), SyscallSucceeds());
  SpinCpu(200 * kMs);
  ASSERT_THAT(getrusage(RUSAGE_SELF, &after), SyscallSucceeds());
  EXPECT_GE(Total(after) - Total(before), 190 * kMs);
  // A user-mode loop is mostly user time.
  EXPECT_GE(TvNs(after.ru_utime) - TvNs(before.ru_utime), 100 * kMs);
  EXPECT_GT(after.ru_maxrss, 0);
}

TEST(RusageTest, ThreadIsAtMostSelfAndBothGrow) {
  SpinCpu(50 * kMs);
  struct rusage self, thread;
  ASSERT_THAT(getrusage(RUSAGE_THREAD, &thread), SyscallSucceeds());
  ASSERT_THAT(getrusage(RUSAGE_SELF, &self), SyscallSucceeds());
  EXPECT_GE(Total(thread), 50 * kMs);
  EXPECT_LE(Total(thread), Total(self));
}

TEST(RusageTest, ExitedThreadsStillCount) {
  const int64_t before = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
  pthread_t th;
  ASSERT_EQ(pthread_create(
                &th, nullptr,
                [](void*) -> void* {
                  SpinCpu(150 * kMs);
                  return nullptr;
                },
                nullptr),
            0);
  ASSERT_EQ(pthread_join(th, nullptr), 0);
  EXPECT_GE(ClockNs(CLOCK_PROCESS_CPUTIME_ID) - before, 150 * kMs);
}

TEST(RusageTest, InvalidWho) {
  struct rusage r;
  EXPECT_THAT(getrusage(5, &r), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_getrusage, -2, &r), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_getrusage, RUSAGE_SELF, 8),
              SyscallFailsWithErrno(EFAULT));
}

TEST(RusageTest, ChildrenAfterWait4AndWaitid) {
  struct rusage before;
  ASSERT_THAT(getrusage(RUSAGE_CHILDREN, &before), SyscallSucceeds());
  struct tms tms_before;
  ASSERT_THAT(times(&tms_before), SyscallSucceeds());
  pid_t pid = fork();
  ASSERT_THAT(pid, SyscallSucceeds());
  if (pid == 0) {
    SpinCpu(200 * kMs);
    _exit(0);
  }
  int status;
  struct rusage ru;
  ASSERT_THAT(wait4(pid, &status, 0, &ru), SyscallSucceedsWithValue(pid));
  EXPECT_GE(Total(ru), 190 * kMs);
  EXPECT_GE(TvNs(ru.ru_utime), 100 * kMs);
  EXPECT_GT(ru.ru_maxrss, 0);
  struct rusage after;
  ASSERT_THAT(getrusage(RUSAGE_CHILDREN, &after), SyscallSucceeds());
  EXPECT_GE(Total(after) - Total(before), 190 * kMs);
  struct tms tms_after;
  ASSERT_THAT(times(&tms_after), SyscallSucceeds());
  const long hz = sysconf(_SC_CLK_TCK);
  EXPECT_GE((tms_after.tms_cutime + tms_after.tms_cstime) -
                (tms_before.tms_cutime + tms_before.tms_cstime),
            190 * hz / 1000 - 1);

  // waitid: the rusage too (Linux leaves si_utime/si_stime unwritten).
  pid = fork();
  ASSERT_THAT(pid, SyscallSucceeds());
  if (pid == 0) {
    SpinCpu(100 * kMs);
    _exit(0);
  }
  siginfo_t info = {};
  ASSERT_THAT(syscall(SYS_waitid, P_PID, pid, &info, WEXITED, &ru),
              SyscallSucceeds());
  EXPECT_EQ(info.si_pid, pid);
  EXPECT_GE(Total(ru), 95 * kMs);
}

TEST(RusageTest, GrandchildrenCountWhenTheChildReapedThem) {
  struct rusage before;
  ASSERT_THAT(getrusage(RUSAGE_CHILDREN, &before), SyscallSucceeds());
  pid_t pid = fork();
  ASSERT_THAT(pid, SyscallSucceeds());
  if (pid == 0) {
    pid_t g = fork();
    if (g == 0) {
      SpinCpu(150 * kMs);
      _exit(0);
    }
    waitpid(g, nullptr, 0);
    _exit(0);
  }
  struct rusage ru;
  ASSERT_THAT(wait4(pid, nullptr, 0, &ru), SyscallSucceedsWithValue(pid));
  EXPECT_GE(Total(ru), 145 * kMs);  // RUSAGE_BOTH of the child
  struct rusage after;
  ASSERT_THAT(getrusage(RUSAGE_CHILDREN, &after), SyscallSucceeds());
  EXPECT_GE(Total(after) - Total(before), 145 * kMs);
}

TEST(RusageTest, SigchldCarriesTheChildsTimes) {
  sigset_t s, old;
  sigemptyset(&s);
  sigaddset(&s, SIGCHLD);
  ASSERT_THAT(pthread_sigmask(SIG_BLOCK, &s, &old), SyscallSucceeds());
  pid_t pid = fork();
  ASSERT_THAT(pid, SyscallSucceeds());
  if (pid == 0) {
    SpinCpu(200 * kMs);
    _exit(0);
  }
  siginfo_t info = {};
  struct timespec to = {20, 0};
  int sig = sigtimedwait(&s, &info, &to);
  waitpid(pid, nullptr, 0);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_EQ(sig, SIGCHLD);
  EXPECT_EQ(info.si_pid, pid);
  // Linux reports the dying task's tick-sampled times, which undercount
  // on a loaded machine: only "some", never 0, is certain.
  EXPECT_GE(info.si_utime + info.si_stime, 1);
}

TEST(RusageTest, TimesReturnsIncreasingTicksAndAcceptsNull) {
  clock_t a = times(nullptr);
  ASSERT_NE(a, static_cast<clock_t>(-1));
  struct timespec ts = {0, 50 * kMs};
  nanosleep(&ts, nullptr);
  clock_t b = times(nullptr);
  EXPECT_GE(b - a, 4);
  EXPECT_THAT(syscall(SYS_times, 8), SyscallFailsWithErrno(EFAULT));
  SpinCpu(50 * kMs);
  struct tms t;
  ASSERT_THAT(times(&t), SyscallSucceeds());
  EXPECT_GE(t.tms_utime + t.tms_stime, 4);
}

TEST(CpuClockTest, ThreadClockAdvancesWithWorkNotSleep) {
  const int64_t t0 = ClockNs(CLOCK_THREAD_CPUTIME_ID);
  struct timespec ts = {0, 100 * kMs};
  nanosleep(&ts, nullptr);
  const int64_t t1 = ClockNs(CLOCK_THREAD_CPUTIME_ID);
  EXPECT_LT(t1 - t0, 50 * kMs);
  SpinCpu(50 * kMs);
  EXPECT_GE(ClockNs(CLOCK_THREAD_CPUTIME_ID) - t1, 50 * kMs);
}

TEST(CpuClockTest, ProcessClockIsMonotonic) {
  int64_t last = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
  for (int i = 0; i < 1000; ++i) {
    const int64_t now = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
    ASSERT_GE(now, last);
    last = now;
  }
}

TEST(CpuClockTest, ClockGetcpuclockid) {
  clockid_t c;
  ASSERT_EQ(clock_getcpuclockid(getpid(), &c), 0);
  EXPECT_EQ(c, ProcessClock(getpid(), 2));
  SpinCpu(20 * kMs);
  const int64_t a = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
  const int64_t b = ClockNs(c);
  EXPECT_GE(b, a);
  EXPECT_GE(b, 20 * kMs);
  ASSERT_EQ(clock_getcpuclockid(0, &c), 0);
  // A process that does not exist: ESRCH from the library (the kernel
  // says EINVAL).
  EXPECT_EQ(clock_getcpuclockid(0x3ffffff0, &c), ESRCH);
  struct timespec ts;
  EXPECT_THAT(syscall(SYS_clock_gettime, ProcessClock(0x3ffffff0, 2), &ts),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_clock_getres, ProcessClock(0x3ffffff0, 2), &ts),
              SyscallFailsWithErrno(EINVAL));
  // CPUCLOCK_WHICH 3 does not exist.
  EXPECT_THAT(syscall(SYS_clock_gettime, ProcessClock(getpid(), 3) & ~4, &ts),
              SyscallFailsWithErrno(EINVAL));
}

TEST(CpuClockTest, ChildProcessClock) {
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  pid_t pid = fork();
  ASSERT_THAT(pid, SyscallSucceeds());
  if (pid == 0) {
    close(fds[0]);
    SpinCpu(100 * kMs);
    char c = 1;
    (void)write(fds[1], &c, 1);
    pause();
    _exit(0);
  }
  close(fds[1]);
  char c;
  ASSERT_TRUE(ReadByteWithin10s(fds[0]));
  close(fds[0]);
  clockid_t clock;
  ASSERT_EQ(clock_getcpuclockid(pid, &clock), 0);
  struct timespec ts;
  EXPECT_THAT(clock_gettime(clock, &ts), SyscallSucceeds());
  EXPECT_GE(TsNs(ts), 100 * kMs);
  // Another process's thread clock: EINVAL.
  EXPECT_THAT(syscall(SYS_clock_gettime, ThreadClock(pid, 2), &ts),
              SyscallFailsWithErrno(EINVAL));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  (void)c;
}

TEST(CpuClockTest, PthreadGetcpuclockidAndResolution) {
  clockid_t c;
  ASSERT_EQ(pthread_getcpuclockid(pthread_self(), &c), 0);
  SpinCpu(20 * kMs);
  const int64_t mine = ClockNs(c);
  EXPECT_GE(mine, 20 * kMs);
  EXPECT_LE(mine, ClockNs(CLOCK_PROCESS_CPUTIME_ID));
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  struct timespec res;
  ASSERT_THAT(clock_getres(ThreadClock(tid, 2), &res), SyscallSucceeds());
  EXPECT_EQ(TsNs(res), 1);  // CPUCLOCK_SCHED
  ASSERT_THAT(clock_getres(ThreadClock(tid, 0), &res), SyscallSucceeds());
  EXPECT_GE(TsNs(res), 1 * kMs);  // CPUCLOCK_PROF: a tick
  EXPECT_LE(TsNs(res), 10 * kMs);
  ASSERT_THAT(clock_getres(CLOCK_PROCESS_CPUTIME_ID, &res), SyscallSucceeds());
  EXPECT_EQ(TsNs(res), 1);
  // The virtual (user) clock is at most the profiling (user+system) one.
  struct timespec virt, prof;
  ASSERT_THAT(clock_gettime(ProcessClock(0, 1), &virt), SyscallSucceeds());
  ASSERT_THAT(clock_gettime(ProcessClock(0, 0), &prof), SyscallSucceeds());
  EXPECT_LE(TsNs(virt), TsNs(prof));
}

TEST(CpuClockTest, ClockNanosleepOnCpuClocks) {
  struct timespec ts = {0, 1000};
  EXPECT_THAT(
      syscall(SYS_clock_nanosleep, CLOCK_THREAD_CPUTIME_ID, 0, &ts, nullptr),
      SyscallFailsWithErrno(EOPNOTSUPP));
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  EXPECT_THAT(
      syscall(SYS_clock_nanosleep, ThreadClock(tid, 2), 0, &ts, nullptr),
      SyscallFailsWithErrno(EINVAL));
  // Sleeping on the process clock while another thread burns CPU.
  std::atomic<bool> stop{false};
  pthread_t th;
  ASSERT_EQ(pthread_create(
                &th, nullptr,
                [](void* p) -> void* {
                  auto* s = static_cast<std::atomic<bool>*>(p);
                  volatile uint64_t x = 0;
                  while (!*s) x = x + 1;
                  return nullptr;
                },
                &stop),
            0);
  const int64_t before = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
  ts = {0, 50 * kMs};
  EXPECT_THAT(
      syscall(SYS_clock_nanosleep, CLOCK_PROCESS_CPUTIME_ID, 0, &ts, nullptr),
      SyscallSucceeds());
  EXPECT_GE(ClockNs(CLOCK_PROCESS_CPUTIME_ID) - before, 50 * kMs);
  stop = true;
  pthread_join(th, nullptr);
}

// /proc/PID/stat fields 14-17: utime, stime, cutime, cstime in ticks.
std::vector<long> StatTimes(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return {};
  char buf[2048] = {};
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return {};
  std::string s(buf, n);
  std::istringstream in(s.substr(s.rfind(')') + 2));
  std::vector<std::string> f;
  std::string w;
  while (in >> w) f.push_back(w);
  // f[0] is field 3 (state).
  if (f.size() < 15) return {};
  return {std::stol(f[11]), std::stol(f[12]), std::stol(f[13]),
          std::stol(f[14])};
}

TEST(RusageTest, ProcStatTimes) {
  if (access("/proc/self/stat", R_OK) != 0) GTEST_SKIP() << "no /proc";
  SpinCpu(100 * kMs);
  std::vector<long> t = StatTimes("/proc/self/stat");
  ASSERT_EQ(t.size(), 4u);
  const long hz = sysconf(_SC_CLK_TCK);
  EXPECT_GE(t[0] + t[1], 100 * hz / 1000 - 1);
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  std::vector<long> tt =
      StatTimes("/proc/self/task/" + std::to_string(tid) + "/stat");
  ASSERT_EQ(tt.size(), 4u);
  EXPECT_LE(tt[0] + tt[1], t[0] + t[1] + 1);
  // cutime + cstime: the reaped children's, as RUSAGE_CHILDREN.
  struct rusage ch;
  ASSERT_THAT(getrusage(RUSAGE_CHILDREN, &ch), SyscallSucceeds());
  const long ch_ticks = Total(ch) / (1000000000 / hz);
  EXPECT_GE(t[2] + t[3], ch_ticks - 2);
  EXPECT_LE(t[2] + t[3], ch_ticks + 2);
}

}  // namespace
}  // namespace sandbox::testutil
