// getpid(2), gettid(2), getppid(2) across threads and fork.
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

TEST(GetpidTest, PositiveAndStable) {
  pid_t pid = getpid();
  EXPECT_GT(pid, 0);
  EXPECT_EQ(getpid(), pid);
  // Bypass any libc caching.
  EXPECT_EQ(syscall(SYS_getpid), pid);
}

TEST(GetpidTest, MainThreadTidIsPid) {
  EXPECT_EQ(syscall(SYS_gettid), syscall(SYS_getpid));
  EXPECT_EQ(gettid(), getpid());
}

TEST(GetpidTest, OtherThreadHasOwnTidSamePid) {
  pid_t thread_pid = 0, thread_tid = 0;
  std::thread t([&] {
    thread_pid = static_cast<pid_t>(syscall(SYS_getpid));
    thread_tid = static_cast<pid_t>(syscall(SYS_gettid));
  });
  t.join();
  EXPECT_EQ(thread_pid, getpid());
  EXPECT_GT(thread_tid, 0);
  EXPECT_NE(thread_tid, getpid());
}

TEST(GetpidTest, ForkedChildHasNewPidAndParent) {
  pid_t parent = getpid();
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  pid_t child = fork();
  ASSERT_THAT(child, SyscallSucceeds());
  if (child == 0) {
    pid_t ids[3] = {static_cast<pid_t>(syscall(SYS_getpid)),
                    static_cast<pid_t>(syscall(SYS_getppid)),
                    static_cast<pid_t>(syscall(SYS_gettid))};
    _exit(write(fds[1], ids, sizeof(ids)) == sizeof(ids) ? 0 : 1);
  }
  close(fds[1]);
  pid_t ids[3] = {};
  EXPECT_THAT(read(fds[0], ids, sizeof(ids)),
              SyscallSucceedsWithValue(sizeof(ids)));
  close(fds[0]);
  int status = 0;
  ASSERT_THAT(waitpid(child, &status, 0), SyscallSucceedsWithValue(child));
  EXPECT_THAT(status, ExitedWithCode(0));
  EXPECT_EQ(ids[0], child);   // The child's getpid is what fork returned.
  EXPECT_EQ(ids[1], parent);  // Its parent is us.
  EXPECT_EQ(ids[2], child);   // Single-threaded: tid == pid.
  EXPECT_NE(child, parent);
}

TEST(GetpidTest, GetppidIsPositive) {
  // The runner (or the sandbox's init) is our parent; in a new PID
  // namespace a parent outside it reads as 0, so allow 0 but not -1.
  EXPECT_GE(syscall(SYS_getppid), 0);
}

}  // namespace
}  // namespace sandbox::testutil
