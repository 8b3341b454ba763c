// The vDSO: AT_SYSINFO_EHDR is an ELF image with Linux's symbols (version
// LINUX_2.6), its clocks agree with the system calls and never go back,
// /proc/self/maps names [vdso] and [vvar], fork keeps them, [vvar] cannot
// be written and [vdso] is private.
#include <elf.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

using ClockGettimeFn = int (*)(clockid_t, struct timespec*);
using GettimeofdayFn = int (*)(struct timeval*, void*);
using TimeFn = time_t (*)(time_t*);
using ClockGetresFn = int (*)(clockid_t, struct timespec*);
using GetcpuFn = long (*)(unsigned*, unsigned*, void*);

// The vDSO's dynamic symbols, found as ld.so finds them: from the
// program headers of the image at AT_SYSINFO_EHDR.
struct Vdso {
  uintptr_t base = 0;
  std::string soname;
  std::map<std::string, std::pair<uintptr_t, std::string>>
      syms;  // ->
             // addr, version
  bool has_relocations = false;
  bool has_hash = false;
};

Vdso ParseVdso() {
  Vdso v;
  v.base = getauxval(AT_SYSINFO_EHDR);
  if (v.base == 0) return v;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(v.base);
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) return v;
  const auto* ph = reinterpret_cast<const Elf64_Phdr*>(v.base + eh->e_phoff);
  uintptr_t load = 0;
  bool have_load = false;
  const Elf64_Dyn* dyn = nullptr;
  for (int i = 0; i < eh->e_phnum; ++i) {
    if (ph[i].p_type == PT_LOAD && !have_load) {
      load = v.base + ph[i].p_offset - ph[i].p_vaddr;
      have_load = true;
    }
  }
  for (int i = 0; i < eh->e_phnum; ++i) {
    if (ph[i].p_type == PT_DYNAMIC) {
      dyn = reinterpret_cast<const Elf64_Dyn*>(load + ph[i].p_vaddr);
    }
  }
  if (!have_load || dyn == nullptr) return v;
  uintptr_t strtab = 0, symtab = 0, hash = 0, gnu_hash = 0, versym = 0,
            verdef = 0;
  uint64_t soname = 0;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    switch (dyn->d_tag) {
      case DT_STRTAB:
        strtab = load + dyn->d_un.d_ptr;
        break;
      case DT_SYMTAB:
        symtab = load + dyn->d_un.d_ptr;
        break;
      case DT_HASH:
        hash = load + dyn->d_un.d_ptr;
        break;
      case DT_GNU_HASH:
        gnu_hash = load + dyn->d_un.d_ptr;
        break;
      case DT_VERSYM:
        versym = load + dyn->d_un.d_ptr;
        break;
      case DT_VERDEF:
        verdef = load + dyn->d_un.d_ptr;
        break;
      case DT_SONAME:
        soname = dyn->d_un.d_val;
        break;
      case DT_REL:
      case DT_RELA:
      case DT_JMPREL:
      case DT_TEXTREL:
        v.has_relocations = true;
        break;
    }
  }
  if (strtab == 0 || symtab == 0 || (hash == 0 && gnu_hash == 0)) return v;
  v.has_hash = true;
  const char* strs = reinterpret_cast<const char*>(strtab);
  v.soname = strs + soname;
  uint32_t nsyms = 0;
  if (hash != 0) {
    nsyms = reinterpret_cast<const uint32_t*>(hash)[1];
  } else {
    // DT_GNU_HASH: the highest chain's end.
    const auto* h = reinterpret_cast<const uint32_t*>(gnu_hash);
    const uint32_t nbuckets = h[0], symoffset = h[1], bloom = h[2];
    const uint32_t* buckets =
        reinterpret_cast<const uint32_t*>(gnu_hash + 16 + bloom * 8);
    const uint32_t* chain = buckets + nbuckets;
    for (uint32_t b = 0; b < nbuckets; ++b) {
      if (buckets[b] == 0) continue;
      uint32_t i = buckets[b];
      while (!(chain[i - symoffset] & 1)) ++i;
      nsyms = std::max(nsyms, i + 1);
    }
  }
  std::map<int, std::string> versions;
  for (uintptr_t off = verdef; off != 0;) {
    const auto* vd = reinterpret_cast<const Elf64_Verdef*>(off);
    const auto* aux = reinterpret_cast<const Elf64_Verdaux*>(off + vd->vd_aux);
    versions[vd->vd_ndx] = strs + aux->vda_name;
    off = vd->vd_next != 0 ? off + vd->vd_next : 0;
  }
  const auto* syms = reinterpret_cast<const Elf64_Sym*>(symtab);
  const auto* vers = reinterpret_cast<const uint16_t*>(versym);
  for (uint32_t i = 1; i < nsyms; ++i) {
    if (syms[i].st_shndx == SHN_UNDEF || syms[i].st_shndx == SHN_ABS) continue;
    if (ELF64_ST_TYPE(syms[i].st_info) != STT_FUNC) continue;
    v.syms[strs + syms[i].st_name] = {
        load + syms[i].st_value, versym != 0 ? versions[vers[i] & 0x7fff] : ""};
  }
  return v;
}

const Vdso& GetVdso() {
  static const Vdso* v = new Vdso(ParseVdso());
  return *v;
}

template <typename Fn>
Fn Sym(const char* name) {
  auto it = GetVdso().syms.find(name);
  return it == GetVdso().syms.end() ? nullptr
                                    : reinterpret_cast<Fn>(it->second.first);
}

int64_t Nanos(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t SysNow(clockid_t c) {
  struct timespec ts = {};
  EXPECT_EQ(syscall(SYS_clock_gettime, c, &ts), 0) << strerror(errno);
  return Nanos(ts);
}

TEST(VdsoTest, AuxvPointsAtTheImage) {
  const Vdso& v = GetVdso();
  ASSERT_NE(v.base, 0u) << "no AT_SYSINFO_EHDR";
  EXPECT_EQ(v.base % 4096, 0u);
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(v.base);
  ASSERT_EQ(memcmp(eh->e_ident, ELFMAG, SELFMAG), 0);
  EXPECT_EQ(eh->e_ident[EI_CLASS], ELFCLASS64);
  EXPECT_EQ(eh->e_type, ET_DYN);
  EXPECT_EQ(eh->e_machine, EM_X86_64);
  EXPECT_TRUE(v.has_hash);
  EXPECT_FALSE(v.has_relocations);
  EXPECT_EQ(v.soname, "linux-vdso.so.1");
  for (const char* name :
       {"__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_time",
        "__vdso_getcpu", "__vdso_clock_getres", "clock_gettime", "gettimeofday",
        "time", "getcpu", "clock_getres"}) {
    auto it = v.syms.find(name);
    ASSERT_NE(it, v.syms.end()) << name;
    EXPECT_EQ(it->second.second, "LINUX_2.6") << name;
  }
  EXPECT_EQ(v.syms.at("time").first, v.syms.at("__vdso_time").first);
}

class VdsoClockTest : public ::testing::TestWithParam<clockid_t> {};

// syscall <= vDSO <= syscall, and never backwards, mixing both.
TEST_P(VdsoClockTest, AgreesWithTheSyscallAndIsMonotonic) {
  auto gettime = Sym<ClockGettimeFn>("__vdso_clock_gettime");
  ASSERT_NE(gettime, nullptr);
  const clockid_t c = GetParam();
  int64_t last = SysNow(c);
  for (int i = 0; i < 20000; ++i) {
    struct timespec ts = {};
    ASSERT_EQ(gettime(c, &ts), 0);
    ASSERT_GE(ts.tv_nsec, 0);
    ASSERT_LT(ts.tv_nsec, 1000000000);
    const int64_t v = Nanos(ts);
    ASSERT_GE(v, last) << "iteration " << i;
    last = v;
    if (i % 64 == 0) {
      const int64_t s = SysNow(c);
      ASSERT_GE(s, last) << "syscall after vDSO, iteration " << i;
      last = s;
    }
  }
  // And the two are close: a vDSO read between two syscalls lies between
  // them (the coarse clocks: within a tick of 10 ms).
  const bool coarse = c == CLOCK_REALTIME_COARSE || c == CLOCK_MONOTONIC_COARSE;
  const int64_t slack = coarse ? 10000000 : 0;
  const int64_t a = SysNow(c);
  struct timespec ts = {};
  ASSERT_EQ(gettime(c, &ts), 0);
  const int64_t b = SysNow(c);
  EXPECT_GE(Nanos(ts), a - slack);
  EXPECT_LE(Nanos(ts), b + slack);
}

TEST_P(VdsoClockTest, GetresMatchesTheSyscall) {
  auto getres = Sym<ClockGetresFn>("__vdso_clock_getres");
  ASSERT_NE(getres, nullptr);
  struct timespec v = {}, s = {};
  ASSERT_EQ(getres(GetParam(), &v), 0);
  ASSERT_EQ(syscall(SYS_clock_getres, GetParam(), &s), 0);
  EXPECT_EQ(Nanos(v), Nanos(s));
  EXPECT_EQ(getres(GetParam(), nullptr), 0);
}

std::string ClockName(const ::testing::TestParamInfo<clockid_t>& info) {
  switch (info.param) {
    case CLOCK_REALTIME:
      return "Realtime";
    case CLOCK_MONOTONIC:
      return "Monotonic";
    case CLOCK_MONOTONIC_RAW:
      return "MonotonicRaw";
    case CLOCK_REALTIME_COARSE:
      return "RealtimeCoarse";
    case CLOCK_MONOTONIC_COARSE:
      return "MonotonicCoarse";
    case CLOCK_BOOTTIME:
      return "Boottime";
    default:
      return "Clock" + std::to_string(info.param);
  }
}

INSTANTIATE_TEST_SUITE_P(Clocks, VdsoClockTest,
                         ::testing::Values(CLOCK_REALTIME, CLOCK_MONOTONIC,
                                           CLOCK_MONOTONIC_RAW,
                                           CLOCK_REALTIME_COARSE,
                                           CLOCK_MONOTONIC_COARSE,
                                           CLOCK_BOOTTIME),
                         ClockName);

TEST(VdsoTest, OtherClocksFallBackToTheSyscall) {
  auto gettime = Sym<ClockGettimeFn>("__vdso_clock_gettime");
  auto getres = Sym<ClockGetresFn>("__vdso_clock_getres");
  ASSERT_NE(gettime, nullptr);
  ASSERT_NE(getres, nullptr);
  struct timespec ts = {};
  EXPECT_EQ(gettime(CLOCK_PROCESS_CPUTIME_ID, &ts), 0);
  EXPECT_GT(Nanos(ts), 0);
  EXPECT_EQ(gettime(CLOCK_THREAD_CPUTIME_ID, &ts), 0);
  // The raw syscall result, -errno, as glibc expects from the vDSO.
  EXPECT_EQ(gettime(12345, &ts), -EINVAL);
  EXPECT_EQ(getres(12345, &ts), -EINVAL);
}

TEST(VdsoTest, GettimeofdayAndTimeAgree) {
  auto gtod = Sym<GettimeofdayFn>("__vdso_gettimeofday");
  auto vtime = Sym<TimeFn>("__vdso_time");
  ASSERT_NE(gtod, nullptr);
  ASSERT_NE(vtime, nullptr);
  for (int i = 0; i < 100; ++i) {
    const int64_t a = SysNow(CLOCK_REALTIME) / 1000;
    struct timeval tv = {};
    ASSERT_EQ(gtod(&tv, nullptr), 0);
    const int64_t b = SysNow(CLOCK_REALTIME) / 1000;
    const int64_t us = static_cast<int64_t>(tv.tv_sec) * 1000000 + tv.tv_usec;
    ASSERT_GE(tv.tv_usec, 0);
    ASSERT_LT(tv.tv_usec, 1000000);
    ASSERT_GE(us, a);
    ASSERT_LE(us, b);
  }
  struct timeval tv = {};
  struct timezone tz = {1, 1};
  ASSERT_EQ(gtod(&tv, &tz), 0);
  time_t stored = 0;
  const time_t t = vtime(&stored);
  EXPECT_EQ(t, stored);
  EXPECT_GE(t, tv.tv_sec - 1);  // Linux's time() is the coarse second
  EXPECT_LE(t, tv.tv_sec + 1);
  EXPECT_EQ(vtime(nullptr) >= t, true);
  const long s = syscall(SYS_time, nullptr);
  EXPECT_GE(s, t - 1);
  EXPECT_LE(s, t + 1);
}

TEST(VdsoTest, Getcpu) {
  auto getcpu = Sym<GetcpuFn>("__vdso_getcpu");
  ASSERT_NE(getcpu, nullptr);
  unsigned cpu = ~0u, node = ~0u;
  ASSERT_EQ(getcpu(&cpu, &node, nullptr), 0);
  EXPECT_LT(cpu, static_cast<unsigned>(CPU_SETSIZE));
  EXPECT_LT(node, 1024u);
  EXPECT_EQ(getcpu(nullptr, nullptr, nullptr), 0);
}

struct MapsLine {
  uintptr_t start = 0, end = 0;
  std::string perms;
  std::string rest;
};

std::map<std::string, MapsLine> SpecialMappings() {
  std::map<std::string, MapsLine> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t open = line.find('[');
    if (open == std::string::npos) continue;
    MapsLine m;
    char perms[8] = {};
    if (sscanf(line.c_str(), "%lx-%lx %7s", &m.start, &m.end, perms) != 3) {
      continue;
    }
    m.perms = perms;
    m.rest = line;
    out[line.substr(open)] = m;
  }
  return out;
}

TEST(VdsoTest, ProcMapsNamesVdsoAndVvar) {
  const auto maps = SpecialMappings();
  ASSERT_EQ(maps.count("[vdso]"), 1u);
  ASSERT_EQ(maps.count("[vvar]"), 1u);
  const MapsLine& vdso = maps.at("[vdso]");
  const MapsLine& vvar = maps.at("[vvar]");
  EXPECT_EQ(vdso.start, getauxval(AT_SYSINFO_EHDR));
  EXPECT_EQ(vdso.perms, "r-xp");
  EXPECT_EQ(vvar.perms, "r--p");
  // The data lies just below the code (Linux 6.13+ puts [vvar_vclock]
  // between them).
  EXPECT_LT(vvar.end, vdso.start + 1);
  EXPECT_GE(vvar.end + 4 * 4096, vdso.start);
  EXPECT_THAT(vdso.rest, ::testing::HasSubstr(" 00000000 00:00 0 "));
  EXPECT_THAT(vvar.rest, ::testing::HasSubstr(" 00000000 00:00 0 "));
}

TEST(VdsoTest, VvarCannotBeMadeWritable) {
  const MapsLine vvar = SpecialMappings()["[vvar]"];
  ASSERT_NE(vvar.start, 0u);
  void* p = reinterpret_cast<void*>(vvar.start);
  const size_t len = vvar.end - vvar.start;
  EXPECT_THAT(mprotect(p, len, PROT_READ | PROT_WRITE),
              SyscallFailsWithErrno(EACCES));
  EXPECT_THAT(mprotect(p, len, PROT_READ | PROT_EXEC),
              SyscallFailsWithErrno(EACCES));
  EXPECT_THAT(mprotect(p, len, PROT_READ), SyscallSucceeds());
}

TEST(VdsoTest, WritingVvarFaults) {
  const MapsLine vvar = SpecialMappings()["[vvar]"];
  ASSERT_NE(vvar.start, 0u);
  const int status = InForkedChild(
      [&] { *reinterpret_cast<volatile uint32_t*>(vvar.start) = 1; });
  EXPECT_THAT(status, KilledBySignal(SIGSEGV));
}

TEST(VdsoTest, VdsoIsPrivateCopyOnWrite) {
  const MapsLine vdso = SpecialMappings()["[vdso]"];
  ASSERT_NE(vdso.start, 0u);
  auto* ident = reinterpret_cast<volatile uint8_t*>(vdso.start + EI_PAD + 4);
  const uint8_t before = *ident;
  const int status = InForkedChild([&] {
    if (mprotect(reinterpret_cast<void*>(vdso.start), vdso.end - vdso.start,
                 PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
      _exit(2);
    }
    *ident = before + 1;
    if (*ident != static_cast<uint8_t>(before + 1)) _exit(3);
  });
  EXPECT_THAT(status, ExitedWithCode(0));
  EXPECT_EQ(*ident, before);  // the parent's page is untouched
}

TEST(VdsoTest, SurvivesFork) {
  const uintptr_t base = getauxval(AT_SYSINFO_EHDR);
  ASSERT_NE(base, 0u);
  auto gettime = Sym<ClockGettimeFn>("__vdso_clock_gettime");
  ASSERT_NE(gettime, nullptr);
  const int64_t parent = SysNow(CLOCK_MONOTONIC);
  const int status = InForkedChild([&] {
    if (getauxval(AT_SYSINFO_EHDR) != base) _exit(2);
    struct timespec ts = {};
    if (gettime(CLOCK_MONOTONIC, &ts) != 0) _exit(3);
    if (Nanos(ts) < parent) _exit(4);
    std::ifstream maps("/proc/self/maps");
    std::string line;
    bool found = false;
    while (std::getline(maps, line)) {
      uintptr_t start = 0;
      if (line.find("[vdso]") != std::string::npos &&
          sscanf(line.c_str(), "%lx-", &start) == 1 && start == base) {
        found = true;
      }
    }
    if (!found) _exit(5);
  });
  EXPECT_THAT(status, ExitedWithCode(0));
}

TEST(VdsoTest, LibcUsesIt) {
  // glibc's clock_gettime goes through the vDSO; its result lies between
  // two raw syscalls too.
  for (clockid_t c : {CLOCK_MONOTONIC, CLOCK_REALTIME}) {
    const int64_t a = SysNow(c);
    struct timespec ts = {};
    ASSERT_THAT(clock_gettime(c, &ts), SyscallSucceeds());
    const int64_t b = SysNow(c);
    EXPECT_GE(Nanos(ts), a);
    EXPECT_LE(Nanos(ts), b);
  }
}

}  // namespace
}  // namespace sandbox::testutil
