// timerfd_create(2), timerfd_settime(2), timerfd_gettime(2): flags,
// clocks and the checks' order, read's 8-byte rule, one-shot, absolute and
// periodic timers with their missed-period counts, timerfd_gettime's
// forward, poll/epoll readiness, blocking reads and the restart rule,
// TFD_IOC_SET_TICKS, fstat, fdinfo and the /proc fd link, fork.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

#ifndef TFD_IOC_SET_TICKS
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t)
#endif

namespace sandbox::testutil {
namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kSec = 1000000000;

int64_t NowNs(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return ts.tv_sec * kSec + ts.tv_nsec;
}

struct timespec Ts(int64_t ns) {
  return {static_cast<time_t>(ns / kSec), static_cast<long>(ns % kSec)};
}

int64_t Ns(const struct timespec& ts) { return ts.tv_sec * kSec + ts.tv_nsec; }

struct itimerspec Spec(int64_t value, int64_t interval) {
  struct itimerspec s;
  s.it_value = Ts(value);
  s.it_interval = Ts(interval);
  return s;
}

int Arm(int fd, int64_t value, int64_t interval, int flags = 0) {
  struct itimerspec s = Spec(value, interval);
  return timerfd_settime(fd, flags, &s, nullptr);
}

void SleepNs(int64_t ns) {
  struct timespec ts = Ts(ns);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

bool HasCap(int cap) {
  struct {
    uint32_t version;
    int pid;
  } header = {0x20080522, 0};
  struct {
    uint32_t effective, permitted, inheritable;
  } data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[cap / 32].effective >> (cap % 32)) & 1;
}
constexpr int kCapWakeAlarm = 35;

// Whether uid_map is the identity map of the initial user namespace.
bool InInitialUserNamespace() {
  return ReadFileOrEmpty("/proc/self/uid_map").find("4294967295") !=
         std::string::npos;
}

FileDescriptor NewTimer(clockid_t c = CLOCK_MONOTONIC, int flags = 0) {
  return FileDescriptor(timerfd_create(c, flags | TFD_CLOEXEC));
}

TEST(TimerfdTest, CreateFlagsAndClocks) {
  EXPECT_THAT(timerfd_create(CLOCK_MONOTONIC, 0x1),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(timerfd_create(CLOCK_MONOTONIC, O_RDWR | TFD_CLOEXEC),
              SyscallFailsWithErrno(EINVAL));
  for (clockid_t bad :
       {CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC_RAW,
        CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE, clockid_t{11},
        clockid_t{-1}, clockid_t{100}}) {
    EXPECT_THAT(timerfd_create(bad, TFD_CLOEXEC), SyscallFailsWithErrno(EINVAL))
        << bad;
  }
  // Bad flags win over a privileged clock.
  EXPECT_THAT(timerfd_create(CLOCK_REALTIME_ALARM, 0x1),
              SyscallFailsWithErrno(EINVAL));
  for (clockid_t c : {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME}) {
    FileDescriptor t = NewTimer(c);
    EXPECT_TRUE(t.valid()) << c << " " << errno;
  }
  FileDescriptor nb(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
  ASSERT_TRUE(nb.valid());
  EXPECT_THAT(fcntl(nb.get(), F_GETFL),
              SyscallSucceedsWithValue(O_RDWR | O_NONBLOCK));
  EXPECT_THAT(fcntl(nb.get(), F_GETFD), SyscallSucceedsWithValue(0));
  FileDescriptor ce = NewTimer();
  EXPECT_THAT(fcntl(ce.get(), F_GETFL), SyscallSucceedsWithValue(O_RDWR));
  EXPECT_THAT(fcntl(ce.get(), F_GETFD), SyscallSucceedsWithValue(FD_CLOEXEC));
}

TEST(TimerfdTest, AlarmClocksNeedCapWakeAlarm) {
  if (!HasCap(kCapWakeAlarm)) {
    EXPECT_THAT(timerfd_create(CLOCK_REALTIME_ALARM, 0),
                SyscallFailsWithErrno(EPERM));
    GTEST_SKIP() << "SKIP: needs CAP_WAKE_ALARM for the rest";
  }
  FileDescriptor a = NewTimer(CLOCK_BOOTTIME_ALARM);
  if (!a.valid() && errno == EPERM && !InInitialUserNamespace()) {
    // capable() asks the initial user namespace.
    GTEST_SKIP() << "SKIP: CAP_WAKE_ALARM is held only in a user namespace";
  }
  ASSERT_TRUE(a.valid()) << errno;
  EXPECT_THAT(Arm(a.get(), 5 * kMs, 0), SyscallSucceeds());
  uint64_t n = 0;
  ASSERT_THAT(read(a.get(), &n, sizeof(n)), SyscallSucceedsWithValue(8));
  EXPECT_EQ(n, 1u);
  // Without the capability: create is EPERM, and so is settime on a timer
  // made before.
  EXPECT_THAT(
      InForkedChild([&] {
        if (!DropCapabilities(false)) _exit(10);
        errno = 0;
        if (timerfd_create(CLOCK_REALTIME_ALARM, 0) != -1 || errno != EPERM) {
          _exit(11);
        }
        struct itimerspec s = Spec(kSec, 0);
        if (timerfd_settime(a.get(), 0, &s, nullptr) != -1 || errno != EPERM) {
          _exit(12);
        }
        // The plain clocks stay allowed.
        if (timerfd_create(CLOCK_REALTIME, 0) < 0) _exit(13);
      }),
      ExitedWithCode(0));
}

TEST(TimerfdTest, SettimeAndGettimeErrors) {
  FileDescriptor t = NewTimer();
  ASSERT_TRUE(t.valid());
  struct itimerspec s = Spec(kSec, 0);
  struct itimerspec cur;
  EXPECT_THAT(timerfd_settime(t.get(), 4, &s, nullptr),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(timerfd_settime(t.get(), 0, nullptr, nullptr),
              SyscallFailsWithErrno(EFAULT));
  // The copy-in comes before the flags and the descriptor.
  EXPECT_THAT(timerfd_settime(-1, 4, nullptr, nullptr),
              SyscallFailsWithErrno(EFAULT));
  // Invalid values come before the descriptor.
  struct itimerspec bad = Spec(kSec, 0);
  bad.it_value.tv_nsec = kSec;
  EXPECT_THAT(timerfd_settime(-1, 0, &bad, nullptr),
              SyscallFailsWithErrno(EINVAL));
  bad = Spec(kSec, 0);
  bad.it_interval.tv_nsec = -1;
  EXPECT_THAT(timerfd_settime(t.get(), 0, &bad, nullptr),
              SyscallFailsWithErrno(EINVAL));
  bad = Spec(kSec, 0);
  bad.it_value.tv_sec = -1;
  EXPECT_THAT(timerfd_settime(t.get(), 0, &bad, nullptr),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(timerfd_settime(-1, 0, &s, nullptr),
              SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(timerfd_settime(1000, 0, &s, nullptr),
              SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(timerfd_gettime(-1, &cur), SyscallFailsWithErrno(EBADF));
  FileDescriptor e(eventfd(0, EFD_CLOEXEC));
  ASSERT_TRUE(e.valid());
  EXPECT_THAT(timerfd_settime(e.get(), 0, &s, nullptr),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(timerfd_gettime(e.get(), &cur), SyscallFailsWithErrno(EINVAL));
  FileDescriptor path(open("/", O_PATH | O_CLOEXEC));
  ASSERT_TRUE(path.valid());
  EXPECT_THAT(timerfd_gettime(path.get(), &cur), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(timerfd_gettime(t.get(), nullptr), SyscallFailsWithErrno(EFAULT));
  // A bad old-value pointer fails after the timer was set.
  EXPECT_THAT(
      timerfd_settime(t.get(), 0, &s, reinterpret_cast<struct itimerspec*>(8)),
      SyscallFailsWithErrno(EFAULT));
  ASSERT_THAT(timerfd_gettime(t.get(), &cur), SyscallSucceeds());
  EXPECT_GT(Ns(cur.it_value), 0);
}

TEST(TimerfdTest, ReadNeedsEightBytesAndNonblockIsEagain) {
  FileDescriptor t = NewTimer(CLOCK_MONOTONIC, TFD_NONBLOCK);
  ASSERT_TRUE(t.valid());
  char small[7];
  EXPECT_THAT(read(t.get(), small, sizeof(small)),
              SyscallFailsWithErrno(EINVAL));
  uint64_t n = 0;
  EXPECT_THAT(read(t.get(), &n, sizeof(n)), SyscallFailsWithErrno(EAGAIN));
  EXPECT_THAT(write(t.get(), &n, sizeof(n)), SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(Arm(t.get(), 1, 0), SyscallSucceeds());
  SleepNs(10 * kMs);
  EXPECT_THAT(read(t.get(), small, sizeof(small)),
              SyscallFailsWithErrno(EINVAL));
  char big[16] = {};
  EXPECT_THAT(read(t.get(), big, sizeof(big)), SyscallSucceedsWithValue(8));
  EXPECT_EQ(big[0], 1);
  EXPECT_THAT(read(t.get(), &n, sizeof(n)), SyscallFailsWithErrno(EAGAIN));
}

TEST(TimerfdTest, OneShotRelative) {
  FileDescriptor t = NewTimer();
  ASSERT_TRUE(t.valid());
  const int64_t start = NowNs(CLOCK_MONOTONIC);
  ASSERT_THAT(Arm(t.get(), 20 * kMs, 0), SyscallSucceeds());
  uint64_t n = 0;
  ASSERT_THAT(read(t.get(), &n, sizeof(n)), SyscallSucceedsWithValue(8));
  EXPECT_GE(NowNs(CLOCK_MONOTONIC) - start, 20 * kMs);
  EXPECT_EQ(n, 1u);
  struct itimerspec cur;
  ASSERT_THAT(timerfd_gettime(t.get(), &cur), SyscallSucceeds());
  EXPECT_EQ(Ns(cur.it_value), 0);
  EXPECT_EQ(Ns(cur.it_interval), 0);
}

TEST(TimerfdTest, AbsoluteTimers) {
  for (clockid_t c : {CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME}) {
    FileDescriptor t = NewTimer(c);
    ASSERT_TRUE(t.valid());
    // gettime gives the time left, not the absolute expiry (armed far
    // ahead, so that no preemption lets it expire first).
    const int64_t far = NowNs(c) + 10000 * kMs;
    ASSERT_THAT(Arm(t.get(), far, 0, TFD_TIMER_ABSTIME), SyscallSucceeds());
    struct itimerspec cur;
    ASSERT_THAT(timerfd_gettime(t.get(), &cur), SyscallSucceeds());
    EXPECT_GT(Ns(cur.it_value), 0) << c;
    EXPECT_LE(Ns(cur.it_value), 10000 * kMs) << c;
    const int64_t at = NowNs(c) + 20 * kMs;
    ASSERT_THAT(Arm(t.get(), at, 0, TFD_TIMER_ABSTIME), SyscallSucceeds());
    uint64_t n = 0;
    ASSERT_THAT(read(t.get(), &n, sizeof(n)), SyscallSucceedsWithValue(8));
    EXPECT_GE(NowNs(c), at) << c;
    EXPECT_EQ(n, 1u);
    // An expiry in the past fires at once.
    ASSERT_THAT(Arm(t.get(), 1, 0, TFD_TIMER_ABSTIME), SyscallSucceeds());
    struct pollfd p = {t.get(), POLLIN, 0};
    EXPECT_THAT(poll(&p, 1, 5000), SyscallSucceedsWithValue(1));
    ASSERT_THAT(read(t.get(), &n, sizeof(n)), SyscallSucceedsWithValue(8));
    EXPECT_EQ(n, 1u);
  }
}

TEST(TimerfdTest, PeriodicCountsMissedExpirations) {
  FileDescriptor t = NewTimer(CLOCK_MONOTONIC, TFD_NONBLOCK);
  ASSERT_TRUE(t.valid());
  const int64_t start = NowNs(CLOCK_MONOTONIC);
  ASSERT_THAT(Arm(t.get(), 5 * kMs, 5 * kMs), SyscallSucceeds());
  SleepNs(60 * kMs);
  uint64_t n = 0;
  ASSERT_THAT(read(t.get(), &n, sizeof(n)), SyscallSucceedsWithValue(8));
  const int64_t elapsed = NowNs(CLOCK_MONOTONIC) - start;
  // Every period up to the read counts, none twice.
  EXPECT_GE(n, 12u);
  EXPECT_LE(n, static_cast<uint64_t>(elapsed / (5 * kMs)));
  // The timer keeps its phase: the next expiry is within one period.
  struct itimerspec cur;
  ASSERT_THAT(timerfd_gettime(t.get(), &cur), SyscallSucceeds());
  EXPECT_GT(Ns(cur.it_value), 0);
  EXPECT_LE(Ns(cur.it_value), 5 * kMs);
  EXPECT_EQ(Ns(cur.it_interval), 5 * kMs);
  // Blocking reads see each period.
  ASSERT_THAT(fcntl(t.get(), F_SETFL, 0), SyscallSucceeds());
  for (int i = 0; i < 3; ++i) {
    ASSERT_THAT(read(t.get(), &n, sizeof(n)), SyscallSucceedsWithValue(8));
    EXPECT_GE(n, 1u);
  }
}

TEST(TimerfdTest, GettimeForwardsAnExpiredPeriodicTimer) {
  FileDescriptor t = NewTimer(CLOCK_MONOTONIC, TFD_NONBLOCK);
  ASSERT_TRUE(t.valid());
  ASSERT_THAT(Arm(t.get(), 10 * kMs, 10 * kMs), SyscallSucceeds());
  SleepNs(55 * kMs);
  struct itimerspec cur;
  ASSERT_THAT(timerfd_gettime(t.get(), &cur), SyscallSucceeds());
  EXPECT_GT(Ns(cur.it_value), 0);
  EXPECT_LE(Ns(cur.it_value), 10 * kMs);
  // The periods gettime counted are read later.
  uint64_t n = 0;
  ASSERT_THAT(read(t.get(), &n, sizeof(n)), SyscallSucceedsWithValue(8));
  EXPECT_GE(n, 5u);
}

TEST(TimerfdTest, SettimeReturnsOldValueAndDropsExpirations) {
  FileDescriptor t = NewTimer(CLOCK_MONOTONIC, TFD_NONBLOCK);
  ASSERT_TRUE(t.valid());
  struct itimerspec s = Spec(10 * kSec, 3 * kSec);
  struct itimerspec old;
  ASSERT_THAT(timerfd_settime(t.get(), 0, &s, &old), SyscallSucceeds());
  EXPECT_EQ(Ns(old.it_value), 0);
  EXPECT_EQ(Ns(old.it_interval), 0);
  s = Spec(1 * kMs, 0);
  ASSERT_THAT(timerfd_settime(t.get(), 0, &s, &old), SyscallSucceeds());
  EXPECT_GT(Ns(old.it_value), 9 * kSec);
  EXPECT_LE(Ns(old.it_value), 10 * kSec);
  EXPECT_EQ(Ns(old.it_interval), 3 * kSec);
  SleepNs(20 * kMs);
  struct pollfd p = {t.get(), POLLIN, 0};
  ASSERT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(1));
  // Re-setting (or disarming) drops the pending expiration.
  s = Spec(0, 0);
  ASSERT_THAT(timerfd_settime(t.get(), 0, &s, &old), SyscallSucceeds());
  EXPECT_EQ(Ns(old.it_value), 0);
  EXPECT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(0));
  uint64_t n;
  EXPECT_THAT(read(t.get(), &n, sizeof(n)), SyscallFailsWithErrno(EAGAIN));
  // A disarmed timer with an interval never fires.
  ASSERT_THAT(Arm(t.get(), 0, 1 * kMs), SyscallSucceeds());
  SleepNs(10 * kMs);
  EXPECT_THAT(read(t.get(), &n, sizeof(n)), SyscallFailsWithErrno(EAGAIN));
  struct itimerspec cur;
  ASSERT_THAT(timerfd_gettime(t.get(), &cur), SyscallSucceeds());
  EXPECT_EQ(Ns(cur.it_value), 0);
  EXPECT_EQ(Ns(cur.it_interval), 1 * kMs);
}

TEST(TimerfdTest, PollAndEpollReadiness) {
  FileDescriptor t = NewTimer(CLOCK_MONOTONIC, TFD_NONBLOCK);
  ASSERT_TRUE(t.valid());
  struct pollfd p = {t.get(), POLLIN | POLLOUT | POLLRDNORM, 0};
  EXPECT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(0));
  FileDescriptor ep(epoll_create1(EPOLL_CLOEXEC));
  ASSERT_TRUE(ep.valid());
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = 77;
  ASSERT_THAT(epoll_ctl(ep.get(), EPOLL_CTL_ADD, t.get(), &ev),
              SyscallSucceeds());
  EXPECT_THAT(epoll_wait(ep.get(), &ev, 1, 0), SyscallSucceedsWithValue(0));
  ASSERT_THAT(Arm(t.get(), 20 * kMs, 0), SyscallSucceeds());
  const int64_t start = NowNs(CLOCK_MONOTONIC);
  ASSERT_THAT(epoll_wait(ep.get(), &ev, 1, 5000), SyscallSucceedsWithValue(1));
  EXPECT_GE(NowNs(CLOCK_MONOTONIC) - start, 15 * kMs);
  EXPECT_EQ(ev.events, uint32_t{EPOLLIN});
  EXPECT_EQ(ev.data.u64, 77u);
  // POLLIN only: no RDNORM, never writable.
  ASSERT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents, POLLIN);
  uint64_t n;
  ASSERT_THAT(read(t.get(), &n, sizeof(n)), SyscallSucceedsWithValue(8));
  EXPECT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(0));
  EXPECT_THAT(epoll_wait(ep.get(), &ev, 1, 0), SyscallSucceedsWithValue(0));
  // poll sleeps until the expiry.
  ASSERT_THAT(Arm(t.get(), 20 * kMs, 0), SyscallSucceeds());
  p.events = POLLIN;
  ASSERT_THAT(poll(&p, 1, 5000), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents, POLLIN);
}

volatile sig_atomic_t alarms = 0;
void OnAlarm(int) { alarms = alarms + 1; }

// A blocking read on a far timer, interrupted after 20 ms by SIGALRM
// (ITIMER_REAL) with or without SA_RESTART.
void ReadWithAlarm(int fd, bool restart, ssize_t* ret, int* err) {
  struct sigaction sa = {}, old;
  sa.sa_handler = OnAlarm;
  sa.sa_flags = restart ? SA_RESTART : 0;
  ASSERT_THAT(sigaction(SIGALRM, &sa, &old), SyscallSucceeds());
  struct itimerval it = {{0, 0}, {0, 20000}};
  ASSERT_THAT(setitimer(ITIMER_REAL, &it, nullptr), SyscallSucceeds());
  uint64_t n = 0;
  *ret = read(fd, &n, sizeof(n));
  *err = errno;
  sigaction(SIGALRM, &old, nullptr);
}

TEST(TimerfdTest, BlockingReadIsInterruptedWithoutSaRestart) {
  FileDescriptor t = NewTimer();
  ASSERT_TRUE(t.valid());
  ASSERT_THAT(Arm(t.get(), 10 * kSec, 0), SyscallSucceeds());
  alarms = 0;
  ssize_t r;
  int err;
  ReadWithAlarm(t.get(), false, &r, &err);
  EXPECT_EQ(r, -1);
  EXPECT_EQ(err, EINTR);
  EXPECT_EQ(alarms, 1);
}

TEST(TimerfdTest, BlockingReadRestartsWithSaRestart) {
  FileDescriptor t = NewTimer();
  ASSERT_TRUE(t.valid());
  const int64_t start = NowNs(CLOCK_MONOTONIC);
  ASSERT_THAT(Arm(t.get(), 300 * kMs, 0), SyscallSucceeds());
  alarms = 0;
  ssize_t r;
  int err;
  ReadWithAlarm(t.get(), true, &r, &err);
  EXPECT_EQ(r, 8);
  EXPECT_EQ(alarms, 1);
  EXPECT_GE(NowNs(CLOCK_MONOTONIC) - start, 300 * kMs);
}

TEST(TimerfdTest, IoctlSetTicks) {
  FileDescriptor t = NewTimer(CLOCK_MONOTONIC, TFD_NONBLOCK);
  ASSERT_TRUE(t.valid());
  uint64_t v = 5;
  if (ioctl(t.get(), TFD_IOC_SET_TICKS, &v) != 0 && errno == ENOTTY) {
    GTEST_SKIP() << "SKIP: the kernel lacks CONFIG_CHECKPOINT_RESTORE";
  }
  struct pollfd p = {t.get(), POLLIN, 0};
  EXPECT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(1));
  uint64_t n = 0;
  ASSERT_THAT(read(t.get(), &n, sizeof(n)), SyscallSucceedsWithValue(8));
  EXPECT_EQ(n, 5u);
  v = 0;
  EXPECT_THAT(ioctl(t.get(), TFD_IOC_SET_TICKS, &v),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(ioctl(t.get(), TFD_IOC_SET_TICKS, nullptr),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(ioctl(t.get(), _IOW('T', 1, uint64_t), &v),
              SyscallFailsWithErrno(ENOTTY));
}

std::string FdInfo(int fd) {
  return ReadFileOrEmpty("/proc/self/fdinfo/" + std::to_string(fd));
}

TEST(TimerfdTest, StatLseekFdinfoAndLink) {
  FileDescriptor t = NewTimer(CLOCK_BOOTTIME);
  ASSERT_TRUE(t.valid());
  struct stat st;
  ASSERT_THAT(fstat(t.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_mode, 0600u);
  EXPECT_THAT(lseek(t.get(), 10, SEEK_SET), SyscallSucceedsWithValue(0));
  char link[64] = {};
  std::string path = "/proc/self/fd/" + std::to_string(t.get());
  ASSERT_THAT(readlink(path.c_str(), link, sizeof(link) - 1),
              SyscallSucceeds());
  EXPECT_STREQ(link, "anon_inode:[timerfd]");
  std::string info = FdInfo(t.get());
  EXPECT_THAT(info,
              ::testing::HasSubstr("clockid: 7\nticks: 0\nsettime flags: 00\n"
                                   "it_value: (0, 0)\nit_interval: (0, 0)\n"));
  ASSERT_THAT(Arm(t.get(), NowNs(CLOCK_BOOTTIME) + 100 * kSec, 3 * kSec + 500,
                  TFD_TIMER_ABSTIME),
              SyscallSucceeds());
  info = FdInfo(t.get());
  EXPECT_THAT(info, ::testing::HasSubstr("settime flags: 01\n"));
  EXPECT_THAT(info, ::testing::HasSubstr("it_interval: (3, 500)\n"));
  size_t at = info.find("it_value: (");
  ASSERT_NE(at, std::string::npos) << info;
  unsigned long long sec = 0, nsec = 0;
  ASSERT_EQ(sscanf(info.c_str() + at, "it_value: (%llu, %llu)", &sec, &nsec),
            2);
  EXPECT_GE(sec, 98u);
  EXPECT_LE(sec, 99u);
  EXPECT_LT(nsec, 1000000000u);
  // CANCEL_ON_SET is kept with ABSTIME on CLOCK_REALTIME (the clock is
  // never set here, so it never cancels) and shown as given otherwise.
  FileDescriptor r = NewTimer(CLOCK_REALTIME, TFD_NONBLOCK);
  ASSERT_TRUE(r.valid());
  ASSERT_THAT(Arm(r.get(), NowNs(CLOCK_REALTIME) + 10 * kMs, 0,
                  TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET),
              SyscallSucceeds());
  EXPECT_THAT(FdInfo(r.get()), ::testing::HasSubstr("clockid: 0\nticks: 0\n"
                                                    "settime flags: 03\n"));
  SleepNs(20 * kMs);
  EXPECT_THAT(FdInfo(r.get()), ::testing::HasSubstr("ticks: 1\n"));
  uint64_t n;
  ASSERT_THAT(read(r.get(), &n, sizeof(n)), SyscallSucceedsWithValue(8));
  EXPECT_EQ(n, 1u);
  ASSERT_THAT(Arm(r.get(), 10 * kSec, 0, TFD_TIMER_CANCEL_ON_SET),
              SyscallSucceeds());
  EXPECT_THAT(FdInfo(r.get()), ::testing::HasSubstr("settime flags: 02\n"));
}

TEST(TimerfdTest, SharedAcrossFork) {
  FileDescriptor t = NewTimer(CLOCK_MONOTONIC);
  ASSERT_TRUE(t.valid());
  ASSERT_THAT(Arm(t.get(), 20 * kMs, 0), SyscallSucceeds());
  // The child's blocking read takes the expiration; the parent's file (the
  // same description) has none left.
  EXPECT_THAT(InForkedChild([&] {
                uint64_t n = 0;
                if (read(t.get(), &n, sizeof(n)) != 8 || n != 1) _exit(1);
              }),
              ExitedWithCode(0));
  ASSERT_THAT(fcntl(t.get(), F_SETFL, O_NONBLOCK), SyscallSucceeds());
  uint64_t n;
  EXPECT_THAT(read(t.get(), &n, sizeof(n)), SyscallFailsWithErrno(EAGAIN));
}

}  // namespace
}  // namespace sandbox::testutil
