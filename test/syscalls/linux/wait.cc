// wait4(2), waitid(2): zombies (and their /proc/PID) until reaped, WNOHANG,
// WNOWAIT, __WCLONE/__WALL, process-group selection, ECHILD and EINVAL;
// setpgid(2), setsid(2), getpgid(2), getsid(2) and their errors.
//
// The helper program is this binary itself: run with WAIT_TEST_HELPER=MODE
// in its environment, a constructor does MODE's job and exits before gtest
// starts.
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr char kHelperVar[] = "WAIT_TEST_HELPER";

// "ready-then-wait": writes one byte to fd 4, then waits (at most 10 s) for
// one byte on fd 3; exits 0.
__attribute__((constructor)) void MaybeHelper() {
  const char* mode = getenv(kHelperVar);
  if (mode == nullptr) return;
  if (strcmp(mode, "ready-then-wait") == 0) {
    if (write(4, "r", 1) != 1) _exit(1);
    _exit(ReadByteWithin10s(3) ? 0 : 1);
  }
  _exit(99);
}

// A child blocked until Release (or the object's end): reading a pipe.
class BlockedChild {
 public:
  BlockedChild() {
    if (pipe(fds_) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(fds_[1]);
      char c;
      _exit(read(fds_[0], &c, 1) == 1 ? c : 100);
    }
    close(fds_[0]);
  }
  ~BlockedChild() {
    Release(0);
    if (pid_ > 0 && !reaped_) waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  // The child exits with `code`.
  void Release(char code) {
    if (fds_[1] >= 0) {
      (void)!write(fds_[1], &code, 1);
      close(fds_[1]);
      fds_[1] = -1;
    }
  }
  void set_reaped() { reaped_ = true; }

 private:
  int fds_[2] = {-1, -1};
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Waits (at most 10 s) until `pid` is a zombie.
bool AwaitZombie(pid_t pid) {
  for (int i = 0; i < 1000; ++i) {
    if (ProcStatusState(pid) == "Z (zombie)") return true;
    usleep(10000);
  }
  return false;
}

// A child that exits with `code` at once, not yet reaped.
pid_t DeadChild(int code) {
  pid_t pid = fork();
  if (pid == 0) _exit(code);
  return pid;
}

// ---- Zombies. ----

TEST(ZombieTest, ProcShowsTheZombieUntilItIsReaped) {
  pid_t pid = DeadChild(3);
  ASSERT_THAT(pid, SyscallSucceeds());
  ASSERT_TRUE(AwaitZombie(pid)) << "state: " << ProcStatusState(pid);
  EXPECT_EQ(ProcStatState(pid), 'Z');
  std::string dir = "/proc/" + std::to_string(pid);
  struct stat st;
  EXPECT_THAT(stat(dir.c_str(), &st), SyscallSucceeds());
  // The zombie is listed, keeps its PID and its group.
  EXPECT_THAT(getpgid(pid), SyscallSucceedsWithValue(getpgrp()));
  std::string status = ReadFileOrEmpty(dir + "/status");
  EXPECT_NE(status.find("\nPPid:\t" + std::to_string(getpid()) + "\n"),
            std::string::npos)
      << status;
  // No mm, no files: no Vm lines; cwd is gone.
  EXPECT_EQ(status.find("VmSize"), std::string::npos) << status;
  char buf[256];
  EXPECT_THAT(readlink((dir + "/cwd").c_str(), buf, sizeof(buf)),
              SyscallFailsWithErrno(ENOENT));
  int ws = 0;
  ASSERT_THAT(waitpid(pid, &ws, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(ws, ExitedWithCode(3));
  // Reaped: gone.
  EXPECT_THAT(stat(dir.c_str(), &st), SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(open((dir + "/status").c_str(), O_RDONLY),
              SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(getpgid(pid), SyscallFailsWithErrno(ESRCH));
}

TEST(ZombieTest, LeaderThatExitedFirstStaysUntilTheProcessIsReaped) {
  // The main thread exits (exit(2), not exit_group) while another thread
  // runs: the process, its PID and /proc/PID live on (the leader is a
  // zombie, counted in Threads); the process's status is the last
  // thread's exit code.
  int go[2];
  ASSERT_THAT(pipe(go), SyscallSucceeds());
  pid_t pid = fork();
  if (pid == 0) {
    static int fd;
    fd = go[0];
    std::thread([] {
      char c;
      (void)!read(fd, &c, 1);
      syscall(SYS_exit, 5);
    }).detach();
    syscall(SYS_exit, 3);
  }
  ASSERT_THAT(pid, SyscallSucceeds());
  ASSERT_TRUE(AwaitZombie(pid)) << "state: " << ProcStatusState(pid);
  std::string status =
      ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/status");
  EXPECT_NE(status.find("\nThreads:\t2\n"), std::string::npos) << status;
  // task/ lists both, the zombie leader included.
  std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  int entries = 0;
  bool leader = false;
  if (DIR* d = opendir(task_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      ++entries;
      leader |= std::string(e->d_name) == std::to_string(pid);
    }
    closedir(d);
  }
  EXPECT_EQ(entries, 2);
  EXPECT_TRUE(leader);
  EXPECT_EQ(ProcStatusState(pid), "Z (zombie)");
  EXPECT_THAT(getpgid(pid), SyscallSucceedsWithValue(getpgrp()));
  EXPECT_THAT(waitpid(pid, nullptr, WNOHANG), SyscallSucceedsWithValue(0));
  ASSERT_THAT(write(go[1], "g", 1), SyscallSucceedsWithValue(1));
  int ws = 0;
  ASSERT_THAT(waitpid(pid, &ws, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(ws, ExitedWithCode(5));
  close(go[0]);
  close(go[1]);
}

TEST(ZombieTest, RunningChildIsNotAZombie) {
  BlockedChild c;
  ASSERT_GT(c.pid(), 0);
  std::string state = ProcStatusState(c.pid());
  EXPECT_THAT(state, ::testing::AnyOf("S (sleeping)", "R (running)"));
  EXPECT_NE(ProcStatState(c.pid()), 'Z');
}

// ---- wait4. ----

TEST(Wait4Test, NoChildrenIsEchild) {
  EXPECT_THAT(waitpid(-1, nullptr, 0), SyscallFailsWithErrno(ECHILD));
  EXPECT_THAT(waitpid(-1, nullptr, WNOHANG), SyscallFailsWithErrno(ECHILD));
  EXPECT_THAT(waitpid(0, nullptr, 0), SyscallFailsWithErrno(ECHILD));
  // Ourselves: not a child.
  EXPECT_THAT(waitpid(getpid(), nullptr, 0), SyscallFailsWithErrno(ECHILD));
}

TEST(Wait4Test, BadArguments) {
  EXPECT_THAT(syscall(SYS_wait4, -1, nullptr, 0x1000, nullptr),
              SyscallFailsWithErrno(EINVAL));
  // WNOWAIT and WEXITED are waitid's.
  EXPECT_THAT(syscall(SYS_wait4, -1, nullptr, WNOWAIT, nullptr),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_wait4, INT_MIN, nullptr, 0, nullptr),
              SyscallFailsWithErrno(ESRCH));
}

TEST(Wait4Test, WnohangThenReap) {
  BlockedChild c;
  ASSERT_GT(c.pid(), 0);
  EXPECT_THAT(waitpid(c.pid(), nullptr, WNOHANG), SyscallSucceedsWithValue(0));
  EXPECT_THAT(waitpid(-1, nullptr, WNOHANG), SyscallSucceedsWithValue(0));
  c.Release(12);
  int ws = 0;
  ASSERT_THAT(waitpid(-1, &ws, 0), SyscallSucceedsWithValue(c.pid()));
  c.set_reaped();
  EXPECT_THAT(ws, ExitedWithCode(12));
  EXPECT_THAT(waitpid(c.pid(), nullptr, WNOHANG),
              SyscallFailsWithErrno(ECHILD));
}

TEST(Wait4Test, BlocksUntilTheChildDies) {
  BlockedChild c;
  ASSERT_GT(c.pid(), 0);
  std::thread releaser([&c] {
    usleep(50000);
    c.Release(1);
  });
  int ws = 0;
  EXPECT_THAT(waitpid(c.pid(), &ws, 0), SyscallSucceedsWithValue(c.pid()));
  c.set_reaped();
  releaser.join();
  EXPECT_THAT(ws, ExitedWithCode(1));
}

TEST(Wait4Test, IgnoredSigchldReapsAtOnce) {
  // With SIGCHLD ignored a dead child is reaped at its exit: a blocked
  // wait wakes to find no child (ECHILD), and no zombie stays in /proc.
  struct sigaction ign = {}, old = {};
  ign.sa_handler = SIG_IGN;
  ASSERT_THAT(sigaction(SIGCHLD, &ign, &old), SyscallSucceeds());
  pid_t pid = fork();
  if (pid == 0) {
    usleep(50000);
    _exit(0);
  }
  ASSERT_THAT(pid, SyscallSucceeds());
  EXPECT_THAT(waitpid(-1, nullptr, 0), SyscallFailsWithErrno(ECHILD));
  // (Linux may wake the waiter just before release_task unhashes the
  // PID: allow it a moment.)
  struct stat st;
  std::string dir = "/proc/" + std::to_string(pid);
  for (int i = 0; i < 100 && stat(dir.c_str(), &st) == 0; ++i) usleep(10000);
  EXPECT_THAT(stat(dir.c_str(), &st), SyscallFailsWithErrno(ENOENT));
  ASSERT_THAT(sigaction(SIGCHLD, &old, nullptr), SyscallSucceeds());
}

TEST(Wait4Test, CloneChildrenNeedWclone) {
  // A child with no exit signal is a "clone" child: only __WCLONE or
  // __WALL waits for it; a fork child is the opposite.
  long clone_child = syscall(SYS_clone, 0, 0, 0, 0, 0);
  if (clone_child == 0) _exit(6);
  ASSERT_THAT(clone_child, SyscallSucceeds());
  pid_t fork_child = DeadChild(8);
  ASSERT_THAT(fork_child, SyscallSucceeds());
  pid_t cc = static_cast<pid_t>(clone_child);
  ASSERT_TRUE(AwaitZombie(cc));
  ASSERT_TRUE(AwaitZombie(fork_child));
  EXPECT_THAT(waitpid(cc, nullptr, WNOHANG), SyscallFailsWithErrno(ECHILD));
  EXPECT_THAT(waitpid(fork_child, nullptr, __WCLONE | WNOHANG),
              SyscallFailsWithErrno(ECHILD));
  int ws = 0;
  EXPECT_THAT(waitpid(-1, &ws, __WCLONE), SyscallSucceedsWithValue(cc));
  EXPECT_THAT(ws, ExitedWithCode(6));
  EXPECT_THAT(waitpid(-1, &ws, __WALL), SyscallSucceedsWithValue(fork_child));
  EXPECT_THAT(ws, ExitedWithCode(8));
}

TEST(Wait4Test, SelectsByProcessGroup) {
  BlockedChild c;
  ASSERT_GT(c.pid(), 0);
  ASSERT_THAT(setpgid(c.pid(), c.pid()), SyscallSucceeds());
  EXPECT_THAT(getpgid(c.pid()), SyscallSucceedsWithValue(c.pid()));
  // No child is in our group any more.
  EXPECT_THAT(waitpid(0, nullptr, WNOHANG), SyscallFailsWithErrno(ECHILD));
  EXPECT_THAT(waitpid(-c.pid(), nullptr, WNOHANG), SyscallSucceedsWithValue(0));
  c.Release(2);
  int ws = 0;
  EXPECT_THAT(waitpid(-c.pid(), &ws, 0), SyscallSucceedsWithValue(c.pid()));
  c.set_reaped();
  EXPECT_THAT(ws, ExitedWithCode(2));
}

// ---- waitid. ----

TEST(WaitidTest, WnowaitLeavesTheChildWaitable) {
  pid_t pid = DeadChild(7);
  ASSERT_THAT(pid, SyscallSucceeds());
  for (int i = 0; i < 2; ++i) {
    siginfo_t info;
    memset(&info, 0x55, sizeof(info));
    ASSERT_THAT(waitid(P_PID, pid, &info, WEXITED | WNOWAIT),
                SyscallSucceeds());
    EXPECT_EQ(info.si_signo, SIGCHLD);
    EXPECT_EQ(info.si_errno, 0);
    EXPECT_EQ(info.si_code, CLD_EXITED);
    EXPECT_EQ(info.si_pid, pid);
    EXPECT_EQ(info.si_uid, getuid());
    EXPECT_EQ(info.si_status, 7);
  }
  int ws = 0;
  ASSERT_THAT(waitpid(pid, &ws, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(ws, ExitedWithCode(7));
  siginfo_t info;
  EXPECT_THAT(waitid(P_PID, pid, &info, WEXITED),
              SyscallFailsWithErrno(ECHILD));
}

TEST(WaitidTest, WnohangWithNoneReadyZeroesTheInfo) {
  BlockedChild c;
  ASSERT_GT(c.pid(), 0);
  siginfo_t info;
  memset(&info, 0x55, sizeof(info));
  ASSERT_THAT(waitid(P_ALL, 0, &info, WEXITED | WNOHANG), SyscallSucceeds());
  EXPECT_EQ(info.si_signo, 0);
  EXPECT_EQ(info.si_code, 0);
  EXPECT_EQ(info.si_pid, 0);
  EXPECT_EQ(info.si_status, 0);
  // Without WEXITED a live child is something to wait for (WNOHANG: 0),
  // a dead one is not (ECHILD).
  ASSERT_THAT(waitid(P_PID, c.pid(), &info, WSTOPPED | WNOHANG),
              SyscallSucceeds());
  EXPECT_EQ(info.si_pid, 0);
  c.Release(0);
  ASSERT_TRUE(AwaitZombie(c.pid()));
  EXPECT_THAT(waitid(P_PID, c.pid(), &info, WSTOPPED | WNOHANG),
              SyscallFailsWithErrno(ECHILD));
  ASSERT_THAT(waitid(P_PGID, 0, &info, WEXITED), SyscallSucceeds());
  EXPECT_EQ(info.si_pid, c.pid());
  c.set_reaped();
}

TEST(WaitidTest, BadArguments) {
  siginfo_t info;
  EXPECT_THAT(waitid(P_ALL, 0, &info, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(waitid(P_ALL, 0, &info, WEXITED | 0x1000),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(waitid(P_PID, 0, &info, WEXITED), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(waitid(P_PGID, -1, &info, WEXITED),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(waitid(static_cast<idtype_t>(42), 0, &info, WEXITED),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(waitid(P_ALL, 0, &info, WEXITED), SyscallFailsWithErrno(ECHILD));
}

// ---- Process groups and sessions. ----

// Runs `fn` in a forked child, which exits with fn's result; returns the
// child's exit code (or -1).
int InChild(int (*fn)()) {
  pid_t pid = fork();
  if (pid == 0) _exit(fn());
  int ws = 0;
  if (pid < 0 || waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws)) return -1;
  return WEXITSTATUS(ws);
}

TEST(SessionTest, SetsidMakesANewSessionOnce) {
  // A fork child leads no group, so setsid works; then it leads one.
  EXPECT_EQ(InChild([]() -> int {
              pid_t me = getpid();
              if (getpgrp() == me) return 1;
              if (setsid() != me) return 2;
              if (getsid(0) != me || getpgrp() != me) return 3;
              if (getpgid(0) != me) return 4;
              if (setsid() != -1 || errno != EPERM) return 5;
              // A session leader cannot change its group.
              if (setpgid(0, 0) != -1 || errno != EPERM) return 6;
              return 0;
            }),
            0);
}

TEST(SessionTest, SetsidFailsForAGroupLeader) {
  EXPECT_EQ(InChild([]() -> int {
              if (setpgid(0, 0) != 0) return 1;
              if (getpgrp() != getpid()) return 2;
              if (setsid() != -1 || errno != EPERM) return 3;
              return 0;
            }),
            0);
}

TEST(SessionTest, LookupsOfOtherProcesses) {
  BlockedChild c;
  ASSERT_GT(c.pid(), 0);
  EXPECT_THAT(getpgid(c.pid()), SyscallSucceedsWithValue(getpgrp()));
  EXPECT_THAT(getsid(c.pid()), SyscallSucceedsWithValue(getsid(0)));
  EXPECT_THAT(getpgid(-1), SyscallFailsWithErrno(ESRCH));
  EXPECT_THAT(getsid(-1), SyscallFailsWithErrno(ESRCH));
  pid_t gone = DeadChild(0);
  ASSERT_THAT(waitpid(gone, nullptr, 0), SyscallSucceedsWithValue(gone));
  EXPECT_THAT(getpgid(gone), SyscallFailsWithErrno(ESRCH));
  EXPECT_THAT(getsid(gone), SyscallFailsWithErrno(ESRCH));
}

TEST(SetpgidTest, Errors) {
  EXPECT_THAT(setpgid(0, -1), SyscallFailsWithErrno(EINVAL));
  pid_t gone = DeadChild(0);
  ASSERT_THAT(waitpid(gone, nullptr, 0), SyscallSucceedsWithValue(gone));
  EXPECT_THAT(setpgid(gone, 0), SyscallFailsWithErrno(ESRCH));
  EXPECT_EQ(InChild([]() -> int {
              // A group no process of our session has.
              pid_t gone = fork();
              if (gone == 0) _exit(0);
              if (waitpid(gone, nullptr, 0) != gone) return 1;
              if (setpgid(0, gone) != -1 || errno != EPERM) return 2;
              // A live thread of ours that does not lead.
              static pid_t thread_tid = 0;
              static int result = -1;
              std::thread th([] {
                thread_tid = static_cast<pid_t>(syscall(SYS_gettid));
                result = setpgid(thread_tid, 0) == -1 && errno == EINVAL;
              });
              th.join();
              if (result != 1) return 3;
              return 0;
            }),
            0);
}

TEST(SetpgidTest, ChildRulesBeforeAndAfterExec) {
  int go[2], ready[2];
  ASSERT_THAT(pipe(go), SyscallSucceeds());
  ASSERT_THAT(pipe(ready), SyscallSucceeds());
  pid_t pid = fork();
  if (pid == 0) {
    if (dup2(go[0], 3) != 3 || dup2(ready[1], 4) != 4) _exit(2);
    char c;
    // Wait for the parent's first setpgid, then exec.
    if (read(3, &c, 1) != 1) _exit(3);
    setenv(kHelperVar, "ready-then-wait", 1);
    char* argv[] = {const_cast<char*>("/proc/self/exe"), nullptr};
    execve("/proc/self/exe", argv, environ);
    _exit(4);
  }
  ASSERT_THAT(pid, SyscallSucceeds());
  // Before the exec: we may move it into a new group and back.
  EXPECT_THAT(setpgid(pid, pid), SyscallSucceeds());
  EXPECT_THAT(getpgid(pid), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(setpgid(pid, getpgrp()), SyscallSucceeds());
  ASSERT_THAT(write(go[1], "g", 1), SyscallSucceedsWithValue(1));
  char c;
  ASSERT_THAT(read(ready[0], &c, 1), SyscallSucceedsWithValue(1));
  // After it: EACCES.
  EXPECT_THAT(setpgid(pid, pid), SyscallFailsWithErrno(EACCES));
  ASSERT_THAT(write(go[1], "g", 1), SyscallSucceedsWithValue(1));
  int ws = 0;
  ASSERT_THAT(waitpid(pid, &ws, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(ws, ExitedWithCode(0));
  for (int fd : {go[0], go[1], ready[0], ready[1]}) close(fd);
}

TEST(SetpgidTest, ChildInAnotherSessionIsEperm) {
  int ready[2], go[2];
  ASSERT_THAT(pipe(ready), SyscallSucceeds());
  ASSERT_THAT(pipe(go), SyscallSucceeds());
  pid_t pid = fork();
  if (pid == 0) {
    char c = setsid() > 0 ? 'y' : 'n';
    if (write(ready[1], &c, 1) != 1) _exit(1);
    _exit(read(go[0], &c, 1) == 1 ? 0 : 2);
  }
  ASSERT_THAT(pid, SyscallSucceeds());
  char c;
  ASSERT_THAT(read(ready[0], &c, 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'y');
  EXPECT_THAT(getsid(pid), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(setpgid(pid, pid), SyscallFailsWithErrno(EPERM));
  ASSERT_THAT(write(go[1], "g", 1), SyscallSucceedsWithValue(1));
  ASSERT_THAT(waitpid(pid, nullptr, 0), SyscallSucceedsWithValue(pid));
  for (int fd : {go[0], go[1], ready[0], ready[1]}) close(fd);
}

}  // namespace
}  // namespace sandbox::testutil
