#include "runsc-compat/do_command.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "broker/protocol/codec.h"
#include "broker/server/server.h"
#include "runsc-compat/do_flags.h"
#include "runsc-compat/network_flags.h"
#include "sentry/boot/boot.h"
#include "sentry/boot/boot_spec.h"

extern char** environ;

namespace sandbox::runsc {
namespace {

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

// The Sentry's first Gofer connection (after boot's spec, exec and status
// FDs).
constexpr int kFirstGoferFd = boot::kStatusFd + 1;

// The most FDs MoveFds moves: spec, exec, status, the Gofer's and the
// broker's connection (the broker: its connection and the published
// ports' listeners).
constexpr size_t kMaxMoved =
    3 + 1 + std::max(boot::kMaxGoferMounts, boot::kMaxPublishedPorts);

// Moves from[i] to to[i] for each i < n, close-on-exec cleared (after fork:
// no allocation). Each is first copied above every target, so that no move
// overwrites an FD still to be moved.
bool MoveFds(const int* from, const int* to, size_t n) {
  if (n > kMaxMoved) return false;
  int above = 0;
  for (size_t i = 0; i < n; ++i) above = std::max(above, to[i] + 1);
  int tmp[kMaxMoved];
  for (size_t i = 0; i < n; ++i) {
    tmp[i] = fcntl(from[i], F_DUPFD, above);
    if (tmp[i] < 0) return false;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!MoveFd(tmp[i], to[i])) return false;
  }
  return true;
}

}  // namespace

int DoCommand(int argc, char** argv) {
  DoOptions o;
  absl::StatusOr<int> program_at = ParseDoFlags(argc, argv, &o);
  if (!program_at.ok()) {
    return Usage(std::string(program_at.status().message()));
  }
  if (o.help) {
    PrintDoHelp(1);
    return 0;
  }
  const int i = *program_at;
  boot::BootSpec& spec = o.spec;
  const bool host_root = o.root != RootFlag::kTmpfs;
  const bool host_root_ro = o.root == RootFlag::kHostRo;
  const std::vector<BindFlag>& binds = o.binds;
  const NetworkFlags& net = o.net;

  // The network: the policy checked (and its files read) here, so that a
  // bad entry is a usage error; the published ports' host sockets made
  // here too (a port in use fails before anything starts), then handed to
  // the broker, the only process that keeps them.
  bool egress_enforcing = false;
  absl::StatusOr<std::vector<std::string>> policy_args =
      BrokerPolicyArgs(net, &egress_enforcing);
  if (!policy_args.ok())
    return Usage(std::string(policy_args.status().message()));
  std::vector<broker::Listener> listeners;
  if (absl::Status ls = broker::OpenPublishListeners(net.publishes, &listeners);
      !ls.ok()) {
    absl::FPrintF(stderr, "runsc do: %s\n", ls.message());
    return 125;
  }
  spec.memory_limit = o.limits.memory;
  spec.pids_limit = o.limits.pids;
  std::string program = argv[i];
  for (int j = i; j < argc; ++j) spec.argv.push_back(argv[j]);
  for (char** e = environ; *e != nullptr; ++e) spec.envp.push_back(*e);
  spec.exe_path = program;
  char cwd[PATH_MAX];
  spec.cwd = getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : "/";
  if (spec.hostname.empty()) {
    char host[HOST_NAME_MAX + 1] = {};
    if (gethostname(host, sizeof(host) - 1) == 0) spec.hostname = host;
  }

  // /tmp and /dev/shm first, so that a working directory or program below
  // them lands in those mounts.
  spec.seed.push_back({boot::SeedEntry::kTmpfsMount, "/tmp", 01777, 0, 0, -1});
  spec.seed.push_back(
      {boot::SeedEntry::kTmpfsMount, "/dev/shm", 01777, 0, 0, -1});
  int exe = -1;
  if (!host_root) {
    // The tmpfs root holds a copy of the program (opened here as execve
    // would check it) and the working directory, empty.
    if (program.empty() || program[0] != '/') {
      absl::FPrintF(stderr,
                    "runsc do: %s: with --root=tmpfs PROGRAM must be an "
                    "absolute path (it is copied from the host)\n",
                    program);
      return 127;
    }
    exe = open(program.c_str(), O_RDONLY | O_CLOEXEC);
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
                    strerror(EACCES));
      close(exe);
      return 126;
    }
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
  }

  // The Gofer's connections: the root's (host mode) first, then one per
  // bind. The Sentry gets its ends at kFirstGoferFd and up.
  std::vector<std::string> gofer_args = {"runsc-gofer", "gofer", "--root=/",
                                         "--root-ro"};
  if (geteuid() != 0) gofer_args.push_back("--userns");
  std::vector<int> sentry_ends, gofer_ends;
  auto close_all = [&] {
    for (int fd : sentry_ends) close(fd);
    for (int fd : gofer_ends) close(fd);
    if (exe >= 0) close(exe);
  };
  const size_t conns = (host_root ? 1 : 0) + binds.size();
  for (size_t c = 0; c < conns; ++c) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      absl::FPrintF(stderr, "runsc do: socketpair: %s\n", strerror(errno));
      close_all();
      return 125;
    }
    sentry_ends.push_back(sv[0]);
    gofer_ends.push_back(sv[1]);
    const int sentry_fd = kFirstGoferFd + static_cast<int>(c);
    const int gofer_fd = 3 + static_cast<int>(c);
    if (host_root && c == 0) {
      spec.root = host_root_ro ? boot::RootKind::kGoferReadOnly
                               : boot::RootKind::kGofer;
      spec.root_gofer_fd = sentry_fd;
      gofer_args.push_back(absl::StrFormat("--serve=%d:ro", gofer_fd));
    } else {
      const BindFlag& b = binds[c - (host_root ? 1 : 0)];
      spec.gofer_mounts.push_back(
          {b.guest, sentry_fd, b.read_only, true, b.suid, b.uds});
      gofer_args.push_back(absl::StrFormat(
          "--volume=%d:%s%s%s%s", gofer_fd, b.host, b.read_only ? ":ro" : "",
          b.suid ? ":suid" : "", b.uds ? ":uds" : ""));
    }
  }

  // The broker's connection (SOCK_SEQPACKET: one message a record,
  // broker/protocol) and command line: its end at 3, the listeners from 4.
  std::vector<std::string> broker_args;
  int broker_sentry_end = -1, broker_end = -1;
  if (NeedsBroker(net)) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      absl::FPrintF(stderr, "runsc do: socketpair: %s\n", strerror(errno));
      close_all();
      return 125;
    }
    broker_sentry_end = sv[0];
    broker_end = sv[1];
    spec.broker_fd = kFirstGoferFd + static_cast<int>(sentry_ends.size());
    spec.network =
        net.host ? boot::NetworkMode::kHost : boot::NetworkMode::kNone;
    spec.egress_policy = egress_enforcing;
    broker_args = {"runsc-broker", "broker", "--fd=3"};
    for (size_t k = 0; k < listeners.size(); ++k) {
      const broker::Publish& p = listeners[k].publish;
      broker_args.push_back(absl::StrFormat("--listener=%d:%s", 4 + k,
                                            broker::PublishToString(p)));
      spec.published.push_back(
          {p.proto == broker::Proto::kUdp ? boot::PublishedPort::kUdp
                                          : boot::PublishedPort::kTcp,
           p.guest_port, broker::EndpointToString(p.host)});
    }
    for (const std::string& a : *policy_args) broker_args.push_back(a);
  }

  auto spec_fd = boot::WriteBootSpecToMemfd(spec);
  if (!spec_fd.ok()) {
    absl::FPrintF(stderr, "runsc do: %s\n", spec_fd.status().ToString());
    close_all();
    return 125;
  }
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    absl::FPrintF(stderr, "runsc do: pipe2: %s\n", strerror(errno));
    close_all();
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
  pid_t gofer = -1;
  if (conns > 0) {
    std::vector<int> gofer_targets;
    for (size_t c = 0; c < gofer_ends.size(); ++c) {
      gofer_targets.push_back(3 + static_cast<int>(c));
    }
    std::vector<char*> gargv;
    for (std::string& a : gofer_args) gargv.push_back(a.data());
    gargv.push_back(nullptr);
    gofer = fork();
    if (gofer < 0) {
      absl::FPrintF(stderr, "runsc do: fork: %s\n", strerror(errno));
      close_all();
      return 125;
    }
    if (gofer == 0) {
      // The Gofer: dies with the CLI, ends when the Sentry closes its
      // connections. Terminal signals are for the sandbox, not for it.
      // Only async-signal-safe calls here.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(125);
      setpgid(0, 0);
      for (int s : kForwarded) signal(s, SIG_IGN);
      signal(SIGPIPE, SIG_IGN);
      if (!MoveFds(gofer_ends.data(), gofer_targets.data(),
                   gofer_ends.size())) {
        _exit(125);
      }
      int null = open("/dev/null", O_RDWR | O_CLOEXEC);
      if (null < 0 || !MoveFd(null, 0) || dup2(0, 1) != 1) _exit(125);
      syscall(SYS_close_range, 3 + gofer_ends.size(), ~0u, 0);
      sigprocmask(SIG_SETMASK, &old, nullptr);
      char self[] = "/proc/self/exe";
      char* env[] = {nullptr};
      execve(self, gargv.data(), env);
      _exit(125);
    }
    for (int fd : gofer_ends) close(fd);
    gofer_ends.clear();
  }

  pid_t broker_pid = -1;
  if (broker_end >= 0) {
    std::vector<int> from = {broker_end}, to = {3};
    for (size_t k = 0; k < listeners.size(); ++k) {
      from.push_back(listeners[k].fd.get());
      to.push_back(4 + static_cast<int>(k));
    }
    std::vector<char*> bargv;
    for (std::string& a : broker_args) bargv.push_back(a.data());
    bargv.push_back(nullptr);
    broker_pid = fork();
    if (broker_pid < 0) {
      absl::FPrintF(stderr, "runsc do: fork: %s\n", strerror(errno));
      if (gofer > 0) kill(gofer, SIGKILL);
      close_all();
      return 125;
    }
    if (broker_pid == 0) {
      // The broker: dies with the CLI, ends when the Sentry's end of its
      // connection closes (the Sentry died or exited). Only
      // async-signal-safe calls here.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(125);
      setpgid(0, 0);
      for (int s : kForwarded) signal(s, SIG_IGN);
      signal(SIGPIPE, SIG_IGN);
      if (!MoveFds(from.data(), to.data(), from.size())) _exit(125);
      int null = open("/dev/null", O_RDWR | O_CLOEXEC);
      if (null < 0 || !MoveFd(null, 0) || dup2(0, 1) != 1) _exit(125);
      syscall(SYS_close_range, 4 + listeners.size(), ~0u, 0);
      sigprocmask(SIG_SETMASK, &old, nullptr);
      char self[] = "/proc/self/exe";
      char* env[] = {nullptr};
      execve(self, bargv.data(), env);
      _exit(125);
    }
    close(broker_end);
    listeners.clear();  // the broker's now
  }

  std::vector<int> sentry_from = {*spec_fd, status_pipe[1]};
  std::vector<int> sentry_to = {boot::kSpecFd, boot::kStatusFd};
  if (exe >= 0) {
    sentry_from.push_back(exe);
    sentry_to.push_back(boot::kExecFd);
  }
  for (size_t c = 0; c < sentry_ends.size(); ++c) {
    sentry_from.push_back(sentry_ends[c]);
    sentry_to.push_back(kFirstGoferFd + static_cast<int>(c));
  }
  if (broker_sentry_end >= 0) {
    sentry_from.push_back(broker_sentry_end);
    sentry_to.push_back(spec.broker_fd);
  }
  pid_t child = fork();
  if (child < 0) {
    absl::FPrintF(stderr, "runsc do: fork: %s\n", strerror(errno));
    if (gofer > 0) kill(gofer, SIGKILL);
    if (broker_pid > 0) kill(broker_pid, SIGKILL);
    close_all();
    return 125;
  }
  if (child == 0) {
    // The Sentry: dies with the CLI. Only async-signal-safe calls here.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    // Spec, status pipe and program (tmpfs root) at 3, 5 and 4; the
    // Gofer connections from kFirstGoferFd on.
    if (!MoveFds(sentry_from.data(), sentry_to.data(), sentry_from.size())) {
      _exit(125);
    }
    syscall(SYS_close_range,
            kFirstGoferFd + sentry_ends.size() + (broker_sentry_end >= 0), ~0u,
            0);
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
  close(status_pipe[1]);
  close_all();
  if (broker_sentry_end >= 0) close(broker_sentry_end);

  // Forward signals until the Sentry exits.
  int wstatus = 0;
  int gofer_status = 0, broker_status = 0;
  bool gofer_reaped = gofer < 0;
  bool broker_reaped = broker_pid < 0;
  auto reap_helpers = [&] {
    if (!gofer_reaped && waitpid(gofer, &gofer_status, WNOHANG) == gofer) {
      gofer_reaped = true;
    }
    if (!broker_reaped &&
        waitpid(broker_pid, &broker_status, WNOHANG) == broker_pid) {
      broker_reaped = true;
    }
  };
  for (;;) {
    siginfo_t info;
    int sig = sigwaitinfo(&set, &info);
    if (sig < 0) continue;
    if (sig == SIGCHLD) {
      reap_helpers();
      pid_t r = waitpid(child, &wstatus, WNOHANG);
      if (r == child) break;
      continue;
    }
    kill(child, sig);
  }
  // The Sentry is gone, and with it the last ends of the Gofer's and the
  // broker's connections: they end by themselves. Give them a moment, then
  // kill them.
  {
    timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 2;
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    for (;;) {
      reap_helpers();
      if (gofer_reaped && broker_reaped) break;
      timespec now, left;
      clock_gettime(CLOCK_MONOTONIC, &now);
      int64_t ns = (deadline.tv_sec - now.tv_sec) * 1000000000LL +
                   (deadline.tv_nsec - now.tv_nsec);
      if (ns <= 0) {
        if (!gofer_reaped) {
          kill(gofer, SIGKILL);
          waitpid(gofer, &gofer_status, 0);
        }
        if (!broker_reaped) {
          kill(broker_pid, SIGKILL);
          waitpid(broker_pid, &broker_status, 0);
        }
        break;
      }
      left.tv_sec = ns / 1000000000LL;
      left.tv_nsec = ns % 1000000000LL;
      sigtimedwait(&chld, nullptr, &left);
    }
  }
  const bool gofer_failed =
      gofer > 0 && WIFEXITED(gofer_status) && WEXITSTATUS(gofer_status) != 0;
  const bool broker_failed = broker_pid > 0 && WIFEXITED(broker_status) &&
                             WEXITSTATUS(broker_status) != 0;

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
      if (gofer_failed) {
        absl::FPrintF(stderr,
                      "runsc do: the Gofer (the host's files) failed to "
                      "start: exit status %d\n",
                      WEXITSTATUS(gofer_status));
      }
      if (broker_failed) {
        absl::FPrintF(stderr,
                      "runsc do: the network broker failed: exit status %d\n",
                      WEXITSTATUS(broker_status));
      }
      return 125;
  }
}

}  // namespace sandbox::runsc
