#include "sentry/confine/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "platform/systrap/systrap.h"

namespace sandbox::confine {
namespace {

using Args = std::array<uint64_t, 6>;

// What the filter does with a call, evaluated from the rules the way
// libseccomp compiles them: the first matching action; no match is the
// default action (denied).
enum class Verdict { kAllow, kErrno, kDenied };

Verdict Evaluate(const std::vector<Rule>& rules, int nr, const Args& a,
                 int* err = nullptr) {
  for (const Rule& r : rules) {
    if (r.nr != nr) continue;
    bool match = true;
    for (const ArgCheck& c : r.args) {
      if ((a[c.index] & c.mask) != c.value) match = false;
    }
    if (!match) continue;
    if (r.action == Rule::kErrno) {
      if (err != nullptr) *err = r.errno_value;
      return Verdict::kErrno;
    }
    return Verdict::kAllow;
  }
  return Verdict::kDenied;
}

std::vector<Rule> Rules() { return SentryAllowlist({.self_pid = 1234}); }

TEST(SentryAllowlistTest, RulesAreValid) {
  EXPECT_TRUE(CheckRules(Rules()).ok()) << CheckRules(Rules());
}

TEST(SentryAllowlistTest, CheckRulesRejectsBadRules) {
  EXPECT_FALSE(CheckRules({Rule{-1}}).ok());
  EXPECT_FALSE(CheckRules({Rule{SYS_read, {{6, 1, 1}}}}).ok());
  EXPECT_FALSE(CheckRules({Rule{SYS_read, {{1, 1, 1}, {1, 2, 2}}}}).ok());
  EXPECT_FALSE(CheckRules({Rule{SYS_read, {{1, 1, 3}}}}).ok());
  EXPECT_FALSE(
      CheckRules({Rule{SYS_read}, Rule{SYS_read, {}, Rule::kErrno, EPERM}})
          .ok());
}

// Host calls a compromised Sentry must not make, whatever the arguments.
TEST(SentryAllowlistTest, DangerousCallsHaveNoRule) {
  for (int nr : {SYS_execve,
                 SYS_execveat,
                 SYS_fork,
                 SYS_vfork,
                 SYS_socket,
                 SYS_socketpair,
                 SYS_connect,
                 SYS_bind,
                 SYS_listen,
                 SYS_accept,
                 SYS_accept4,
                 SYS_sendto,
                 SYS_ptrace,
                 SYS_process_vm_readv,
                 SYS_process_vm_writev,
                 SYS_mount,
                 SYS_umount2,
                 SYS_pivot_root,
                 SYS_chroot,
                 SYS_unshare,
                 SYS_setns,
                 SYS_bpf,
                 SYS_perf_event_open,
                 SYS_userfaultfd,
                 SYS_io_uring_setup,
                 SYS_keyctl,
                 SYS_add_key,
                 SYS_init_module,
                 SYS_finit_module,
                 SYS_kexec_load,
                 SYS_memfd_create,
                 SYS_capset,
                 SYS_setuid,
                 SYS_setresuid,
                 SYS_prctl,
                 SYS_seccomp,
                 SYS_mknodat,
                 SYS_unlinkat,
                 SYS_renameat2,
                 SYS_symlinkat,
                 SYS_linkat,
                 SYS_mkdirat,
                 SYS_chdir,
                 SYS_fchdir,
                 SYS_dup,
                 SYS_dup2,
                 SYS_dup3,
                 SYS_pidfd_getfd,
                 SYS_kcmp,
                 SYS_name_to_handle_at,
                 SYS_open_by_handle_at,
                 SYS_fanotify_init,
                 SYS_inotify_init1}) {
    for (const Rule& r : Rules()) {
      EXPECT_NE(r.nr, nr) << SyscallName(nr) << " has a rule: " << r.why;
    }
  }
}

// With host Unix sockets: calls on donated sockets only; still no socket,
// bind or connect (the Gofer makes those).
TEST(SentryAllowlistTest, HostSocketsAllowOnlyCallsOnHeldSockets) {
  auto rules = SentryAllowlist({.self_pid = 1234, .host_sockets = true});
  ASSERT_TRUE(CheckRules(rules).ok());
  EXPECT_EQ(Evaluate(rules, SYS_listen, {5, 16}), Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_accept4,
                     {5, 0, 0, uint64_t(SOCK_NONBLOCK | SOCK_CLOEXEC)}),
            Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_accept4, {5, 0, 0, 0}), Verdict::kDenied);
  EXPECT_EQ(Evaluate(rules, SYS_shutdown, {5, SHUT_WR}), Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_ioctl, {5, FIONREAD}), Verdict::kAllow);
  for (int nr : {SYS_socket, SYS_socketpair, SYS_bind, SYS_connect, SYS_accept,
                 SYS_sendto, SYS_chdir, SYS_fchdir}) {
    for (const Rule& r : rules) {
      EXPECT_NE(r.nr, nr) << SyscallName(nr) << " has a rule: " << r.why;
    }
  }
}

// With a network broker: options and shutdown on donated sockets only;
// still no socket, bind, connect, listen or accept (the broker makes and
// connects every host socket; docs/sentry-host-syscalls.md).
TEST(SentryAllowlistTest, HostNetworkAllowsOnlyCallsOnDonatedSockets) {
  auto rules = SentryAllowlist({.self_pid = 1234, .host_network = true});
  ASSERT_TRUE(CheckRules(rules).ok());
  EXPECT_EQ(Evaluate(rules, SYS_getsockopt, {5, SOL_SOCKET, SO_ERROR}),
            Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_setsockopt, {5, IPPROTO_TCP, 1}),
            Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_getsockopt, {5, SOL_NETLINK, 1}),
            Verdict::kDenied);
  EXPECT_EQ(Evaluate(rules, SYS_shutdown, {5, SHUT_WR}), Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_ioctl, {5, FIONREAD}), Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_recvmsg, {5, 0, 0}), Verdict::kAllow);
  for (int nr : {SYS_socket, SYS_socketpair, SYS_bind, SYS_connect, SYS_listen,
                 SYS_accept, SYS_accept4, SYS_sendto, SYS_recvfrom}) {
    for (const Rule& r : rules) {
      EXPECT_NE(r.nr, nr) << SyscallName(nr) << " has a rule: " << r.why;
    }
  }
  // Both options together: no rule twice.
  auto both = SentryAllowlist(
      {.self_pid = 1234, .host_sockets = true, .host_network = true});
  EXPECT_TRUE(CheckRules(both).ok());
}

TEST(SentryAllowlistTest, OpeningFailsWithEacces) {
  for (int nr : {SYS_open, SYS_openat, SYS_openat2}) {
    int err = 0;
    EXPECT_EQ(Evaluate(Rules(), nr, {uint64_t(AT_FDCWD), 0, O_RDONLY}, &err),
              Verdict::kErrno)
        << SyscallName(nr);
    EXPECT_EQ(err, EACCES);
  }
}

TEST(SentryAllowlistTest, CloneOnlyMakesThreads) {
  const uint64_t thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
                          CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS |
                          CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
  auto rules = Rules();
  EXPECT_EQ(Evaluate(rules, SYS_clone, {thread}), Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_clone, {SIGCHLD}), Verdict::kDenied);
  EXPECT_EQ(Evaluate(rules, SYS_clone, {thread | CLONE_NEWUSER}),
            Verdict::kDenied);
  EXPECT_EQ(Evaluate(rules, SYS_clone, {thread & ~uint64_t{CLONE_VM}}),
            Verdict::kDenied);
  int err = 0;
  EXPECT_EQ(Evaluate(rules, SYS_clone3, {}, &err), Verdict::kErrno);
  EXPECT_EQ(err, ENOSYS);
}

TEST(SentryAllowlistTest, NoExecutableMemory) {
  auto rules = Rules();
  for (int nr : {SYS_mmap, SYS_mprotect}) {
    EXPECT_EQ(Evaluate(rules, nr, {0, 4096, PROT_READ | PROT_WRITE}),
              Verdict::kAllow);
    EXPECT_EQ(Evaluate(rules, nr, {0, 4096, PROT_READ | PROT_EXEC}),
              Verdict::kDenied);
    EXPECT_EQ(Evaluate(rules, nr, {0, 4096, PROT_EXEC}), Verdict::kDenied);
  }
  EXPECT_EQ(Evaluate(rules, SYS_pkey_mprotect, {0, 4096, PROT_READ}),
            Verdict::kDenied);
}

TEST(SentryAllowlistTest, IoctlAndFcntlArePinned) {
  auto rules = Rules();
  EXPECT_EQ(Evaluate(rules, SYS_ioctl, {1, TCGETS}), Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_ioctl, {1, TIOCGWINSZ}), Verdict::kAllow);
  // The upper half of an int argument is not compared (the kernel ignores
  // it too).
  EXPECT_EQ(Evaluate(rules, SYS_ioctl, {1, 0xdead00000000 | TCGETS}),
            Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_ioctl, {1, TIOCSTI}), Verdict::kDenied);
  EXPECT_EQ(Evaluate(rules, SYS_ioctl, {1, TIOCSCTTY}), Verdict::kDenied);
  EXPECT_EQ(Evaluate(rules, SYS_ioctl, {1, FIONBIO}), Verdict::kDenied);
  // F_SETPIPE_SZ: the stubs' data pipes (platform/guest_copy.h).
  for (int cmd : {F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_SETPIPE_SZ}) {
    EXPECT_EQ(Evaluate(rules, SYS_fcntl, {1, uint64_t(cmd)}), Verdict::kAllow);
  }
  for (int cmd : {F_DUPFD, F_DUPFD_CLOEXEC, F_SETLK, F_SETOWN, F_SETSIG,
                  F_SETLEASE, F_NOTIFY, F_GETPIPE_SZ, F_ADD_SEALS}) {
    EXPECT_EQ(Evaluate(rules, SYS_fcntl, {1, uint64_t(cmd)}), Verdict::kDenied)
        << cmd;
  }
}

TEST(SentryAllowlistTest, SpliceOnlyNonBlocking) {
  // Guest-side copies queue a host file's bytes in a stub's data pipe; a
  // blocking splice could hang a Sentry thread on a full pipe.
  auto rules = Rules();
  EXPECT_EQ(Evaluate(rules, SYS_splice, {3, 0, 4, 0, 4096, SPLICE_F_NONBLOCK}),
            Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_splice, {3, 0, 4, 0, 4096, 0}),
            Verdict::kDenied);
  EXPECT_EQ(Evaluate(rules, SYS_splice,
                     {3, 0, 4, 0, 4096, SPLICE_F_NONBLOCK | SPLICE_F_MORE}),
            Verdict::kDenied);
}

TEST(SentryAllowlistTest, SignalsArePinned) {
  auto rules = Rules();
  EXPECT_EQ(Evaluate(rules, SYS_rt_sigqueueinfo, {1234, SIGUSR2}),
            Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_rt_sigqueueinfo, {1, SIGUSR2}),
            Verdict::kDenied);
  EXPECT_EQ(Evaluate(rules, SYS_tgkill, {77, 78, SIGCHLD}), Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_tgkill, {77, 78, 0}), Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_tgkill, {1234, 1235, SIGABRT}),
            Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_tgkill, {77, 78, SIGSTOP}), Verdict::kDenied);
  EXPECT_EQ(Evaluate(rules, SYS_kill, {77, SIGKILL}), Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_kill, {77, SIGTERM}), Verdict::kDenied);
  EXPECT_EQ(Evaluate(rules, SYS_pidfd_send_signal, {5, SIGKILL}),
            Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_pidfd_send_signal, {5, SIGSTOP}),
            Verdict::kDenied);
  EXPECT_EQ(Evaluate(rules, SYS_waitid, {3 /*P_PIDFD*/, 5, 0, WEXITED}),
            Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_waitid, {P_ALL, 0, 0, WEXITED}),
            Verdict::kDenied);
}

TEST(SentryAllowlistTest, FutexOperations) {
  auto rules = Rules();
  for (int op :
       {FUTEX_WAIT, FUTEX_WAKE, FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE,
        FUTEX_WAIT_BITSET_PRIVATE,
        FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, FUTEX_WAKE_BITSET}) {
    EXPECT_EQ(Evaluate(rules, SYS_futex, {0, uint64_t(op)}), Verdict::kAllow)
        << op;
  }
  for (int op : {FUTEX_REQUEUE, FUTEX_CMP_REQUEUE, FUTEX_WAKE_OP, FUTEX_LOCK_PI,
                 FUTEX_WAIT_REQUEUE_PI, FUTEX_CMP_REQUEUE_PI}) {
    EXPECT_EQ(Evaluate(rules, SYS_futex, {0, uint64_t(op)}), Verdict::kDenied)
        << op;
  }
}

TEST(SentryAllowlistTest, NewfstatatOnlyOnDescriptors) {
  auto rules = Rules();
  EXPECT_EQ(Evaluate(rules, SYS_newfstatat, {3, 0, 0, AT_EMPTY_PATH}),
            Verdict::kAllow);
  EXPECT_EQ(Evaluate(rules, SYS_newfstatat, {uint64_t(AT_FDCWD), 0, 0, 0}),
            Verdict::kDenied);
}

// Every call of the measured steady state (docs/sentry-host-syscalls.md,
// after `runsc boot` set-up) has a rule with its usual arguments.
TEST(SentryAllowlistTest, MeasuredCallsAreAllowed) {
  auto rules = Rules();
  const struct {
    int nr;
    Args args;
  } kMeasured[] = {
      {SYS_futex, {0, FUTEX_WAIT_PRIVATE}},
      {SYS_futex, {0, FUTEX_WAKE}},
      {SYS_sched_setaffinity, {}},
      {SYS_sched_getaffinity, {}},
      {SYS_fallocate, {3, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE}},
      {SYS_rt_sigprocmask, {}},
      {SYS_clone, {0x3d0f00}},
      {SYS_exit, {}},
      {SYS_madvise, {}},
      {SYS_mmap, {0, 4096, PROT_READ | PROT_WRITE}},
      {SYS_mprotect, {0, 4096, PROT_NONE}},
      {SYS_munmap, {}},
      {SYS_set_robust_list, {}},
      {SYS_rseq, {}},
      {SYS_epoll_ctl, {}},
      {SYS_epoll_wait, {}},
      {SYS_eventfd2, {0, EFD_CLOEXEC | EFD_NONBLOCK}},
      {SYS_pidfd_open, {77, 0}},
      {SYS_pidfd_send_signal, {5, SIGKILL}},
      {SYS_waitid, {3, 5, 0, WEXITED}},
      {SYS_read, {}},
      {SYS_write, {}},
      {SYS_poll, {}},
      {SYS_close, {}},
      {SYS_recvmsg, {3, 0, MSG_DONTWAIT | MSG_CMSG_CLOEXEC}},
      {SYS_recvmsg, {3, 0, MSG_CMSG_CLOEXEC}},
      {SYS_sendmsg, {3, 0, MSG_NOSIGNAL}},
      {SYS_fcntl, {3, F_GETFL}},
      {SYS_pread64, {}},
      {SYS_pwrite64, {}},
      {SYS_lseek, {}},
      {SYS_fstat, {}},
      {SYS_ftruncate, {}},
      {SYS_fsync, {}},
      {SYS_fdatasync, {}},
      {SYS_getrandom, {}},
      {SYS_sysinfo, {}},
      {SYS_rt_sigtimedwait, {}},
      {SYS_rt_sigqueueinfo, {1234, SIGUSR2}},
      {SYS_clock_nanosleep, {}},
      {SYS_ppoll, {}},
      {SYS_getpid, {}},
      {SYS_gettid, {}},
      {SYS_exit_group, {}},
      {SYS_getcpu, {}},
      {SYS_rt_sigreturn, {}},
      // Found by runsc do --debug-seccomp (threads, every program's end).
      {SYS_sched_getparam, {}},
      {SYS_sched_getscheduler, {}},
      {SYS_getuid, {}},
  };
  for (const auto& m : kMeasured) {
    EXPECT_EQ(Evaluate(rules, m.nr, m.args), Verdict::kAllow)
        << SyscallName(m.nr);
  }
}

TEST(SentryAllowlistTest, PlatformNeedsAreIncluded) {
  auto rules = Rules();
  for (const platform::HostSyscallNeed& n :
       platform::SystrapSeccompSyscalls()) {
    Args a = {};
    for (const auto& c : n.args) a[c.index] = c.value;
    EXPECT_EQ(Evaluate(rules, n.nr, a), Verdict::kAllow)
        << SyscallName(n.nr) << ": " << n.why;
  }
}

// Runs `body` in a forked child that installs the filter first; returns the
// wait status. The child's stderr goes to `err_fd` if >= 0.
int RunFiltered(SeccompMode mode, void (*body)(), int err_fd = -1) {
  pid_t pid = fork();
  if (pid == 0) {
    if (err_fd >= 0) dup2(err_fd, 2);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(100);
    auto rules = SentryAllowlist({.self_pid = getpid()});
    if (!InstallSentryFilter(rules, mode).ok()) _exit(101);
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(InstallSentryFilterTest, AllowedCallsWorkAndOpenFails) {
  int status = RunFiltered(SeccompMode::kKill, [] {
    if (getpid() <= 0) _exit(1);
    char c = 'x';
    if (write(2, &c, 0) != 0) _exit(2);
    if (open("/", O_RDONLY) != -1 || errno != EACCES) _exit(3);
    if (openat(AT_FDCWD, "/", O_RDONLY) != -1 || errno != EACCES) _exit(4);
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) _exit(5);
    munmap(p, 4096);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(InstallSentryFilterTest, DeniedCallKillsTheProcess) {
  int status = RunFiltered(SeccompMode::kKill, [] {
    socket(AF_UNIX, SOCK_STREAM, 0);
    _exit(7);
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

TEST(InstallSentryFilterTest, ExecutableMappingKillsTheProcess) {
  int status = RunFiltered(SeccompMode::kKill, [] {
    mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1,
         0);
    _exit(7);
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

TEST(InstallSentryFilterTest, TraceModeReportsAndFailsWithEnosys) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  int status = RunFiltered(
      SeccompMode::kTrace,
      [] {
        if (socket(AF_UNIX, SOCK_STREAM, 0) != -1 || errno != ENOSYS) _exit(1);
      },
      p[1]);
  close(p[1]);
  char buf[512] = {};
  ssize_t n = read(p[0], buf, sizeof(buf) - 1);
  close(p[0]);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_GT(n, 0);
  EXPECT_NE(std::string(buf).find("denied host syscall 41 (socket) arg0=1 "),
            std::string::npos)
      << buf;
}

}  // namespace
}  // namespace sandbox::confine
