// Helpers for syscall tests (test/syscalls/linux): gVisor-style matchers on
// syscall return values, a file descriptor owner, temporary paths and a
// forked-child runner for tests that expect a signal.
//
//   EXPECT_THAT(close(fd), SyscallSucceeds());
//   EXPECT_THAT(read(fd, buf, 4), SyscallSucceedsWithValue(4));
//   EXPECT_THAT(open("/nope", O_RDONLY), SyscallFailsWithErrno(ENOENT));
//   EXPECT_THAT(InForkedChild([&] { *bad = 1; }), KilledBySignal(SIGSEGV));
//
// The matchers read errno when they run, which EXPECT_THAT does right after
// evaluating the call, so the errno seen is the call's.
#ifndef TEST_UTIL_TEST_UTIL_H_
#define TEST_UTIL_TEST_UTIL_H_

#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sandbox::testutil {

// Succeeds when the call returned anything but -1.
MATCHER(SyscallSucceeds, "") {
  int e = errno;
  if (arg == -1) {
    *result_listener << "failed with errno " << e << " (" << strerror(e) << ")";
    return false;
  }
  return true;
}

// Succeeds when the call returned exactly `value`.
MATCHER_P(SyscallSucceedsWithValue, value, "") {
  int e = errno;
  if (arg == -1) {
    *result_listener << "failed with errno " << e << " (" << strerror(e) << ")";
    return false;
  }
  if (arg != static_cast<decltype(arg)>(value)) {
    *result_listener << "returned " << arg << ", want " << value;
    return false;
  }
  return true;
}

// Succeeds when the call returned -1 with errno `expected`.
MATCHER_P(SyscallFailsWithErrno, expected, "") {
  int e = errno;
  if (arg != -1) {
    *result_listener << "succeeded with " << arg << ", want errno " << expected
                     << " (" << strerror(expected) << ")";
    return false;
  }
  if (e != expected) {
    *result_listener << "failed with errno " << e << " (" << strerror(e)
                     << "), want " << expected << " (" << strerror(expected)
                     << ")";
    return false;
  }
  return true;
}

// Matches a wait status: the child was killed by signal `sig`.
MATCHER_P(KilledBySignal, sig, "") {
  if (arg == -1) {
    *result_listener << "fork or wait failed";
    return false;
  }
  if (!WIFSIGNALED(arg)) {
    *result_listener << "child exited with code " << WEXITSTATUS(arg);
    return false;
  }
  if (WTERMSIG(arg) != sig) {
    *result_listener << "child killed by signal " << WTERMSIG(arg);
    return false;
  }
  return true;
}

// Matches a wait status: the child exited with `code`.
MATCHER_P(ExitedWithCode, code, "") {
  if (arg == -1) {
    *result_listener << "fork or wait failed";
    return false;
  }
  if (WIFSIGNALED(arg)) {
    *result_listener << "child killed by signal " << WTERMSIG(arg);
    return false;
  }
  if (WEXITSTATUS(arg) != code) {
    *result_listener << "child exited with code " << WEXITSTATUS(arg);
    return false;
  }
  return true;
}

// Runs fn in a forked child (no core dump), which then exits with 0; returns
// the child's wait status, or -1 if fork or waitpid failed. fn must only
// make async-signal-safe calls if the test has started threads.
int InForkedChild(const std::function<void()>& fn);

// Reads one byte from `fd` (made non-blocking), polling every 10 ms for at
// most 10 s: a helper process's bounded wait for its parent's go-ahead
// (async-signal-safe; works without poll(2)).
bool ReadByteWithin10s(int fd);

// The contents of `path`, or "" if it cannot be opened (say, the /proc
// file of a process that is gone).
std::string ReadFileOrEmpty(const std::string& path);

// The State: line of /proc/PID/status ("T (stopped)", "Z (zombie)"), or ""
// if the file is gone.
std::string ProcStatusState(pid_t pid);

// /proc/PID/stat's third field (the state letter), or '?'.
char ProcStatState(pid_t pid);

// Owns a file descriptor; closes it when destroyed.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    reset(other.release());
    return *this;
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// The directory for a test's files: $TEST_TMPDIR (the runner points it at
// the run's fresh working directory), else /tmp.
std::string TempDir();

// A path in TempDir() that does not exist yet; each call gives a new one.
std::string NewTempPath();

// A fresh empty file or directory in TempDir(), removed (recursively for a
// directory) when the object is destroyed.
class TempPath {
 public:
  static TempPath CreateFile(mode_t mode = 0644);
  static TempPath CreateDir(mode_t mode = 0755);

  TempPath(TempPath&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  TempPath& operator=(TempPath&&) = delete;
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  ~TempPath();

  const std::string& path() const { return path_; }

 private:
  explicit TempPath(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The page size, from sysconf.
size_t PageSize();

// Drops the effective and inheritable capabilities (and the permitted ones
// unless `keep_permitted`), staying uid 0: "unprivileged" without needing
// other ids, which a user namespace may not map. False if capget or capset
// fails.
bool DropCapabilities(bool keep_permitted);

// A pipe (O_CLOEXEC) whose ends close with it; a failed pipe2 is a test
// failure (both ends then invalid).
struct Pipe {
  Pipe();
  FileDescriptor r, w;
};

}  // namespace sandbox::testutil

#endif  // TEST_UTIL_TEST_UTIL_H_
