// poll(2) and ppoll(2): readiness of pipes, FIFOs, regular files and
// devices, POLLNVAL, EINVAL/EFAULT, waking, timeouts, signals (EINTR with
// a handler even with SA_RESTART) and ppoll's signal mask and timeout
// write-back.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

short Revents(int fd, short events) {
  pollfd p = {fd, events, 0};
  int n = poll(&p, 1, 0);
  EXPECT_GE(n, 0) << strerror(errno);
  return p.revents;
}

std::atomic<int> handled{0};
void CountHandler(int) { handled++; }

// Installs `handler` for `sig` (with `flags`) for the scope.
class ScopedHandler {
 public:
  ScopedHandler(int sig, void (*handler)(int), int flags) : sig_(sig) {
    struct sigaction sa = {};
    sa.sa_handler = handler;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    EXPECT_THAT(sigaction(sig, &sa, &old_), SyscallSucceeds());
  }
  ~ScopedHandler() { sigaction(sig_, &old_, nullptr); }

 private:
  int sig_;
  struct sigaction old_;
};

// Sends `sig` to `thread` after `ms` milliseconds, from another thread.
std::thread KickLater(pthread_t thread, int sig, int ms) {
  return std::thread([=] {
    usleep(ms * 1000);
    pthread_kill(thread, sig);
  });
}

TEST(PollTest, EmptyPipeTimesOut) {
  Pipe p;
  pollfd fd = {p.r.get(), POLLIN, 0};
  int64_t start = NowMs();
  EXPECT_THAT(poll(&fd, 1, 50), SyscallSucceedsWithValue(0));
  EXPECT_GE(NowMs() - start, 45);
  EXPECT_EQ(fd.revents, 0);
}

TEST(PollTest, PipeEnds) {
  Pipe p;
  EXPECT_EQ(Revents(p.w.get(), POLLOUT | POLLIN), POLLOUT);
  EXPECT_EQ(Revents(p.w.get(), POLLWRNORM), POLLWRNORM);
  EXPECT_EQ(Revents(p.r.get(), POLLIN | POLLOUT), 0);
  ASSERT_THAT(write(p.w.get(), "x", 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(Revents(p.r.get(), POLLIN | POLLRDNORM | POLLPRI),
            POLLIN | POLLRDNORM);
}

TEST(PollTest, HupWhenTheLastWriterCloses) {
  Pipe p;
  ASSERT_THAT(write(p.w.get(), "x", 1), SyscallSucceedsWithValue(1));
  p.w.reset();
  // POLLHUP is reported even when not asked for.
  EXPECT_EQ(Revents(p.r.get(), POLLIN), POLLIN | POLLHUP);
  char c;
  ASSERT_THAT(read(p.r.get(), &c, 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(Revents(p.r.get(), 0), POLLHUP);
}

TEST(PollTest, ErrWhenTheLastReaderCloses) {
  Pipe p;
  p.r.reset();
  EXPECT_EQ(Revents(p.w.get(), POLLOUT), POLLOUT | POLLERR);
  EXPECT_EQ(Revents(p.w.get(), 0), POLLERR);
}

TEST(PollTest, FullPipeIsNotWritable) {
  Pipe p;
  ASSERT_THAT(fcntl(p.w.get(), F_SETFL, O_NONBLOCK), SyscallSucceeds());
  char buf[4096] = {};
  while (write(p.w.get(), buf, sizeof(buf)) > 0) {
  }
  EXPECT_EQ(Revents(p.w.get(), POLLOUT), 0);
  ASSERT_THAT(read(p.r.get(), buf, sizeof(buf)), SyscallSucceeds());
  EXPECT_EQ(Revents(p.w.get(), POLLOUT), POLLOUT);
}

TEST(PollTest, NegativeFdIsSkippedAndClosedFdIsNval) {
  Pipe p;
  int closed = dup(p.r.get());
  ASSERT_GE(closed, 0);
  close(closed);
  pollfd fds[3] = {{-1, POLLIN, 77}, {closed, 0, 77}, {p.w.get(), POLLOUT, 0}};
  EXPECT_THAT(poll(fds, 3, 0), SyscallSucceedsWithValue(2));
  EXPECT_EQ(fds[0].revents, 0);
  EXPECT_EQ(fds[1].revents, POLLNVAL);
  EXPECT_EQ(fds[2].revents, POLLOUT);
}

TEST(PollTest, OPathIsNval) {
  FileDescriptor f(open("/", O_PATH | O_CLOEXEC));
  ASSERT_TRUE(f.valid());
  EXPECT_EQ(Revents(f.get(), POLLIN), POLLNVAL);
}

TEST(PollTest, NfdsAboveRlimitIsEinvalAndBadArrayEfault) {
  rlimit rl;
  ASSERT_THAT(getrlimit(RLIMIT_NOFILE, &rl), SyscallSucceeds());
  // Checked before the array is read.
  EXPECT_THAT(poll(nullptr, rl.rlim_cur + 1, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(poll(reinterpret_cast<pollfd*>(8), 1, 0),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(poll(nullptr, 0, 0), SyscallSucceedsWithValue(0));
}

TEST(PollTest, FilesWithoutPollAreAlwaysReady) {
  constexpr short kAll = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
  TempPath t = TempPath::CreateFile();
  FileDescriptor f(open(t.path().c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(f.valid());
  EXPECT_EQ(Revents(f.get(), kAll | POLLPRI), kAll);
  FileDescriptor d(open(TempDir().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(d.valid());
  EXPECT_EQ(Revents(d.get(), kAll), kAll);
  FileDescriptor n(open("/dev/null", O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(n.valid());
  EXPECT_EQ(Revents(n.get(), kAll), kAll);
  FileDescriptor z(open("/dev/zero", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(z.valid());
  EXPECT_EQ(Revents(z.get(), POLLIN), POLLIN);
  FileDescriptor s(open("/proc/self/status", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(s.valid());
  EXPECT_EQ(Revents(s.get(), POLLIN), POLLIN);
}

TEST(PollTest, StdoutIsWritable) {
  // In the sandbox, stdout is the host's (a host file): its readiness is
  // the host's.
  pollfd p = {1, POLLOUT, 0};
  EXPECT_THAT(poll(&p, 1, 1000), SyscallSucceedsWithValue(1));
  EXPECT_TRUE(p.revents & POLLOUT);
}

TEST(PollTest, FifoReaderWithoutWriterYetSeesNoHup) {
  std::string path = NewTempPath();
  ASSERT_THAT(mkfifo(path.c_str(), 0600), SyscallSucceeds());
  FileDescriptor r(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  ASSERT_TRUE(r.valid());
  EXPECT_EQ(Revents(r.get(), POLLIN), 0);
  {
    FileDescriptor w(open(path.c_str(), O_WRONLY | O_CLOEXEC));
    ASSERT_TRUE(w.valid());
    EXPECT_EQ(Revents(w.get(), POLLOUT), POLLOUT);
    EXPECT_EQ(Revents(r.get(), POLLIN), 0);
  }
  // A writer came and went.
  EXPECT_EQ(Revents(r.get(), POLLIN), POLLHUP);
  unlink(path.c_str());
}

TEST(PollTest, FifoWriterWithoutReaderIsErr) {
  std::string path = NewTempPath();
  ASSERT_THAT(mkfifo(path.c_str(), 0600), SyscallSucceeds());
  FileDescriptor rw(open(path.c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(rw.valid());
  EXPECT_EQ(Revents(rw.get(), POLLIN | POLLOUT), POLLOUT);
  FileDescriptor w(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(w.valid());
  rw.reset();
  EXPECT_EQ(Revents(w.get(), POLLOUT), POLLOUT | POLLERR);
  unlink(path.c_str());
}

TEST(PollTest, AWriteFromAnotherThreadWakesTheWait) {
  Pipe p;
  std::thread t([&] {
    usleep(50000);
    ASSERT_EQ(write(p.w.get(), "x", 1), 1);
  });
  pollfd fd = {p.r.get(), POLLIN, 0};
  EXPECT_THAT(poll(&fd, 1, 10000), SyscallSucceedsWithValue(1));
  EXPECT_EQ(fd.revents, POLLIN);
  t.join();
}

TEST(PollTest, ManyFdsOneReady) {
  Pipe pipes[20];
  pollfd fds[20];
  for (int i = 0; i < 20; ++i) fds[i] = {pipes[i].r.get(), POLLIN, 0};
  std::thread t([&] {
    usleep(30000);
    ASSERT_EQ(write(pipes[13].w.get(), "x", 1), 1);
  });
  EXPECT_THAT(poll(fds, 20, 10000), SyscallSucceedsWithValue(1));
  EXPECT_EQ(fds[13].revents, POLLIN);
  t.join();
}

TEST(PollTest, AHandlerMakesItEintrEvenWithSaRestart) {
  for (int flags : {0, SA_RESTART}) {
    ScopedHandler h(SIGUSR1, CountHandler, flags);
    Pipe p;
    handled = 0;
    std::thread t = KickLater(pthread_self(), SIGUSR1, 50);
    pollfd fd = {p.r.get(), POLLIN, 0};
    EXPECT_THAT(poll(&fd, 1, 10000), SyscallFailsWithErrno(EINTR));
    EXPECT_EQ(handled.load(), 1);
    t.join();
  }
}

TEST(PollTest, ADefaultIgnoredSignalDoesNotEndTheWait) {
  Pipe p;
  std::thread t = KickLater(pthread_self(), SIGURG, 50);
  pollfd fd = {p.r.get(), POLLIN, 0};
  int64_t start = NowMs();
  EXPECT_THAT(poll(&fd, 1, 300), SyscallSucceedsWithValue(0));
  EXPECT_GE(NowMs() - start, 290);
  t.join();
}

TEST(PpollTest, TheMaskAppliesDuringTheCallOnly) {
  ScopedHandler h(SIGUSR1, CountHandler, 0);
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ASSERT_THAT(sigprocmask(SIG_BLOCK, &block, &old), SyscallSucceeds());
  handled = 0;
  ASSERT_THAT(raise(SIGUSR1), SyscallSucceeds());
  EXPECT_EQ(handled.load(), 0);
  Pipe p;
  pollfd fd = {p.r.get(), POLLIN, 0};
  sigset_t none;
  sigemptyset(&none);
  timespec ts = {10, 0};
  EXPECT_THAT(ppoll(&fd, 1, &ts, &none), SyscallFailsWithErrno(EINTR));
  EXPECT_EQ(handled.load(), 1);
  sigset_t now;
  ASSERT_THAT(sigprocmask(SIG_SETMASK, nullptr, &now), SyscallSucceeds());
  EXPECT_TRUE(sigismember(&now, SIGUSR1));  // restored after the handler
  // Ready at once: the mask comes back at once, the signal stays pending.
  ASSERT_THAT(raise(SIGUSR1), SyscallSucceeds());
  pollfd w = {p.w.get(), POLLOUT, 0};
  EXPECT_THAT(ppoll(&w, 1, &ts, &block), SyscallSucceedsWithValue(1));
  EXPECT_EQ(handled.load(), 1);
  ASSERT_THAT(sigprocmask(SIG_SETMASK, nullptr, &now), SyscallSucceeds());
  EXPECT_TRUE(sigismember(&now, SIGUSR1));
  sigset_t pending;
  sigpending(&pending);
  EXPECT_TRUE(sigismember(&pending, SIGUSR1));
  ASSERT_THAT(sigprocmask(SIG_SETMASK, &old, nullptr), SyscallSucceeds());
  EXPECT_EQ(handled.load(), 2);
}

TEST(PpollTest, ErrorsAndTimeoutWriteBack) {
  Pipe p;
  pollfd fd = {p.w.get(), POLLOUT, 0};
  timespec bad = {0, 1000000000};
  EXPECT_THAT(syscall(SYS_ppoll, &fd, 1, &bad, nullptr, 8),
              SyscallFailsWithErrno(EINVAL));
  timespec neg = {-1, 0};
  EXPECT_THAT(syscall(SYS_ppoll, &fd, 1, &neg, nullptr, 8),
              SyscallFailsWithErrno(EINVAL));
  sigset_t none;
  sigemptyset(&none);
  timespec ts = {5, 0};
  EXPECT_THAT(syscall(SYS_ppoll, &fd, 1, &ts, &none, 4),
              SyscallFailsWithErrno(EINVAL));
  // The raw syscall writes the time left back.
  EXPECT_THAT(syscall(SYS_ppoll, &fd, 1, &ts, nullptr, 8),
              SyscallSucceedsWithValue(1));
  EXPECT_TRUE(ts.tv_sec == 4 || ts.tv_sec == 5) << ts.tv_sec;
  pollfd r = {p.r.get(), POLLIN, 0};
  timespec small = {0, 20000000};
  EXPECT_THAT(syscall(SYS_ppoll, &r, 1, &small, nullptr, 8),
              SyscallSucceedsWithValue(0));
  EXPECT_EQ(small.tv_sec, 0);
  EXPECT_EQ(small.tv_nsec, 0);
}

}  // namespace
}  // namespace sandbox::testutil
