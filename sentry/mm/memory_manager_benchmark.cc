// Costs of the MemoryManager's own bookkeeping (fake platform: no stub
// round trips). Run: bazel run -c opt //sentry/mm:memory_manager_benchmark
#include <sys/mman.h>

#include <memory>

#include "benchmark/benchmark.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/testing/fake_platform.h"

namespace sandbox::mm {
namespace {

constexpr uintptr_t kBase = 0x200000000;
constexpr int kRW = PROT_READ | PROT_WRITE;

std::unique_ptr<MemoryManager> NewMm(testing::FakePlatform& p) {
  return std::move(MemoryManager::Create(p, {.randomize = false})).value();
}

void BM_CopyIn8(benchmark::State& state) {
  testing::FakePlatform p;
  auto mm = NewMm(p);
  (void)mm->Mmap(
      {.addr = kBase,
       .length = 1 << 20,
       .prot = kRW,
       .flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_POPULATE});
  uint64_t v;
  for (auto _ : state) {
    benchmark::DoNotOptimize(mm->CopyIn(kBase + 64, &v, 8));
  }
}
BENCHMARK(BM_CopyIn8);

void BM_CopyOut4K(benchmark::State& state) {
  testing::FakePlatform p;
  auto mm = NewMm(p);
  (void)mm->Mmap(
      {.addr = kBase,
       .length = 1 << 20,
       .prot = kRW,
       .flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_POPULATE});
  char buf[4096] = {};
  for (auto _ : state) {
    benchmark::DoNotOptimize(mm->CopyOut(kBase + 4096, buf, sizeof(buf)));
  }
  state.SetBytesProcessed(state.iterations() * sizeof(buf));
}
BENCHMARK(BM_CopyOut4K);

void BM_MmapFaultMunmap(benchmark::State& state) {
  testing::FakePlatform p;
  auto mm = NewMm(p);
  platform::AccessType w;
  w.write = true;
  for (auto _ : state) {
    auto a = mm->Mmap({.length = static_cast<size_t>(state.range(0)),
                       .prot = kRW,
                       .flags = MAP_PRIVATE | MAP_ANONYMOUS});
    (void)mm->HandleFault(*a, w);
    (void)mm->Munmap(*a, state.range(0));
  }
}
BENCHMARK(BM_MmapFaultMunmap)->Arg(4096)->Arg(2 << 20);

void BM_MmapManyVmas(benchmark::State& state) {
  // Placement with `range(0)` unmergeable VMAs already mapped.
  testing::FakePlatform p;
  auto mm = NewMm(p);
  for (int i = 0; i < state.range(0); ++i) {
    (void)mm->Mmap({.length = 4096,
                    .prot = i % 2 ? PROT_READ : kRW,
                    .flags = MAP_PRIVATE | MAP_ANONYMOUS});
  }
  for (auto _ : state) {
    auto a = mm->Mmap({.length = 4096,
                       .prot = PROT_EXEC,
                       .flags = MAP_PRIVATE | MAP_ANONYMOUS});
    (void)mm->Munmap(*a, 4096);
  }
}
BENCHMARK(BM_MmapManyVmas)->Arg(10)->Arg(1000)->Arg(10000);

void BM_Fork64MiB(benchmark::State& state) {
  testing::FakePlatform p;
  auto mm = NewMm(p);
  (void)mm->Mmap(
      {.addr = kBase,
       .length = 64 << 20,
       .prot = kRW,
       .flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_POPULATE});
  for (auto _ : state) {
    auto child = mm->Fork(p);
    benchmark::DoNotOptimize(child);
  }
}
BENCHMARK(BM_Fork64MiB);

}  // namespace
}  // namespace sandbox::mm

BENCHMARK_MAIN();
