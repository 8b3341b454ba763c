// The task state /proc shows (/proc/PID/task/TID/stat's third field and
// status's "State:"), as Linux's task_state_array: R for a thread that runs
// or could (guest code, the non-blocking part of a syscall), S for one in
// an interruptible wait (nanosleep, a pipe read, a futex, poll, wait4), D
// for a vfork parent (TASK_KILLABLE). T (stopped) and Z (zombie) are in
// jobctl.cc and wait.cc.
#include <linux/futex.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

pid_t Gettid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

std::string TaskPath(pid_t tid) {
  return "/proc/self/task/" + std::to_string(tid);
}

// The state letter of /proc/self/task/TID/stat ('?' if unreadable).
char TaskStatState(pid_t tid) {
  std::string s = ReadFileOrEmpty(TaskPath(tid) + "/stat");
  size_t paren = s.rfind(')');
  if (paren == std::string::npos || paren + 2 >= s.size()) return '?';
  return s[paren + 2];
}

// The value of status's "State:" line.
std::string TaskStatusState(pid_t tid) {
  std::string s = ReadFileOrEmpty(TaskPath(tid) + "/status");
  size_t at = s.find("\nState:\t");
  if (at == std::string::npos) return "";
  size_t end = s.find('\n', at + 1);
  return s.substr(at + 8, end - at - 8);
}

// Polls (every millisecond, at most 10 s) until the thread shows `want`.
bool AwaitState(pid_t tid, char want) {
  for (int i = 0; i < 10000; ++i) {
    if (TaskStatState(tid) == want) return true;
    timespec ts = {0, 1000000};
    nanosleep(&ts, nullptr);
  }
  return false;
}

// Runs `block` (a blocking call that `release` ends) on a thread, and
// checks that the thread shows S while it is in it: once it does, it does
// on every read (stat and status) until released.
void CheckSleepsInterruptibly(const std::function<void()>& block,
                              const std::function<void()>& release) {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> done{false};
  std::thread t([&] {
    tid.store(Gettid());
    block();
    done.store(true);
  });
  while (tid.load() == 0) sched_yield();
  EXPECT_TRUE(AwaitState(tid.load(), 'S'))
      << "state " << TaskStatState(tid.load());
  for (int i = 0; i < 20 && !done.load(); ++i) {
    EXPECT_EQ(TaskStatState(tid.load()), 'S') << "read " << i;
    EXPECT_EQ(TaskStatusState(tid.load()), "S (sleeping)") << "read " << i;
  }
  EXPECT_FALSE(done.load()) << "the blocking call returned by itself";
  release();
  t.join();
}

TEST(ProcStateTest, ThreadInNanosleepIsSleeping) {
  // A long sleep, ended by a signal whose handler does nothing (EINTR).
  struct sigaction sa = {}, old;
  sa.sa_handler = [](int) {};
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  std::atomic<pid_t> sleeper{0};
  CheckSleepsInterruptibly(
      [&] {
        sleeper.store(Gettid());
        timespec ts = {60, 0};
        nanosleep(&ts, nullptr);
      },
      [&] { syscall(SYS_tgkill, getpid(), sleeper.load(), SIGUSR1); });
  sigaction(SIGUSR1, &old, nullptr);
}

TEST(ProcStateTest, ThreadReadingAnEmptyPipeIsSleeping) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  FileDescriptor r(p[0]), w(p[1]);
  CheckSleepsInterruptibly(
      [&] {
        char c;
        (void)!read(r.get(), &c, 1);
      },
      [&] { (void)!write(w.get(), "x", 1); });
}

TEST(ProcStateTest, ThreadInFutexWaitIsSleeping) {
  std::atomic<uint32_t> word{0};
  CheckSleepsInterruptibly(
      [&] {
        while (word.load() == 0) {
          syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
        }
      },
      [&] {
        word.store(1);
        syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
      });
}

TEST(ProcStateTest, ThreadInPollIsSleeping) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  FileDescriptor r(p[0]), w(p[1]);
  CheckSleepsInterruptibly(
      [&] {
        pollfd pfd = {r.get(), POLLIN, 0};
        (void)poll(&pfd, 1, 60 * 1000);
      },
      [&] { (void)!write(w.get(), "x", 1); });
}

TEST(ProcStateTest, ThreadInWaitpidIsSleeping) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  FileDescriptor r(p[0]), w(p[1]);
  pid_t child = fork();
  if (child == 0) {
    char c;
    (void)!read(r.get(), &c, 1);  // until the parent writes or exits
    _exit(0);
  }
  ASSERT_GT(child, 0);
  int status = -1;
  CheckSleepsInterruptibly([&] { waitpid(child, &status, 0); },
                           [&] { (void)!write(w.get(), "x", 1); });
  EXPECT_EQ(status, 0);
}

// A thread running guest code (a bounded busy loop, no syscall) is R on
// every read: running, or runnable when the CPU is another's.
TEST(ProcStateTest, BusyThreadIsRunning) {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> stop{false};
  std::thread t([&] {
    tid.store(Gettid());
    timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      // The clock (through the vDSO) only every 2^20 turns: a bound.
      if ((++n & 0xfffff) == 0) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 20) break;
      }
    }
  });
  while (tid.load() == 0) sched_yield();
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(TaskStatState(tid.load()), 'R') << "read " << i;
    EXPECT_EQ(TaskStatusState(tid.load()), "R (running)") << "read " << i;
    timespec ts = {0, 1000000};
    nanosleep(&ts, nullptr);
  }
  stop.store(true);
  t.join();
}

// The reader itself is running.
TEST(ProcStateTest, SelfIsRunning) {
  EXPECT_EQ(TaskStatState(Gettid()), 'R');
  EXPECT_EQ(TaskStatusState(Gettid()), "R (running)");
}

// A vfork parent waits for the child's exec or exit in TASK_KILLABLE,
// which /proc shows as D (disk sleep). Another thread of the parent reads
// it.
TEST(ProcStateTest, VforkParentIsInDiskSleep) {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> done{false};
  std::thread t([&] {
    tid.store(Gettid());
    pid_t child = vfork();
    if (child == 0) {
      timespec ts = {1, 0};  // the parent shows D meanwhile
      nanosleep(&ts, nullptr);
      _exit(0);
    }
    if (child > 0) waitpid(child, nullptr, 0);
    done.store(true);
  });
  while (tid.load() == 0) sched_yield();
  // The child sleeps 1 s: the parent shows D until then (polled every
  // millisecond; bounded by the child's exit).
  char last = '?';
  std::string status;
  while (!done.load()) {
    last = TaskStatState(tid.load());
    if (last == 'D') {
      status = TaskStatusState(tid.load());
      break;
    }
    timespec ts = {0, 1000000};
    nanosleep(&ts, nullptr);
  }
  t.join();
  EXPECT_EQ(last, 'D');
  EXPECT_EQ(status, "D (disk sleep)");
}

}  // namespace
}  // namespace sandbox::testutil
