// futex(2) waits and signals: a timed FUTEX_WAIT interrupted by a handler
// fails with EINTR even under SA_RESTART (Linux returns
// ERESTART_RESTARTBLOCK), an untimed one restarts under SA_RESTART, and a
// timed one interrupted without a handler (stop and continue) resumes to
// its original deadline through restart_syscall.
//
// Shared futexes (no FUTEX_PRIVATE_FLAG) are keyed by the memory they live
// in: a waiter in one process is woken through any mapping of the same
// page in another (fork, memfd, a /dev/shm file, two aliases in one
// process; POSIX semaphores in shared memory ride on this). Private ones
// and shared ones in private (copy-on-write) memory are keyed by the
// address space: another process never wakes them, and a private wake
// never meets a shared wait at the same address.
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

int64_t MonoNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long FutexWait(std::atomic<uint32_t>* word, uint32_t val,
               const struct timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word),
                 FUTEX_WAIT_PRIVATE, val, timeout, nullptr, 0);
}

void Nop(int) {}

struct WaitArg {
  std::atomic<uint32_t> word{0};
  std::atomic<pid_t> tid{0};
  std::atomic<int> err{-1};
  std::atomic<long> ret{-2};
  bool timed = false;
};

void* Waiter(void* p) {
  auto* a = static_cast<WaitArg*>(p);
  a->tid = static_cast<pid_t>(syscall(SYS_gettid));
  struct timespec to = {10, 0};
  long r = FutexWait(&a->word, 0, a->timed ? &to : nullptr);
  a->err = r == 0 ? 0 : errno;
  a->ret = r;
  return nullptr;
}

class SaRestartScope {
 public:
  SaRestartScope() {
    struct sigaction sa = {};
    sa.sa_handler = Nop;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old_);
  }
  ~SaRestartScope() { sigaction(SIGUSR1, &old_, nullptr); }

 private:
  struct sigaction old_;
};

TEST(FutexTest, TimedWaitInterruptedByHandlerIsEintrEvenWithSaRestart) {
  SaRestartScope h;
  WaitArg a;
  a.timed = true;
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, nullptr, Waiter, &a), 0);
  while (a.tid == 0) sched_yield();
  struct timespec ts = {0, 100000000};
  nanosleep(&ts, nullptr);  // let it block
  const int64_t start = MonoNs();
  ASSERT_THAT(syscall(SYS_tgkill, getpid(), a.tid.load(), SIGUSR1),
              SyscallSucceeds());
  pthread_join(th, nullptr);
  EXPECT_EQ(a.ret.load(), -1);
  EXPECT_EQ(a.err.load(), EINTR);
  EXPECT_LT(MonoNs() - start, 9000000000LL);
}

TEST(FutexTest, UntimedWaitRestartsWithSaRestart) {
  SaRestartScope h;
  WaitArg a;
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, nullptr, Waiter, &a), 0);
  while (a.tid == 0) sched_yield();
  struct timespec ts = {0, 100000000};
  nanosleep(&ts, nullptr);
  ASSERT_THAT(syscall(SYS_tgkill, getpid(), a.tid.load(), SIGUSR1),
              SyscallSucceeds());
  nanosleep(&ts, nullptr);
  EXPECT_EQ(a.ret.load(), -2);  // still waiting: restarted
  // Wake it (repeatedly, in case it is between the restart and the wait).
  while (a.ret.load() == -2) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&a.word), FUTEX_WAKE_PRIVATE,
            1, nullptr, nullptr, 0);
    sched_yield();
  }
  pthread_join(th, nullptr);
  EXPECT_EQ(a.ret.load(), 0);
}

TEST(FutexTest, TimedWaitStoppedAndContinuedKeepsItsDeadline) {
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  // When the parent sent SIGCONT (MonoNs), for the child's bound.
  void* shared =
      mmap(nullptr, sizeof(std::atomic<int64_t>), PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* cont_ns = new (shared) std::atomic<int64_t>(0);
  pid_t pid = fork();
  ASSERT_THAT(pid, SyscallSucceeds());
  if (pid == 0) {
    close(fds[0]);
    std::atomic<uint32_t> word{0};
    char c = 1;
    (void)write(fds[1], &c, 1);
    const int64_t start = MonoNs();
    struct timespec to = {2, 0};
    long r = FutexWait(&word, 0, &to);
    const int64_t elapsed = MonoNs() - start;
    if (r != -1 || errno != ETIMEDOUT) _exit(1);
    if (elapsed < 2000000000LL) _exit(2);  // never early
    // Stopped from about 1.2 s to 1.4 s: the wait still ends at its 2 s
    // deadline (or at once when continued later than that), not 2 s after
    // the continue. Relative to when the parent really continued it: a
    // loaded host may delay the parent's signals.
    const int64_t due =
        std::max<int64_t>(start + 2000000000LL, cont_ns->load());
    if (start + elapsed - due >= 1000000000LL) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  ASSERT_TRUE(ReadByteWithin10s(fds[0]));
  close(fds[0]);
  struct timespec ts = {1, 200000000};
  nanosleep(&ts, nullptr);
  ASSERT_THAT(kill(pid, SIGSTOP), SyscallSucceeds());
  ts = {0, 200000000};
  nanosleep(&ts, nullptr);
  cont_ns->store(MonoNs());
  ASSERT_THAT(kill(pid, SIGCONT), SyscallSucceeds());
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(0));
  munmap(shared, sizeof(std::atomic<int64_t>));
}

// ---- Shared futexes. ----

long Futex(void* word, int op, uint32_t val, const struct timespec* timeout) {
  return syscall(SYS_futex, word, op, val, timeout, nullptr, 0);
}

// The child's exit codes of ChildWaits.
constexpr int kWoken = 0, kTimedOut = 1, kOtherError = 2;

// In a child: FUTEX_WAIT (op) on *word == 0 for up to `secs`.
[[noreturn]] void ChildWaits(void* word, int op, int ready_fd, time_t secs) {
  char c = 1;
  (void)write(ready_fd, &c, 1);
  struct timespec to = {secs, 0};
  long r;
  do {
    r = Futex(word, op, 0, &to);  // a spurious EAGAIN cannot happen: 0 stays
  } while (r == -1 && errno == EINTR);
  if (r == 0) _exit(kWoken);
  _exit(r == -1 && errno == ETIMEDOUT ? kTimedOut : kOtherError);
}

// FUTEX_WAKE (op) on word until it wakes one waiter or 5 s pass; returns
// what the last call returned.
long WakeOneWithin5s(void* word, int op) {
  const int64_t end = MonoNs() + 5000000000LL;
  long r = 0;
  do {
    r = Futex(word, op, 1, nullptr);
    if (r != 0) break;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, nullptr);
  } while (MonoNs() < end);
  return r;
}

// Forks a child that waits on `child_word()` (its own view of the shared
// word, computed in the child) and wakes it through `parent_word` in the
// parent. The child gives up after 10 s, so a lost wake fails, not hangs.
template <typename ChildWord>
void ExpectCrossProcessWake(void* parent_word, ChildWord child_word) {
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  pid_t pid = fork();
  ASSERT_THAT(pid, SyscallSucceeds());
  if (pid == 0) {
    close(fds[0]);
    void* w = child_word();
    if (w == nullptr) _exit(kOtherError);
    ChildWaits(w, FUTEX_WAIT, fds[1], 10);
  }
  close(fds[1]);
  ASSERT_TRUE(ReadByteWithin10s(fds[0]));
  close(fds[0]);
  EXPECT_EQ(WakeOneWithin5s(parent_word, FUTEX_WAKE), 1);
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(kWoken));
}

class MappedPage {
 public:
  explicit MappedPage(void* p) : p_(p) {}
  ~MappedPage() {
    if (p_ != MAP_FAILED) munmap(p_, kPage);
  }
  void* get() const { return p_; }
  static constexpr size_t kPage = 4096;

 private:
  void* p_;
};

void* MapShared(int fd) {
  void* p = mmap(nullptr, MappedPage::kPage, PROT_READ | PROT_WRITE, MAP_SHARED,
                 fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

TEST(SharedFutexTest, ForkChildInSharedAnonymousMemoryIsWokenByParent) {
  MappedPage m(mmap(nullptr, MappedPage::kPage, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(m.get(), MAP_FAILED);
  // Not the first word of the page: the key carries the offset in it.
  void* word = static_cast<char*>(m.get()) + 64;
  ExpectCrossProcessWake(word, [word] { return word; });
}

TEST(SharedFutexTest, MemfdMappedAtAnotherAddressInTheChild) {
  int fd = static_cast<int>(syscall(SYS_memfd_create, "futex", 0));
  ASSERT_THAT(fd, SyscallSucceeds());
  ASSERT_THAT(ftruncate(fd, MappedPage::kPage), SyscallSucceeds());
  void* p = MapShared(fd);
  MappedPage m(p != nullptr ? p : MAP_FAILED);
  ASSERT_NE(m.get(), MAP_FAILED);
  void* word = static_cast<char*>(m.get()) + 8;
  ExpectCrossProcessWake(word, [fd, word]() -> void* {
    // A new mapping: the inherited one still occupies the parent's address.
    void* q = MapShared(fd);
    if (q == nullptr || q == static_cast<char*>(word) - 8) return nullptr;
    return static_cast<char*>(q) + 8;
  });
  close(fd);
}

TEST(SharedFutexTest, DevShmFileOpenedAndMappedByBothProcesses) {
  const std::string path = "/dev/shm/futex_test." + std::to_string(getpid());
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == ENOENT) GTEST_SKIP() << "no /dev/shm";
  ASSERT_THAT(fd, SyscallSucceeds());
  ASSERT_THAT(ftruncate(fd, MappedPage::kPage), SyscallSucceeds());
  void* p = MapShared(fd);
  MappedPage m(p != nullptr ? p : MAP_FAILED);
  close(fd);
  ASSERT_NE(m.get(), MAP_FAILED);
  void* word = static_cast<char*>(m.get()) + 128;
  // The child opens and maps the file itself, as shm_open users do.
  ExpectCrossProcessWake(word, [&path]() -> void* {
    int cfd = open(path.c_str(), O_RDWR);
    if (cfd < 0) return nullptr;
    void* q = MapShared(cfd);
    close(cfd);
    return q == nullptr ? nullptr : static_cast<char*>(q) + 128;
  });
  unlink(path.c_str());
}

struct AliasArg {
  void* word;
  std::atomic<long> ret{-2};
  std::atomic<int> err{0};
};

void* AliasWaiter(void* p) {
  auto* a = static_cast<AliasArg*>(p);
  struct timespec to = {10, 0};
  long r = Futex(a->word, FUTEX_WAIT, 0, &to);
  a->err = r == 0 ? 0 : errno;
  a->ret = r;
  return nullptr;
}

TEST(SharedFutexTest, WakeThroughASecondMappingInTheSameProcess) {
  int fd = static_cast<int>(syscall(SYS_memfd_create, "alias", 0));
  ASSERT_THAT(fd, SyscallSucceeds());
  ASSERT_THAT(ftruncate(fd, MappedPage::kPage), SyscallSucceeds());
  void* a = MapShared(fd);
  void* b = MapShared(fd);
  close(fd);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  MappedPage ma(a), mb(b);
  ASSERT_NE(a, b);
  AliasArg arg;
  arg.word = static_cast<char*>(a) + 4;
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, nullptr, AliasWaiter, &arg), 0);
  EXPECT_EQ(WakeOneWithin5s(static_cast<char*>(b) + 4, FUTEX_WAKE), 1);
  pthread_join(th, nullptr);
  EXPECT_EQ(arg.ret.load(), 0) << "errno " << arg.err.load();
}

// A private futex, and a shared one in private (copy-on-write) memory, are
// the process's own: a wake at the same address in the parent after fork
// reaches nobody, and the child's wait times out.
void ExpectNoCrossProcessWake(int wait_op, int wake_op) {
  void* page = mmap(nullptr, MappedPage::kPage, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  MappedPage m(page);
  *static_cast<volatile uint32_t*>(page) = 0;  // backed before the fork
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  pid_t pid = fork();
  ASSERT_THAT(pid, SyscallSucceeds());
  if (pid == 0) {
    close(fds[0]);
    ChildWaits(page, wait_op, fds[1], 1);
  }
  close(fds[1]);
  ASSERT_TRUE(ReadByteWithin10s(fds[0]));
  close(fds[0]);
  // For as long as the child waits: nobody here to wake.
  long woken = 0;
  const int64_t end = MonoNs() + 500000000LL;
  while (MonoNs() < end && woken == 0) {
    woken = Futex(page, wake_op, INT32_MAX, nullptr);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, nullptr);
  }
  EXPECT_EQ(woken, 0);
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(kTimedOut));
}

TEST(SharedFutexTest, PrivateFutexAfterForkIsNotWokenByTheParent) {
  ExpectNoCrossProcessWake(FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE);
}

TEST(SharedFutexTest, SharedFutexInPrivateMemoryIsNotWokenByTheParent) {
  ExpectNoCrossProcessWake(FUTEX_WAIT, FUTEX_WAKE);
}

// Linux's futex keys: a private wake never meets a shared wait at the same
// address (FUT_OFF_MMSHARED), though both name the same word.
TEST(SharedFutexTest, PrivateWakeDoesNotMeetASharedWaitAtTheSameAddress) {
  alignas(4) static uint32_t word = 0;
  AliasArg arg;
  arg.word = &word;
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, nullptr, AliasWaiter, &arg), 0);
  const int64_t end = MonoNs() + 200000000LL;
  long private_woken = 0;
  while (MonoNs() < end && private_woken == 0) {
    private_woken = Futex(&word, FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, nullptr);
  }
  EXPECT_EQ(private_woken, 0);
  EXPECT_EQ(WakeOneWithin5s(&word, FUTEX_WAKE), 1);
  pthread_join(th, nullptr);
  EXPECT_EQ(arg.ret.load(), 0) << "errno " << arg.err.load();
}

TEST(SharedFutexTest, SharedWakeOfAnUnmappedAddressIsEfault) {
  void* page = mmap(nullptr, MappedPage::kPage, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  ASSERT_THAT(munmap(page, MappedPage::kPage), SyscallSucceeds());
  EXPECT_THAT(Futex(page, FUTEX_WAKE, 1, nullptr),
              SyscallFailsWithErrno(EFAULT));
  // A private key is the address alone: nothing to look up, nobody woken.
  EXPECT_THAT(Futex(page, FUTEX_WAKE_PRIVATE, 1, nullptr),
              SyscallSucceedsWithValue(0));
}

// ---- POSIX semaphores in shared memory (glibc: shared futexes). ----

// In a child: sem_timedwait for up to 10 s after telling the parent.
[[noreturn]] void ChildSemWaits(sem_t* sem, int ready_fd) {
  char c = 1;
  (void)write(ready_fd, &c, 1);
  struct timespec abs;
  clock_gettime(CLOCK_REALTIME, &abs);
  abs.tv_sec += 10;
  int r;
  do {
    r = sem_timedwait(sem, &abs);
  } while (r == -1 && errno == EINTR);
  if (r == 0) _exit(kWoken);
  _exit(errno == ETIMEDOUT ? kTimedOut : kOtherError);
}

// Forks a child waiting on `child_sem()`, lets it block, posts `sem`.
template <typename ChildSem>
void ExpectSemPostWakesChild(sem_t* sem, ChildSem child_sem) {
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  pid_t pid = fork();
  ASSERT_THAT(pid, SyscallSucceeds());
  if (pid == 0) {
    close(fds[0]);
    sem_t* s = child_sem();
    if (s == nullptr) _exit(kOtherError);
    ChildSemWaits(s, fds[1]);
  }
  close(fds[1]);
  ASSERT_TRUE(ReadByteWithin10s(fds[0]));
  close(fds[0]);
  // Let it block in the futex (posting earlier would pass without one).
  struct timespec ts = {0, 200000000};
  nanosleep(&ts, nullptr);
  ASSERT_THAT(sem_post(sem), SyscallSucceeds());
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(kWoken));
}

TEST(SharedFutexTest, SemPostWakesSemTimedwaitInForkChild) {
  void* page = mmap(nullptr, MappedPage::kPage, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  MappedPage m(page);
  auto* sem = static_cast<sem_t*>(page);
  ASSERT_THAT(sem_init(sem, /*pshared=*/1, 0), SyscallSucceeds());
  ExpectSemPostWakesChild(sem, [sem] { return sem; });
  sem_destroy(sem);
}

TEST(SharedFutexTest, SemPostWakesNamedSemaphoreOpenedInForkChild) {
  const std::string name = "/futex_test_sem." + std::to_string(getpid());
  sem_t* sem = sem_open(name.c_str(), O_CREAT | O_EXCL, 0600, 0);
  if (sem == SEM_FAILED && errno == ENOENT) GTEST_SKIP() << "no /dev/shm";
  ASSERT_NE(sem, SEM_FAILED) << strerror(errno);
  // The child opens it by name: a mapping of its own of /dev/shm/sem.NAME.
  ExpectSemPostWakesChild(sem, [&name]() -> sem_t* {
    sem_t* s = sem_open(name.c_str(), 0);
    return s == SEM_FAILED ? nullptr : s;
  });
  sem_close(sem);
  sem_unlink(name.c_str());
}

// ---- Wake counts, requeue, wake-op. ----

// Waits (op) on *word == 0 for up to 10 s in a thread.
struct ThreadWait {
  ThreadWait(void* w, int op) : word(w), wait_op(op) {
    EXPECT_EQ(pthread_create(&th, nullptr, Run, this), 0);
  }
  ~ThreadWait() { Join(); }
  void Join() {
    if (joined) return;
    pthread_join(th, nullptr);
    joined = true;
  }
  static void* Run(void* p) {
    auto* a = static_cast<ThreadWait*>(p);
    struct timespec to = {10, 0};
    long r = Futex(a->word, a->wait_op, 0, &to);
    a->err = r == 0 ? 0 : errno;
    a->ret = r;
    return nullptr;
  }
  void* word;
  int wait_op;
  pthread_t th;
  bool joined = false;
  std::atomic<long> ret{-2};
  std::atomic<int> err{0};
};

// Calls fn until it returns 1 or 5 s pass; returns its last result.
template <typename Fn>
long UntilOneWithin5s(Fn fn) {
  const int64_t end = MonoNs() + 5000000000LL;
  long r = 0;
  do {
    r = fn();
    if (r != 0) break;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, nullptr);
  } while (MonoNs() < end);
  return r;
}

// Linux's futex_wake counts after waking: a count of 0 (or a negative
// one) still wakes one waiter.
TEST(FutexTest, WakeWithACountOfZeroWakesOne) {
  alignas(4) static uint32_t word = 0;
  ThreadWait w(&word, FUTEX_WAIT_PRIVATE);
  EXPECT_EQ(UntilOneWithin5s(
                [] { return Futex(&word, FUTEX_WAKE_PRIVATE, 0, nullptr); }),
            1);
  w.Join();
  EXPECT_EQ(w.ret.load(), 0) << "errno " << w.err.load();
}

long Requeue(void* from, int op, uint32_t nr_wake, uintptr_t nr_requeue,
             void* to, uint32_t cmpval) {
  return syscall(SYS_futex, from, op, nr_wake, nr_requeue, to, cmpval);
}

TEST(FutexTest, CmpRequeueChecksTheWordAndItsCounts) {
  alignas(4) static uint32_t a = 1, b = 0;
  EXPECT_THAT(Requeue(&a, FUTEX_CMP_REQUEUE_PRIVATE, 1, 1, &b, 0),
              SyscallFailsWithErrno(EAGAIN));
  EXPECT_THAT(Requeue(&a, FUTEX_CMP_REQUEUE_PRIVATE, 1, 1, &b, 1),
              SyscallSucceedsWithValue(0));
  EXPECT_THAT(Requeue(&a, FUTEX_CMP_REQUEUE_PRIVATE, 0xffffffff, 1, &b, 1),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Requeue(&a, FUTEX_REQUEUE_PRIVATE, 1, 0xffffffff, &b, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Requeue(&a, FUTEX_REQUEUE_PRIVATE, 1, 1,
                      reinterpret_cast<char*>(&b) + 1, 0),
              SyscallFailsWithErrno(EINVAL));
  // Only the waits take FUTEX_CLOCK_REALTIME.
  EXPECT_THAT(
      Requeue(&a, FUTEX_REQUEUE_PRIVATE | FUTEX_CLOCK_REALTIME, 1, 1, &b, 0),
      SyscallFailsWithErrno(ENOSYS));
}

TEST(FutexTest, RequeueMovesAWaiterToTheOtherWord) {
  alignas(4) static uint32_t a = 0, b = 0;
  ThreadWait w(&a, FUTEX_WAIT_PRIVATE);
  // Nobody woken, one moved.
  EXPECT_EQ(UntilOneWithin5s([] {
              return Requeue(&a, FUTEX_CMP_REQUEUE_PRIVATE, 0, 1, &b, 0);
            }),
            1);
  EXPECT_EQ(w.ret.load(), -2);
  EXPECT_THAT(Futex(&a, FUTEX_WAKE_PRIVATE, 1, nullptr),
              SyscallSucceedsWithValue(0));
  EXPECT_THAT(Futex(&b, FUTEX_WAKE_PRIVATE, 1, nullptr),
              SyscallSucceedsWithValue(1));
  w.Join();
  EXPECT_EQ(w.ret.load(), 0) << "errno " << w.err.load();
}

// A waiter in another process, requeued within shared memory, is woken
// at its new word.
TEST(SharedFutexTest, RequeueAcrossForkInSharedMemory) {
  MappedPage m(mmap(nullptr, MappedPage::kPage, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(m.get(), MAP_FAILED);
  auto* a = static_cast<uint32_t*>(m.get());
  uint32_t* b = a + 100;
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  pid_t pid = fork();
  ASSERT_THAT(pid, SyscallSucceeds());
  if (pid == 0) {
    close(fds[0]);
    ChildWaits(a, FUTEX_WAIT, fds[1], 10);
  }
  close(fds[1]);
  ASSERT_TRUE(ReadByteWithin10s(fds[0]));
  close(fds[0]);
  EXPECT_EQ(UntilOneWithin5s(
                [&] { return Requeue(a, FUTEX_CMP_REQUEUE, 0, 1, b, 0); }),
            1);
  EXPECT_EQ(WakeOneWithin5s(b, FUTEX_WAKE), 1);
  int status = 0;
  ASSERT_THAT(waitpid(pid, &status, 0), SyscallSucceedsWithValue(pid));
  EXPECT_THAT(status, ExitedWithCode(kWoken));
}

long WakeOp(void* w1, int op, uint32_t nr1, uintptr_t nr2, void* w2,
            uint32_t encoded) {
  return syscall(SYS_futex, w1, op, nr1, nr2, w2, encoded);
}

TEST(FutexTest, WakeOpAppliesItsOperation) {
  alignas(4) static uint32_t a = 0, b = 3;
  const int op = FUTEX_WAKE_OP_PRIVATE;
  EXPECT_THAT(WakeOp(&a, op, 1, 1, &b, FUTEX_OP(FUTEX_OP_ADD, 4, 0, 0)),
              SyscallSucceedsWithValue(0));
  EXPECT_EQ(b, 7u);
  EXPECT_THAT(WakeOp(&a, op, 1, 1, &b,
                     FUTEX_OP(FUTEX_OP_OR | FUTEX_OP_OPARG_SHIFT, 4, 0, 0)),
              SyscallSucceedsWithValue(0));
  EXPECT_EQ(b, 23u);
  EXPECT_THAT(WakeOp(&a, op, 1, 1, &b, FUTEX_OP(FUTEX_OP_ANDN, 3, 0, 0)),
              SyscallSucceedsWithValue(0));
  EXPECT_EQ(b, 20u);
  EXPECT_THAT(WakeOp(&a, op, 1, 1, &b, FUTEX_OP(FUTEX_OP_XOR, 0xfff, 0, 0)),
              SyscallSucceedsWithValue(0));
  EXPECT_EQ(b, ~20u);  // oparg is sign-extended: -1
  EXPECT_THAT(WakeOp(&a, op, 1, 1, &b, FUTEX_OP(FUTEX_OP_SET, 9, 0, 0)),
              SyscallSucceedsWithValue(0));
  EXPECT_EQ(b, 9u);
  // An unknown operation changes nothing; an unknown comparison comes after
  // the change.
  EXPECT_THAT(WakeOp(&a, op, 1, 1, &b, FUTEX_OP(5, 1, 0, 0)),
              SyscallFailsWithErrno(ENOSYS));
  EXPECT_EQ(b, 9u);
  EXPECT_THAT(WakeOp(&a, op, 1, 1, &b, FUTEX_OP(FUTEX_OP_SET, 2, 6, 0)),
              SyscallFailsWithErrno(ENOSYS));
  EXPECT_EQ(b, 2u);
  // The second word must be writable.
  void* ro = mmap(nullptr, MappedPage::kPage, PROT_READ,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(ro, MAP_FAILED);
  MappedPage m(ro);
  EXPECT_THAT(
      WakeOp(&a, FUTEX_WAKE_OP, 1, 1, ro, FUTEX_OP(FUTEX_OP_SET, 1, 0, 0)),
      SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(WakeOp(&a, op, 1, 1, ro, FUTEX_OP(FUTEX_OP_SET, 1, 0, 0)),
              SyscallFailsWithErrno(EFAULT));
}

TEST(FutexTest, WakeOpWakesTheSecondWordOnlyIfTheComparisonHolds) {
  alignas(4) static uint32_t a = 0, b = 0;
  ThreadWait w(&b, FUTEX_WAIT_PRIVATE);
  const int op = FUTEX_WAKE_OP_PRIVATE;
  // SET 0 keeps the waiter's value; old value 0 != 0 is false.
  const int64_t end = MonoNs() + 200000000LL;
  long woken = 0;
  while (MonoNs() < end && woken == 0) {
    woken =
        WakeOp(&a, op, 1, 1, &b, FUTEX_OP(FUTEX_OP_SET, 0, FUTEX_OP_CMP_NE, 0));
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, nullptr);
  }
  EXPECT_EQ(woken, 0);
  EXPECT_EQ(UntilOneWithin5s([&] {
              return WakeOp(&a, op, 1, 1, &b,
                            FUTEX_OP(FUTEX_OP_SET, 0, FUTEX_OP_CMP_EQ, 0));
            }),
            1);
  w.Join();
  EXPECT_EQ(w.ret.load(), 0) << "errno " << w.err.load();
}

}  // namespace
}  // namespace sandbox::testutil
