#include "sentry/confine/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <ucontext.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "platform/systrap/systrap.h"

namespace sandbox::confine {
namespace {

constexpr uint64_t kAll = ~uint64_t{0};
// An `int` (or `unsigned int`) argument: the kernel reads only the low 32
// bits, and callers going through syscall(2)'s varargs may leave the upper
// ones undefined, so only the low half is compared.
constexpr uint64_t kInt = 0xffffffffu;

Rule Allow(int nr, const char* why) {
  return Rule{nr, {}, Rule::kAllow, 0, why};
}

Rule AllowIf(int nr, std::vector<ArgCheck> args, const char* why) {
  return Rule{nr, std::move(args), Rule::kAllow, 0, why};
}

Rule Fail(int nr, int err, const char* why) {
  return Rule{nr, {}, Rule::kErrno, err, why};
}

// The flags glibc's pthread_create passes to clone (sysdeps/unix/sysv/linux/
// createthread.c); nothing else may clone: no new process, no namespace.
constexpr uint64_t kThreadCloneFlags =
    CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
    CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;

// futex operations, with FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME
// ignored: glibc mutexes, condition variables and pthread_join, Abseil's
// Mutex, libstdc++'s std::future (WAKE_BITSET), the platform (shared
// WAIT/WAKE). No requeue, PI, WAKE_OP or FUTEX_WAIT_REQUEUE_PI.
constexpr uint64_t kFutexCmdMask =
    kInt & ~uint64_t{FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME};

void AddFutex(std::vector<Rule>& r) {
  for (int op :
       {FUTEX_WAIT, FUTEX_WAKE, FUTEX_WAIT_BITSET, FUTEX_WAKE_BITSET}) {
    r.push_back(AllowIf(SYS_futex, {{1, kFutexCmdMask, uint64_t(op)}},
                        "threads: mutexes, condition variables, joins"));
  }
}

}  // namespace

std::vector<Rule> SentryAllowlist(const AllowlistOptions& options) {
  std::vector<Rule> r;
  // --- Memory (malloc, thread stacks; guest memory is the memory file,
  // mapped once at boot). No executable mapping: the Sentry's code is all
  // mapped at exec; stubs map guest code in their own address spaces.
  r.push_back(AllowIf(SYS_mmap, {{2, PROT_EXEC, 0}}, "malloc, thread stacks"));
  r.push_back(AllowIf(SYS_mprotect, {{2, PROT_EXEC, 0}}, "stack guards"));
  r.push_back(Allow(SYS_munmap, "malloc, thread stacks, teardown"));
  r.push_back(Allow(SYS_madvise, "malloc trim, exiting threads' stacks"));
  r.push_back(Allow(SYS_mremap, "realloc of mmapped blocks"));
  r.push_back(Allow(SYS_brk, "malloc"));

  // --- Threads: one host thread per guest task, made by std::thread.
  r.push_back(
      AllowIf(SYS_clone, {{0, kAll, kThreadCloneFlags}}, "pthread_create"));
  // clone3's flags are in memory, out of BPF's reach: ENOSYS makes glibc
  // fall back to clone, whose flags are checked above.
  r.push_back(Fail(SYS_clone3, ENOSYS, "pthread_create falls back to clone"));
  r.push_back(Allow(SYS_set_robust_list, "new threads (glibc)"));
  r.push_back(Allow(SYS_rseq, "new threads (glibc)"));
  r.push_back(Allow(SYS_exit, "thread exit"));
  r.push_back(Allow(SYS_exit_group, "Sentry exit"));
  r.push_back(Allow(SYS_gettid, "thread ids (glibc, Abseil)"));
  r.push_back(Allow(SYS_getpid, "self signals (sigqueue, abort)"));
  r.push_back(Allow(SYS_getuid, "sigqueue fills si_uid (glibc)"));
  r.push_back(Allow(SYS_sched_yield, "Abseil spin locks"));
  r.push_back(Allow(SYS_sched_getaffinity, "CPU counts (glibc, platform)"));
  // Abseil's Mutex reads its thread's scheduling parameters (through
  // pthread_getschedparam) the first time the thread blocks.
  r.push_back(Allow(SYS_sched_getparam, "pthread_getschedparam (Abseil)"));
  r.push_back(Allow(SYS_sched_getscheduler, "pthread_getschedparam (Abseil)"));
  r.push_back(Allow(SYS_restart_syscall, "interrupted sleeps"));
  AddFutex(r);

  // --- Signals: forwarded signals (sigwaitinfo), the stop request to the
  // signal thread (sigqueue to self), the memory file's SIGSEGV/SIGBUS
  // guard, abort().
  r.push_back(Allow(SYS_rt_sigaction, "signal set-up (glibc abort)"));
  r.push_back(Allow(SYS_rt_sigprocmask, "per-thread masks"));
  r.push_back(Allow(SYS_rt_sigreturn, "return from a handler"));
  r.push_back(Allow(SYS_sigaltstack, "glibc thread exit"));
  r.push_back(Allow(SYS_rt_sigtimedwait, "signal-forwarding thread"));
  r.push_back(AllowIf(SYS_rt_sigqueueinfo,
                      {{0, kInt, static_cast<uint64_t>(options.self_pid)}},
                      "stop request to the signal thread (self only)"));
  r.push_back(
      AllowIf(SYS_tgkill, {{2, kInt, SIGABRT}}, "abort() of a Sentry thread"));

  // --- Time.
  r.push_back(Allow(SYS_clock_gettime, "CPU clocks (no vDSO for them)"));
  r.push_back(Allow(SYS_clock_getres, "guest clock_getres"));
  r.push_back(Allow(SYS_gettimeofday, "vDSO fallback"));
  r.push_back(Allow(SYS_time, "vDSO fallback"));
  r.push_back(Allow(SYS_nanosleep, "std::this_thread::sleep_for"));
  r.push_back(Allow(SYS_clock_nanosleep, "sleeps (glibc)"));

  // --- Descriptors the Sentry holds: host stdio, the Gofer's donated
  // files and sockets, pipes, eventfds, the memory file. Never a path.
  r.push_back(Allow(SYS_read, "stdio, eventfds, pipes"));
  r.push_back(Allow(SYS_write, "stdio, logs, status pipe, eventfds"));
  r.push_back(Allow(SYS_pread64, "donated files, regular-file stdio"));
  r.push_back(Allow(SYS_pwrite64, "donated files, regular-file stdio"));
  r.push_back(Allow(SYS_lseek, "donated files, regular-file stdio"));
  r.push_back(Allow(SYS_fstat, "stat of a held FD"));
  // glibc's fstat is newfstatat(fd, "", AT_EMPTY_PATH); there is no path to
  // reach after pivot_root in any case.
  r.push_back(AllowIf(SYS_newfstatat, {{3, AT_EMPTY_PATH, AT_EMPTY_PATH}},
                      "glibc fstat"));
  r.push_back(Allow(SYS_fsync, "guest fsync on donated files"));
  r.push_back(Allow(SYS_fdatasync, "guest fdatasync on donated files"));
  r.push_back(Allow(SYS_ftruncate, "guest truncate on donated files"));
  r.push_back(Allow(SYS_fallocate, "memory file holes, donated files"));
  r.push_back(Allow(SYS_close, "any held FD"));
  for (int cmd : {F_GETFD, F_SETFD, F_GETFL, F_SETFL}) {
    r.push_back(AllowIf(SYS_fcntl, {{1, kInt, uint64_t(cmd)}},
                        "FD flags (no dup, no locks, no owner)"));
  }
  for (unsigned long req : {TCGETS, TIOCGWINSZ}) {
    r.push_back(AllowIf(SYS_ioctl, {{1, kInt, req}}, "terminal stdio"));
  }
  r.push_back(Allow(SYS_poll, "stdio, lock waits, reply pipes"));
  r.push_back(Allow(SYS_ppoll, "guest sleeps (interruptible)"));
  r.push_back(Allow(SYS_epoll_wait, "platform service thread"));
  r.push_back(Allow(SYS_epoll_pwait, "epoll_wait (other libcs)"));
  r.push_back(Allow(SYS_epoll_ctl, "platform service thread"));
  r.push_back(AllowIf(SYS_eventfd2, {{1, kInt, EFD_CLOEXEC | EFD_NONBLOCK}},
                      "a new task's interrupt eventfd"));
  r.push_back(Allow(SYS_recvmsg, "Gofer replies with FDs"));
  r.push_back(Allow(SYS_sendmsg, "Gofer requests"));
  if (options.host_sockets) {
    // Host Unix sockets the Gofer made and donated (sentry/net/hostunix):
    // only calls on a socket already held.
    r.push_back(
        Allow(SYS_listen, "host Unix sockets: listen on a donated one"));
    r.push_back(AllowIf(SYS_accept4,
                        {{3, kInt, uint64_t(SOCK_NONBLOCK | SOCK_CLOEXEC)}},
                        "host Unix sockets: accept on a donated listener"));
  }
  if (options.host_sockets || options.host_network) {
    r.push_back(Allow(SYS_shutdown, "donated host sockets"));
    for (unsigned long req : {FIONREAD, TIOCOUTQ}) {
      r.push_back(AllowIf(SYS_ioctl, {{1, kInt, req}},
                          "donated host sockets: SIOCINQ, SIOCOUTQ"));
    }
  }
  if (options.host_network) {
    // Host Internet sockets the broker made, connected and donated
    // (sentry/net/hostinet): their options (SO_ERROR after a non-blocking
    // connect, SO_TYPE of a donated one, TCP_NODELAY...), at the socket,
    // IP, IPv6 and TCP levels only.
    for (int level : {int{SOL_SOCKET}, int{IPPROTO_IP}, int{IPPROTO_IPV6},
                      int{IPPROTO_TCP}}) {
      r.push_back(AllowIf(SYS_getsockopt, {{1, kInt, uint64_t(level)}},
                          "broker-donated host sockets: options"));
      r.push_back(AllowIf(SYS_setsockopt, {{1, kInt, uint64_t(level)}},
                          "broker-donated host sockets: options"));
    }
  }

  // --- Facts about the host the guest asks for.
  r.push_back(Allow(SYS_getrandom, "guest getrandom, /dev/urandom, ASLR"));
  r.push_back(Allow(SYS_sysinfo, "guest sysinfo, /proc/meminfo (sysconf)"));

  // --- Opening by path fails softly: nothing is reachable (empty root),
  // and glibc/Abseil probe /sys, /proc and /dev/tty lazily.
  r.push_back(Fail(SYS_open, EACCES, "no host path is reachable"));
  r.push_back(Fail(SYS_openat, EACCES, "no host path is reachable"));
  r.push_back(Fail(SYS_openat2, EACCES, "no host path is reachable"));

  // --- The platform's own calls (platform/systrap SeccompNeeds).
  for (const platform::HostSyscallNeed& n :
       platform::SystrapSeccompSyscalls()) {
    Rule rule{n.nr, {}, Rule::kAllow, 0, n.why};
    for (const auto& a : n.args)
      rule.args.push_back({a.index, a.mask, a.value});
    r.push_back(std::move(rule));
  }
  return r;
}

std::string SyscallName(int nr) {
  char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
  if (name == nullptr) return absl::StrCat(nr);
  std::string s = name;
  free(name);
  return s;
}

absl::Status CheckRules(const std::vector<Rule>& rules) {
  std::map<int, std::set<int>> actions;  // nr -> actions (errno for kErrno)
  for (const Rule& r : rules) {
    if (r.nr < 0 || SyscallName(r.nr) == absl::StrCat(r.nr)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown syscall ", r.nr));
    }
    if (r.args.size() > 6) {
      return absl::InvalidArgumentError(
          absl::StrCat(SyscallName(r.nr), ": too many argument checks"));
    }
    std::set<unsigned> seen;
    for (const ArgCheck& a : r.args) {
      if (a.index >= 6 || !seen.insert(a.index).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(SyscallName(r.nr), ": bad argument index"));
      }
      if ((a.value & ~a.mask) != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            SyscallName(r.nr), ": value has bits outside the mask"));
      }
    }
    actions[r.nr].insert(r.action == Rule::kAllow ? -1 : r.errno_value);
  }
  for (const auto& [nr, acts] : actions) {
    if (acts.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          SyscallName(nr), ": rules with different actions for one syscall"));
    }
  }
  return absl::OkStatus();
}

namespace {

// Names for the debug mode's reports, resolved before the filter is
// loaded (the handler may not allocate). Written once, before SIGSYS can
// be delivered; leaked on purpose.
constexpr int kMaxNamed = 512;
const char* g_names[kMaxNamed];

void AppendStr(char* buf, size_t cap, size_t* n, const char* s) {
  while (*s != '\0' && *n < cap) buf[(*n)++] = *s++;
}

void AppendNum(char* buf, size_t cap, size_t* n, unsigned long v) {
  char digits[24];
  int d = 0;
  do {
    digits[d++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (d > 0 && *n < cap) buf[(*n)++] = digits[--d];
}

// Debug mode (kTrace): reports the denied call and makes it fail with
// ENOSYS. Async-signal-safe: formats into a stack buffer, one write.
void OnSigsys(int, siginfo_t* info, void* uctx) {
  auto* uc = static_cast<ucontext_t*>(uctx);
  char buf[256];
  size_t n = 0;
  const int nr = info->si_syscall;
  AppendStr(buf, sizeof(buf), &n,
            "runsc-sentry: seccomp: denied host syscall ");
  AppendNum(buf, sizeof(buf), &n, static_cast<unsigned>(nr));
  if (nr >= 0 && nr < kMaxNamed && g_names[nr] != nullptr) {
    AppendStr(buf, sizeof(buf), &n, " (");
    AppendStr(buf, sizeof(buf), &n, g_names[nr]);
    AppendStr(buf, sizeof(buf), &n, ")");
  }
  AppendStr(buf, sizeof(buf), &n, " arg0=");
  AppendNum(buf, sizeof(buf), &n, uc->uc_mcontext.gregs[REG_RDI]);
  AppendStr(buf, sizeof(buf), &n, " arg1=");
  AppendNum(buf, sizeof(buf), &n, uc->uc_mcontext.gregs[REG_RSI]);
  AppendStr(buf, sizeof(buf), &n, " arg2=");
  AppendNum(buf, sizeof(buf), &n, uc->uc_mcontext.gregs[REG_RDX]);
  AppendStr(buf, sizeof(buf), &n, "; it fails with ENOSYS\n");
  (void)!write(2, buf, n);
  uc->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
}

absl::Status Check(int rc, const std::string& what) {
  if (rc == 0) return absl::OkStatus();
  return absl::ErrnoToStatus(-rc, absl::StrCat("seccomp: ", what));
}

}  // namespace

absl::Status InstallSentryFilter(const std::vector<Rule>& rules,
                                 SeccompMode mode) {
  if (absl::Status s = CheckRules(rules); !s.ok()) return s;
  const uint32_t def =
      mode == SeccompMode::kKill ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_TRAP;
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(def),
                                                       seccomp_release);
  if (ctx == nullptr) return absl::InternalError("seccomp_init failed");
  // Other architectures' calls (i386 int 0x80, x32) get the default action.
  if (absl::Status s =
          Check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_TSYNC, 1), "TSYNC");
      !s.ok()) {
    return s;
  }
  // A binary tree over syscall numbers instead of a linear list.
  (void)seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2);
  for (const Rule& r : rules) {
    uint32_t action = r.action == Rule::kAllow ? SCMP_ACT_ALLOW
                                               : SCMP_ACT_ERRNO(r.errno_value);
    std::vector<scmp_arg_cmp> cmps;
    for (const ArgCheck& a : r.args) {
      cmps.push_back(a.mask == kAll ? SCMP_CMP(a.index, SCMP_CMP_EQ, a.value)
                                    : SCMP_CMP(a.index, SCMP_CMP_MASKED_EQ,
                                               a.mask, a.value));
    }
    int rc = seccomp_rule_add_array(ctx.get(), action, r.nr, cmps.size(),
                                    cmps.empty() ? nullptr : cmps.data());
    // -EEXIST: the same rule twice (e.g. a platform need the Sentry has as
    // well); the first stays.
    if (rc != 0 && rc != -EEXIST) {
      return Check(rc, absl::StrCat("rule for ", SyscallName(r.nr)));
    }
  }
  if (mode == SeccompMode::kTrace) {
    for (int nr = 0; nr < kMaxNamed; ++nr) {
      if (g_names[nr] == nullptr) {
        g_names[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
      }
    }
    struct sigaction sa = {};
    sa.sa_sigaction = OnSigsys;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, nullptr) != 0) {
      return absl::ErrnoToStatus(errno, "sigaction(SIGSYS)");
    }
  }
  return Check(seccomp_load(ctx.get()), "load");
}

}  // namespace sandbox::confine
