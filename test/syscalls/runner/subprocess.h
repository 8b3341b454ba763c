// Runs one command in its own process group with a deadline, streaming its
// merged stdout and stderr to a callback.
#ifndef TEST_SYSCALLS_RUNNER_SUBPROCESS_H_
#define TEST_SYSCALLS_RUNNER_SUBPROCESS_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sandbox::syscall_test {

struct SubprocessOptions {
  // argv[0] must be a path (no PATH search).
  std::vector<std::string> argv;
  // Complete environment of the child ("NAME=value").
  std::vector<std::string> env;
  // Working directory of the child; must exist.
  std::string cwd;
  absl::Duration timeout = absl::Seconds(60);
  // After the child exits, how long to keep reading output that processes
  // it left behind are still writing (they are killed first).
  absl::Duration drain = absl::Seconds(2);
};

struct SubprocessResult {
  // Exactly one of these describes how the child ended.
  int exit_code = -1;      // >= 0 if it exited.
  int signal = 0;          // > 0 if a signal killed it.
  bool timed_out = false;  // The deadline passed; the group was SIGKILLed.
  absl::Duration elapsed;

  // "exit 0", "exit 3", "killed by signal 11 (Segmentation fault)",
  // "timed out after 60s".
  std::string Describe() const;
  bool Succeeded() const { return !timed_out && exit_code == 0; }
};

// Starts opts.argv in a new process group, stdin from /dev/null, stdout and
// stderr into one pipe whose bytes go to on_output as they arrive. On timeout
// the whole group gets SIGKILL; after the child exits, whatever is left of
// its group is killed too. Errors only when the child cannot be started
// (fork failure, missing cwd, exec failure).
absl::StatusOr<SubprocessResult> RunSubprocess(
    const SubprocessOptions& opts,
    const std::function<void(std::string_view)>& on_output);

// A fresh directory `<parent>/<prefix>XXXXXX`, removed with its contents by
// RemoveTree.
absl::StatusOr<std::string> MakeTempDir(const std::string& parent,
                                        const std::string& prefix);
// Removes a directory tree without following symlinks; best effort (a test
// may leave files it made unremovable).
void RemoveTree(const std::string& path);

// Resolves a command name as execvp would: a name with a '/' is taken as is;
// otherwise PATH is searched. Returns "" if no executable file is found.
std::string FindExecutable(const std::string& name);

}  // namespace sandbox::syscall_test

#endif  // TEST_SYSCALLS_RUNNER_SUBPROCESS_H_
