// Round trip of a guest syscall served by the Sentry under systrap, against
// a native getppid in the same run; the cost of a page fault the Sentry
// resolves by mapping the page; and the pieces of the round trip (an
// in-process SIGSYS trap, a cross-thread handoff).
//
// Run: bazel run -c opt //perf:platform_syscall_bench
#include <dirent.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "platform/long_work.h"
#include "platform/memory_file.h"
#include "platform/systrap/systrap.h"

namespace sandbox::platform {
namespace {

constexpr uintptr_t kCode = 0x400000;
constexpr uintptr_t kData = 0x500000;
constexpr uintptr_t kFaultArea = 0x10000000;
constexpr uint64_t kPage = 4096;
constexpr int kFaultPages = 2048;

// On-CPU time of every thread of process `pid`, in ns (schedstat).
uint64_t ProcessCpuNs(pid_t pid) {
  uint64_t total = 0;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream f(dir + "/" + e->d_name + "/schedstat");
      uint64_t ns = 0;
      if (f >> ns) total += ns;
    }
    closedir(d);
  }
  return total;
}

uint64_t ThreadCpuNs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

double NativeGetppidNs() {
  constexpr int kN = 200000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kN; ++i) syscall(SYS_getppid);
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / kN;
}

struct Env {
  std::unique_ptr<Platform> platform;
  std::unique_ptr<AddressSpace> as;
  std::unique_ptr<Context> ctx;
  uint64_t code_off = 0;

  bool Init(bool spin, const std::vector<uint8_t>& code, bool pin = true,
            bool spread = false) {
    auto mf = MemoryFile::Create(1ull << 30);
    if (!mf.ok()) return false;
    SystrapOptions opts;
    opts.spin = spin;
    opts.pin = pin;
    opts.spread = spread;
    auto p = NewSystrapPlatform(std::move(*mf), opts);
    if (!p.ok()) return false;
    platform = std::move(*p);
    auto a = platform->NewAddressSpace();
    auto c = platform->NewContext();
    if (!a.ok() || !c.ok()) return false;
    as = std::move(*a);
    ctx = std::move(*c);
    MemoryFile& m = platform->memory_file();
    code_off = *m.Allocate(kPage);
    uint64_t data_off = *m.Allocate(kPage);
    m.Write(code_off, code.data(), code.size());
    return as->MapFile(kCode, code_off, kPage, PROT_READ | PROT_EXEC).ok() &&
           as->MapFile(kData, data_off, kPage, PROT_READ | PROT_WRITE).ok();
  }
  CpuState Start() {
    CpuState s;
    s.regs.rip = kCode;
    s.regs.rsp = kData + kPage - 64;
    s.regs.eflags = 0x202;
    return s;
  }
};

void BM_NativeGetppid(benchmark::State& state) {
  for (auto _ : state) syscall(SYS_getppid);
}
BENCHMARK(BM_NativeGetppid);

// loop: syscall; jmp loop. Each Switch is one guest syscall the Sentry
// serves (getppid answered from memory).
void SyscallRoundTrip(benchmark::State& state, bool spin, bool pin = true,
                      bool spread = false) {
  Env env;
  if (!env.Init(spin, {0x0f, 0x05, 0xeb, 0xfc}, pin, spread)) {
    state.SkipWithError("systrap platform unavailable");
    return;
  }
  CpuState s = env.Start();
  s.regs.rax = SYS_getppid;
  // Warm up (thread creation, first FP load).
  for (int i = 0; i < 100; ++i) env.ctx->Switch(*env.as, s);
  TakeSystrapTimings(*env.ctx);
  pid_t stub = SystrapStubPid(*env.as);
  uint64_t stub_cpu0 = ProcessCpuNs(stub), sentry_cpu0 = ThreadCpuNs();
  std::vector<uint64_t> each;
  each.reserve(1 << 20);
  auto t0 = std::chrono::steady_clock::now();
  const uint64_t c0 = __rdtsc();
  for (auto _ : state) {
    uint64_t a = __rdtsc();
    SwitchResult r = env.ctx->Switch(*env.as, s);
    if (each.size() < each.capacity()) each.push_back(__rdtsc() - a);
    if (r.reason != SwitchReason::kSyscall) {
      state.SkipWithError("unexpected switch result");
      return;
    }
    s.regs.rax = 1;  // getppid() == 1 in the sandbox
  }
  auto t1 = std::chrono::steady_clock::now();
  const uint64_t c1 = __rdtsc();
  state.counters["stub_cpu_ns"] =
      static_cast<double>(ProcessCpuNs(stub) - stub_cpu0) / state.iterations();
  state.counters["sentry_cpu_ns"] =
      static_cast<double>(ThreadCpuNs() - sentry_cpu0) / state.iterations();
  double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() /
              state.iterations();
  SystrapTimings tm = TakeSystrapTimings(*env.ctx);
  state.counters["to_stub_ns"] = tm.to_stub_ns;
  state.counters["guest_trap_ns"] = tm.guest_ns;
  state.counters["to_sentry_ns"] = tm.to_sentry_ns;
  state.counters["sentry_ns"] = tm.sentry_ns;
  // Medians: what a machine loaded by other work does not distort (a round
  // trip that waited for a CPU is a rare multi-millisecond outlier that
  // dominates the means).
  state.counters["to_stub_p50"] = tm.to_stub_p50_ns;
  state.counters["guest_trap_p50"] = tm.guest_p50_ns;
  state.counters["to_sentry_p50"] = tm.to_sentry_p50_ns;
  state.counters["sentry_p50"] = tm.sentry_p50_ns;
  // Per round trip: how the Sentry waited for the stub.
  if (tm.handoffs > 0) {
    const double n = static_cast<double>(tm.handoffs);
    state.counters["timed"] = tm.round_trips / n;
    state.counters["spin_hit"] = tm.spin_hits / n;
    state.counters["spin_miss"] = (tm.spins - tm.spin_hits) / n;
    state.counters["same_cpu"] = tm.same_cpu / n;
    state.counters["sleeps"] = tm.sentry_sleeps / n;
  }
  if (!each.empty() && c1 > c0) {
    const double k = std::chrono::duration<double, std::nano>(t1 - t0).count() /
                     static_cast<double>(c1 - c0);
    std::sort(each.begin(), each.end());
    state.counters["systrap_p10"] = each[each.size() / 10] * k;
    state.counters["systrap_p50"] = each[each.size() / 2] * k;
    state.counters["systrap_p90"] = each[each.size() * 9 / 10] * k;
  }
  double native = NativeGetppidNs();
  state.counters["systrap_ns"] = ns;
  state.counters["native_ns"] = native;
  state.counters["ratio"] = ns / native;
}
void BM_SystrapSyscallSpin(benchmark::State& state) {
  SyscallRoundTrip(state, true);
}
void BM_SystrapSyscallSpinSpread(benchmark::State& state) {
  SyscallRoundTrip(state, true, true, true);
}
void BM_SystrapSyscallFutex(benchmark::State& state) {
  SyscallRoundTrip(state, false);
}
void BM_SystrapSyscallFutexNoPin(benchmark::State& state) {
  SyscallRoundTrip(state, false, false);
}
BENCHMARK(BM_SystrapSyscallSpin)->UseRealTime();
BENCHMARK(BM_SystrapSyscallSpinSpread)->UseRealTime();
BENCHMARK(BM_SystrapSyscallFutexNoPin)->UseRealTime();
BENCHMARK(BM_SystrapSyscallFutex)->UseRealTime();

// A guest syscall whose service is `state.range(0)` us of CPU-bound Sentry
// work (a copy loop, as a large read from the page cache), with and without
// the long-work hint (platform/long_work.h). Without it the stub's spin ends
// before the reply and the reply pays a futex wake-up; with it the stub
// spins through the work. `extra_ns` is the round trip beyond the work.
void LongSyscall(benchmark::State& state, bool hint, bool spread = false) {
  Env env;
  if (!env.Init(true, {0x0f, 0x05, 0xeb, 0xfc}, true, spread)) {
    state.SkipWithError("systrap platform unavailable");
    return;
  }
  const double work_ns = state.range(0) * 1000.0;
  static const double per_ns = [] {
    auto t0 = std::chrono::steady_clock::now();
    uint64_t c0 = __rdtsc();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return (__rdtsc() - c0) / std::chrono::duration<double, std::nano>(
                                  std::chrono::steady_clock::now() - t0)
                                  .count();
  }();
  const uint64_t work_ticks = static_cast<uint64_t>(work_ns * per_ns);
  CpuState s = env.Start();
  s.regs.rax = SYS_getppid;
  for (int i = 0; i < 100; ++i) env.ctx->Switch(*env.as, s);
  TakeSystrapTimings(*env.ctx);
  std::vector<uint64_t> each;
  each.reserve(1 << 16);
  for (auto _ : state) {
    uint64_t a = __rdtsc();
    SwitchResult r = env.ctx->Switch(*env.as, s);
    if (r.reason != SwitchReason::kSyscall) {
      state.SkipWithError("unexpected switch result");
      return;
    }
    if (hint) HintLongWork();
    uint64_t end = __rdtsc() + work_ticks;
    while (__rdtsc() < end) _mm_pause();
    s.regs.rax = 1;
    if (each.size() < each.capacity()) each.push_back(__rdtsc() - a);
  }
  if (!each.empty()) {
    std::sort(each.begin(), each.end());
    state.counters["p50_ns"] = each[each.size() / 2] / per_ns;
    state.counters["extra_p50_ns"] = each[each.size() / 2] / per_ns - work_ns;
  }
  SystrapTimings tm = TakeSystrapTimings(*env.ctx);
  if (tm.handoffs > 0) {
    const double n = static_cast<double>(tm.handoffs);
    state.counters["stub_sleeps"] = tm.stub_sleeps / n;
    state.counters["same_cpu"] = tm.same_cpu / n;
    state.counters["spin_hit"] = tm.spin_hits / n;
  }
}
void BM_SystrapLongSyscall(benchmark::State& state) {
  LongSyscall(state, false);
}
void BM_SystrapLongSyscallHinted(benchmark::State& state) {
  LongSyscall(state, true);
}
void BM_SystrapLongSyscallHintedSpread(benchmark::State& state) {
  LongSyscall(state, true, true);
}
BENCHMARK(BM_SystrapLongSyscall)->Arg(60)->UseRealTime();
BENCHMARK(BM_SystrapLongSyscallHintedSpread)->Arg(60)->UseRealTime();
BENCHMARK(BM_SystrapLongSyscallHinted)->Arg(60)->UseRealTime();

// loop: mov (%rdi),%rax; add $4096,%rdi; jmp loop. Each iteration is one
// fault on a fresh page that the Sentry resolves with MapFile.
void PageFault(benchmark::State& state, bool pin) {
  Env env;
  if (!env.Init(true,
                {0x48, 0x8b, 0x07, 0x48, 0x81, 0xc7, 0x00, 0x10, 0x00, 0x00,
                 0xeb, 0xf4},
                pin)) {
    state.SkipWithError("systrap platform unavailable");
    return;
  }
  MemoryFile& m = env.platform->memory_file();
  uint64_t area = *m.Allocate(kFaultPages * kPage);
  CpuState s = env.Start();
  s.regs.rdi = kFaultArea;
  int mapped = 0;
  std::vector<uint64_t> each, map;
  each.reserve(1 << 20);
  map.reserve(1 << 20);
  auto t0 = std::chrono::steady_clock::now();
  const uint64_t c0 = __rdtsc();
  for (auto _ : state) {
    uint64_t a = __rdtsc();
    SwitchResult r = env.ctx->Switch(*env.as, s);
    uint64_t m = __rdtsc();
    if (r.reason != SwitchReason::kFault) {
      state.SkipWithError("expected a fault");
      return;
    }
    uintptr_t addr =
        reinterpret_cast<uintptr_t>(r.signal.si_addr) & ~(kPage - 1);
    if (!env.as->MapFile(addr, area + (addr - kFaultArea), kPage, PROT_READ)
             .ok()) {
      state.SkipWithError("MapFile failed");
      return;
    }
    if (each.size() < each.capacity()) {
      uint64_t now = __rdtsc();
      each.push_back(now - a);
      map.push_back(now - m);
    }
    if (++mapped == kFaultPages) {
      state.PauseTiming();
      env.as->Unmap(kFaultArea, kFaultPages * kPage);
      s.regs.rdi = kFaultArea;
      s.regs.rip = kCode;
      mapped = 0;
      state.ResumeTiming();
    }
  }
  auto t1 = std::chrono::steady_clock::now();
  const uint64_t c1 = __rdtsc();
  if (!each.empty() && c1 > c0) {
    const double k = std::chrono::duration<double, std::nano>(t1 - t0).count() /
                     static_cast<double>(c1 - c0);
    std::sort(each.begin(), each.end());
    state.counters["p10"] = each[each.size() / 10] * k;
    state.counters["p50"] = each[each.size() / 2] * k;
    std::sort(map.begin(), map.end());
    state.counters["mapfile_p50"] = map[map.size() / 2] * k;
  }
}
void BM_SystrapPageFault(benchmark::State& state) { PageFault(state, true); }
void BM_SystrapPageFaultNoPin(benchmark::State& state) {
  PageFault(state, false);
}
BENCHMARK(BM_SystrapPageFault)->UseRealTime();
BENCHMARK(BM_SystrapPageFaultNoPin)->UseRealTime();

// Creating an address space (a stub process), running one syscall in it
// (which creates its first guest thread) and destroying it.
void BM_AddressSpaceLifecycle(benchmark::State& state) {
  Env env;
  if (!env.Init(true, {0x0f, 0x05})) {
    state.SkipWithError("systrap platform unavailable");
    return;
  }
  for (auto _ : state) {
    auto as = env.platform->NewAddressSpace();
    if (!as.ok() ||
        !(*as)
             ->MapFile(kCode, env.code_off, kPage, PROT_READ | PROT_EXEC)
             .ok()) {
      state.SkipWithError("NewAddressSpace failed");
      return;
    }
    CpuState s = env.Start();
    if (env.ctx->Switch(**as, s).reason != SwitchReason::kSyscall) {
      state.SkipWithError("unexpected switch result");
      return;
    }
  }
}
BENCHMARK(BM_AddressSpaceLifecycle)->UseRealTime();

// The kernel's part of a trap: a SIGSYS raised by syscall user dispatch in
// this thread and an empty handler (no handoff).
volatile char g_selector = 0;  // PR_SYS_DISPATCH_OFF/ON = 0/1
void SigsysHandler(int, siginfo_t*, void*) { g_selector = 0; }

void BM_InProcessSigsysTrap(benchmark::State& state) {
  struct sigaction sa = {}, old;
  sa.sa_sigaction = SigsysHandler;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSYS, &sa, &old);
  g_selector = 0;
  if (prctl(59, 1, 0, 0, &g_selector) != 0) {
    state.SkipWithError("no syscall user dispatch");
    sigaction(SIGSYS, &old, nullptr);
    return;
  }
  for (auto _ : state) {
    g_selector = 1;  // block: the next syscall traps
    syscall(SYS_getppid);
  }
  g_selector = 0;
  prctl(59, 0, 0, 0, 0);
  sigaction(SIGSYS, &old, nullptr);
}
BENCHMARK(BM_InProcessSigsysTrap);

// A handoff there and back through a futex word in a shared mapping, with
// spinning (the fast path) or sleeping (FUTEX_WAIT/WAKE) waits, between two
// threads or two processes (a fork: what separates the Sentry from a stub),
// placed by the scheduler, both pinned to CPU 0, or pinned to CPUs 0 and 1.
// Reports the median and p10 round trip, which a machine loaded by other
// work distorts far less than the mean.
enum class Place { kFree, kOneCpu, kTwoCpus };
void Handoff(benchmark::State& state, bool spin, bool process, Place place) {
  void* mem = mmap(nullptr, kPage, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    state.SkipWithError("mmap");
    return;
  }
  auto* word = static_cast<std::atomic<uint32_t>*>(mem);
  word->store(0);
  auto pin = [](int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
  };
  cpu_set_t old;
  sched_getaffinity(0, sizeof(old), &old);
  auto wait_for = [&](uint32_t v) {
    for (uint32_t cur; (cur = word->load()) != v && cur != 3;) {
      if (spin) {
        __builtin_ia32_pause();
      } else {
        syscall(SYS_futex, word, FUTEX_WAIT, cur, nullptr, nullptr, 0);
      }
    }
  };
  auto set = [&](uint32_t v) {
    word->store(v);
    if (!spin) syscall(SYS_futex, word, FUTEX_WAKE, 1, nullptr, nullptr, 0);
  };
  auto peer = [&] {
    if (place != Place::kFree) pin(place == Place::kTwoCpus ? 1 : 0);
    for (;;) {
      wait_for(1);
      if (word->load() == 3) return;
      set(2);
    }
  };
  std::thread thread;
  pid_t child = -1;
  if (process) {
    child = fork();
    if (child == 0) {
      peer();
      _exit(0);
    }
  } else {
    thread = std::thread(peer);
  }
  if (place != Place::kFree) pin(0);
  std::vector<uint64_t> each;
  each.reserve(1 << 20);
  auto t0 = std::chrono::steady_clock::now();
  const uint64_t c0 = __rdtsc();
  for (auto _ : state) {
    uint64_t a = __rdtsc();
    set(1);
    wait_for(2);
    if (each.size() < each.capacity()) each.push_back(__rdtsc() - a);
  }
  auto t1 = std::chrono::steady_clock::now();
  const uint64_t c1 = __rdtsc();
  set(3);
  if (process) {
    waitpid(child, nullptr, 0);
  } else {
    thread.join();
  }
  sched_setaffinity(0, sizeof(old), &old);
  munmap(mem, kPage);
  if (!each.empty() && c1 > c0) {
    const double k = std::chrono::duration<double, std::nano>(t1 - t0).count() /
                     static_cast<double>(c1 - c0);
    std::sort(each.begin(), each.end());
    state.counters["p10"] = each[each.size() / 10] * k;
    state.counters["p50"] = each[each.size() / 2] * k;
  }
}
void BM_HandoffSpin(benchmark::State& state) {
  Handoff(state, true, false, Place::kFree);
}
void BM_HandoffFutex(benchmark::State& state) {
  Handoff(state, false, false, Place::kFree);
}
void BM_HandoffSpinProcess(benchmark::State& state) {
  Handoff(state, true, true, Place::kFree);
}
void BM_HandoffSpinProcessTwoCpus(benchmark::State& state) {
  Handoff(state, true, true, Place::kTwoCpus);
}
void BM_HandoffFutexProcess(benchmark::State& state) {
  Handoff(state, false, true, Place::kFree);
}
void BM_HandoffFutexOneCpu(benchmark::State& state) {
  Handoff(state, false, false, Place::kOneCpu);
}
void BM_HandoffFutexProcessOneCpu(benchmark::State& state) {
  Handoff(state, false, true, Place::kOneCpu);
}
void BM_HandoffFutexProcessTwoCpus(benchmark::State& state) {
  Handoff(state, false, true, Place::kTwoCpus);
}
BENCHMARK(BM_HandoffSpin)->UseRealTime();
BENCHMARK(BM_HandoffFutex)->UseRealTime();
BENCHMARK(BM_HandoffSpinProcess)->UseRealTime();
BENCHMARK(BM_HandoffSpinProcessTwoCpus)->UseRealTime();
BENCHMARK(BM_HandoffFutexProcess)->UseRealTime();
BENCHMARK(BM_HandoffFutexOneCpu)->UseRealTime();
BENCHMARK(BM_HandoffFutexProcessOneCpu)->UseRealTime();
BENCHMARK(BM_HandoffFutexProcessTwoCpus)->UseRealTime();

// What the stub's syscall thread and the host do on the page-fault path, in
// one process: mmap of one memory-file page (MAP_SHARED|MAP_FIXED), the
// first touch (the host's page fault), and replacing the touched mapping
// (its unmap), as medians.
void BM_HostMapTouchUnmap(benchmark::State& state) {
  constexpr int kPages = 4096;
  int fd = memfd_create("bench", 0);
  if (fd < 0 || ftruncate(fd, kPages * kPage) != 0) {
    state.SkipWithError("memfd");
    return;
  }
  void* area = mmap(nullptr, kPages * kPage, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) {
    close(fd);
    state.SkipWithError("mmap");
    return;
  }
  char* base = static_cast<char*>(area);
  std::vector<uint64_t> map, touch, unmap;
  int i = 0;
  for (auto _ : state) {
    char* p = base + static_cast<size_t>(i) * kPage;
    uint64_t a = __rdtsc();
    void* m = mmap(p, kPage, PROT_READ, MAP_SHARED | MAP_FIXED, fd,
                   static_cast<off_t>(i) * kPage);
    uint64_t b = __rdtsc();
    if (m != p) {
      state.SkipWithError("mmap");
      break;
    }
    char v = *reinterpret_cast<volatile char*>(p);
    benchmark::DoNotOptimize(v);
    uint64_t c = __rdtsc();
    m = mmap(p, kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
             0);
    uint64_t d = __rdtsc();
    if (m != p) {
      state.SkipWithError("mmap");
      break;
    }
    map.push_back(b - a);
    touch.push_back(c - b);
    unmap.push_back(d - c);
    i = (i + 1) % kPages;
  }
  munmap(base, kPages * kPage);
  close(fd);
  // TSC ticks per ns, from a short calibration.
  auto t0 = std::chrono::steady_clock::now();
  uint64_t c0 = __rdtsc();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  double k = std::chrono::duration<double, std::nano>(
                 std::chrono::steady_clock::now() - t0)
                 .count() /
             static_cast<double>(__rdtsc() - c0);
  for (auto [name, v] :
       {std::pair{"map_p50", &map}, std::pair{"touch_p50", &touch},
        std::pair{"unmap_p50", &unmap}}) {
    if (v->empty()) continue;
    std::sort(v->begin(), v->end());
    state.counters[name] = (*v)[v->size() / 2] * k;
  }
}
BENCHMARK(BM_HostMapTouchUnmap)->UseRealTime();

}  // namespace
}  // namespace sandbox::platform

BENCHMARK_MAIN();
