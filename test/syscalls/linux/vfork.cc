// vfork(2), clone(2) with CLONE_VM/CLONE_VFORK/CLONE_FILES/CLONE_FS/
// CLONE_PARENT, posix_spawn(3), clone's and clone3's argument checks, and
// clone3's CLONE_CLEAR_SIGHAND.
//
// The helper program is this binary itself: run with VFORK_TEST_HELPER=MODE
// in its environment, a constructor does MODE's job and exits before gtest
// starts.
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

extern char** environ;

namespace sandbox::testutil {
namespace {

constexpr char kHelperVar[] = "VFORK_TEST_HELPER";

// ---- The helper (runs in the new image). ----

// "wait-fd": reads one byte from fd 3 (at most 10 s); exits 0 if it came,
// 1 otherwise. "exit7": exits 7 at once.
void Helper(const char* mode) {
  std::string m = mode;
  if (m == "exit7") _exit(7);
  if (m == "wait-fd") _exit(ReadByteWithin10s(3) ? 0 : 1);
  _exit(99);
}

__attribute__((constructor)) void MaybeHelper() {
  const char* mode = getenv(kHelperVar);
  if (mode != nullptr) Helper(mode);
}

// An environment holding VFORK_TEST_HELPER=mode (built before any vfork:
// the child may only exec or _exit).
struct HelperExec {
  explicit HelperExec(const char* mode) {
    env_str = std::string(kHelperVar) + "=" + mode;
    env = {env_str.data(), nullptr};
    args = {exe.data(), nullptr};
  }
  std::string exe = "/proc/self/exe";
  std::string env_str;
  std::vector<char*> env, args;
};

void SleepMs(int ms) {
  timespec ts = {0, ms * 1000000L};
  syscall(SYS_nanosleep, &ts, nullptr);
}

volatile int shared_word = 0;

// ---- vfork(2). ----

TEST(VforkTest, ParentSuspendedUntilChildExits) {
  shared_word = 0;
  pid_t pid = vfork();
  if (pid == 0) {
    // Had the parent gone on, it would see 1 (or 0), not 2.
    shared_word = 1;
    SleepMs(100);
    shared_word = 2;
    _exit(5);
  }
  ASSERT_THAT(pid, SyscallSucceeds());
  EXPECT_EQ(shared_word, 2);  // the child's writes are in our memory
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(5));
}

TEST(VforkTest, ChildIsANewProcessOfTheCaller) {
  static volatile pid_t ids[2];
  pid_t parent = getpid();
  pid_t pid = vfork();
  if (pid == 0) {
    ids[0] = static_cast<pid_t>(syscall(SYS_getpid));
    ids[1] = static_cast<pid_t>(syscall(SYS_getppid));
    _exit(0);
  }
  ASSERT_THAT(pid, SyscallSucceeds());
  EXPECT_EQ(ids[0], pid);
  EXPECT_EQ(ids[1], parent);
  EXPECT_NE(pid, parent);
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(VforkTest, ParentResumesWhenChildExecs) {
  // The exec'd child waits for a byte only the resumed parent writes: if
  // the parent waited for the child's exit instead, the child would time
  // out and exit 1.
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  HelperExec h("wait-fd");
  shared_word = 0;
  pid_t pid = vfork();
  if (pid == 0) {
    if (dup2(fds[0], 3) != 3) _exit(2);
    SleepMs(50);
    shared_word = 1;
    execve(h.exe.c_str(), h.args.data(), h.env.data());
    _exit(3);
  }
  ASSERT_THAT(pid, SyscallSucceeds());
  EXPECT_EQ(shared_word, 1);  // not resumed before the exec
  ASSERT_THAT(write(fds[1], "x", 1), SyscallSucceedsWithValue(1));
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
  close(fds[0]);
  close(fds[1]);
}

TEST(VforkTest, FailedExecKeepsTheParentWaiting) {
  // A failed execve does not release the parent; the child's exit does.
  shared_word = 0;
  pid_t pid = vfork();
  if (pid == 0) {
    char* argv[] = {const_cast<char*>("/nonexistent"), nullptr};
    execve("/nonexistent", argv, argv + 1);
    shared_word = errno == ENOENT ? 1 : 2;
    SleepMs(50);
    shared_word += 10;
    _exit(0);
  }
  ASSERT_THAT(pid, SyscallSucceeds());
  EXPECT_EQ(shared_word, 11);
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
}

// ---- clone(2) with CLONE_VM and CLONE_VFORK on a separate stack (glibc's
// posix_spawn). ----

struct CloneArg {
  std::atomic<int> word{0};
  int fd = -1;
  int dup_result = -1;
};

int WriteAndExit(void* p) {
  auto* a = static_cast<CloneArg*>(p);
  SleepMs(50);
  a->word.store(42);
  return 9;  // glibc's clone exits the child with fn's result
}

TEST(CloneVforkTest, SharedMemoryAndSuspendedParent) {
  constexpr size_t kStack = 64 * 1024;
  void* stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  ASSERT_NE(stack, MAP_FAILED);
  CloneArg arg;
  pid_t pid = clone(WriteAndExit, static_cast<char*>(stack) + kStack,
                    CLONE_VM | CLONE_VFORK | SIGCHLD, &arg);
  ASSERT_THAT(pid, SyscallSucceeds());
  EXPECT_EQ(arg.word.load(), 42);
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(9));
  munmap(stack, kStack);
}

int DupFd(void* p) {
  auto* a = static_cast<CloneArg*>(p);
  a->dup_result = dup(a->fd);
  return 0;
}

// Runs DupFd in a CLONE_VM|CLONE_VFORK child with `extra` flags; returns the
// descriptor it made.
int DupInChild(int extra, int fd) {
  constexpr size_t kStack = 64 * 1024;
  void* stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -1;
  CloneArg arg;
  arg.fd = fd;
  pid_t pid = clone(DupFd, static_cast<char*>(stack) + kStack,
                    CLONE_VM | CLONE_VFORK | extra | SIGCHLD, &arg);
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  munmap(stack, kStack);
  return arg.dup_result;
}

TEST(CloneVforkTest, CloneFilesSharesTheTable) {
  FileDescriptor fd(open("/proc/self/exe", O_RDONLY));
  ASSERT_TRUE(fd.valid());
  int shared = DupInChild(CLONE_FILES, fd.get());
  ASSERT_GE(shared, 0);
  // The child's dup is ours.
  EXPECT_THAT(fcntl(shared, F_GETFD), SyscallSucceeds());
  close(shared);
  int copied = DupInChild(0, fd.get());
  ASSERT_GE(copied, 0);
  // Without CLONE_FILES the child had a copy.
  EXPECT_THAT(fcntl(copied, F_GETFD), SyscallFailsWithErrno(EBADF));
}

int SetUmask(void*) {
  umask(0077);
  return 0;
}

TEST(CloneVforkTest, CloneFsSharesTheUmask) {
  constexpr size_t kStack = 64 * 1024;
  void* stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  ASSERT_NE(stack, MAP_FAILED);
  mode_t old = umask(0022);
  for (int share : {0, 1}) {
    umask(0022);
    pid_t pid = clone(SetUmask, static_cast<char*>(stack) + kStack,
                      CLONE_VM | CLONE_VFORK | (share ? CLONE_FS : 0) | SIGCHLD,
                      nullptr);
    ASSERT_THAT(pid, SyscallSucceeds());
    ASSERT_THAT(waitpid(pid, nullptr, 0), SyscallSucceedsWithValue(pid));
    EXPECT_EQ(umask(0022), share ? 0077 : 0022) << "CLONE_FS " << share;
  }
  umask(old);
  munmap(stack, kStack);
}

int ThreadWrite(void* p) {
  auto* a = static_cast<CloneArg*>(p);
  SleepMs(50);
  a->word.store(7);
  syscall(SYS_exit, 0);  // this thread only
  return 0;
}

TEST(CloneVforkTest, VforkThreadSuspendsTheCallerUntilItExits) {
  constexpr size_t kStack = 64 * 1024;
  void* stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  ASSERT_NE(stack, MAP_FAILED);
  CloneArg arg;
  int tid = clone(ThreadWrite, static_cast<char*>(stack) + kStack,
                  CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
                      CLONE_THREAD | CLONE_SYSVSEM | CLONE_VFORK,
                  &arg);
  ASSERT_THAT(tid, SyscallSucceeds());
  EXPECT_EQ(arg.word.load(), 7);
  // The stack stays mapped: the thread may still be leaving it.
}

// ---- posix_spawn(3). ----

TEST(PosixSpawnTest, SpawnsAndWaits) {
  HelperExec h("exit7");
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, h.exe.c_str(), nullptr, nullptr, h.args.data(),
                        h.env.data()),
            0);
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(7));
}

TEST(PosixSpawnTest, FileActionsAndMissingProgram) {
  // The file actions run in the child: its fd 3 is our pipe's read end.
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  posix_spawn_file_actions_t fa;
  ASSERT_EQ(posix_spawn_file_actions_init(&fa), 0);
  ASSERT_EQ(posix_spawn_file_actions_adddup2(&fa, fds[0], 3), 0);
  HelperExec h("wait-fd");
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, h.exe.c_str(), &fa, nullptr, h.args.data(),
                        h.env.data()),
            0);
  ASSERT_THAT(write(fds[1], "x", 1), SyscallSucceedsWithValue(1));
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
  posix_spawn_file_actions_destroy(&fa);
  close(fds[0]);
  close(fds[1]);
  // glibc reports the child's failed exec as posix_spawn's result (the
  // child writes the errno into the shared memory before it exits).
  char* argv[] = {const_cast<char*>("/nonexistent"), nullptr};
  EXPECT_EQ(posix_spawn(&pid, "/nonexistent", nullptr, nullptr, argv, environ),
            ENOENT);
}

// ---- CLONE_PARENT. ----

TEST(CloneTest, CloneParentMakesASibling) {
  // A child C makes G with CLONE_PARENT: G is our child, not C's.
  pid_t me = getpid();
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  pid_t c = fork();
  if (c == 0) {
    long g = syscall(SYS_clone, CLONE_PARENT, 0, 0, 0, 0);
    if (g == 0) {
      pid_t pp = static_cast<pid_t>(syscall(SYS_getppid));
      _exit(pp == me ? 0 : 1);
    }
    if (g < 0) _exit(2);
    pid_t gp = static_cast<pid_t>(g);
    // Not C's child.
    int ok = waitpid(gp, nullptr, WNOHANG) == -1 && errno == ECHILD;
    if (write(fds[1], &gp, sizeof(gp)) != sizeof(gp)) _exit(3);
    _exit(ok ? 0 : 4);
  }
  ASSERT_THAT(c, SyscallSucceeds());
  int status = 0;
  ASSERT_THAT(waitpid(c, &status, 0), SyscallSucceedsWithValue(c));
  EXPECT_THAT(status, ExitedWithCode(0));
  pid_t g = 0;
  ASSERT_THAT(read(fds[0], &g, sizeof(g)), SyscallSucceedsWithValue(sizeof(g)));
  // G inherited C's exit signal (SIGCHLD), so a plain wait finds it.
  ASSERT_THAT(waitpid(g, &status, 0), SyscallSucceedsWithValue(g));
  EXPECT_THAT(status, ExitedWithCode(0));
  close(fds[0]);
  close(fds[1]);
}

// ---- Argument checks (kernel_clone, copy_process, clone3). These fail
// before any task is made. ----

long RawClone(unsigned long flags) {
  return syscall(SYS_clone, flags, 0, 0, 0, 0);
}

TEST(CloneTest, InconsistentFlagsAreInvalid) {
  EXPECT_THAT(RawClone(CLONE_THREAD | CLONE_VM), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(RawClone(CLONE_SIGHAND), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(RawClone(CLONE_SIGHAND | CLONE_THREAD),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(RawClone(CLONE_NEWNS | CLONE_FS), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(RawClone(CLONE_NEWUSER | CLONE_FS),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(RawClone(CLONE_VM | CLONE_SIGHAND | CLONE_THREAD | CLONE_NEWPID),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(RawClone(CLONE_PIDFD | CLONE_DETACHED),
              SyscallFailsWithErrno(EINVAL));
  // Legacy clone returns the pidfd through parent_tid.
  EXPECT_THAT(RawClone(CLONE_PIDFD | CLONE_PARENT_SETTID),
              SyscallFailsWithErrno(EINVAL));
}

long Clone3(const void* args, size_t size) {
  return syscall(SYS_clone3, args, size);
}

TEST(Clone3Test, StructChecks) {
  uint64_t args[64] = {};  // struct clone_args, then zeros
  EXPECT_THAT(Clone3(args, 63), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Clone3(args, 4097), SyscallFailsWithErrno(E2BIG));
  uint64_t big[100] = {};
  big[90] = 1;            // a nonzero byte past what the kernel knows
  big[0] = CLONE_THREAD;  // would be EINVAL, but E2BIG is checked first
  EXPECT_THAT(Clone3(big, sizeof(big)), SyscallFailsWithErrno(E2BIG));
  EXPECT_THAT(Clone3(reinterpret_cast<void*>(8), 88),
              SyscallFailsWithErrno(EFAULT));
}

TEST(Clone3Test, ArgumentChecks) {
  struct clone_args a = {};
  auto call = [&a] { return Clone3(&a, sizeof(a)); };
  a.exit_signal = 65;
  EXPECT_THAT(call(), SyscallFailsWithErrno(EINVAL));
  a.exit_signal = SIGCHLD | (1ULL << 32);
  EXPECT_THAT(call(), SyscallFailsWithErrno(EINVAL));
  a = {};
  a.flags = CLONE_VM | CLONE_SIGHAND | CLONE_THREAD;
  a.exit_signal = SIGCHLD;  // a thread has no exit signal
  EXPECT_THAT(call(), SyscallFailsWithErrno(EINVAL));
  a = {};
  a.flags = CLONE_PARENT;
  a.exit_signal = SIGCHLD;
  EXPECT_THAT(call(), SyscallFailsWithErrno(EINVAL));
  a = {};
  a.flags = CLONE_DETACHED;  // reserved in clone3
  EXPECT_THAT(call(), SyscallFailsWithErrno(EINVAL));
  a.flags = SIGCHLD;  // CSIGNAL bits are not flags in clone3
  EXPECT_THAT(call(), SyscallFailsWithErrno(EINVAL));
  a.flags = 1ULL << 40;  // unknown
  EXPECT_THAT(call(), SyscallFailsWithErrno(EINVAL));
  a.flags = CLONE_VM | CLONE_SIGHAND | (1ULL << 32);  // CLONE_CLEAR_SIGHAND
  EXPECT_THAT(call(), SyscallFailsWithErrno(EINVAL));
  a = {};
  a.stack_size = 4096;  // a size without a stack
  EXPECT_THAT(call(), SyscallFailsWithErrno(EINVAL));
  a = {};
  a.stack = 0x10000;  // a stack without a size
  EXPECT_THAT(call(), SyscallFailsWithErrno(EINVAL));
  a.stack = ~0ULL - 4095;  // beyond user space
  a.stack_size = 4096;
  EXPECT_THAT(call(), SyscallFailsWithErrno(EINVAL));
  a = {};
  a.set_tid_size = 1;  // without set_tid
  EXPECT_THAT(call(), SyscallFailsWithErrno(EINVAL));
  a = {};
  a.set_tid = reinterpret_cast<uint64_t>(&a);  // without a size
  EXPECT_THAT(call(), SyscallFailsWithErrno(EINVAL));
}

TEST(Clone3Test, ForkLikeClone3) {
  struct clone_args a = {};
  a.exit_signal = SIGCHLD;
  long pid = Clone3(&a, sizeof(a));
  if (pid == 0) _exit(4);
  ASSERT_THAT(pid, SyscallSucceeds());
  int status = 0;
  ASSERT_THAT(waitpid(static_cast<pid_t>(pid), &status, 0),
              SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(4));
}

void NoopHandler(int) {}

// Exit 0 when `sig` shows `handler` with no flags and an empty mask.
int CheckFlushed(int sig, void (*handler)(int)) {
  struct sigaction sa = {};
  if (sigaction(sig, nullptr, &sa) != 0) return 1;
  if (sa.sa_handler != handler) return 2;
  if (sa.sa_flags != 0) return 3;
  if (!sigisemptyset(&sa.sa_mask)) return 4;
  return 0;
}

// clone3(CLONE_CLEAR_SIGHAND): flush_signal_handlers(p, 0) in the child:
// a caught signal becomes SIG_DFL, an ignored one stays ignored, and both
// lose their flags and mask. The parent's actions are untouched.
TEST(Clone3Test, ClearSighandFlushesFlagsAndMaskOfIgnoredToo) {
  struct sigaction sa = {};
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sa.sa_flags = SA_RESTART;
  sa.sa_handler = NoopHandler;
  struct sigaction old1, old2;
  ASSERT_THAT(sigaction(SIGUSR1, &sa, &old1), SyscallSucceeds());
  sa.sa_handler = SIG_IGN;
  ASSERT_THAT(sigaction(SIGUSR2, &sa, &old2), SyscallSucceeds());

  struct clone_args a = {};
  a.flags = CLONE_CLEAR_SIGHAND;
  a.exit_signal = SIGCHLD;
  long pid = Clone3(&a, sizeof(a));
  if (pid == 0) {
    int r1 = CheckFlushed(SIGUSR1, SIG_DFL);
    int r2 = CheckFlushed(SIGUSR2, SIG_IGN);
    _exit(r1 != 0 ? 10 + r1 : (r2 != 0 ? 20 + r2 : 0));
  }
  const int err = errno;
  struct sigaction now = {};
  ASSERT_THAT(sigaction(SIGUSR2, &old2, &now), SyscallSucceeds());
  EXPECT_NE(now.sa_flags & SA_RESTART, 0);  // the parent keeps its flags
  ASSERT_THAT(sigaction(SIGUSR1, &old1, nullptr), SyscallSucceeds());
  if (pid < 0 && err == ENOSYS) GTEST_SKIP() << "clone3 is not available";
  ASSERT_GT(pid, 0) << strerror(err);
  int status = 0;
  ASSERT_THAT(waitpid(static_cast<pid_t>(pid), &status, 0),
              SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
}

}  // namespace
}  // namespace sandbox::testutil
