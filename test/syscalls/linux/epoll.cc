// epoll_create(2), epoll_create1(2), epoll_ctl(2), epoll_wait(2),
// epoll_pwait(2), epoll_pwait2(2): errors in Linux's order, level and edge
// triggering, EPOLLONESHOT, items keyed on the open file description,
// nesting and ELOOP, waking, timeouts, EINTR, the signal mask, /proc.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

FileDescriptor NewEpoll() {
  FileDescriptor ep(epoll_create1(EPOLL_CLOEXEC));
  EXPECT_TRUE(ep.valid()) << strerror(errno);
  return ep;
}

int Ctl(int ep, int op, int fd, uint32_t events, uint64_t data = 0) {
  epoll_event ev = {};
  ev.events = events;
  ev.data.u64 = data;
  return epoll_ctl(ep, op, fd, &ev);
}

std::vector<epoll_event> Wait(int ep, int timeout = 0, int max = 16) {
  std::vector<epoll_event> evs(max);
  int n = epoll_wait(ep, evs.data(), max, timeout);
  EXPECT_GE(n, 0) << strerror(errno);
  evs.resize(n < 0 ? 0 : n);
  return evs;
}

std::atomic<int> handled{0};
void CountHandler(int) { handled++; }

TEST(EpollTest, Create) {
  EXPECT_THAT(epoll_create(0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(epoll_create(-1), SyscallFailsWithErrno(EINVAL));
  FileDescriptor a(epoll_create(1));
  ASSERT_TRUE(a.valid());
  EXPECT_THAT(fcntl(a.get(), F_GETFD), SyscallSucceedsWithValue(0));
  EXPECT_THAT(epoll_create1(O_NONBLOCK), SyscallFailsWithErrno(EINVAL));
  FileDescriptor b(epoll_create1(EPOLL_CLOEXEC));
  ASSERT_TRUE(b.valid());
  EXPECT_THAT(fcntl(b.get(), F_GETFD), SyscallSucceedsWithValue(FD_CLOEXEC));
  char buf[8];
  EXPECT_THAT(read(b.get(), buf, sizeof(buf)), SyscallFailsWithErrno(EINVAL));
}

TEST(EpollTest, CtlErrors) {
  FileDescriptor ep = NewEpoll();
  Pipe p;
  TempPath t = TempPath::CreateFile();
  FileDescriptor f(open(t.path().c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(f.valid());
  int closed = dup(p.r.get());
  close(closed);
  EXPECT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, closed, EPOLLIN),
              SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(Ctl(closed, EPOLL_CTL_ADD, p.r.get(), EPOLLIN),
              SyscallFailsWithErrno(EBADF));
  // A regular file has no poll: EPERM (before the epfd's type is checked).
  EXPECT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, f.get(), EPOLLIN),
              SyscallFailsWithErrno(EPERM));
  EXPECT_THAT(Ctl(p.w.get(), EPOLL_CTL_ADD, f.get(), EPOLLIN),
              SyscallFailsWithErrno(EPERM));
  EXPECT_THAT(Ctl(p.w.get(), EPOLL_CTL_ADD, p.r.get(), EPOLLIN),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, ep.get(), EPOLLIN),
              SyscallFailsWithErrno(EINVAL));
  FileDescriptor null(open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, null.get(), EPOLLIN),
              SyscallFailsWithErrno(EPERM));
  EXPECT_THAT(Ctl(ep.get(), EPOLL_CTL_MOD, p.r.get(), EPOLLIN),
              SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(Ctl(ep.get(), EPOLL_CTL_DEL, p.r.get(), 0),
              SyscallFailsWithErrno(ENOENT));
  ASSERT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, p.r.get(), EPOLLIN),
              SyscallSucceeds());
  EXPECT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, p.r.get(), EPOLLIN),
              SyscallFailsWithErrno(EEXIST));
  EXPECT_THAT(Ctl(ep.get(), 99, p.r.get(), EPOLLIN),
              SyscallFailsWithErrno(EINVAL));
  // The event is read for every op but DEL.
  EXPECT_THAT(epoll_ctl(ep.get(), EPOLL_CTL_MOD, p.r.get(),
                        reinterpret_cast<epoll_event*>(8)),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(epoll_ctl(ep.get(), EPOLL_CTL_DEL, p.r.get(),
                        reinterpret_cast<epoll_event*>(8)),
              SyscallSucceeds());
  // EPOLLEXCLUSIVE: ADD only, not on an epoll, only some bits.
  EXPECT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, p.r.get(),
                  EPOLLIN | EPOLLEXCLUSIVE | EPOLLONESHOT),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, p.r.get(), EPOLLIN | EPOLLEXCLUSIVE),
              SyscallSucceeds());
  EXPECT_THAT(Ctl(ep.get(), EPOLL_CTL_MOD, p.r.get(), EPOLLIN | EPOLLEXCLUSIVE),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Ctl(ep.get(), EPOLL_CTL_MOD, p.r.get(), EPOLLIN),
              SyscallFailsWithErrno(EINVAL));
  FileDescriptor inner = NewEpoll();
  EXPECT_THAT(
      Ctl(ep.get(), EPOLL_CTL_ADD, inner.get(), EPOLLIN | EPOLLEXCLUSIVE),
      SyscallFailsWithErrno(EINVAL));
}

TEST(EpollTest, WaitErrors) {
  FileDescriptor ep = NewEpoll();
  epoll_event ev;
  EXPECT_THAT(epoll_wait(ep.get(), &ev, 0, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(epoll_wait(ep.get(), &ev, -1, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(epoll_wait(ep.get(), &ev, INT_MAX, 0),
              SyscallFailsWithErrno(EINVAL));
  Pipe p;
  EXPECT_THAT(epoll_wait(p.r.get(), &ev, 1, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(epoll_wait(-1, &ev, 1, 0), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(
      epoll_wait(ep.get(), reinterpret_cast<epoll_event*>(-4096L), 1, 0),
      SyscallFailsWithErrno(EFAULT));
  // An unwritable array with an event ready: EFAULT, the event stays.
  ASSERT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, p.w.get(), EPOLLOUT | EPOLLET, 5),
              SyscallSucceeds());
  EXPECT_THAT(epoll_wait(ep.get(), reinterpret_cast<epoll_event*>(8), 1, 0),
              SyscallFailsWithErrno(EFAULT));
  auto evs = Wait(ep.get());
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].data.u64, 5u);
}

TEST(EpollTest, LevelTriggered) {
  FileDescriptor ep = NewEpoll();
  Pipe p;
  ASSERT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, p.r.get(), EPOLLIN, 7),
              SyscallSucceeds());
  EXPECT_TRUE(Wait(ep.get()).empty());
  ASSERT_THAT(write(p.w.get(), "ab", 2), SyscallSucceedsWithValue(2));
  for (int i = 0; i < 2; ++i) {
    auto evs = Wait(ep.get());
    ASSERT_EQ(evs.size(), 1u);
    EXPECT_EQ(evs[0].events, EPOLLIN);
    EXPECT_EQ(evs[0].data.u64, 7u);
  }
  char buf[2];
  ASSERT_THAT(read(p.r.get(), buf, 2), SyscallSucceedsWithValue(2));
  EXPECT_TRUE(Wait(ep.get()).empty());
  // POLLHUP comes without being asked.
  p.w.reset();
  auto evs = Wait(ep.get());
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].events, EPOLLHUP);
}

TEST(EpollTest, EdgeTriggered) {
  FileDescriptor ep = NewEpoll();
  Pipe p;
  ASSERT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, p.r.get(), EPOLLIN | EPOLLET),
              SyscallSucceeds());
  ASSERT_THAT(write(p.w.get(), "a", 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(Wait(ep.get()).size(), 1u);
  EXPECT_TRUE(Wait(ep.get()).empty());
  ASSERT_THAT(write(p.w.get(), "b", 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(Wait(ep.get()).size(), 1u);
  EXPECT_TRUE(Wait(ep.get()).empty());
}

TEST(EpollTest, OneshotUntilModify) {
  FileDescriptor ep = NewEpoll();
  Pipe p;
  ASSERT_THAT(write(p.w.get(), "a", 1), SyscallSucceedsWithValue(1));
  ASSERT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, p.r.get(), EPOLLIN | EPOLLONESHOT),
              SyscallSucceeds());
  EXPECT_EQ(Wait(ep.get()).size(), 1u);
  ASSERT_THAT(write(p.w.get(), "b", 1), SyscallSucceedsWithValue(1));
  EXPECT_TRUE(Wait(ep.get()).empty());
  ASSERT_THAT(Ctl(ep.get(), EPOLL_CTL_MOD, p.r.get(), EPOLLIN, 3),
              SyscallSucceeds());
  auto evs = Wait(ep.get());
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].data.u64, 3u);
}

TEST(EpollTest, MaxeventsAndManyReady) {
  FileDescriptor ep = NewEpoll();
  std::vector<Pipe> pipes(10);
  for (int i = 0; i < 10; ++i) {
    ASSERT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, pipes[i].w.get(), EPOLLOUT, i),
                SyscallSucceeds());
  }
  EXPECT_EQ(Wait(ep.get(), 0, 4).size(), 4u);
  EXPECT_EQ(Wait(ep.get(), 0, 16).size(), 10u);
}

TEST(EpollTest, ItemsKeyOnTheDescription) {
  FileDescriptor ep = NewEpoll();
  Pipe p;
  ASSERT_THAT(write(p.w.get(), "a", 1), SyscallSucceedsWithValue(1));
  int fd = p.r.get();
  ASSERT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, fd, EPOLLIN, 1), SyscallSucceeds());
  // Another fd of the same description keeps the item alive.
  FileDescriptor dup_fd(dup(fd));
  ASSERT_TRUE(dup_fd.valid());
  p.r.reset();
  EXPECT_EQ(Wait(ep.get()).size(), 1u);
  EXPECT_THAT(Ctl(ep.get(), EPOLL_CTL_DEL, fd, 0),
              SyscallFailsWithErrno(EBADF));
  // Releasing the description removes it: a new file at that number adds.
  dup_fd.reset();
  EXPECT_TRUE(Wait(ep.get()).empty());
  Pipe q;
  int again = dup2(q.w.get(), fd);
  ASSERT_EQ(again, fd);
  EXPECT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, fd, EPOLLOUT, 2), SyscallSucceeds());
  auto evs = Wait(ep.get());
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].data.u64, 2u);
  close(fd);
}

TEST(EpollTest, NestingAndLoops) {
  FileDescriptor outer = NewEpoll();
  FileDescriptor inner = NewEpoll();
  ASSERT_THAT(Ctl(outer.get(), EPOLL_CTL_ADD, inner.get(), EPOLLIN, 9),
              SyscallSucceeds());
  EXPECT_THAT(Ctl(inner.get(), EPOLL_CTL_ADD, outer.get(), EPOLLIN),
              SyscallFailsWithErrno(ELOOP));
  Pipe p;
  ASSERT_THAT(Ctl(inner.get(), EPOLL_CTL_ADD, p.r.get(), EPOLLIN),
              SyscallSucceeds());
  pollfd pf = {inner.get(), POLLIN, 0};
  EXPECT_THAT(poll(&pf, 1, 0), SyscallSucceedsWithValue(0));
  EXPECT_TRUE(Wait(outer.get()).empty());
  ASSERT_THAT(write(p.w.get(), "a", 1), SyscallSucceedsWithValue(1));
  EXPECT_THAT(poll(&pf, 1, 0), SyscallSucceedsWithValue(1));
  auto evs = Wait(outer.get());
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].data.u64, 9u);
  EXPECT_EQ(evs[0].events, EPOLLIN);
  // At most five epolls in a chain.
  std::vector<FileDescriptor> chain;
  for (int i = 0; i < 6; ++i) chain.push_back(NewEpoll());
  for (int i = 0; i < 4; ++i) {
    ASSERT_THAT(Ctl(chain[i].get(), EPOLL_CTL_ADD, chain[i + 1].get(), EPOLLIN),
                SyscallSucceeds());
  }
  EXPECT_THAT(Ctl(chain[4].get(), EPOLL_CTL_ADD, chain[5].get(), EPOLLIN),
              SyscallFailsWithErrno(ELOOP));
}

TEST(EpollTest, AWriteFromAnotherThreadWakesTheWait) {
  FileDescriptor ep = NewEpoll();
  Pipe p;
  ASSERT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, p.r.get(), EPOLLIN),
              SyscallSucceeds());
  std::thread t([&] {
    usleep(50000);
    ASSERT_EQ(write(p.w.get(), "x", 1), 1);
  });
  EXPECT_EQ(Wait(ep.get(), 10000).size(), 1u);
  t.join();
}

TEST(EpollTest, TimesOut) {
  FileDescriptor ep = NewEpoll();
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  EXPECT_TRUE(Wait(ep.get(), 50).empty());
  clock_gettime(CLOCK_MONOTONIC, &b);
  int64_t ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
  EXPECT_GE(ms, 45);
  epoll_event ev;
  timespec ts = {0, 20000000};
  EXPECT_THAT(syscall(SYS_epoll_pwait2, ep.get(), &ev, 1, &ts, nullptr, 8),
              SyscallSucceedsWithValue(0));
  timespec bad = {0, -1};
  EXPECT_THAT(syscall(SYS_epoll_pwait2, ep.get(), &ev, 1, &bad, nullptr, 8),
              SyscallFailsWithErrno(EINVAL));
}

TEST(EpollTest, ASignalIsEintrEvenWithSaRestart) {
  struct sigaction sa = {}, old;
  sa.sa_handler = CountHandler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ASSERT_THAT(sigaction(SIGUSR1, &sa, &old), SyscallSucceeds());
  handled = 0;
  FileDescriptor ep = NewEpoll();
  pthread_t self = pthread_self();
  std::thread t([self] {
    usleep(50000);
    pthread_kill(self, SIGUSR1);
  });
  epoll_event ev;
  EXPECT_THAT(epoll_wait(ep.get(), &ev, 1, 10000),
              SyscallFailsWithErrno(EINTR));
  EXPECT_EQ(handled.load(), 1);
  t.join();
  sigaction(SIGUSR1, &old, nullptr);
}

TEST(EpollTest, PwaitMask) {
  struct sigaction sa = {}, old;
  sa.sa_handler = CountHandler;
  sigemptyset(&sa.sa_mask);
  ASSERT_THAT(sigaction(SIGUSR1, &sa, &old), SyscallSucceeds());
  sigset_t block, prev, none;
  sigemptyset(&block);
  sigemptyset(&none);
  sigaddset(&block, SIGUSR1);
  ASSERT_THAT(sigprocmask(SIG_BLOCK, &block, &prev), SyscallSucceeds());
  handled = 0;
  ASSERT_THAT(raise(SIGUSR1), SyscallSucceeds());
  FileDescriptor ep = NewEpoll();
  epoll_event ev;
  EXPECT_THAT(epoll_pwait(ep.get(), &ev, 1, 10000, &none),
              SyscallFailsWithErrno(EINTR));
  EXPECT_EQ(handled.load(), 1);
  sigset_t now;
  ASSERT_THAT(sigprocmask(SIG_SETMASK, nullptr, &now), SyscallSucceeds());
  EXPECT_TRUE(sigismember(&now, SIGUSR1));
  EXPECT_THAT(syscall(SYS_epoll_pwait, ep.get(), &ev, 1, 0, &none, 4),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(sigprocmask(SIG_SETMASK, &prev, nullptr), SyscallSucceeds());
  sigaction(SIGUSR1, &old, nullptr);
}

TEST(EpollTest, EventfdAndProc) {
  FileDescriptor ep = NewEpoll();
  FileDescriptor e(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  ASSERT_TRUE(e.valid());
  ASSERT_THAT(Ctl(ep.get(), EPOLL_CTL_ADD, e.get(), EPOLLIN | EPOLLET, 0x1234),
              SyscallSucceeds());
  uint64_t one = 1;
  ASSERT_THAT(write(e.get(), &one, 8), SyscallSucceedsWithValue(8));
  EXPECT_EQ(Wait(ep.get()).size(), 1u);
  char link[64] = {};
  std::string path = "/proc/self/fd/" + std::to_string(ep.get());
  ASSERT_THAT(readlink(path.c_str(), link, sizeof(link) - 1),
              SyscallSucceeds());
  EXPECT_STREQ(link, "anon_inode:[eventpoll]");
  std::ifstream info("/proc/self/fdinfo/" + std::to_string(ep.get()));
  std::stringstream ss;
  ss << info.rdbuf();
  EXPECT_THAT(
      ss.str(),
      ::testing::HasSubstr(
          "tfd: " + std::string(8 - std::to_string(e.get()).size(), ' ') +
          std::to_string(e.get()) + " events:"));
  EXPECT_THAT(ss.str(), ::testing::HasSubstr("data:             1234"));
}

}  // namespace
}  // namespace sandbox::testutil
