// Job control: group stops (SIGSTOP, SIGTSTP and the orphaned-group rule),
// SIGCONT, SIGCHLD with CLD_STOPPED/CLD_CONTINUED (and SA_NOCLDSTOP),
// wait4/waitid with WUNTRACED/WSTOPPED/WCONTINUED/WNOWAIT/__WNOTHREAD,
// /proc's T state, a PID namespace init's immunity to signals, and /proc
// reads racing short-lived children.
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

// A counter in memory shared with a child.
struct Shared {
  std::atomic<uint64_t> counter{0};
  std::atomic<uint64_t> thread_counter{0};
};

Shared* NewShared() {
  void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  return new (p) Shared();
}

// A child that spins incrementing the counter until killed.
pid_t SpinningChild(Shared* s) {
  pid_t pid = fork();
  if (pid == 0) {
    for (;;) s->counter.fetch_add(1, std::memory_order_relaxed);
  }
  return pid;
}

// Waits (at most 10 s) until the counter moves.
bool CounterMoves(std::atomic<uint64_t>& c) {
  uint64_t start = c.load();
  for (int i = 0; i < 1000; ++i) {
    if (c.load() != start) return true;
    usleep(10000);
  }
  return false;
}

void KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

TEST(JobControlTest, StopIsReportedOnceThenContinueThenKill) {
  Shared* s = NewShared();
  ASSERT_NE(s, nullptr);
  pid_t pid = SpinningChild(s);
  ASSERT_THAT(pid, SyscallSucceeds());
  ASSERT_TRUE(CounterMoves(s->counter));
  ASSERT_THAT(kill(pid, SIGSTOP), SyscallSucceeds());
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, WUNTRACED), SyscallSucceedsWithValue(pid));
  EXPECT_TRUE(WIFSTOPPED(status)) << std::hex << status;
  EXPECT_EQ(WSTOPSIG(status), SIGSTOP);
  EXPECT_EQ(status, 0x7f | (SIGSTOP << 8));
  // Reported once.
  EXPECT_THAT(waitpid(pid, &status, WUNTRACED | WNOHANG),
              SyscallSucceedsWithValue(0));
  // Without WUNTRACED a stopped child is not reported at all.
  EXPECT_THAT(waitpid(pid, &status, WNOHANG), SyscallSucceedsWithValue(0));
  ASSERT_THAT(kill(pid, SIGCONT), SyscallSucceeds());
  status = 0;
  ASSERT_THAT(waitpid(pid, &status, WCONTINUED), SyscallSucceedsWithValue(pid));
  EXPECT_TRUE(WIFCONTINUED(status)) << std::hex << status;
  EXPECT_EQ(status, 0xffff);
  EXPECT_THAT(waitpid(pid, &status, WCONTINUED | WNOHANG),
              SyscallSucceedsWithValue(0));
  EXPECT_TRUE(CounterMoves(s->counter));
  ASSERT_THAT(kill(pid, SIGKILL), SyscallSucceeds());
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
}

TEST(JobControlTest, StoppedChildDoesNotRunAndProcShowsT) {
  Shared* s = NewShared();
  ASSERT_NE(s, nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    std::thread t([s] {
      for (;;) s->thread_counter.fetch_add(1, std::memory_order_relaxed);
    });
    for (;;) s->counter.fetch_add(1, std::memory_order_relaxed);
  }
  ASSERT_THAT(pid, SyscallSucceeds());
  ASSERT_TRUE(CounterMoves(s->counter));
  ASSERT_TRUE(CounterMoves(s->thread_counter));
  ASSERT_THAT(kill(pid, SIGSTOP), SyscallSucceeds());
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, WUNTRACED), SyscallSucceedsWithValue(pid));
  ASSERT_TRUE(WIFSTOPPED(status));
  // Every thread has stopped once the stop is reported.
  uint64_t a = s->counter.load(), b = s->thread_counter.load();
  usleep(200000);
  EXPECT_EQ(s->counter.load(), a);
  EXPECT_EQ(s->thread_counter.load(), b);
  EXPECT_EQ(ProcStatusState(pid), "T (stopped)");
  EXPECT_EQ(ProcStatState(pid), 'T');
  ASSERT_THAT(kill(pid, SIGCONT), SyscallSucceeds());
  EXPECT_TRUE(CounterMoves(s->counter));
  EXPECT_TRUE(CounterMoves(s->thread_counter));
  KillAndReap(pid);
}

TEST(JobControlTest, WaitidStoppedContinuedAndWnowait) {
  Shared* s = NewShared();
  ASSERT_NE(s, nullptr);
  pid_t pid = SpinningChild(s);
  ASSERT_THAT(pid, SyscallSucceeds());
  ASSERT_THAT(kill(pid, SIGSTOP), SyscallSucceeds());
  siginfo_t info = {};
  ASSERT_THAT(waitid(P_PID, pid, &info, WSTOPPED | WNOWAIT), SyscallSucceeds());
  EXPECT_EQ(info.si_signo, SIGCHLD);
  EXPECT_EQ(info.si_code, CLD_STOPPED);
  EXPECT_EQ(info.si_pid, pid);
  EXPECT_EQ(info.si_status, SIGSTOP);
  EXPECT_EQ(info.si_uid, getuid());
  // WNOWAIT left it reportable.
  info = {};
  ASSERT_THAT(waitid(P_PID, pid, &info, WSTOPPED), SyscallSucceeds());
  EXPECT_EQ(info.si_code, CLD_STOPPED);
  EXPECT_EQ(info.si_status, SIGSTOP);
  info = {};
  ASSERT_THAT(waitid(P_PID, pid, &info, WSTOPPED | WNOHANG), SyscallSucceeds());
  EXPECT_EQ(info.si_pid, 0);
  // WEXITED alone does not report a stop.
  info = {};
  ASSERT_THAT(waitid(P_PID, pid, &info, WEXITED | WNOHANG), SyscallSucceeds());
  EXPECT_EQ(info.si_pid, 0);
  ASSERT_THAT(kill(pid, SIGCONT), SyscallSucceeds());
  info = {};
  ASSERT_THAT(waitid(P_PID, pid, &info, WCONTINUED | WNOWAIT),
              SyscallSucceeds());
  EXPECT_EQ(info.si_code, CLD_CONTINUED);
  EXPECT_EQ(info.si_status, SIGCONT);
  EXPECT_EQ(info.si_pid, pid);
  info = {};
  ASSERT_THAT(waitid(P_ALL, 0, &info, WCONTINUED), SyscallSucceeds());
  EXPECT_EQ(info.si_code, CLD_CONTINUED);
  info = {};
  ASSERT_THAT(waitid(P_PID, pid, &info, WCONTINUED | WNOHANG),
              SyscallSucceeds());
  EXPECT_EQ(info.si_pid, 0);
  KillAndReap(pid);
}

TEST(JobControlTest, SigchldCarriesStopAndContinue) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  ASSERT_THAT(sigprocmask(SIG_BLOCK, &set, &old), SyscallSucceeds());
  Shared* s = NewShared();
  ASSERT_NE(s, nullptr);
  pid_t pid = SpinningChild(s);
  ASSERT_THAT(pid, SyscallSucceeds());
  ASSERT_THAT(kill(pid, SIGSTOP), SyscallSucceeds());
  timespec ts = {10, 0};
  siginfo_t info = {};
  ASSERT_THAT(sigtimedwait(&set, &info, &ts),
              SyscallSucceedsWithValue(SIGCHLD));
  EXPECT_EQ(info.si_code, CLD_STOPPED);
  EXPECT_EQ(info.si_pid, pid);
  EXPECT_EQ(info.si_status, SIGSTOP);
  ASSERT_THAT(kill(pid, SIGCONT), SyscallSucceeds());
  info = {};
  ASSERT_THAT(sigtimedwait(&set, &info, &ts),
              SyscallSucceedsWithValue(SIGCHLD));
  EXPECT_EQ(info.si_code, CLD_CONTINUED);
  EXPECT_EQ(info.si_pid, pid);
  EXPECT_EQ(info.si_status, SIGCONT);
  KillAndReap(pid);
  // The exit's SIGCHLD.
  info = {};
  ASSERT_THAT(sigtimedwait(&set, &info, &ts),
              SyscallSucceedsWithValue(SIGCHLD));
  EXPECT_EQ(info.si_code, CLD_KILLED);
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

void Nop(int) {}

TEST(JobControlTest, SaNocldstopSendsNoSigchldButWaitStillReports) {
  struct sigaction sa = {}, olda;
  sa.sa_handler = Nop;
  sa.sa_flags = SA_NOCLDSTOP;
  ASSERT_THAT(sigaction(SIGCHLD, &sa, &olda), SyscallSucceeds());
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  ASSERT_THAT(sigprocmask(SIG_BLOCK, &set, &old), SyscallSucceeds());
  Shared* s = NewShared();
  ASSERT_NE(s, nullptr);
  pid_t pid = SpinningChild(s);
  ASSERT_THAT(pid, SyscallSucceeds());
  ASSERT_THAT(kill(pid, SIGSTOP), SyscallSucceeds());
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, WUNTRACED), SyscallSucceedsWithValue(pid));
  EXPECT_TRUE(WIFSTOPPED(status));
  ASSERT_THAT(kill(pid, SIGCONT), SyscallSucceeds());
  ASSERT_THAT(waitpid(pid, &status, WCONTINUED), SyscallSucceedsWithValue(pid));
  EXPECT_TRUE(WIFCONTINUED(status));
  sigset_t pending;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGCHLD));
  KillAndReap(pid);
  timespec ts = {10, 0};
  siginfo_t info = {};
  EXPECT_THAT(sigtimedwait(&set, &info, &ts),
              SyscallSucceedsWithValue(SIGCHLD));
  sigprocmask(SIG_SETMASK, &old, nullptr);
  sigaction(SIGCHLD, &olda, nullptr);
}

TEST(JobControlTest, SigtstpStopsInAGroupWithAParentInTheSession) {
  Shared* s = NewShared();
  ASSERT_NE(s, nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // its parent is in another group of the same session
    for (;;) s->counter.fetch_add(1, std::memory_order_relaxed);
  }
  ASSERT_THAT(pid, SyscallSucceeds());
  ASSERT_TRUE(CounterMoves(s->counter));
  ASSERT_THAT(kill(pid, SIGTSTP), SyscallSucceeds());
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, WUNTRACED), SyscallSucceedsWithValue(pid));
  EXPECT_TRUE(WIFSTOPPED(status));
  EXPECT_EQ(WSTOPSIG(status), SIGTSTP);
  KillAndReap(pid);
}

TEST(JobControlTest, SigtstpIsDiscardedInAnOrphanedGroup) {
  Shared* s = NewShared();
  ASSERT_NE(s, nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setsid();  // a new session: no parent in it, the group is orphaned
    for (;;) s->counter.fetch_add(1, std::memory_order_relaxed);
  }
  ASSERT_THAT(pid, SyscallSucceeds());
  ASSERT_TRUE(CounterMoves(s->counter));
  for (int sig : {SIGTSTP, SIGTTIN, SIGTTOU}) {
    ASSERT_THAT(kill(pid, sig), SyscallSucceeds());
  }
  usleep(100000);
  int status = 0;
  EXPECT_THAT(waitpid(pid, &status, WUNTRACED | WNOHANG),
              SyscallSucceedsWithValue(0));
  EXPECT_TRUE(CounterMoves(s->counter));
  // SIGSTOP stops it anyway.
  ASSERT_THAT(kill(pid, SIGSTOP), SyscallSucceeds());
  ASSERT_THAT(waitpid(pid, &status, WUNTRACED), SyscallSucceedsWithValue(pid));
  EXPECT_TRUE(WIFSTOPPED(status));
  EXPECT_EQ(WSTOPSIG(status), SIGSTOP);
  KillAndReap(pid);
}

TEST(JobControlTest, SigcontAndStopSignalsDiscardEachOtherWhenPending) {
  int r = InForkedChild([] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCONT);
    sigaddset(&set, SIGTSTP);
    if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) _exit(1);
    kill(getpid(), SIGCONT);
    kill(getpid(), SIGTSTP);  // discards the pending SIGCONT
    sigset_t p;
    sigpending(&p);
    if (sigismember(&p, SIGCONT) || !sigismember(&p, SIGTSTP)) _exit(2);
    kill(getpid(), SIGCONT);  // discards the pending SIGTSTP
    sigpending(&p);
    if (!sigismember(&p, SIGCONT) || sigismember(&p, SIGTSTP)) _exit(3);
    _exit(0);
  });
  EXPECT_THAT(r, ExitedWithCode(0));
}

TEST(JobControlTest, SigkillEndsAStoppedChild) {
  Shared* s = NewShared();
  ASSERT_NE(s, nullptr);
  pid_t pid = SpinningChild(s);
  ASSERT_THAT(pid, SyscallSucceeds());
  ASSERT_THAT(kill(pid, SIGSTOP), SyscallSucceeds());
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, WUNTRACED), SyscallSucceedsWithValue(pid));
  ASSERT_THAT(kill(pid, SIGKILL), SyscallSucceeds());
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
}

// A stopped process takes only SIGKILL: a fatal signal waits for SIGCONT
// (wants_signal skips stopped threads).
TEST(JobControlTest, TerminatingSignalEndsAStoppedChildOnceContinued) {
  Shared* s = NewShared();
  ASSERT_NE(s, nullptr);
  pid_t pid = SpinningChild(s);
  ASSERT_THAT(pid, SyscallSucceeds());
  ASSERT_THAT(kill(pid, SIGSTOP), SyscallSucceeds());
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, WUNTRACED), SyscallSucceedsWithValue(pid));
  ASSERT_THAT(kill(pid, SIGTERM), SyscallSucceeds());
  usleep(100000);
  EXPECT_THAT(waitpid(pid, &status, WNOHANG), SyscallSucceedsWithValue(0));
  EXPECT_EQ(ProcStatusState(pid), "T (stopped)");
  ASSERT_THAT(kill(pid, SIGCONT), SyscallSucceeds());
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
}

TEST(JobControlTest, BlockedReadIsRestartedAfterStopAndContinue) {
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[1]);
    char c;
    ssize_t n = read(fds[0], &c, 1);
    _exit(n == 1 ? c : (n < 0 ? 100 + (errno % 100) : 99));
  }
  ASSERT_THAT(pid, SyscallSucceeds());
  close(fds[0]);
  usleep(100000);  // let it block in read
  ASSERT_THAT(kill(pid, SIGSTOP), SyscallSucceeds());
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, WUNTRACED), SyscallSucceedsWithValue(pid));
  ASSERT_TRUE(WIFSTOPPED(status));
  ASSERT_THAT(kill(pid, SIGCONT), SyscallSucceeds());
  usleep(100000);
  char c = 7;
  ASSERT_THAT(write(fds[1], &c, 1), SyscallSucceedsWithValue(1));
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(7));
  close(fds[1]);
}

TEST(JobControlTest, WnothreadWaitsOnlyForTheCallingThreadsChildren) {
  pid_t pid = fork();
  if (pid == 0) _exit(5);
  ASSERT_THAT(pid, SyscallSucceeds());
  int other = 0, other_errno = 0;
  std::thread t([&] {
    other = waitpid(pid, nullptr, __WNOTHREAD);
    other_errno = errno;
  });
  t.join();
  EXPECT_EQ(other, -1);
  EXPECT_EQ(other_errno, ECHILD);
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, __WNOTHREAD),
              SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(5));
}

// The body of a PID namespace's init for InitIsImmuneToSignalsFromInside:
// a child of init sends it SIGTERM, SIGINT, SIGKILL, SIGSTOP and SIGTSTP
// (none handled); init survives each and exits 0 once its child is gone.
int InitBody() {
  pid_t killer = fork();
  if (killer < 0) return 10;
  if (killer == 0) {
    for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGKILL, SIGSTOP, SIGTSTP}) {
      if (kill(1, sig) != 0) _exit(20);
      usleep(20000);
    }
    _exit(0);
  }
  int status = 0;
  if (waitpid(killer, &status, 0) != killer) return 11;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 12;
  return 0;
}

TEST(JobControlTest, InitIsImmuneToSignalsFromInside) {
  if (getpid() == 1) {
    // The sandbox: this process is the PID namespace's init.
    EXPECT_EQ(InitBody(), 0);
    return;
  }
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  pid_t helper = fork();
  if (helper == 0) {
    close(fds[0]);
    if (unshare(CLONE_NEWPID) != 0) {
      char e = static_cast<char>(errno);
      (void)!write(fds[1], &e, 1);
      _exit(77);
    }
    pid_t init = fork();
    if (init == 0) _exit(InitBody());
    int status = 0;
    if (waitpid(init, &status, 0) != init) _exit(13);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status));
  }
  ASSERT_THAT(helper, SyscallSucceeds());
  close(fds[1]);
  int status = 0;
  ASSERT_THAT(waitpid(helper, &status, 0), SyscallSucceedsWithValue(helper));
  char e = 0;
  bool skipped = read(fds[0], &e, 1) == 1;
  close(fds[0]);
  if (skipped) {
    GTEST_SKIP() << "a PID namespace needs CAP_SYS_ADMIN: unshare failed with "
                 << strerror(e);
  }
  EXPECT_THAT(status, ExitedWithCode(0));
}

// Reads every /proc file of `pid` that holds task state; failures are
// fine (the task may be gone), crashes are not.
void ReadProcOf(pid_t pid) {
  std::string dir = "/proc/" + std::to_string(pid);
  for (const char* f : {"/status", "/stat", "/statm", "/maps", "/cmdline",
                        "/comm", "/environ", "/limits", "/mountinfo"}) {
    int fd = open((dir + f).c_str(), O_RDONLY);
    if (fd < 0) continue;
    char buf[4096];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    close(fd);
  }
  for (const char* d : {"/fd", "/fdinfo", "/task"}) {
    DIR* dp = opendir((dir + d).c_str());
    if (dp == nullptr) continue;
    while (readdir(dp) != nullptr) {
    }
    closedir(dp);
  }
  char link[256];
  (void)!readlink((dir + "/exe").c_str(), link, sizeof(link));
  (void)!readlink((dir + "/cwd").c_str(), link, sizeof(link));
  (void)!readlink((dir + "/fd/0").c_str(), link, sizeof(link));
}

TEST(JobControlTest, ProcReadsRaceShortLivedChildren) {
  // The reader is a sibling process (not a thread: the forks below are of
  // a single-threaded process) reading the /proc files of the latest child
  // while it exits and is reaped.
  struct Race {
    std::atomic<pid_t> latest{0};
    std::atomic<bool> done{false};
  };
  void* mem = mmap(nullptr, sizeof(Race), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  Race* race = new (mem) Race();
  pid_t reader = fork();
  if (reader == 0) {
    while (!race->done.load()) {
      pid_t p = race->latest.load();
      if (p > 0) ReadProcOf(p);
    }
    _exit(0);
  }
  ASSERT_THAT(reader, SyscallSucceeds());
  // A file of a task opened before the task goes: reads then fail with
  // ESRCH (proc_single_show), they never crash.
  int held_fd = -1;
  for (int i = 0; i < 300; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      if (i % 3 == 0) {
        std::thread t([] {});
        t.join();
      }
      _exit(i & 0x7f);
    }
    ASSERT_THAT(pid, SyscallSucceeds());
    race->latest.store(pid);
    if (i == 0) {
      held_fd =
          open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY);
    }
    int status = 0;
    ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
    EXPECT_THAT(status, ExitedWithCode(i & 0x7f));
  }
  race->done.store(true);
  int status = 0;
  ASSERT_THAT(waitpid(reader, &status, 0), SyscallSucceedsWithValue(reader));
  EXPECT_THAT(status, ExitedWithCode(0));
  if (held_fd >= 0) {
    char buf[512];
    EXPECT_THAT(read(held_fd, buf, sizeof(buf)), SyscallFailsWithErrno(ESRCH));
    close(held_fd);
  }
}

}  // namespace
}  // namespace sandbox::testutil
