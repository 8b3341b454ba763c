// Signal delivery: handlers (arguments, masks, flags), the alternate stack,
// sigreturn restoring registers and FPU state, syscall restart (SA_RESTART
// vs EINTR), kill/tgkill/sigqueue to other processes and threads, SIGCHLD,
// default actions, pending and queued signals, sigsuspend, sigtimedwait.
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

pid_t Gettid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

int Tgkill(pid_t tgid, pid_t tid, int sig) {
  return static_cast<int>(syscall(SYS_tgkill, tgid, tid, sig));
}

// Installs a handler for `sig` and restores the old action (and unblocks
// nothing) when destroyed.
class ScopedHandler {
 public:
  ScopedHandler(int sig, void (*fn)(int, siginfo_t*, void*), int flags,
                const sigset_t* mask = nullptr)
      : sig_(sig) {
    struct sigaction sa = {};
    sa.sa_sigaction = fn;
    sa.sa_flags = flags | SA_SIGINFO;
    if (mask != nullptr) sa.sa_mask = *mask;
    EXPECT_THAT(sigaction(sig, &sa, &old_), SyscallSucceeds());
  }
  ~ScopedHandler() { sigaction(sig_, &old_, nullptr); }

 private:
  int sig_;
  struct sigaction old_;
};

// Blocks `sig` for the scope (restores the previous mask after).
class ScopedBlock {
 public:
  explicit ScopedBlock(std::initializer_list<int> sigs) {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : sigs) sigaddset(&s, sig);
    EXPECT_THAT(sigprocmask(SIG_BLOCK, &s, &old_), SyscallSucceeds());
  }
  ~ScopedBlock() { sigprocmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

// A second thread that unblocks `sig` (created with the caller's mask, so
// typically the only thread that can take it) and idles until Join().
class ThreadTaking {
 public:
  explicit ThreadTaking(int sig)
      : th_([this, sig] {
          sigset_t s;
          sigemptyset(&s);
          sigaddset(&s, sig);
          pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
          tid_ = Gettid();
          while (!done_.load()) usleep(1000);
        }) {
    while (tid_.load() == 0) usleep(1000);
  }
  ~ThreadTaking() { Join(); }
  pid_t tid() const { return tid_.load(); }
  void Join() {
    done_ = true;
    if (th_.joinable()) th_.join();
  }

 private:
  std::atomic<pid_t> tid_{0};
  std::atomic<bool> done_{false};
  std::thread th_;  // last: starts after the flags exist
};

bool Blocked(int sig) {
  sigset_t cur;
  sigprocmask(SIG_BLOCK, nullptr, &cur);
  return sigismember(&cur, sig) == 1;
}

// What the last handler run saw.
struct Seen {
  std::atomic<int> count{0};
  int sig = 0;
  siginfo_t info = {};
  bool self_blocked = false;
  bool other_blocked = false;
  bool uc_blocks_self = true;
  pid_t tid = 0;
  void* stack_addr = nullptr;
  int altstack_flags = -1;
};
Seen seen;

void Reset() {
  seen.count = 0;
  seen.sig = 0;
  memset(&seen.info, 0, sizeof(seen.info));
  seen.tid = 0;
}

void RecordingHandler(int sig, siginfo_t* info, void* ucv) {
  auto* uc = static_cast<ucontext_t*>(ucv);
  seen.sig = sig;
  seen.info = *info;
  seen.self_blocked = Blocked(sig);
  seen.other_blocked = Blocked(SIGUSR2);
  seen.uc_blocks_self = sigismember(&uc->uc_sigmask, sig) == 1;
  seen.tid = Gettid();
  int local = 0;
  seen.stack_addr = &local;
  stack_t ss = {};
  if (sigaltstack(nullptr, &ss) == 0) seen.altstack_flags = ss.ss_flags;
  seen.count.fetch_add(1);
}

TEST(SignalTest, HandlerRunsWithArgumentsAndMask) {
  Reset();
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR2);
  ScopedHandler h(SIGUSR1, RecordingHandler, 0, &mask);
  ASSERT_THAT(Tgkill(getpid(), Gettid(), SIGUSR1), SyscallSucceeds());
  // Delivered before tgkill returned to us.
  EXPECT_EQ(seen.count.load(), 1);
  EXPECT_EQ(seen.sig, SIGUSR1);
  EXPECT_EQ(seen.info.si_signo, SIGUSR1);
  EXPECT_EQ(seen.info.si_code, SI_TKILL);
  EXPECT_EQ(seen.info.si_pid, getpid());
  EXPECT_EQ(seen.info.si_uid, getuid());
  // During the handler: the signal itself and sa_mask are blocked; the
  // frame holds the mask to restore.
  EXPECT_TRUE(seen.self_blocked);
  EXPECT_TRUE(seen.other_blocked);
  EXPECT_FALSE(seen.uc_blocks_self);
  // After sigreturn the old mask is back.
  EXPECT_FALSE(Blocked(SIGUSR1));
  EXPECT_FALSE(Blocked(SIGUSR2));
}

TEST(SignalTest, NodeferAndResethand) {
  Reset();
  {
    ScopedHandler h(SIGUSR1, RecordingHandler, SA_NODEFER | SA_RESETHAND);
    ASSERT_THAT(raise(SIGUSR1), SyscallSucceeds());
    EXPECT_EQ(seen.count.load(), 1);
    EXPECT_FALSE(seen.self_blocked);
    struct sigaction now = {};
    ASSERT_THAT(sigaction(SIGUSR1, nullptr, &now), SyscallSucceeds());
    EXPECT_EQ(now.sa_handler, SIG_DFL);
  }
}

TEST(SignalTest, IgnoredSignalIsDiscarded) {
  Reset();
  struct sigaction ign = {}, old = {};
  ign.sa_handler = SIG_IGN;
  ASSERT_THAT(sigaction(SIGUSR1, &ign, &old), SyscallSucceeds());
  ASSERT_THAT(raise(SIGUSR1), SyscallSucceeds());
  {
    // Pending while blocked; installing SIG_IGN discards it.
    ScopedBlock b({SIGUSR2});
    ScopedHandler h(SIGUSR2, RecordingHandler, 0);
    ASSERT_THAT(raise(SIGUSR2), SyscallSucceeds());
    sigset_t p;
    ASSERT_THAT(sigpending(&p), SyscallSucceeds());
    EXPECT_EQ(sigismember(&p, SIGUSR2), 1);
    ASSERT_THAT(sigaction(SIGUSR2, &ign, nullptr), SyscallSucceeds());
    ASSERT_THAT(sigpending(&p), SyscallSucceeds());
    EXPECT_EQ(sigismember(&p, SIGUSR2), 0);
  }
  EXPECT_EQ(seen.count.load(), 0);
  sigaction(SIGUSR1, &old, nullptr);
}

TEST(SignalTest, BlockedStaysPendingUntilUnblocked) {
  Reset();
  ScopedHandler h(SIGUSR1, RecordingHandler, 0);
  {
    ScopedBlock b({SIGUSR1});
    ASSERT_THAT(raise(SIGUSR1), SyscallSucceeds());
    ASSERT_THAT(raise(SIGUSR1), SyscallSucceeds());  // coalesces
    EXPECT_EQ(seen.count.load(), 0);
    sigset_t p;
    ASSERT_THAT(sigpending(&p), SyscallSucceeds());
    EXPECT_EQ(sigismember(&p, SIGUSR1), 1);
  }
  // Unblocking delivers it, once.
  EXPECT_EQ(seen.count.load(), 1);
  sigset_t p;
  ASSERT_THAT(sigpending(&p), SyscallSucceeds());
  EXPECT_EQ(sigismember(&p, SIGUSR1), 0);
}

// /proc/self/status shows what is pending and blocked.
TEST(SignalTest, ProcStatusShowsPendingAndBlocked) {
  ScopedHandler h(SIGUSR1, RecordingHandler, 0);
  ScopedBlock b({SIGUSR1});
  ASSERT_THAT(Tgkill(getpid(), Gettid(), SIGUSR1), SyscallSucceeds());
  FILE* f = fopen("/proc/self/status", "r");
  ASSERT_NE(f, nullptr);
  char line[256];
  unsigned long long pnd = 0, blk = 0;
  while (fgets(line, sizeof(line), f) != nullptr) {
    sscanf(line, "SigPnd: %llx", &pnd);
    sscanf(line, "SigBlk: %llx", &blk);
  }
  fclose(f);
  EXPECT_EQ(pnd & (1ull << (SIGUSR1 - 1)), 1ull << (SIGUSR1 - 1));
  EXPECT_EQ(blk & (1ull << (SIGUSR1 - 1)), 1ull << (SIGUSR1 - 1));
  Reset();
}

std::vector<int> rt_values;
void RtHandler(int, siginfo_t* info, void*) {
  rt_values.push_back(info->si_value.sival_int);
}

TEST(SignalTest, RealtimeSignalsQueueInOrder) {
  rt_values.clear();
  const int sig = SIGRTMIN + 2;
  ScopedHandler h(sig, RtHandler, 0);
  {
    ScopedBlock b({sig});
    for (int v = 0; v < 4; ++v) {
      union sigval val;
      val.sival_int = 100 + v;
      ASSERT_THAT(sigqueue(getpid(), sig, val), SyscallSucceeds());
    }
    EXPECT_TRUE(rt_values.empty());
  }
  EXPECT_THAT(rt_values, ::testing::ElementsAre(100, 101, 102, 103));
}

// RLIMIT_SIGPENDING bounds queued real-time signals: sigqueue gets EAGAIN,
// kill still marks the signal pending.
TEST(SignalTest, RealtimeQueueLimit) {
  EXPECT_THAT(InForkedChild([] {
                struct rlimit lim = {4, 4};
                if (setrlimit(RLIMIT_SIGPENDING, &lim) != 0) _exit(2);
                sigset_t s;
                sigemptyset(&s);
                sigaddset(&s, SIGRTMIN);
                sigprocmask(SIG_BLOCK, &s, nullptr);
                union sigval v = {};
                // Linux counts per user, so other processes of this user
                // may hold part of the limit: at most 4 get through.
                int ok = 0;
                while (ok <= 4 && sigqueue(getpid(), SIGRTMIN, v) == 0) ++ok;
                if (ok > 4 || errno != EAGAIN) _exit(3);
                if (kill(getpid(), SIGRTMIN) != 0) _exit(4);
                struct timespec zero = {0, 0};
                int n = 0;
                while (sigtimedwait(&s, nullptr, &zero) == SIGRTMIN) ++n;
                // kill's instance is kept (without its info if over the
                // limit); the count may have dropped meanwhile (Linux).
                if (n < (ok > 0 ? ok : 1) || n > ok + 1) _exit(5);
              }),
              ExitedWithCode(0));
}

TEST(SignalTest, SigqueueinfoCannotForgeKernelCodesForOthers) {
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  ASSERT_THAT(child, SyscallSucceeds());
  siginfo_t info = {};
  info.si_code = SI_KERNEL;
  EXPECT_THAT(syscall(SYS_rt_sigqueueinfo, child, SIGUSR1, &info),
              SyscallFailsWithErrno(EPERM));
  info.si_code = SI_TKILL;
  EXPECT_THAT(syscall(SYS_rt_sigqueueinfo, child, SIGUSR1, &info),
              SyscallFailsWithErrno(EPERM));
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_THAT(waitpid(child, &status, 0), SyscallSucceedsWithValue(child));
  EXPECT_THAT(status, KilledBySignal(SIGKILL));
}

// A blocked read in the main thread, interrupted by a signal another
// thread sends it, then data arriving.
int InterruptedRead(int flags) {
  int fds[2] = {-1, -1};
  EXPECT_THAT(pipe(fds), SyscallSucceeds());
  ScopedHandler h(SIGUSR1, RecordingHandler, flags);
  Reset();
  const pid_t main_tid = Gettid();
  std::thread th([&] {
    usleep(100 * 1000);
    Tgkill(getpid(), main_tid, SIGUSR1);
    usleep(100 * 1000);
    char c = 'x';
    (void)!write(fds[1], &c, 1);
  });
  char c;
  int r = static_cast<int>(read(fds[0], &c, 1));
  int e = errno;
  th.join();
  close(fds[0]);
  close(fds[1]);
  EXPECT_EQ(seen.count.load(), 1);
  errno = e;
  return r;
}

TEST(SignalTest, BlockedReadIsInterruptedWithoutSaRestart) {
  EXPECT_THAT(InterruptedRead(0), SyscallFailsWithErrno(EINTR));
}

TEST(SignalTest, BlockedReadRestartsWithSaRestart) {
  EXPECT_THAT(InterruptedRead(SA_RESTART), SyscallSucceedsWithValue(1));
}

// nanosleep is never restarted after a handler, SA_RESTART or not
// (ERESTART_RESTARTBLOCK): EINTR with the time left.
TEST(SignalTest, NanosleepInterruptedByAHandlerIsEintr) {
  Reset();
  ScopedHandler h(SIGUSR1, RecordingHandler, SA_RESTART);
  const pid_t main_tid = Gettid();
  std::thread th([&] {
    // Until the main thread sleeps (at least 50 ms, then until its state
    // is S, at most 4 s): a signal that came before nanosleep would let it
    // sleep its whole 5 s. Both waits: a loaded host may keep it from
    // nanosleep past 50 ms, and the sandbox's /proc shows every task but
    // the reader as S.
    usleep(50 * 1000);
    const std::string stat =
        "/proc/self/task/" + std::to_string(main_tid) + "/stat";
    for (int i = 0; i < 400; ++i) {
      std::string s = ReadFileOrEmpty(stat);
      size_t paren = s.rfind(')');
      if (paren != std::string::npos && paren + 2 < s.size() &&
          s[paren + 2] == 'S') {
        break;
      }
      usleep(10 * 1000);
    }
    Tgkill(getpid(), main_tid, SIGUSR1);
  });
  struct timespec req = {5, 0}, rem = {0, 0};
  EXPECT_THAT(nanosleep(&req, &rem), SyscallFailsWithErrno(EINTR));
  th.join();
  EXPECT_EQ(seen.count.load(), 1);
  // Some time left, no more than asked: Linux counts it to the timer's hard
  // expiry, which is the request plus the task's timer slack (50 us by
  // default), so a signal right after the start can leave slightly more.
  const int64_t left = int64_t{rem.tv_sec} * 1000000000 + rem.tv_nsec;
  EXPECT_GT(left, 0);
  EXPECT_LE(left, int64_t{req.tv_sec} * 1000000000 + 1000000);
}

TEST(SignalTest, AlternateStack) {
  Reset();
  std::vector<char> stack(64 * 1024);
  stack_t ss = {};
  ss.ss_sp = stack.data();
  ss.ss_size = stack.size();
  ASSERT_THAT(sigaltstack(&ss, nullptr), SyscallSucceeds());
  {
    ScopedHandler h(SIGUSR1, RecordingHandler, SA_ONSTACK);
    ASSERT_THAT(raise(SIGUSR1), SyscallSucceeds());
  }
  EXPECT_EQ(seen.count.load(), 1);
  auto* addr = static_cast<char*>(seen.stack_addr);
  EXPECT_GE(addr, stack.data());
  EXPECT_LT(addr, stack.data() + stack.size());
  EXPECT_EQ(seen.altstack_flags, SS_ONSTACK);
  // Back on the normal stack it is not in use.
  stack_t now = {};
  ASSERT_THAT(sigaltstack(nullptr, &now), SyscallSucceeds());
  EXPECT_EQ(now.ss_flags, 0);
  ss.ss_flags = SS_DISABLE;
  ASSERT_THAT(sigaltstack(&ss, nullptr), SyscallSucceeds());
  // Without SA_ONSTACK the normal stack is used.
  Reset();
  {
    ScopedHandler h(SIGUSR1, RecordingHandler, 0);
    ASSERT_THAT(raise(SIGUSR1), SyscallSucceeds());
  }
  addr = static_cast<char*>(seen.stack_addr);
  EXPECT_TRUE(addr < stack.data() || addr >= stack.data() + stack.size());
}

// The handler sees the interrupted xmm8 in the frame and clobbers the
// register (and ymm8's upper half); sigreturn must bring both back.
uint64_t frame_xmm8 = 0;
void FpClobberHandler(int, siginfo_t*, void* ucv) {
  auto* uc = static_cast<ucontext_t*>(ucv);
  if (uc->uc_mcontext.fpregs != nullptr) {
    memcpy(&frame_xmm8, &uc->uc_mcontext.fpregs->_xmm[8], 8);
  }
  asm volatile("pcmpeqd %%xmm8, %%xmm8" ::: "xmm8");
  if (__builtin_cpu_supports("avx")) {
    asm volatile(
        "vpcmpeqd %%xmm9, %%xmm9, %%xmm9\n\t"
        "vinsertf128 $1, %%xmm9, %%ymm8, %%ymm8" ::
            : "xmm8", "xmm9");
  }
}

TEST(SignalTest, SigreturnRestoresFpRegisters) {
  ScopedHandler h(SIGUSR1, FpClobberHandler, 0);
  const uint64_t in = 0x1122334455667788;
  uint64_t out = 0;
  long nr = SYS_tgkill;
  asm volatile(
      "movq %[in], %%xmm8\n\t"
      "syscall\n\t"
      "movq %%xmm8, %[out]\n\t"
      : [out] "=r"(out), "+a"(nr)
      : [in] "r"(in), "D"(long{getpid()}), "S"(long{Gettid()}),
        "d"(long{SIGUSR1})
      : "rcx", "r11", "memory", "xmm8");
  EXPECT_EQ(nr, 0);
  EXPECT_EQ(frame_xmm8, in);
  EXPECT_EQ(out, in);
  if (!__builtin_cpu_supports("avx")) return;
  // The upper half of ymm8 too (XSAVE's AVX component).
  uint64_t hi = 0;
  nr = SYS_tgkill;
  asm volatile(
      "movq %[in], %%xmm9\n\t"
      "vpxor %%ymm8, %%ymm8, %%ymm8\n\t"
      "vinsertf128 $1, %%xmm9, %%ymm8, %%ymm8\n\t"
      "syscall\n\t"
      "vextractf128 $1, %%ymm8, %%xmm9\n\t"
      "movq %%xmm9, %[hi]\n\t"
      "vzeroupper\n\t"
      : [hi] "=r"(hi), "+a"(nr)
      : [in] "r"(in), "D"(long{getpid()}), "S"(long{Gettid()}),
        "d"(long{SIGUSR1})
      : "rcx", "r11", "memory", "xmm8", "xmm9");
  EXPECT_EQ(hi, in);
}

volatile int async_fp_flag = 0;
void AsyncFpHandler(int, siginfo_t*, void*) {
  asm volatile("pcmpeqd %%xmm8, %%xmm8" ::: "xmm8");
  async_fp_flag = 1;
}

// A signal that stops the thread in the middle of its own computation (no
// syscall): the FPU state it had then is what sigreturn restores.
TEST(SignalTest, AsyncSignalPreservesFpRegisters) {
  ScopedHandler h(SIGUSR1, AsyncFpHandler, 0);
  async_fp_flag = 0;
  const pid_t main_tid = Gettid();
  std::thread th([&] {
    usleep(50 * 1000);
    Tgkill(getpid(), main_tid, SIGUSR1);
  });
  const uint64_t in = 0x0123456789abcdef;
  uint64_t out = 0;
  asm volatile(
      "movq %[in], %%xmm8\n\t"
      "1: pause\n\t"
      "cmpl $0, %[flag]\n\t"
      "je 1b\n\t"
      "movq %%xmm8, %[out]\n\t"
      : [out] "=r"(out)
      : [in] "r"(in), [flag] "m"(async_fp_flag)
      : "xmm8", "memory", "cc");
  th.join();
  EXPECT_EQ(out, in);
}

// A handler that corrupts the XSAVE header in its frame (a compacted-form
// XCOMP_BV, which XRSTOR rejects): rt_sigreturn fails and the process gets
// SIGSEGV, as on Linux.
void CorruptXsaveHandler(int, siginfo_t*, void* ucv) {
  auto* uc = static_cast<ucontext_t*>(ucv);
  auto* x = reinterpret_cast<uint8_t*>(uc->uc_mcontext.fpregs);
  if (x == nullptr) _exit(7);
  const uint64_t compacted = uint64_t{1} << 63;
  memcpy(x + 512 + 8, &compacted, sizeof(compacted));
}

TEST(SignalTest, CorruptFrameFpStateKills) {
  EXPECT_THAT(InForkedChild([] {
                struct sigaction sa = {};
                sa.sa_sigaction = CorruptXsaveHandler;
                sa.sa_flags = SA_SIGINFO;
                sigaction(SIGUSR1, &sa, nullptr);
                raise(SIGUSR1);
                _exit(8);  // not reached: sigreturn fails
              }),
              KilledBySignal(SIGSEGV));
}

volatile char* fault_addr = nullptr;
void SegvHandler(int sig, siginfo_t* info, void*) {
  _exit(sig == SIGSEGV && info->si_addr == fault_addr &&
                info->si_code == SEGV_MAPERR
            ? 5
            : 6);
}

TEST(SignalTest, FaultReachesTheHandler) {
  EXPECT_THAT(InForkedChild([] {
                struct sigaction sa = {};
                sa.sa_sigaction = SegvHandler;
                sa.sa_flags = SA_SIGINFO;
                sigaction(SIGSEGV, &sa, nullptr);
                fault_addr = reinterpret_cast<volatile char*>(0x8);
                *fault_addr = 1;
              }),
              ExitedWithCode(5));
}

TEST(SignalTest, DefaultActionTerminates) {
  EXPECT_THAT(InForkedChild([] { raise(SIGTERM); }), KilledBySignal(SIGTERM));
  EXPECT_THAT(InForkedChild([] { raise(SIGRTMIN + 3); }),
              KilledBySignal(SIGRTMIN + 3));
  // A default-ignored signal does nothing.
  EXPECT_THAT(InForkedChild([] { raise(SIGWINCH); }), ExitedWithCode(0));
}

TEST(SignalTest, KillAnotherProcess) {
  int p[2] = {-1, -1};
  ASSERT_THAT(pipe(p), SyscallSucceeds());
  pid_t child = fork();
  if (child == 0) {
    struct sigaction sa = {};
    sa.sa_sigaction = [](int, siginfo_t* info, void*) {
      _exit(info->si_pid == getppid() && info->si_code == SI_USER ? 42 : 43);
    };
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, nullptr);
    char c = 'r';
    (void)!write(p[1], &c, 1);
    for (;;) pause();
  }
  ASSERT_THAT(child, SyscallSucceeds());
  close(p[1]);
  char c;
  ASSERT_THAT(read(p[0], &c, 1), SyscallSucceedsWithValue(1));
  close(p[0]);
  ASSERT_THAT(kill(child, SIGUSR1), SyscallSucceeds());
  int status = 0;
  ASSERT_THAT(waitpid(child, &status, 0), SyscallSucceedsWithValue(child));
  EXPECT_THAT(status, ExitedWithCode(42));
  // A default action kills it; the parent sees WIFSIGNALED.
  child = fork();
  if (child == 0) {
    for (;;) pause();
  }
  ASSERT_THAT(child, SyscallSucceeds());
  ASSERT_THAT(kill(child, SIGTERM), SyscallSucceeds());
  ASSERT_THAT(waitpid(child, &status, 0), SyscallSucceedsWithValue(child));
  EXPECT_THAT(status, KilledBySignal(SIGTERM));
  // Gone: ESRCH.
  EXPECT_THAT(kill(child, 0), SyscallFailsWithErrno(ESRCH));
}

TEST(SignalTest, TgkillAnotherThread) {
  Reset();
  ScopedHandler h(SIGUSR1, RecordingHandler, 0);
  {
    // Only the other thread can take it.
    ScopedBlock b({SIGUSR1});
    ThreadTaking th(SIGUSR1);
    ASSERT_THAT(Tgkill(getpid(), th.tid(), SIGUSR1), SyscallSucceeds());
    for (int i = 0; i < 5000 && seen.count.load() == 0; ++i) usleep(1000);
    th.Join();
    EXPECT_EQ(seen.count.load(), 1);
    EXPECT_EQ(seen.tid, th.tid());
    // A wrong thread group: ESRCH.
    EXPECT_THAT(Tgkill(getpid() + 100000, Gettid(), SIGUSR1),
                SyscallFailsWithErrno(ESRCH));
  }
}

TEST(SignalTest, ProcessSignalGoesToAThreadThatDoesNotBlockIt) {
  Reset();
  ScopedHandler h(SIGUSR1, RecordingHandler, 0);
  ScopedBlock b({SIGUSR1});
  ThreadTaking th(SIGUSR1);
  ASSERT_THAT(kill(getpid(), SIGUSR1), SyscallSucceeds());
  for (int i = 0; i < 5000 && seen.count.load() == 0; ++i) usleep(1000);
  th.Join();
  EXPECT_EQ(seen.count.load(), 1);
  EXPECT_EQ(seen.tid, th.tid());
}

TEST(SignalTest, SigchldToTheParent) {
  ScopedBlock b({SIGCHLD});
  pid_t child = fork();
  if (child == 0) _exit(7);
  ASSERT_THAT(child, SyscallSucceeds());
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGCHLD);
  struct timespec ts = {10, 0};
  siginfo_t info = {};
  ASSERT_THAT(sigtimedwait(&s, &info, &ts), SyscallSucceedsWithValue(SIGCHLD));
  EXPECT_EQ(info.si_code, CLD_EXITED);
  EXPECT_EQ(info.si_pid, child);
  EXPECT_EQ(info.si_status, 7);
  EXPECT_EQ(info.si_uid, getuid());
  int status = 0;
  ASSERT_THAT(waitpid(child, &status, 0), SyscallSucceedsWithValue(child));
  EXPECT_THAT(status, ExitedWithCode(7));

  child = fork();
  if (child == 0) {
    for (;;) pause();
  }
  ASSERT_THAT(child, SyscallSucceeds());
  ASSERT_THAT(kill(child, SIGKILL), SyscallSucceeds());
  ASSERT_THAT(sigtimedwait(&s, &info, &ts), SyscallSucceedsWithValue(SIGCHLD));
  EXPECT_EQ(info.si_code, CLD_KILLED);
  EXPECT_EQ(info.si_pid, child);
  EXPECT_EQ(info.si_status, SIGKILL);
  ASSERT_THAT(waitpid(child, &status, 0), SyscallSucceedsWithValue(child));
  EXPECT_THAT(status, KilledBySignal(SIGKILL));
}

TEST(SignalTest, IgnoredSigchldReapsChildren) {
  struct sigaction ign = {}, old = {};
  ign.sa_handler = SIG_IGN;
  ASSERT_THAT(sigaction(SIGCHLD, &ign, &old), SyscallSucceeds());
  pid_t child = fork();
  if (child == 0) _exit(3);
  ASSERT_THAT(child, SyscallSucceeds());
  // wait4 blocks until the child is gone, then finds no child.
  int status = 0;
  EXPECT_THAT(waitpid(child, &status, 0), SyscallFailsWithErrno(ECHILD));
  sigaction(SIGCHLD, &old, nullptr);
}

TEST(SignalTest, SigsuspendWaitsForASignal) {
  Reset();
  ScopedHandler h(SIGUSR1, RecordingHandler, 0);
  ScopedBlock b({SIGUSR1});
  const pid_t main_tid = Gettid();
  std::thread th([&] {
    usleep(50 * 1000);
    Tgkill(getpid(), main_tid, SIGUSR1);
  });
  sigset_t none;
  sigemptyset(&none);
  EXPECT_THAT(sigsuspend(&none), SyscallFailsWithErrno(EINTR));
  th.join();
  EXPECT_EQ(seen.count.load(), 1);
  // The mask from before sigsuspend is back.
  EXPECT_TRUE(Blocked(SIGUSR1));
}

TEST(SignalTest, PauseReturnsAfterAHandler) {
  Reset();
  ScopedHandler h(SIGUSR1, RecordingHandler, SA_RESTART);
  const pid_t main_tid = Gettid();
  std::thread th([&] {
    usleep(50 * 1000);
    Tgkill(getpid(), main_tid, SIGUSR1);
  });
  EXPECT_THAT(pause(), SyscallFailsWithErrno(EINTR));
  th.join();
  EXPECT_EQ(seen.count.load(), 1);
}

TEST(SignalTest, SigtimedwaitTakesPendingAndTimesOut) {
  ScopedBlock b({SIGUSR2});
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR2);
  struct timespec ts = {0, 20 * 1000 * 1000};
  EXPECT_THAT(sigtimedwait(&s, nullptr, &ts), SyscallFailsWithErrno(EAGAIN));
  ASSERT_THAT(Tgkill(getpid(), Gettid(), SIGUSR2), SyscallSucceeds());
  siginfo_t info = {};
  // The raw call: glibc's wrapper reports SI_TKILL as SI_USER.
  EXPECT_THAT(syscall(SYS_rt_sigtimedwait, &s, &info, &ts, 8),
              SyscallSucceedsWithValue(SIGUSR2));
  EXPECT_EQ(info.si_code, SI_TKILL);
  EXPECT_EQ(info.si_pid, getpid());
  struct timespec bad = {0, 1000000000};
  EXPECT_THAT(sigtimedwait(&s, nullptr, &bad), SyscallFailsWithErrno(EINVAL));
}

TEST(SignalTest, KillErrors) {
  EXPECT_THAT(kill(getpid(), 65), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(kill(getpid(), 0), SyscallSucceeds());
  EXPECT_THAT(Tgkill(0, Gettid(), SIGUSR1), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_tkill, -1, SIGUSR1), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(kill(INT_MIN, SIGUSR1), SyscallFailsWithErrno(ESRCH));
}

// rt_sigreturn to a non-canonical address: Linux's return to user space
// faults (IRET #GP, reported as the user's fault): SIGSEGV with SI_KERNEL
// and si_addr 0, and its frame shows the restored registers. The process
// dies of it by default; a SIGSEGV handler sees it.
constexpr uint64_t kNonCanonical = 0x8000000000000000ull;

void SetNonCanonicalRip(int, siginfo_t*, void* ucv) {
  auto* uc = static_cast<ucontext_t*>(ucv);
  uc->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(kNonCanonical);
}

TEST(SignalTest, SigreturnToNonCanonicalRipIsSigsegv) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    struct sigaction sa = {};
    sa.sa_sigaction = SetNonCanonicalRip;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, nullptr);
    raise(SIGUSR1);
    _exit(1);  // not reached: the return from the handler faults
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
}

void ReportNonCanonicalFault(int, siginfo_t* info, void* ucv) {
  auto* uc = static_cast<ucontext_t*>(ucv);
  const bool kernel = info->si_code == SI_KERNEL && info->si_addr == nullptr;
  const bool rip =
      static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]) == kNonCanonical;
  _exit(kernel && rip ? 42 : kernel ? 43 : 44);
}

TEST(SignalTest, NonCanonicalSigreturnFaultReachesSigsegvHandler) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    struct sigaction sa = {};
    sa.sa_sigaction = ReportNonCanonicalFault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, nullptr);
    sa.sa_sigaction = SetNonCanonicalRip;
    sigaction(SIGUSR1, &sa, nullptr);
    raise(SIGUSR1);
    _exit(1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  // 42: SIGSEGV, SI_KERNEL, si_addr 0, and the frame's rip is the
  // non-canonical one; 43: the rip differs; 44: another si_code.
  EXPECT_EQ(WEXITSTATUS(status), 42);
}

}  // namespace
}  // namespace sandbox::testutil
