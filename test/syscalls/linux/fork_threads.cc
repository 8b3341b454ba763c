// fork(2) in a multithreaded process while the other threads run: the
// child's copy of memory must be the parent's at the fork (for data no
// thread was changing then), the parent's own writes must never be lost or
// reverted by copy-on-write, and the forking thread's registers (vector ones
// included) must reach the child, whatever the other threads were doing.
//
// Stress tests: 60-100 forks each (FORK_THREADS_ITERS in the environment
// overrides the count, for longer runs by hand).
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

int Iterations(int dflt) {
  const char* s = getenv("FORK_THREADS_ITERS");
  if (s == nullptr || *s == '\0') return dflt;
  int n = atoi(s);
  return n > 0 ? n : dflt;
}

// ---- Memory: writers with checked patterns. ----

// Heap regions span several pages and a 64 KiB boundary (copy-on-write
// copies runs of pages); stack regions live on the writer's own stack.
constexpr size_t kHeapWords = (72 << 10) / sizeof(uint64_t);
constexpr size_t kStackWords = (8 << 10) / sizeof(uint64_t);
constexpr int kLockedWriters = 2;
constexpr int kFreeWriters = 2;
constexpr int kWriters = kLockedWriters + kFreeWriters;

// Word i of writer w's region at generation g: distinct for every (w, g, i).
inline uint64_t Pattern(int w, uint64_t g, size_t i) {
  return (static_cast<uint64_t>(w + 1) << 56) ^ (g << 20) ^ i ^
         (i * 0x9E3779B97F4A7C15ULL & 0xff00000000000ULL);
}

struct Writer {
  // Locked writers change their regions only under mu, which the
  // pthread_atfork prepare handler holds across fork(): at the fork their
  // regions are consistent, and the child checks them. Free writers never
  // stop (they write while the fork write-protects their pages); only they
  // check their own regions, in the parent.
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  bool locked = false;
  uint64_t* heap = nullptr;
  std::atomic<uint64_t*> stack{nullptr};
  // The generation both regions hold (under mu for locked writers).
  uint64_t gen = 0;
  std::atomic<uint64_t> rounds{0};
};

Writer g_writers[kWriters];
std::atomic<bool> g_stop{false};
std::atomic<int> g_errors{0};
char g_first_error[256];
std::atomic<bool> g_error_recorded{false};
std::atomic<pid_t> g_last_child{0};
// Set by the forking thread around fork(): locked writers step aside, or
// the atfork handler could starve on their mutexes.
std::atomic<bool> g_fork_pending{false};

void RecordError(const char* what, int w, size_t i, uint64_t want, uint64_t got,
                 uintptr_t addr) {
  g_errors.fetch_add(1);
  if (!g_error_recorded.exchange(true)) {
    snprintf(g_first_error, sizeof(g_first_error),
             "%s: thread %d word %zu at %#lx: want %#lx got %#lx", what, w, i,
             static_cast<unsigned long>(addr), static_cast<unsigned long>(want),
             static_cast<unsigned long>(got));
  }
}

// Index of the first word of r[0, n) that is not writer w's generation g,
// or n.
size_t FirstBad(const volatile uint64_t* r, size_t n, int w, uint64_t g) {
  for (size_t i = 0; i < n; ++i) {
    if (r[i] != Pattern(w, g, i)) return i;
  }
  return n;
}

void Fill(volatile uint64_t* r, size_t n, int w, uint64_t g) {
  for (size_t i = 0; i < n; ++i) r[i] = Pattern(w, g, i);
}

void WriterLoop(int w) {
  Writer& wr = g_writers[w];
  volatile uint64_t stack_region[kStackWords];
  volatile uint64_t* heap = wr.heap;
  if (wr.locked) pthread_mutex_lock(&wr.mu);
  Fill(stack_region, kStackWords, w, 0);
  Fill(heap, kHeapWords, w, 0);
  wr.stack.store(const_cast<uint64_t*>(stack_region));
  if (wr.locked) pthread_mutex_unlock(&wr.mu);
  unsigned seed = w * 7919 + 1;
  while (!g_stop.load(std::memory_order_relaxed)) {
    if (wr.locked) {
      while (g_fork_pending.load()) sched_yield();
      pthread_mutex_lock(&wr.mu);
    }
    const uint64_t g = wr.gen;
    // What this thread wrote last must still be there (a lost or reverted
    // write shows here).
    size_t bad = FirstBad(heap, kHeapWords, w, g);
    if (bad != kHeapWords) {
      RecordError("parent heap", w, bad, Pattern(w, g, bad), heap[bad],
                  reinterpret_cast<uintptr_t>(&heap[bad]));
    }
    bad = FirstBad(stack_region, kStackWords, w, g);
    if (bad != kStackWords) {
      RecordError("parent stack", w, bad, Pattern(w, g, bad), stack_region[bad],
                  reinterpret_cast<uintptr_t>(&stack_region[bad]));
    }
    Fill(heap, kHeapWords, w, g + 1);
    Fill(stack_region, kStackWords, w, g + 1);
    wr.gen = g + 1;
    if (wr.locked) pthread_mutex_unlock(&wr.mu);
    wr.rounds.fetch_add(1, std::memory_order_relaxed);
    // Heap churn in this thread's arena.
    size_t sz = 16 + rand_r(&seed) % 4000;
    char* p = static_cast<char*>(malloc(sz));
    if (p != nullptr) {
      memset(p, w, sz);
      free(p);
    }
    // Leave the CPUs to the forking thread now and then (2-CPU machines).
    if ((g & 7) == 0) sched_yield();
  }
  // The region must outlive every fork that may check it.
  if (wr.locked) pthread_mutex_lock(&wr.mu);
  wr.stack.store(nullptr);
  if (wr.locked) pthread_mutex_unlock(&wr.mu);
}

void PrepareFork() {
  for (int w = 0; w < kWriters; ++w) {
    if (g_writers[w].locked) pthread_mutex_lock(&g_writers[w].mu);
  }
}
void AfterFork() {
  for (int w = kWriters - 1; w >= 0; --w) {
    if (g_writers[w].locked) pthread_mutex_unlock(&g_writers[w].mu);
  }
}

// Reads the whole file with stdio (malloc'd FILE and buffer), as the
// original symptom's reader did.
void ReadWhole(const char* path) {
  FILE* f = fopen(path, "re");
  if (f == nullptr) return;
  char line[512];
  while (fgets(line, sizeof(line), f) != nullptr) {
  }
  fclose(f);
}

void ProcReaderLoop() {
  char path[64];
  while (!g_stop.load(std::memory_order_relaxed)) {
    ReadWhole("/proc/self/status");
    ReadWhole("/proc/self/stat");
    ReadWhole("/proc/self/maps");
    pid_t c = g_last_child.load(std::memory_order_relaxed);
    if (c > 0) {
      snprintf(path, sizeof(path), "/proc/%d/stat", c);
      ReadWhole(path);
      snprintf(path, sizeof(path), "/proc/%d/status", c);
      ReadWhole(path);
    }
  }
}

// In the child (one thread; the locked writers' mutexes were held across
// the fork, so their regions are whole generations): checks them, then
// writes its own copy (copy-on-write in the child) and checks again.
// Returns the exit code: 0, or 10 + what failed.
int ChildCheck() {
  for (int w = 0; w < kWriters; ++w) {
    Writer& wr = g_writers[w];
    if (!wr.locked) continue;
    const uint64_t g = wr.gen;
    volatile uint64_t* heap = wr.heap;
    volatile uint64_t* stack = wr.stack.load();
    if (FirstBad(heap, kHeapWords, w, g) != kHeapWords) return 10 + 2 * w;
    if (stack != nullptr && FirstBad(stack, kStackWords, w, g) != kStackWords) {
      return 11 + 2 * w;
    }
    Fill(heap, kHeapWords, w, g + 7);
    if (stack != nullptr) Fill(stack, kStackWords, w, g + 7);
    if (FirstBad(heap, kHeapWords, w, g + 7) != kHeapWords) return 30 + w;
    if (stack != nullptr &&
        FirstBad(stack, kStackWords, w, g + 7) != kStackWords) {
      return 40 + w;
    }
  }
  // malloc must work in the child (glibc reinitialised its arenas).
  for (int i = 0; i < 64; ++i) {
    void* p = malloc(64 + i * 97);
    if (p == nullptr) return 50;
    memset(p, i, 64 + i * 97);
    free(p);
  }
  return 0;
}

// Waits for the forked child `pid` (published to the /proc readers while it
// lives) and counts it in *bad if it did not exit 0, keeping the first bad
// status.
void ReapChild(pid_t pid, int* bad, int* first_bad_status) {
  ASSERT_GT(pid, 0) << "fork: " << strerror(errno);
  g_last_child.store(pid);
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  ASSERT_EQ(r, pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if ((*bad)++ == 0) *first_bad_status = status;
  }
}
TEST(ForkThreadsTest, MemoryStaysConsistentWhileOtherThreadsWrite) {
  static bool atfork_registered = false;
  if (!atfork_registered) {
    ASSERT_EQ(pthread_atfork(PrepareFork, AfterFork, AfterFork), 0);
    atfork_registered = true;
  }
  g_stop = false;
  g_errors = 0;
  g_error_recorded = false;
  std::vector<uint64_t*> heaps;
  for (int w = 0; w < kWriters; ++w) {
    g_writers[w].locked = w < kLockedWriters;
    g_writers[w].gen = 0;
    g_writers[w].heap =
        static_cast<uint64_t*>(malloc(kHeapWords * sizeof(uint64_t)));
    ASSERT_NE(g_writers[w].heap, nullptr);
    heaps.push_back(g_writers[w].heap);
  }
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) threads.emplace_back(WriterLoop, w);
  threads.emplace_back(ProcReaderLoop);
  for (int w = 0; w < kWriters; ++w) {
    while (g_writers[w].stack.load() == nullptr) sched_yield();
  }

  const int iters = Iterations(100);
  int bad_children = 0;
  int first_bad_status = 0;
  unsigned seed = 12345;
  for (int i = 0; i < iters && g_errors.load() == 0; ++i) {
    // Main-arena churn, so the forking thread's heap is live too.
    std::vector<void*> blocks;
    for (int k = 0; k < 8; ++k)
      blocks.push_back(malloc(32 + rand_r(&seed) % 2000));
    g_fork_pending = true;
    pid_t pid = fork();
    if (pid != 0) g_fork_pending = false;
    if (pid == 0) {
      struct rlimit no_core = {0, 0};
      setrlimit(RLIMIT_CORE, &no_core);
      _exit(ChildCheck());
    }
    for (void* p : blocks) free(p);
    ASSERT_NO_FATAL_FAILURE(ReapChild(pid, &bad_children, &first_bad_status));
  }
  g_stop = true;
  for (auto& t : threads) t.join();
  for (uint64_t* h : heaps) free(h);
  g_last_child.store(0);

  EXPECT_EQ(g_errors.load(), 0) << g_first_error;
  EXPECT_EQ(bad_children, 0)
      << "first bad child: status " << std::hex << first_bad_status
      << (WIFEXITED(first_bad_status) ? " exit code " : " signal ") << std::dec
      << (WIFEXITED(first_bad_status) ? WEXITSTATUS(first_bad_status)
                                      : WTERMSIG(first_bad_status));
  for (int w = 0; w < kWriters; ++w) {
    EXPECT_GT(g_writers[w].rounds.load(), 0u) << "writer " << w << " never ran";
  }
}

// ---- The parent must never see what a child writes. ----
//
// A region the parent initialises once: word 0 of every page is then
// rewritten by a "hot" thread (so after each fork the parent copies every
// page on write), the other words never change in the parent and are read
// over and over by checker threads. Each child overwrites the whole region
// with its own pattern (and fills fresh memory, which may reuse pages the
// parent just released). A checker that ever reads a child's value found a
// page of the child's in the parent's address space.

constexpr size_t kSharedRegionBytes = 1 << 20;
constexpr size_t kWordsPerPage = 4096 / sizeof(uint64_t);

inline uint64_t StaticPattern(size_t i) { return 0x5a5a000000000000ULL | i; }
inline uint64_t ChildPattern(size_t i) { return 0xc41d000000000000ULL | i; }

uint64_t* g_region = nullptr;

void HotWriterLoop() {
  volatile uint64_t* r = g_region;
  const size_t words = kSharedRegionBytes / sizeof(uint64_t);
  uint64_t n = 0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    ++n;
    for (size_t i = 0; i < words; i += kWordsPerPage) r[i] = n;
    sched_yield();
  }
}

void CheckerLoop(int id) {
  volatile uint64_t* r = g_region;
  const size_t words = kSharedRegionBytes / sizeof(uint64_t);
  while (!g_stop.load(std::memory_order_relaxed)) {
    // Start at different places so that the checkers cover the region
    // unevenly.
    for (size_t k = 0; k < words; ++k) {
      const size_t i = (k + id * (words / 2)) % words;
      if (i % kWordsPerPage == 0) continue;
      const uint64_t v = r[i];
      if (v != StaticPattern(i)) {
        RecordError("parent read", id, i, StaticPattern(i), v,
                    reinterpret_cast<uintptr_t>(&r[i]));
        return;
      }
    }
    sched_yield();
  }
}

int ChildOverwrite() {
  volatile uint64_t* r = g_region;
  const size_t words = kSharedRegionBytes / sizeof(uint64_t);
  for (size_t i = 0; i < words; ++i) r[i] = ChildPattern(i);
  // Fresh memory: may be given pages the parent has just let go of.
  size_t n = 1 << 20;
  volatile uint64_t* p = static_cast<uint64_t*>(mmap(
      nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) return 2;
  for (size_t i = 0; i < n / sizeof(uint64_t); ++i) p[i] = ChildPattern(i);
  for (size_t i = 1; i < words; ++i) {
    if (r[i] != ChildPattern(i)) return 3;
  }
  return 0;
}

TEST(ForkThreadsTest, ParentNeverSeesChildWrites) {
  g_stop = false;
  g_errors = 0;
  g_error_recorded = false;
  void* m = mmap(nullptr, kSharedRegionBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  g_region = static_cast<uint64_t*>(m);
  for (size_t i = 0; i < kSharedRegionBytes / sizeof(uint64_t); ++i) {
    g_region[i] = StaticPattern(i);
  }
  std::vector<std::thread> threads;
  threads.emplace_back(HotWriterLoop);
  threads.emplace_back(CheckerLoop, 0);
  threads.emplace_back(CheckerLoop, 1);
  threads.emplace_back(ProcReaderLoop);
  const int iters = Iterations(60);
  int bad_children = 0;
  int first_bad_status = 0;
  for (int i = 0; i < iters && g_errors.load() == 0; ++i) {
    pid_t pid = fork();
    if (pid == 0) _exit(ChildOverwrite());
    ASSERT_NO_FATAL_FAILURE(ReapChild(pid, &bad_children, &first_bad_status));
  }
  g_stop = true;
  for (auto& t : threads) t.join();
  g_last_child.store(0);
  munmap(m, kSharedRegionBytes);
  EXPECT_EQ(g_errors.load(), 0) << g_first_error;
  EXPECT_EQ(bad_children, 0) << "first bad child: status " << first_bad_status;
}

// ---- Registers: a raw fork with values in vector and general registers. ----

constexpr int kVecRegs = 16;
constexpr int kGprs = 7;  // r8, r9, r10, r12, r13, r14, r15
struct RegImage {
  uint64_t xmm[kVecRegs][2];
  uint64_t gpr[kGprs];
};

// fork(2) through the syscall instruction with xmm0-15 and r8-r10, r12-r15
// loaded from `in`; stores them to `out` after it returns (in both
// processes). No libc runs in between.
long RawForkWithRegisters(const RegImage* in, RegImage* out) {
  long ret;
  asm volatile(
      "movdqu 0(%[in]), %%xmm0\n\t"
      "movdqu 16(%[in]), %%xmm1\n\t"
      "movdqu 32(%[in]), %%xmm2\n\t"
      "movdqu 48(%[in]), %%xmm3\n\t"
      "movdqu 64(%[in]), %%xmm4\n\t"
      "movdqu 80(%[in]), %%xmm5\n\t"
      "movdqu 96(%[in]), %%xmm6\n\t"
      "movdqu 112(%[in]), %%xmm7\n\t"
      "movdqu 128(%[in]), %%xmm8\n\t"
      "movdqu 144(%[in]), %%xmm9\n\t"
      "movdqu 160(%[in]), %%xmm10\n\t"
      "movdqu 176(%[in]), %%xmm11\n\t"
      "movdqu 192(%[in]), %%xmm12\n\t"
      "movdqu 208(%[in]), %%xmm13\n\t"
      "movdqu 224(%[in]), %%xmm14\n\t"
      "movdqu 240(%[in]), %%xmm15\n\t"
      "mov 256(%[in]), %%r8\n\t"
      "mov 264(%[in]), %%r9\n\t"
      "mov 272(%[in]), %%r10\n\t"
      "mov 280(%[in]), %%r12\n\t"
      "mov 288(%[in]), %%r13\n\t"
      "mov 296(%[in]), %%r14\n\t"
      "mov 304(%[in]), %%r15\n\t"
      "mov %[nr], %%eax\n\t"
      "syscall\n\t"
      "movdqu %%xmm0, 0(%[out])\n\t"
      "movdqu %%xmm1, 16(%[out])\n\t"
      "movdqu %%xmm2, 32(%[out])\n\t"
      "movdqu %%xmm3, 48(%[out])\n\t"
      "movdqu %%xmm4, 64(%[out])\n\t"
      "movdqu %%xmm5, 80(%[out])\n\t"
      "movdqu %%xmm6, 96(%[out])\n\t"
      "movdqu %%xmm7, 112(%[out])\n\t"
      "movdqu %%xmm8, 128(%[out])\n\t"
      "movdqu %%xmm9, 144(%[out])\n\t"
      "movdqu %%xmm10, 160(%[out])\n\t"
      "movdqu %%xmm11, 176(%[out])\n\t"
      "movdqu %%xmm12, 192(%[out])\n\t"
      "movdqu %%xmm13, 208(%[out])\n\t"
      "movdqu %%xmm14, 224(%[out])\n\t"
      "movdqu %%xmm15, 240(%[out])\n\t"
      "mov %%r8, 256(%[out])\n\t"
      "mov %%r9, 264(%[out])\n\t"
      "mov %%r10, 272(%[out])\n\t"
      "mov %%r12, 280(%[out])\n\t"
      "mov %%r13, 288(%[out])\n\t"
      "mov %%r14, 296(%[out])\n\t"
      "mov %%r15, 304(%[out])\n\t"
      : "=&a"(ret)
      : [in] "r"(in), [out] "r"(out), [nr] "i"(SYS_fork)
      : "rcx", "r11", "r8", "r9", "r10", "r12", "r13", "r14", "r15", "memory",
        "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
        "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
  return ret;
}

static_assert(sizeof(RegImage) == 312);

// Other threads keep their own values in the vector registers and trap to
// the kernel all the time, so a fork that took another thread's (or a stale)
// register image would show.
void VectorNoiseLoop(int id) {
  unsigned n = 0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    uint64_t v = 0xdead000000000000ULL | (static_cast<uint64_t>(id) << 40);
    asm volatile(
        "movq %0, %%xmm0\n\t"
        "pshufd $0, %%xmm0, %%xmm0\n\t"
        "movdqa %%xmm0, %%xmm1\n\tmovdqa %%xmm0, %%xmm2\n\t"
        "movdqa %%xmm0, %%xmm3\n\tmovdqa %%xmm0, %%xmm4\n\t"
        "movdqa %%xmm0, %%xmm5\n\tmovdqa %%xmm0, %%xmm6\n\t"
        "movdqa %%xmm0, %%xmm7\n\tmovdqa %%xmm0, %%xmm8\n\t"
        "movdqa %%xmm0, %%xmm9\n\tmovdqa %%xmm0, %%xmm10\n\t"
        "movdqa %%xmm0, %%xmm11\n\tmovdqa %%xmm0, %%xmm12\n\t"
        "movdqa %%xmm0, %%xmm13\n\tmovdqa %%xmm0, %%xmm14\n\t"
        "movdqa %%xmm0, %%xmm15\n\t"
        :
        : "r"(v)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
          "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    syscall(SYS_getpid);
    if ((++n & 3) == 0) sched_yield();
  }
}

TEST(ForkThreadsTest, RegistersReachTheChildWhileOtherThreadsRun) {
  g_stop = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) threads.emplace_back(VectorNoiseLoop, i);
  const int iters = Iterations(100);
  int bad = 0;
  std::string first;
  for (int it = 0; it < iters; ++it) {
    RegImage in, out;
    memset(&out, 0, sizeof(out));
    for (int r = 0; r < kVecRegs; ++r) {
      in.xmm[r][0] = 0x1111000000000000ULL | (uint64_t(it) << 16) | r;
      in.xmm[r][1] = 0x2222000000000000ULL | (uint64_t(it) << 16) | r;
    }
    for (int r = 0; r < kGprs; ++r) {
      in.gpr[r] = 0x3333000000000000ULL | (uint64_t(it) << 16) | r;
    }
    long pid = RawForkWithRegisters(&in, &out);
    if (pid == 0) {
      // A raw fork: no atfork handlers ran, so only raw syscalls here.
      const int code = memcmp(&in, &out, sizeof(in)) == 0 ? 0 : 1;
      syscall(SYS_exit_group, code);
    }
    if (pid < 0) {
      g_stop = true;
      for (auto& t : threads) t.join();
      FAIL() << "fork: " << strerror(-pid);
    }
    if (memcmp(&in, &out, sizeof(in)) != 0 && bad++ == 0) {
      first = "parent registers changed by fork";
    }
    int status = 0;
    pid_t r;
    do {
      r = waitpid(pid, &status, 0);
    } while (r < 0 && errno == EINTR);
    if (r != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (bad++ == 0) {
        first = "child status " + std::to_string(status) + " at fork " +
                std::to_string(it);
      }
    }
  }
  g_stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad, 0) << first;
}

}  // namespace
}  // namespace sandbox::testutil
