#include "test/syscalls/runner/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace sandbox::syscall_test {
namespace {

absl::Status ErrnoStatus(absl::string_view what, int err) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(err)));
}

// Reads what is available from fd into on_output; false on EOF or error.
bool ReadAvailable(int fd,
                   const std::function<void(std::string_view)>& on_output) {
  char buf[16384];
  ssize_t n = read(fd, buf, sizeof(buf));
  if (n > 0) {
    on_output(std::string_view(buf, static_cast<size_t>(n)));
    return true;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  return false;
}

int PollMillis(absl::Duration d) {
  if (d <= absl::ZeroDuration()) return 0;
  return static_cast<int>(
      std::min<int64_t>(absl::ToInt64Milliseconds(d) + 1, 100));
}

// In the child after fork: only async-signal-safe calls.
[[noreturn]] void ExecChild(int out_fd, int err_pipe, const char* cwd,
                            char* const argv[], char* const envp[]) {
  auto fail = [err_pipe](int step) {
    int payload[2] = {step, errno};
    (void)!write(err_pipe, payload, sizeof(payload));
    _exit(127);
  };
  setpgid(0, 0);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0) fail(1);
  if (dup2(devnull, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0) {
    fail(2);
  }
  if (chdir(cwd) != 0) fail(3);
  // The test starts with stdio only: whatever else the runner inherited is
  // closed on exec (err_pipe stays open until then).
  syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC);
  // Undo anything the runner's own environment may have changed.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(argv[0], argv, envp);
  fail(4);
  _exit(127);  // Not reached: fail() exits.
}

}  // namespace

std::string SubprocessResult::Describe() const {
  if (timed_out) {
    return absl::StrCat("timed out after ", absl::FormatDuration(elapsed));
  }
  if (signal > 0) {
    return absl::StrCat("killed by signal ", signal, " (", strsignal(signal),
                        ")");
  }
  return absl::StrCat("exit ", exit_code);
}

absl::StatusOr<SubprocessResult> RunSubprocess(
    const SubprocessOptions& opts,
    const std::function<void(std::string_view)>& on_output) {
  if (opts.argv.empty()) return absl::InvalidArgumentError("empty argv");
  std::vector<char*> argv;
  for (const std::string& a : opts.argv)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : opts.env)
    envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return ErrnoStatus("pipe2", errno);
  // Reports exec failure: closed by a successful exec (O_CLOEXEC).
  int err[2];
  if (pipe2(err, O_CLOEXEC) != 0) {
    int e = errno;
    close(out[0]);
    close(out[1]);
    return ErrnoStatus("pipe2", e);
  }
  absl::Time start = absl::Now();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(out[0]);
    close(out[1]);
    close(err[0]);
    close(err[1]);
    return ErrnoStatus("fork", e);
  }
  if (pid == 0)
    ExecChild(out[1], err[1], opts.cwd.c_str(), argv.data(), envp.data());
  // Both sides set the group so kill(-pid) works whichever runs first.
  setpgid(pid, pid);
  close(out[1]);
  close(err[1]);

  int payload[2];
  ssize_t n;
  do {
    n = read(err[0], payload, sizeof(payload));
  } while (n < 0 && errno == EINTR);
  close(err[0]);
  if (n == sizeof(payload)) {
    waitpid(pid, nullptr, 0);
    close(out[0]);
    static constexpr const char* kSteps[] = {"", "open /dev/null", "dup2",
                                             "chdir", "execve"};
    int step = payload[0] >= 1 && payload[0] <= 4 ? payload[0] : 0;
    return ErrnoStatus(absl::StrCat(kSteps[step], " ", opts.argv[0]),
                       payload[1]);
  }

  SubprocessResult result;
  absl::Time deadline = start + opts.timeout;
  bool pipe_open = true;
  int status = 0;
  bool exited = false;
  while (!exited) {
    absl::Time now = absl::Now();
    if (now >= deadline) {
      kill(-pid, SIGKILL);
      result.timed_out = true;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    if (pipe_open) {
      struct pollfd pfd = {out[0], POLLIN, 0};
      int r = poll(&pfd, 1, PollMillis(deadline - now));
      if (r > 0) pipe_open = ReadAvailable(out[0], on_output);
    } else {
      usleep(10000);
    }
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) exited = true;
  }
  result.elapsed = absl::Now() - start;
  // Stragglers in the group would keep the pipe open.
  kill(-pid, SIGKILL);
  absl::Time drain_deadline = absl::Now() + opts.drain;
  while (pipe_open) {
    absl::Duration left = drain_deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    struct pollfd pfd = {out[0], POLLIN, 0};
    int r = poll(&pfd, 1, PollMillis(left));
    if (r > 0) pipe_open = ReadAvailable(out[0], on_output);
  }
  close(out[0]);
  if (!result.timed_out) {
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  }
  return result;
}

absl::StatusOr<std::string> MakeTempDir(const std::string& parent,
                                        const std::string& prefix) {
  std::string templ = absl::StrCat(parent, "/", prefix, "XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) {
    return ErrnoStatus(absl::StrCat("mkdtemp ", templ), errno);
  }
  return templ;
}

void RemoveTree(const std::string& path) {
  auto remove_one = [](const char* p, const struct stat*, int type,
                       struct FTW*) -> int {
    if (type == FTW_DP || type == FTW_D || type == FTW_DNR) {
      if (rmdir(p) != 0) {
        chmod(p, 0700);
        rmdir(p);
      }
    } else {
      unlink(p);
    }
    return 0;  // Keep going: best effort.
  };
  // A directory the test made unreadable cannot be walked: open it up first.
  auto open_up = [](const char* p, const struct stat* st, int type,
                    struct FTW*) -> int {
    if (type == FTW_D || type == FTW_DNR) {
      if ((st->st_mode & 0700) != 0700) chmod(p, 0700);
    }
    return 0;
  };
  nftw(path.c_str(), open_up, 16, FTW_PHYS);
  nftw(path.c_str(), remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

std::string FindExecutable(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) {
    return access(name.c_str(), X_OK) == 0 ? name : "";
  }
  const char* path = getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", name);
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

}  // namespace sandbox::syscall_test
