#include "runsc-compat/do_command.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "sentry/boot/boot.h"
#include "sentry/boot/boot_spec.h"

extern char** environ;

namespace sandbox::runsc {
namespace {

constexpr char kDoHelp[] =
    R"(Usage: runsc do [flags] -- PROGRAM [ARGS...]

Runs PROGRAM in a new sandbox with the caller's arguments, environment,
working directory and standard input/output/error, and exits with its
status (128+N when it is killed by signal N). SIGINT, SIGTERM, SIGHUP,
SIGQUIT, SIGUSR1 and SIGUSR2 sent to runsc are passed to the program. When
runsc ends, every process of the sandbox ends with it.

PROGRAM must be an absolute path to a statically linked x86-64 ELF
executable. Until the Gofer exists the sandbox's root file system is a
tmpfs holding only a copy of PROGRAM at its path, the caller's working
directory (empty), and /tmp and /dev/shm (separate tmpfs mounts); files the
program writes there vanish with the sandbox. There is no PATH lookup and
no dynamic linking.

Flags:
  --strace            log every syscall with its arguments and result
  --strace-summary    print a per-syscall count table when the sandbox ends
  --debug-log=FILE    write strace and debug lines to FILE (default: stderr)
  --hostname=NAME     the sandbox's host name (default: the host's)
  --unconfined        debugging only: the Sentry skips its confinement
                      (namespaces, empty root, capabilities, seccomp)
  --debug-seccomp     a host syscall outside the Sentry's seccomp allowlist
                      is reported on stderr and fails with ENOSYS instead of
                      killing the sandbox
  -h, --help          show this help

Exit status: the program's, or 125 if the sandbox failed, 126 if PROGRAM
cannot be executed (not ELF, not executable, no permission), 127 if it does
not exist.
)";

int Usage(const std::string& msg) {
  absl::FPrintF(stderr, "runsc do: %s\nTry 'runsc do --help'.\n", msg);
  return 2;
}

// The signals forwarded to the sandbox.
constexpr int kForwarded[] = {SIGINT,  SIGTERM, SIGHUP,
                              SIGQUIT, SIGUSR1, SIGUSR2};

// Moves `fd` to `target` (close-on-exec cleared).
bool MoveFd(int fd, int target) {
  if (fd == target) return fcntl(fd, F_SETFD, 0) == 0;
  return dup2(fd, target) == target;
}

}  // namespace

void PrintDoHelp(int fd) { (void)!write(fd, kDoHelp, sizeof(kDoHelp) - 1); }

int DoCommand(int argc, char** argv) {
  boot::BootSpec spec;
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      PrintDoHelp(1);
      return 0;
    } else if (a == "--strace") {
      spec.strace = true;
    } else if (a == "--strace-summary") {
      spec.strace_summary = true;
    } else if (a.rfind("--debug-log=", 0) == 0) {
      spec.debug_log = std::string(a.substr(12));
    } else if (a == "--unconfined") {
      spec.unconfined = true;
    } else if (a == "--debug-seccomp") {
      spec.debug_seccomp = true;
    } else if (a.rfind("--hostname=", 0) == 0) {
      spec.hostname = std::string(a.substr(11));
    } else if (!a.empty() && a[0] == '-') {
      return Usage(absl::StrFormat("unknown flag %s", a));
    } else {
      break;  // The program, without "--".
    }
  }
  if (i >= argc) return Usage("no PROGRAM given");
  std::string program = argv[i];
  if (program.empty() || program[0] != '/') {
    absl::FPrintF(stderr,
                  "runsc do: %s: PROGRAM must be an absolute path (no PATH "
                  "lookup until the Gofer exists)\n",
                  program);
    return 127;
  }
  for (int j = i; j < argc; ++j) spec.argv.push_back(argv[j]);
  for (char** e = environ; *e != nullptr; ++e) spec.envp.push_back(*e);
  spec.exe_path = program;
  char cwd[PATH_MAX];
  spec.cwd = getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : "/";
  if (spec.hostname.empty()) {
    char host[HOST_NAME_MAX + 1] = {};
    if (gethostname(host, sizeof(host) - 1) == 0) spec.hostname = host;
  }

  // The program, opened here as execve would check it.
  int exe = open(program.c_str(), O_RDONLY | O_CLOEXEC);
  if (exe < 0) {
    int e = errno;
    absl::FPrintF(stderr, "runsc do: cannot execute %s: %s\n", program,
                  strerror(e));
    return e == ENOENT || e == ENOTDIR ? 127 : 126;
  }
  struct stat st;
  if (fstat(exe, &st) != 0 || !S_ISREG(st.st_mode) ||
      access(program.c_str(), X_OK) != 0) {
    absl::FPrintF(stderr, "runsc do: cannot execute %s: %s\n", program,
                  strerror(S_ISDIR(st.st_mode) ? EACCES : EACCES));
    close(exe);
    return 126;
  }

  // The root file system's content (until the Gofer serves it): /tmp and
  // /dev/shm first, so that a working directory or program below them lands
  // in those mounts; the working directory with its host mode and owner;
  // the program, copied by the Sentry from the FD passed as kExecFd.
  spec.seed.push_back({boot::SeedEntry::kTmpfsMount, "/tmp", 01777, 0, 0, -1});
  spec.seed.push_back(
      {boot::SeedEntry::kTmpfsMount, "/dev/shm", 01777, 0, 0, -1});
  struct stat cwd_st;
  if (spec.cwd != "/" && stat(spec.cwd.c_str(), &cwd_st) == 0 &&
      S_ISDIR(cwd_st.st_mode)) {
    spec.seed.push_back({boot::SeedEntry::kDir, spec.cwd,
                         static_cast<uint32_t>(cwd_st.st_mode & 07777),
                         cwd_st.st_uid, cwd_st.st_gid, -1});
  }
  spec.seed.push_back({boot::SeedEntry::kFile, program,
                       static_cast<uint32_t>(st.st_mode & 07777), st.st_uid,
                       st.st_gid, boot::kExecFd});

  auto spec_fd = boot::WriteBootSpecToMemfd(spec);
  if (!spec_fd.ok()) {
    absl::FPrintF(stderr, "runsc do: %s\n", spec_fd.status().ToString());
    return 125;
  }
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    absl::FPrintF(stderr, "runsc do: pipe2: %s\n", strerror(errno));
    return 125;
  }

  // Block the forwarded signals (and SIGCHLD) before forking so none is
  // lost; the Sentry restores its mask before exec.
  sigset_t set, old;
  sigemptyset(&set);
  for (int s : kForwarded) sigaddset(&set, s);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, &old);

  pid_t parent = getpid();
  pid_t child = fork();
  if (child < 0) {
    absl::FPrintF(stderr, "runsc do: fork: %s\n", strerror(errno));
    return 125;
  }
  if (child == 0) {
    // The Sentry: dies with the CLI. Only async-signal-safe calls here.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    // Move the three FDs to 3, 4, 5 through a range above them.
    int a = fcntl(*spec_fd, F_DUPFD, 10);
    int b = fcntl(exe, F_DUPFD, 10);
    int c = fcntl(status_pipe[1], F_DUPFD, 10);
    if (a < 0 || b < 0 || c < 0 || !MoveFd(a, boot::kSpecFd) ||
        !MoveFd(b, boot::kExecFd) || !MoveFd(c, boot::kStatusFd)) {
      _exit(125);
    }
    syscall(SYS_close_range, 6, ~0u, 0);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    char self[] = "/proc/self/exe";
    char arg0[] = "runsc-sentry";
    char arg1[] = "boot";
    char* args[] = {arg0, arg1, nullptr};
    char* env[] = {nullptr};
    execve(self, args, env);
    _exit(125);
  }
  close(*spec_fd);
  close(exe);
  close(status_pipe[1]);

  // Forward signals until the Sentry exits.
  int wstatus = 0;
  for (;;) {
    siginfo_t info;
    int sig = sigwaitinfo(&set, &info);
    if (sig < 0) continue;
    if (sig == SIGCHLD) {
      pid_t r = waitpid(child, &wstatus, WNOHANG);
      if (r == child) break;
      continue;
    }
    kill(child, sig);
  }

  boot::BootStatus bs;
  ssize_t n = read(status_pipe[0], &bs, sizeof(bs));
  close(status_pipe[0]);
  if (n != sizeof(bs) || bs.magic != boot::BootStatus::kMagic) {
    if (WIFSIGNALED(wstatus)) {
      absl::FPrintF(stderr, "runsc do: the sandbox was killed by signal %d%s\n",
                    WTERMSIG(wstatus),
                    WTERMSIG(wstatus) == SIGSYS
                        ? " (a host syscall outside the Sentry's seccomp "
                          "allowlist; --debug-seccomp names it)"
                        : "");
    } else {
      absl::FPrintF(stderr,
                    "runsc do: the sandbox ended unexpectedly "
                    "(exit status %d)\n",
                    WEXITSTATUS(wstatus));
    }
    return 125;
  }
  switch (bs.kind) {
    case boot::BootStatus::kGuestExited:
      return bs.value & 0xff;
    case boot::BootStatus::kExecFailed:
      return bs.value == ENOENT ? 127 : 126;
    default:
      return 125;
  }
}

}  // namespace sandbox::runsc
