// signalfd(2), signalfd4(2): the checks' order, flags, mask updates
// (SIGKILL/SIGSTOP dropped), read's record rules, signalfd_siginfo for
// kill, tgkill, sigqueue, POSIX timers and SIGCHLD, the thread's and the
// process's pending signals, poll/epoll readiness, blocking reads woken by
// another thread or interrupted, fork (each process reads its own
// signals), fstat, fdinfo and the /proc fd link.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

uint64_t Bit(int sig) { return uint64_t{1} << (sig - 1); }

// signalfd4 with a raw 64-bit kernel mask.
int Signalfd4(int fd, uint64_t mask, int flags, size_t size = 8) {
  return static_cast<int>(syscall(SYS_signalfd4, fd, &mask, size, flags));
}

// Blocks `mask` in the calling thread for the scope and drops whatever of it
// is left pending at the end (a non-blocking signalfd drains it).
class ScopedBlock {
 public:
  explicit ScopedBlock(uint64_t mask) : mask_(mask) {
    sigset_t s;
    sigemptyset(&s);
    for (int sig = 1; sig <= 64; ++sig) {
      if (mask & Bit(sig)) sigaddset(&s, sig);
    }
    pthread_sigmask(SIG_BLOCK, &s, &old_);
  }
  ~ScopedBlock() {
    int fd = Signalfd4(-1, mask_, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd >= 0) {
      signalfd_siginfo buf[8];
      while (read(fd, buf, sizeof(buf)) > 0) {
      }
      close(fd);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  uint64_t mask_;
  sigset_t old_;
};

ssize_t ReadOne(int fd, signalfd_siginfo* s) {
  memset(s, 0xee, sizeof(*s));
  return read(fd, s, sizeof(*s));
}

TEST(SignalfdTest, ChecksInLinuxOrder) {
  uint64_t m = Bit(SIGUSR1);
  EXPECT_THAT(syscall(SYS_signalfd4, -1, &m, 4, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_signalfd4, -1, &m, 16, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_signalfd, -1, &m, 128),
              SyscallFailsWithErrno(EINVAL));
  // The size comes before the copy, the copy before the flags.
  EXPECT_THAT(syscall(SYS_signalfd4, -1, nullptr, 4, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_signalfd4, -1, nullptr, 8, 0),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(syscall(SYS_signalfd4, -1, nullptr, 8, 0x1),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(Signalfd4(-1, m, 0x1), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Signalfd4(-1, m, O_RDWR), SyscallFailsWithErrno(EINVAL));
  // The flags come before the descriptor.
  EXPECT_THAT(Signalfd4(1000, m, 0x1), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Signalfd4(1000, m, 0), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(Signalfd4(-2, m, 0), SyscallFailsWithErrno(EBADF));
  FileDescriptor e(eventfd(0, EFD_CLOEXEC));
  ASSERT_TRUE(e.valid());
  EXPECT_THAT(Signalfd4(e.get(), m, 0), SyscallFailsWithErrno(EINVAL));
}

TEST(SignalfdTest, Flags) {
  FileDescriptor a(Signalfd4(-1, Bit(SIGUSR1), 0));
  ASSERT_TRUE(a.valid());
  EXPECT_THAT(fcntl(a.get(), F_GETFL), SyscallSucceedsWithValue(O_RDWR));
  EXPECT_THAT(fcntl(a.get(), F_GETFD), SyscallSucceedsWithValue(0));
  FileDescriptor b(Signalfd4(-1, Bit(SIGUSR1), SFD_NONBLOCK | SFD_CLOEXEC));
  ASSERT_TRUE(b.valid());
  EXPECT_THAT(fcntl(b.get(), F_GETFL),
              SyscallSucceedsWithValue(O_RDWR | O_NONBLOCK));
  EXPECT_THAT(fcntl(b.get(), F_GETFD), SyscallSucceedsWithValue(FD_CLOEXEC));
  // signalfd(2) takes no flags.
  uint64_t m = Bit(SIGUSR2);
  FileDescriptor c(static_cast<int>(syscall(SYS_signalfd, -1, &m, 8)));
  ASSERT_TRUE(c.valid());
  EXPECT_THAT(fcntl(c.get(), F_GETFL), SyscallSucceedsWithValue(O_RDWR));
  // Updating returns the same descriptor and keeps its flags.
  EXPECT_THAT(Signalfd4(b.get(), Bit(SIGUSR2), 0),
              SyscallSucceedsWithValue(b.get()));
  EXPECT_THAT(fcntl(b.get(), F_GETFL),
              SyscallSucceedsWithValue(O_RDWR | O_NONBLOCK));
}

TEST(SignalfdTest, ReadSizesAndNonblock) {
  ScopedBlock block(Bit(SIGUSR1));
  FileDescriptor s(Signalfd4(-1, Bit(SIGUSR1), SFD_NONBLOCK | SFD_CLOEXEC));
  ASSERT_TRUE(s.valid());
  char small[127];
  EXPECT_THAT(read(s.get(), small, sizeof(small)),
              SyscallFailsWithErrno(EINVAL));
  signalfd_siginfo info;
  EXPECT_THAT(ReadOne(s.get(), &info), SyscallFailsWithErrno(EAGAIN));
  uint64_t v = 1;
  EXPECT_THAT(write(s.get(), &v, sizeof(v)), SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(kill(getpid(), SIGUSR1), SyscallSucceeds());
  // Still too small with a signal pending; the signal stays.
  EXPECT_THAT(read(s.get(), small, sizeof(small)),
              SyscallFailsWithErrno(EINVAL));
  // A buffer of 1.5 records reads one.
  char buf[192];
  ASSERT_THAT(read(s.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(128));
  EXPECT_THAT(ReadOne(s.get(), &info), SyscallFailsWithErrno(EAGAIN));
}

TEST(SignalfdTest, KillInfo) {
  ScopedBlock block(Bit(SIGUSR1));
  FileDescriptor s(Signalfd4(-1, Bit(SIGUSR1), SFD_NONBLOCK | SFD_CLOEXEC));
  ASSERT_TRUE(s.valid());
  // A standard signal coalesces: two kills, one record.
  ASSERT_THAT(kill(getpid(), SIGUSR1), SyscallSucceeds());
  ASSERT_THAT(kill(getpid(), SIGUSR1), SyscallSucceeds());
  signalfd_siginfo buf[2];
  memset(buf, 0xee, sizeof(buf));
  ASSERT_THAT(read(s.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(128));
  const signalfd_siginfo& i = buf[0];
  EXPECT_EQ(i.ssi_signo, uint32_t{SIGUSR1});
  EXPECT_EQ(i.ssi_errno, 0);
  EXPECT_EQ(i.ssi_code, SI_USER);
  EXPECT_EQ(i.ssi_pid, static_cast<uint32_t>(getpid()));
  EXPECT_EQ(i.ssi_uid, getuid());
  // Everything else is zero.
  EXPECT_EQ(i.ssi_fd, 0);
  EXPECT_EQ(i.ssi_tid, 0u);
  EXPECT_EQ(i.ssi_status, 0);
  EXPECT_EQ(i.ssi_int, 0);
  EXPECT_EQ(i.ssi_ptr, 0u);
  EXPECT_EQ(i.ssi_addr, 0u);
  const char* tail = reinterpret_cast<const char*>(&i.ssi_addr_lsb);
  for (size_t k = 0; k < 128 - offsetof(signalfd_siginfo, ssi_addr_lsb); ++k) {
    EXPECT_EQ(tail[k], 0) << k;
  }
  sigset_t pending;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGUSR1));
}

TEST(SignalfdTest, TgkillInfoFromTheThreadQueue) {
  ScopedBlock block(Bit(SIGUSR2));
  FileDescriptor s(Signalfd4(-1, Bit(SIGUSR2), SFD_NONBLOCK | SFD_CLOEXEC));
  ASSERT_TRUE(s.valid());
  ASSERT_THAT(syscall(SYS_tgkill, getpid(), gettid(), SIGUSR2),
              SyscallSucceeds());
  signalfd_siginfo i;
  ASSERT_THAT(ReadOne(s.get(), &i), SyscallSucceedsWithValue(128));
  EXPECT_EQ(i.ssi_signo, uint32_t{SIGUSR2});
  EXPECT_EQ(i.ssi_code, SI_TKILL);
  EXPECT_EQ(i.ssi_pid, static_cast<uint32_t>(getpid()));
  EXPECT_EQ(i.ssi_uid, getuid());
  EXPECT_EQ(i.ssi_ptr, 0u);
  EXPECT_EQ(i.ssi_int, 0);
}

TEST(SignalfdTest, SigqueueValuesInOrder) {
  const int sig = SIGRTMIN;
  ScopedBlock block(Bit(sig));
  FileDescriptor s(Signalfd4(-1, Bit(sig), SFD_NONBLOCK | SFD_CLOEXEC));
  ASSERT_TRUE(s.valid());
  for (int v : {42, 7, -3}) {
    union sigval val;
    val.sival_ptr = nullptr;
    val.sival_int = v;
    ASSERT_THAT(sigqueue(getpid(), sig, val), SyscallSucceeds());
  }
  union sigval p;
  p.sival_ptr = reinterpret_cast<void*>(0x123456789abcdef0);
  ASSERT_THAT(sigqueue(getpid(), sig, p), SyscallSucceeds());
  signalfd_siginfo buf[6];
  ASSERT_THAT(read(s.get(), buf, sizeof(buf)),
              SyscallSucceedsWithValue(4 * 128));
  const int want[] = {42, 7, -3};
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(buf[k].ssi_signo, static_cast<uint32_t>(sig));
    EXPECT_EQ(buf[k].ssi_code, SI_QUEUE);
    EXPECT_EQ(buf[k].ssi_pid, static_cast<uint32_t>(getpid()));
    EXPECT_EQ(buf[k].ssi_uid, getuid());
    EXPECT_EQ(buf[k].ssi_int, want[k]);
    EXPECT_EQ(static_cast<uint32_t>(buf[k].ssi_ptr),
              static_cast<uint32_t>(want[k]));
  }
  EXPECT_EQ(buf[3].ssi_ptr, 0x123456789abcdef0u);
  EXPECT_EQ(static_cast<uint32_t>(buf[3].ssi_int), 0x9abcdef0u);
}

TEST(SignalfdTest, PosixTimerInfo) {
  const int sig = SIGRTMIN + 1;
  ScopedBlock block(Bit(sig));
  FileDescriptor s(Signalfd4(-1, Bit(sig), SFD_CLOEXEC));
  ASSERT_TRUE(s.valid());
  struct sigevent sev = {};
  sev.sigev_notify = SIGEV_SIGNAL;
  sev.sigev_signo = sig;
  sev.sigev_value.sival_ptr = reinterpret_cast<void*>(0xabcdef12345);
  int id = -1;
  ASSERT_THAT(syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &id),
              SyscallSucceeds());
  struct itimerspec its = {{0, 0}, {0, 5000000}};
  ASSERT_THAT(syscall(SYS_timer_settime, id, 0, &its, nullptr),
              SyscallSucceeds());
  signalfd_siginfo i;
  ASSERT_THAT(ReadOne(s.get(), &i), SyscallSucceedsWithValue(128));
  EXPECT_EQ(i.ssi_signo, static_cast<uint32_t>(sig));
  EXPECT_EQ(i.ssi_code, SI_TIMER);
  EXPECT_EQ(i.ssi_tid, static_cast<uint32_t>(id));
  EXPECT_EQ(i.ssi_overrun, 0u);
  EXPECT_EQ(i.ssi_ptr, 0xabcdef12345u);
  EXPECT_EQ(static_cast<uint32_t>(i.ssi_int), 0xdef12345u);
  EXPECT_EQ(i.ssi_pid, 0u);
  EXPECT_EQ(i.ssi_uid, 0u);
  syscall(SYS_timer_delete, id);
}

TEST(SignalfdTest, SigchldInfo) {
  ScopedBlock block(Bit(SIGCHLD));
  FileDescriptor s(Signalfd4(-1, Bit(SIGCHLD), SFD_CLOEXEC));
  ASSERT_TRUE(s.valid());
  pid_t child = fork();
  if (child == 0) _exit(7);
  ASSERT_GT(child, 0);
  signalfd_siginfo i;
  ASSERT_THAT(ReadOne(s.get(), &i), SyscallSucceedsWithValue(128));
  EXPECT_EQ(i.ssi_signo, uint32_t{SIGCHLD});
  EXPECT_EQ(i.ssi_code, CLD_EXITED);
  EXPECT_EQ(i.ssi_pid, static_cast<uint32_t>(child));
  EXPECT_EQ(i.ssi_uid, getuid());
  EXPECT_EQ(i.ssi_status, 7);
  EXPECT_EQ(i.ssi_int, 0);
  EXPECT_EQ(i.ssi_ptr, 0u);
  int status;
  ASSERT_THAT(waitpid(child, &status, 0), SyscallSucceedsWithValue(child));
  EXPECT_THAT(status, ExitedWithCode(7));
  // A child killed by a signal: CLD_KILLED with the signal as status.
  child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(child, 0);
  ASSERT_THAT(kill(child, SIGKILL), SyscallSucceeds());
  ASSERT_THAT(ReadOne(s.get(), &i), SyscallSucceedsWithValue(128));
  EXPECT_EQ(i.ssi_code, CLD_KILLED);
  EXPECT_EQ(i.ssi_pid, static_cast<uint32_t>(child));
  EXPECT_EQ(i.ssi_status, SIGKILL);
  ASSERT_THAT(waitpid(child, &status, 0), SyscallSucceedsWithValue(child));
}

TEST(SignalfdTest, MaskUpdateAndKillStopDropped) {
  ScopedBlock block(Bit(SIGUSR1) | Bit(SIGUSR2));
  FileDescriptor s(Signalfd4(-1, Bit(SIGUSR1), SFD_NONBLOCK | SFD_CLOEXEC));
  ASSERT_TRUE(s.valid());
  ASSERT_THAT(kill(getpid(), SIGUSR2), SyscallSucceeds());
  signalfd_siginfo i;
  EXPECT_THAT(ReadOne(s.get(), &i), SyscallFailsWithErrno(EAGAIN));
  struct pollfd p = {s.get(), POLLIN, 0};
  EXPECT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(0));
  ASSERT_THAT(Signalfd4(s.get(), Bit(SIGUSR2), 0),
              SyscallSucceedsWithValue(s.get()));
  EXPECT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(1));
  ASSERT_THAT(ReadOne(s.get(), &i), SyscallSucceedsWithValue(128));
  EXPECT_EQ(i.ssi_signo, uint32_t{SIGUSR2});
  // Every signal: SIGKILL and SIGSTOP are silently left out.
  ASSERT_THAT(Signalfd4(s.get(), ~uint64_t{0}, 0), SyscallSucceeds());
  std::string info =
      ReadFileOrEmpty("/proc/self/fdinfo/" + std::to_string(s.get()));
  EXPECT_THAT(info, ::testing::HasSubstr("sigmask:\tfffffffffffbfeff\n"));
  ASSERT_THAT(Signalfd4(s.get(), Bit(SIGUSR1) | Bit(SIGKILL), 0),
              SyscallSucceeds());
  info = ReadFileOrEmpty("/proc/self/fdinfo/" + std::to_string(s.get()));
  EXPECT_THAT(info, ::testing::HasSubstr("sigmask:\t0000000000000200\n"));
}

TEST(SignalfdTest, PollAndEpollReadiness) {
  ScopedBlock block(Bit(SIGUSR1) | Bit(SIGUSR2));
  FileDescriptor s(Signalfd4(-1, Bit(SIGUSR1), SFD_NONBLOCK | SFD_CLOEXEC));
  ASSERT_TRUE(s.valid());
  FileDescriptor ep(epoll_create1(EPOLL_CLOEXEC));
  ASSERT_TRUE(ep.valid());
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = 9;
  ASSERT_THAT(epoll_ctl(ep.get(), EPOLL_CTL_ADD, s.get(), &ev),
              SyscallSucceeds());
  EXPECT_THAT(epoll_wait(ep.get(), &ev, 1, 0), SyscallSucceedsWithValue(0));
  struct pollfd p = {s.get(), POLLIN | POLLOUT | POLLRDNORM, 0};
  EXPECT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(0));
  // A signal outside the mask does not count.
  ASSERT_THAT(kill(getpid(), SIGUSR2), SyscallSucceeds());
  EXPECT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(0));
  EXPECT_THAT(epoll_wait(ep.get(), &ev, 1, 0), SyscallSucceedsWithValue(0));
  // One sent by another thread while epoll_wait sleeps wakes it.
  std::thread th([] {
    usleep(20000);
    kill(getpid(), SIGUSR1);
  });
  ASSERT_THAT(epoll_wait(ep.get(), &ev, 1, 5000), SyscallSucceedsWithValue(1));
  th.join();
  EXPECT_EQ(ev.events, uint32_t{EPOLLIN});
  EXPECT_EQ(ev.data.u64, 9u);
  ASSERT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents, POLLIN);
  signalfd_siginfo i;
  ASSERT_THAT(ReadOne(s.get(), &i), SyscallSucceedsWithValue(128));
  EXPECT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(0));
  // A mask change that takes in a pending signal wakes a sleeping poll.
  std::thread th2([&] {
    usleep(20000);
    Signalfd4(s.get(), Bit(SIGUSR1) | Bit(SIGUSR2), 0);
  });
  p.events = POLLIN;
  ASSERT_THAT(poll(&p, 1, 5000), SyscallSucceedsWithValue(1));
  th2.join();
  ASSERT_THAT(ReadOne(s.get(), &i), SyscallSucceedsWithValue(128));
  EXPECT_EQ(i.ssi_signo, uint32_t{SIGUSR2});
}

TEST(SignalfdTest, BlockingReadWokenByAnotherThread) {
  ScopedBlock block(Bit(SIGUSR1));
  FileDescriptor s(Signalfd4(-1, Bit(SIGUSR1), SFD_CLOEXEC));
  ASSERT_TRUE(s.valid());
  // The other thread blocks it too (it inherits the mask), so the process
  // signal stays pending for the reader.
  std::thread th([] {
    usleep(20000);
    kill(getpid(), SIGUSR1);
  });
  signalfd_siginfo i;
  ASSERT_THAT(ReadOne(s.get(), &i), SyscallSucceedsWithValue(128));
  th.join();
  EXPECT_EQ(i.ssi_signo, uint32_t{SIGUSR1});
  EXPECT_EQ(i.ssi_code, SI_USER);
}

volatile sig_atomic_t alarms = 0;
void OnAlarm(int) { alarms = alarms + 1; }

TEST(SignalfdTest, BlockingReadInterruptedByAnotherSignal) {
  ScopedBlock block(Bit(SIGUSR1));
  FileDescriptor s(Signalfd4(-1, Bit(SIGUSR1), SFD_CLOEXEC));
  ASSERT_TRUE(s.valid());
  struct sigaction sa = {}, old;
  sa.sa_handler = OnAlarm;
  ASSERT_THAT(sigaction(SIGALRM, &sa, &old), SyscallSucceeds());
  alarms = 0;
  struct itimerval it = {{0, 0}, {0, 20000}};
  ASSERT_THAT(setitimer(ITIMER_REAL, &it, nullptr), SyscallSucceeds());
  signalfd_siginfo i;
  EXPECT_THAT(ReadOne(s.get(), &i), SyscallFailsWithErrno(EINTR));
  EXPECT_EQ(alarms, 1);
  // With SA_RESTART the read goes on until its signal comes.
  sa.sa_flags = SA_RESTART;
  ASSERT_THAT(sigaction(SIGALRM, &sa, nullptr), SyscallSucceeds());
  ASSERT_THAT(setitimer(ITIMER_REAL, &it, nullptr), SyscallSucceeds());
  std::thread th([] {
    usleep(300000);
    kill(getpid(), SIGUSR1);
  });
  EXPECT_THAT(ReadOne(s.get(), &i), SyscallSucceedsWithValue(128));
  th.join();
  EXPECT_EQ(alarms, 2);
  EXPECT_EQ(i.ssi_signo, uint32_t{SIGUSR1});
  sigaction(SIGALRM, &old, nullptr);
}

TEST(SignalfdTest, ForkedChildReadsItsOwnSignals) {
  ScopedBlock block(Bit(SIGUSR1));
  FileDescriptor s(Signalfd4(-1, Bit(SIGUSR1), SFD_NONBLOCK | SFD_CLOEXEC));
  ASSERT_TRUE(s.valid());
  ASSERT_THAT(kill(getpid(), SIGUSR1), SyscallSucceeds());
  const pid_t parent = getpid();
  EXPECT_THAT(InForkedChild([&] {
                signalfd_siginfo i;
                // The parent's pending signal is not the child's.
                if (ReadOne(s.get(), &i) != -1 || errno != EAGAIN) _exit(1);
                struct pollfd p = {s.get(), POLLIN, 0};
                if (poll(&p, 1, 0) != 0) _exit(2);
                kill(getpid(), SIGUSR1);
                if (poll(&p, 1, 0) != 1) _exit(3);
                if (ReadOne(s.get(), &i) != 128) _exit(4);
                if (i.ssi_pid != static_cast<uint32_t>(getpid())) _exit(5);
              }),
              ExitedWithCode(0));
  signalfd_siginfo i;
  ASSERT_THAT(ReadOne(s.get(), &i), SyscallSucceedsWithValue(128));
  EXPECT_EQ(i.ssi_pid, static_cast<uint32_t>(parent));
}

TEST(SignalfdTest, ThreadDirectedSignalIsOnlyThatThreadsToRead) {
  ScopedBlock block(Bit(SIGUSR2));
  FileDescriptor s(Signalfd4(-1, Bit(SIGUSR2), SFD_NONBLOCK | SFD_CLOEXEC));
  ASSERT_TRUE(s.valid());
  std::atomic<pid_t> tid{0};
  std::atomic<bool> go{false};
  std::atomic<int> got{-1};
  std::thread th([&] {  // inherits the blocked mask
    tid = gettid();
    while (!go) usleep(1000);
    signalfd_siginfo i;
    got = ReadOne(s.get(), &i) == 128 ? static_cast<int>(i.ssi_signo) : 0;
  });
  while (tid == 0) usleep(1000);
  ASSERT_THAT(syscall(SYS_tgkill, getpid(), tid.load(), SIGUSR2),
              SyscallSucceeds());
  // Pending for the other thread only: nothing for this reader.
  signalfd_siginfo i;
  EXPECT_THAT(ReadOne(s.get(), &i), SyscallFailsWithErrno(EAGAIN));
  struct pollfd p = {s.get(), POLLIN, 0};
  EXPECT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(0));
  go = true;
  th.join();
  EXPECT_EQ(got, SIGUSR2);
}

TEST(SignalfdTest, StatLseekAndLink) {
  FileDescriptor s(Signalfd4(-1, Bit(SIGUSR1), SFD_CLOEXEC));
  ASSERT_TRUE(s.valid());
  struct stat st;
  ASSERT_THAT(fstat(s.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_mode, 0600u);
  EXPECT_THAT(lseek(s.get(), 10, SEEK_SET), SyscallSucceedsWithValue(0));
  char link[64] = {};
  std::string path = "/proc/self/fd/" + std::to_string(s.get());
  ASSERT_THAT(readlink(path.c_str(), link, sizeof(link) - 1),
              SyscallSucceeds());
  EXPECT_STREQ(link, "anon_inode:[signalfd]");
}

}  // namespace
}  // namespace sandbox::testutil
