#include "sentry/vdso/vdso.h"

#include <elf.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/testing/fake_platform.h"

namespace sandbox::vdso {
namespace {

int64_t HostNs(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t VdsoNs(clockid_t c) {
  timespec ts;
  EXPECT_TRUE(ClockGettime(c, &ts)) << c;
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// The largest distance of a vDSO reading from the host readings just
// before and after it, over `tries` tries whose host readings are less
// than 2 us apart (an undisturbed try). -1 if fewer than 5 tries were.
int64_t WorstError(clockid_t c, int tries) {
  int64_t worst = 0;
  int tight = 0;
  for (int i = 0; i < tries; ++i) {
    const int64_t a = HostNs(c);
    const int64_t v = VdsoNs(c);
    const int64_t b = HostNs(c);
    if (b - a > 2000) continue;
    ++tight;
    worst = std::max(worst, v < a ? a - v : v > b ? v - b : 0);
  }
  return tight >= 5 ? worst : -1;
}

bool HaveInvariantTsc() {
  // The vDSO's own rule; without it the clocks are off by design.
  return CurrentParams().enabled != 0;
}

// Whether the host's clock_gettime is fast enough to bracket a reading
// (a vDSO clock source): the median gap of 100 back-to-back host reads is
// under 500 ns. Without it (a VM whose clock source traps, a loaded host)
// the comparisons below measure the host, not the vDSO.
bool HostClockIsFast() {
  std::vector<int64_t> gaps;
  for (int i = 0; i < 100; ++i) {
    const int64_t a = HostNs(CLOCK_MONOTONIC);
    gaps.push_back(HostNs(CLOCK_MONOTONIC) - a);
  }
  std::nth_element(gaps.begin(), gaps.begin() + 50, gaps.end());
  return gaps[50] < 500;
}

TEST(VdsoImage, IsARelocationFreeSharedObjectWithTheLinuxSymbols) {
  const uint8_t* p = ImageData();
  const size_t n = ImageSize();
  ASSERT_GE(n, sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  memcpy(&eh, p, sizeof(eh));
  ASSERT_EQ(memcmp(eh.e_ident, ELFMAG, SELFMAG), 0);
  EXPECT_EQ(eh.e_type, ET_DYN);
  EXPECT_EQ(eh.e_machine, EM_X86_64);
  ASSERT_LE(eh.e_phoff + eh.e_phnum * sizeof(Elf64_Phdr), n);
  int loads = 0;
  const Elf64_Phdr* dyn_ph = nullptr;
  bool eh_frame = false;
  const auto* phdrs = reinterpret_cast<const Elf64_Phdr*>(p + eh.e_phoff);
  for (int i = 0; i < eh.e_phnum; ++i) {
    if (phdrs[i].p_type == PT_LOAD) {
      ++loads;
      EXPECT_EQ(phdrs[i].p_vaddr, 0u);
      EXPECT_EQ(phdrs[i].p_offset, 0u);
      EXPECT_EQ(phdrs[i].p_flags, uint32_t{PF_R | PF_X});
    }
    if (phdrs[i].p_type == PT_DYNAMIC) dyn_ph = &phdrs[i];
    if (phdrs[i].p_type == PT_GNU_EH_FRAME) eh_frame = true;
  }
  EXPECT_EQ(loads, 1);
  EXPECT_TRUE(eh_frame);
  ASSERT_NE(dyn_ph, nullptr);
  // The dynamic section: hash tables, symbols, versions, the soname; no
  // relocations of any kind (the image is mapped as is).
  std::set<int64_t> tags;
  uint64_t strtab = 0, symtab = 0, hash = 0, versym = 0, verdef = 0, soname = 0;
  const auto* dyn = reinterpret_cast<const Elf64_Dyn*>(p + dyn_ph->p_offset);
  for (size_t i = 0; i < dyn_ph->p_filesz / sizeof(Elf64_Dyn); ++i) {
    if (dyn[i].d_tag == DT_NULL) break;
    tags.insert(dyn[i].d_tag);
    switch (dyn[i].d_tag) {
      case DT_STRTAB:
        strtab = dyn[i].d_un.d_ptr;
        break;
      case DT_SYMTAB:
        symtab = dyn[i].d_un.d_ptr;
        break;
      case DT_HASH:
        hash = dyn[i].d_un.d_ptr;
        break;
      case DT_VERSYM:
        versym = dyn[i].d_un.d_ptr;
        break;
      case DT_VERDEF:
        verdef = dyn[i].d_un.d_ptr;
        break;
      case DT_SONAME:
        soname = dyn[i].d_un.d_val;
        break;
    }
  }
  for (int64_t t : {DT_RELA, DT_REL, DT_JMPREL, DT_TEXTREL, DT_RELR}) {
    EXPECT_EQ(tags.count(t), 0u) << "tag " << t;
  }
  EXPECT_EQ(tags.count(DT_GNU_HASH), 1u);
  ASSERT_NE(strtab, 0u);
  ASSERT_NE(symtab, 0u);
  ASSERT_NE(hash, 0u);
  ASSERT_NE(versym, 0u);
  ASSERT_NE(verdef, 0u);
  const char* strs = reinterpret_cast<const char*>(p + strtab);
  EXPECT_STREQ(strs + soname, "linux-vdso.so.1");
  // Version index -> name from the verdefs.
  std::map<int, std::string> versions;
  for (uint64_t off = verdef;;) {
    const auto* vd = reinterpret_cast<const Elf64_Verdef*>(p + off);
    const auto* aux =
        reinterpret_cast<const Elf64_Verdaux*>(p + off + vd->vd_aux);
    versions[vd->vd_ndx] = strs + aux->vda_name;
    if (vd->vd_next == 0) break;
    off += vd->vd_next;
  }
  const uint32_t nsyms = reinterpret_cast<const uint32_t*>(p + hash)[1];
  const auto* syms = reinterpret_cast<const Elf64_Sym*>(p + symtab);
  const auto* vers = reinterpret_cast<const uint16_t*>(p + versym);
  std::map<std::string, std::string> exported;  // name -> version
  for (uint32_t i = 1; i < nsyms; ++i) {
    if (syms[i].st_shndx == SHN_UNDEF || syms[i].st_shndx == SHN_ABS) continue;
    ASSERT_LT(syms[i].st_value, n);
    exported[strs + syms[i].st_name] = versions[vers[i] & 0x7fff];
  }
  for (const char* name :
       {"__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_time",
        "__vdso_getcpu", "__vdso_clock_getres", "clock_gettime", "gettimeofday",
        "time", "getcpu", "clock_getres"}) {
    EXPECT_EQ(exported[name], "LINUX_2.6") << name;
  }
  // No section needs a relocation either.
  const auto* shdrs = reinterpret_cast<const Elf64_Shdr*>(p + eh.e_shoff);
  ASSERT_LE(eh.e_shoff + eh.e_shnum * sizeof(Elf64_Shdr), n);
  for (int i = 0; i < eh.e_shnum; ++i) {
    EXPECT_NE(shdrs[i].sh_type, uint32_t{SHT_RELA});
    EXPECT_NE(shdrs[i].sh_type, uint32_t{SHT_REL});
  }
}

TEST(VdsoClock, AgreesWithTheHostAndIsMonotonic) {
  if (!HaveInvariantTsc()) GTEST_SKIP() << "no invariant TSC: vDSO clocks off";
  if (!HostClockIsFast()) {
    GTEST_SKIP() << "the host's clock_gettime is slow (not in its vDSO)";
  }
  for (clockid_t c :
       {CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME, CLOCK_MONOTONIC_RAW}) {
    // host <= vdso <= host, within the fit's error (early: the first
    // fits have short windows).
    const int64_t worst = WorstError(c, 200);
    EXPECT_GE(worst, 0) << "clock " << c << ": no undisturbed try";
    EXPECT_LT(worst, 20000) << "clock " << c;
    std::cout << "clock " << c << ": vDSO at most " << worst
              << " ns outside the host's bracketing reads\n";
  }
  timespec ts;
  EXPECT_FALSE(ClockGettime(CLOCK_PROCESS_CPUTIME_ID, &ts));
  EXPECT_FALSE(ClockGettime(CLOCK_THREAD_CPUTIME_ID, &ts));
}

// After a few seconds of refits (1 ms, 2 ms, ... 1 s apart) the lines
// follow the host within a microsecond or so (10 us allowed: a VM's
// clock or a busy host adds its own error).
TEST(VdsoClock, FollowsTheHostAfterRefits) {
  if (!HaveInvariantTsc()) GTEST_SKIP() << "no invariant TSC: vDSO clocks off";
  if (!HostClockIsFast()) {
    GTEST_SKIP() << "the host's clock_gettime is slow (not in its vDSO)";
  }
  absl::SleepFor(absl::Milliseconds(2500));
  for (clockid_t c :
       {CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME, CLOCK_MONOTONIC_RAW}) {
    const int64_t worst = WorstError(c, 200);
    EXPECT_GE(worst, 0) << "clock " << c << ": no undisturbed try";
    EXPECT_LT(worst, 10000) << "clock " << c;
    std::cout << "after refits, clock " << c << ": vDSO at most " << worst
              << " ns outside the host's bracketing reads\n";
  }
}

TEST(VdsoClock, MonotonicAcrossRefits) {
  if (!HaveInvariantTsc()) GTEST_SKIP() << "no invariant TSC: vDSO clocks off";
  std::atomic<bool> stop{false};
  std::thread refits([&] {
    while (!stop.load()) UpdateNowForTest();
  });
  for (clockid_t c : {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME}) {
    int64_t last = VdsoNs(c);
    for (int i = 0; i < 200000; ++i) {
      const int64_t now = VdsoNs(c);
      ASSERT_GE(now, last) << "clock " << c << " read " << i;
      last = now;
    }
  }
  stop = true;
  refits.join();
  EXPECT_LT(std::llabs(VdsoNs(CLOCK_MONOTONIC) - HostNs(CLOCK_MONOTONIC)),
            1000000);
}

TEST(VdsoMap, VvarAndVdsoMappings) {
  mm::testing::FakePlatform platform;
  auto mm = mm::MemoryManager::Create(platform, {});
  ASSERT_TRUE(mm.ok());
  auto r = MapVdso(**mm);
  ASSERT_TRUE(r.ok()) << r.error().name();
  const uintptr_t ehdr = *r;
  const uintptr_t vvar = ehdr - kVvarSize;
  const size_t text = mm::PageRoundUp(ImageSize());
  std::vector<mm::VmaInfo> vmas = (*mm)->Vmas();
  ASSERT_EQ(vmas.size(), 2u);
  EXPECT_EQ(vmas[0].start, vvar);
  EXPECT_EQ(vmas[0].end, ehdr);
  EXPECT_EQ(vmas[0].name, "[vvar]");
  EXPECT_EQ(vmas[0].prot, PROT_READ);
  EXPECT_FALSE(vmas[0].shared);
  EXPECT_EQ(vmas[0].offset, 0u);
  EXPECT_EQ(vmas[1].start, ehdr);
  EXPECT_EQ(vmas[1].end, ehdr + text);
  EXPECT_EQ(vmas[1].name, "[vdso]");
  EXPECT_EQ(vmas[1].prot, PROT_READ | PROT_EXEC);
  EXPECT_FALSE(vmas[1].shared);
  EXPECT_EQ(vmas[1].offset, 0u);
  // Top-down below the mmap base, like any mmap.
  EXPECT_EQ(ehdr + text, (*mm)->layout().mmap_base);

  // The image reads back; the data page shows the published parameters.
  std::vector<uint8_t> img(ImageSize());
  ASSERT_TRUE((*mm)->CopyIn(ehdr, img.data(), img.size()).ok());
  EXPECT_EQ(memcmp(img.data(), ImageData(), img.size()), 0);
  VdsoData d;
  ASSERT_TRUE((*mm)->CopyIn(vvar, &d, sizeof(d)).ok());
  EXPECT_EQ(d.enabled, CurrentParams().enabled);
  EXPECT_GT(d.hres_res_ns, 0);

  // [vvar] can never be written or executed: EACCES like Linux (no
  // VM_MAYWRITE); writes fault.
  EXPECT_EQ((*mm)->Mprotect(vvar, kVvarSize, PROT_READ | PROT_WRITE).error(),
            kEACCES);
  EXPECT_EQ((*mm)->Mprotect(vvar, kVvarSize, PROT_READ | PROT_EXEC).error(),
            kEACCES);
  uint32_t x = 1;
  EXPECT_FALSE((*mm)->CopyOut(vvar, &x, sizeof(x)).ok());
  // [vdso] is private: made writable and written, the copy changes, the
  // shared image does not.
  ASSERT_TRUE(
      (*mm)->Mprotect(ehdr, text, PROT_READ | PROT_WRITE | PROT_EXEC).ok());
  const uint8_t junk[4] = {1, 2, 3, 4};
  ASSERT_TRUE((*mm)->CopyOut(ehdr, junk, sizeof(junk)).ok());
  auto mm2 = mm::MemoryManager::Create(platform, {});
  ASSERT_TRUE(mm2.ok());
  auto r2 = MapVdso(**mm2);
  ASSERT_TRUE(r2.ok());
  uint8_t head[4];
  ASSERT_TRUE((*mm2)->CopyIn(*r2, head, sizeof(head)).ok());
  EXPECT_EQ(memcmp(head, ELFMAG, 4), 0);

  // fork keeps both.
  auto child = (*mm)->Fork(platform);
  ASSERT_TRUE(child.ok());
  std::vector<mm::VmaInfo> cv = (*child)->Vmas();
  ASSERT_EQ(cv.size(), 2u);
  EXPECT_EQ(cv[0].name, "[vvar]");
  EXPECT_EQ(cv[1].name, "[vdso]");
  VdsoData cd;
  ASSERT_TRUE((*child)->CopyIn(vvar, &cd, sizeof(cd)).ok());
  EXPECT_EQ(cd.hres_res_ns, d.hres_res_ns);
}

TEST(VdsoMap, VvarFollowsRefits) {
  if (!HaveInvariantTsc()) GTEST_SKIP() << "no invariant TSC: vDSO clocks off";
  mm::testing::FakePlatform platform;
  auto mm = mm::MemoryManager::Create(platform, {});
  ASSERT_TRUE(mm.ok());
  auto r = MapVdso(**mm);
  ASSERT_TRUE(r.ok());
  VdsoData before;
  ASSERT_TRUE((*mm)->CopyIn(*r - kVvarSize, &before, sizeof(before)).ok());
  UpdateNowForTest();
  VdsoData after;
  ASSERT_TRUE((*mm)->CopyIn(*r - kVvarSize, &after, sizeof(after)).ok());
  EXPECT_EQ(after.seq % 2, 0u);
  EXPECT_GT(after.seq, before.seq);
  EXPECT_GT(after.mono.base_cycles, before.mono.base_cycles);
  EXPECT_EQ(after.mono.base_ns, CurrentParams().mono.base_ns);
}

TEST(VdsoMap, NoRoomIsENOMEM) {
  mm::testing::FakePlatform platform;
  auto mm = mm::MemoryManager::Create(platform, {});
  ASSERT_TRUE(mm.ok());
  (*mm)->SetAddressSpaceLimit(0);
  auto r = MapVdso(**mm);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kENOMEM);
  EXPECT_TRUE((*mm)->Vmas().empty());
}

}  // namespace
}  // namespace sandbox::vdso
