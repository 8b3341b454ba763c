#include "sentry/loader/loader.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sentry/loader/testing/elf_builder.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/testing/fake_platform.h"

namespace sandbox::loader {
namespace {

using ::sandbox::loader::testing::PatternByte;
using ::sandbox::loader::testing::StaticExec;
using ::sandbox::loader::testing::StaticPie;
using ::sandbox::loader::testing::TestElf;
using ::sandbox::loader::testing::WithInterp;
using ::testing::HasSubstr;

constexpr uint64_t kTaskSize = 0x7ffffffff000;

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override { NewMm(false); }
  void NewMm(bool randomize) {
    auto mm = mm::MemoryManager::Create(platform_, {.randomize = randomize});
    ASSERT_TRUE(mm.ok());
    mm_ = std::move(mm).value();
  }
  LoadArgs Args() {
    LoadArgs a;
    a.argv = {"/bin/prog", "arg1", ""};
    a.envp = {"HOME=/root", "PATH=/bin"};
    a.exec_path = "/bin/prog";
    a.uid = 1000;
    a.euid = 1001;
    a.gid = 2000;
    a.egid = 2001;
    a.hwcap = 0x178bfbff;
    a.hwcap2 = 2;
    a.minsigstksz = 3632;
    return a;
  }
  KResult<LoadResult> LoadBytes(const std::string& bytes, const LoadArgs& a,
                                std::string* why) {
    BufferReader r(bytes);
    return Load(*mm_, r, a, why);
  }
  uint64_t Read64(uintptr_t addr) {
    uint64_t v = 0;
    EXPECT_TRUE(mm_->CopyIn(addr, &v, 8).ok()) << std::hex << addr;
    return v;
  }
  std::string ReadString(uintptr_t addr) {
    auto s = mm_->CopyInString(addr, 4096);
    EXPECT_TRUE(s.ok()) << std::hex << addr;
    return s.ok() ? *s : "";
  }
  const mm::VmaInfo* VmaAt(const std::vector<mm::VmaInfo>& vmas, uintptr_t a) {
    for (const auto& v : vmas) {
      if (a >= v.start && a < v.end) return &v;
    }
    return nullptr;
  }

  mm::testing::FakePlatform platform_;
  std::unique_ptr<mm::MemoryManager> mm_;
};

TEST_F(LoaderTest, StaticExecutableSegments) {
  std::string why;
  const std::string file = StaticExec().Build();
  auto r = LoadBytes(file, Args(), &why);
  ASSERT_TRUE(r.ok()) << why;
  EXPECT_EQ(r->entry, 0x401000u);
  EXPECT_EQ(r->program_entry, 0x401000u);
  EXPECT_EQ(r->load_bias, 0u);
  EXPECT_EQ(r->phdr_addr, 0x400040u);
  EXPECT_EQ(r->phnum, 4u);
  EXPECT_EQ(r->interp_base, 0u);
  EXPECT_EQ(r->brk_start, 0x406000u);
  EXPECT_EQ(mm_->brk_start(), 0x406000u);
  EXPECT_FALSE(r->executable_stack);

  auto vmas = mm_->Vmas();
  const mm::VmaInfo* v = VmaAt(vmas, 0x400000);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->start, 0x400000u);
  EXPECT_EQ(v->end, 0x401000u);
  EXPECT_EQ(v->prot, PROT_READ);
  EXPECT_EQ(v->name, "/bin/prog");
  v = VmaAt(vmas, 0x401000);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->prot, PROT_READ | PROT_EXEC);
  EXPECT_EQ(VmaAt(vmas, 0x402000), nullptr);  // a hole between segments
  v = VmaAt(vmas, 0x403008);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->start, 0x403000u);
  EXPECT_EQ(v->end, 0x406000u);
  EXPECT_EQ(v->prot, PROT_READ | PROT_WRITE);

  // Contents: the header page, code, data; bss zero. The first page of the
  // data segment also holds the file bytes before it, as Linux maps it.
  std::string got(0x300, '\0');
  ASSERT_TRUE(mm_->CopyIn(0x400000, got.data(), got.size()).ok());
  EXPECT_EQ(got, file.substr(0, 0x300));
  uint8_t b = 0;
  ASSERT_TRUE(mm_->CopyIn(0x401122, &b, 1).ok());
  EXPECT_EQ(b, PatternByte(0x1122));
  ASSERT_TRUE(mm_->CopyIn(0x401123, &b, 1).ok());
  // Past p_filesz of a segment without bss: the file's next byte (Linux
  // maps the whole page).
  EXPECT_EQ(b, PatternByte(0x1123));
  ASSERT_TRUE(mm_->CopyIn(0x403000, &b, 1).ok());
  EXPECT_EQ(b, PatternByte(0x2000));
  ASSERT_TRUE(mm_->CopyIn(0x403107, &b, 1).ok());
  EXPECT_EQ(b, PatternByte(0x2107));
  std::string bss(0x1f00, 'x');
  ASSERT_TRUE(mm_->CopyIn(0x403108, bss.data(), bss.size()).ok());
  EXPECT_EQ(bss, std::string(bss.size(), '\0'));
}

TEST_F(LoaderTest, InitialStackIsLaidOutLikeLinux) {
  std::string why;
  LoadArgs args = Args();
  auto r = LoadBytes(StaticExec().Build(), args, &why);
  ASSERT_TRUE(r.ok()) << why;
  const uintptr_t sp = r->stack_pointer;
  EXPECT_EQ(sp % 16, 0u);
  EXPECT_EQ(r->stack_top, kTaskSize);
  EXPECT_EQ(r->stack_bottom, kTaskSize - (8 << 20));
  auto vmas = mm_->Vmas();
  const mm::VmaInfo* sv = VmaAt(vmas, sp);
  ASSERT_NE(sv, nullptr);
  EXPECT_EQ(sv->name, "[stack]");
  EXPECT_TRUE(sv->grows_down);
  EXPECT_EQ(sv->prot, PROT_READ | PROT_WRITE);

  // argc, argv, NULL, envp, NULL, auxv.
  uintptr_t w = sp;
  ASSERT_EQ(Read64(w), 3u);
  w += 8;
  std::vector<uintptr_t> argv_ptrs;
  for (int i = 0; i < 3; ++i, w += 8) argv_ptrs.push_back(Read64(w));
  EXPECT_EQ(Read64(w), 0u);
  w += 8;
  EXPECT_EQ(ReadString(argv_ptrs[0]), "/bin/prog");
  EXPECT_EQ(ReadString(argv_ptrs[1]), "arg1");
  EXPECT_EQ(ReadString(argv_ptrs[2]), "");
  EXPECT_EQ(argv_ptrs[0], r->arg_start);
  EXPECT_EQ(ReadString(Read64(w)), "HOME=/root");
  EXPECT_EQ(Read64(w), r->env_start);
  w += 8;
  EXPECT_EQ(ReadString(Read64(w)), "PATH=/bin");
  w += 8;
  EXPECT_EQ(Read64(w), 0u);
  w += 8;
  // Strings are contiguous: argv then envp, then the exec path, then a zero
  // word at the very top.
  EXPECT_EQ(r->arg_end, r->arg_start + 10 + 5 + 1);
  EXPECT_EQ(r->env_end, r->env_start + 11 + 10);
  EXPECT_EQ(r->execfn_addr, r->env_end);
  EXPECT_EQ(r->execfn_addr + 10 + 8, kTaskSize);
  EXPECT_EQ(Read64(kTaskSize - 8), 0u);

  std::map<uint64_t, uint64_t> aux;
  std::vector<uint64_t> order;
  for (;; w += 16) {
    uint64_t k = Read64(w), v = Read64(w + 8);
    aux[k] = v;
    order.push_back(k);
    if (k == AT_NULL) break;
    ASSERT_LT(order.size(), 64u);
  }
  // Linux's order.
  const std::vector<uint64_t> want = {
      AT_SYSINFO_EHDR, AT_MINSIGSTKSZ, AT_HWCAP,  AT_PAGESZ, AT_CLKTCK,
      AT_PHDR,         AT_PHENT,       AT_PHNUM,  AT_BASE,   AT_FLAGS,
      AT_ENTRY,        AT_UID,         AT_EUID,   AT_GID,    AT_EGID,
      AT_SECURE,       AT_RANDOM,      AT_HWCAP2, AT_EXECFN, AT_PLATFORM,
      AT_NULL};
  EXPECT_EQ(order, want);
  EXPECT_EQ(aux[AT_MINSIGSTKSZ], 3632u);
  EXPECT_EQ(aux[AT_HWCAP], 0x178bfbffu);
  EXPECT_EQ(aux[AT_PAGESZ], 4096u);
  EXPECT_EQ(aux[AT_CLKTCK], 100u);
  EXPECT_EQ(aux[AT_PHDR], 0x400040u);
  EXPECT_EQ(aux[AT_PHENT], 56u);
  EXPECT_EQ(aux[AT_PHNUM], 4u);
  EXPECT_EQ(aux[AT_BASE], 0u);
  EXPECT_EQ(aux[AT_FLAGS], 0u);
  EXPECT_EQ(aux[AT_ENTRY], 0x401000u);
  EXPECT_EQ(aux[AT_UID], 1000u);
  EXPECT_EQ(aux[AT_EUID], 1001u);
  EXPECT_EQ(aux[AT_GID], 2000u);
  EXPECT_EQ(aux[AT_EGID], 2001u);
  EXPECT_EQ(aux[AT_SECURE], 0u);
  EXPECT_EQ(aux[AT_HWCAP2], 2u);
  EXPECT_EQ(ReadString(aux[AT_EXECFN]), "/bin/prog");
  EXPECT_EQ(ReadString(aux[AT_PLATFORM]), "x86_64");
  // The vDSO: an ELF image named [vdso], its data page [vvar] below it.
  EXPECT_EQ(aux[AT_SYSINFO_EHDR], r->vdso_base);
  char magic[SELFMAG];
  ASSERT_TRUE(mm_->CopyIn(aux[AT_SYSINFO_EHDR], magic, SELFMAG).ok());
  EXPECT_EQ(memcmp(magic, ELFMAG, SELFMAG), 0);
  const mm::VmaInfo* vdso = VmaAt(vmas, r->vdso_base);
  ASSERT_NE(vdso, nullptr);
  EXPECT_EQ(vdso->name, "[vdso]");
  EXPECT_EQ(vdso->start, r->vdso_base);
  const mm::VmaInfo* vvar = VmaAt(vmas, r->vdso_base - 1);
  ASSERT_NE(vvar, nullptr);
  EXPECT_EQ(vvar->name, "[vvar]");
  // AT_RANDOM: 16 bytes right below the platform string, not all zero.
  EXPECT_EQ(aux[AT_RANDOM] + 16, aux[AT_PLATFORM]);
  uint8_t rnd[16];
  ASSERT_TRUE(mm_->CopyIn(aux[AT_RANDOM], rnd, 16).ok());
  EXPECT_NE(std::string(reinterpret_cast<char*>(rnd), 16),
            std::string(16, '\0'));
  // Above the platform string: 16-byte alignment below the strings.
  EXPECT_EQ((aux[AT_PLATFORM] + 7) % 16, 0u);
  EXPECT_LT(aux[AT_PLATFORM] + 7, r->arg_start + 16);
  // The auxv vector of the result is what the stack holds.
  ASSERT_EQ(r->auxv.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r->auxv[i].first, want[i]);
    EXPECT_EQ(r->auxv[i].second, aux[want[i]]);
  }
  // The auxv ends at most 15 bytes below the random bytes (STACK_ROUND).
  EXPECT_LE(w + 16, aux[AT_RANDOM]);
  EXPECT_GT(w + 16 + 16, aux[AT_RANDOM]);
}

TEST_F(LoaderTest, ExtraAuxvComesFirst) {
  LoadArgs args = Args();
  args.vdso = false;
  args.extra_auxv = {{AT_SYSINFO_EHDR, 0x7fff0000}};
  auto r = LoadBytes(StaticExec().Build(), args, nullptr);
  ASSERT_TRUE(r.ok());
  ASSERT_GE(r->auxv.size(), 2u);
  EXPECT_EQ(r->auxv[0].first, static_cast<uint64_t>(AT_SYSINFO_EHDR));
  EXPECT_EQ(r->auxv[1].first, static_cast<uint64_t>(AT_MINSIGSTKSZ));
}

TEST_F(LoaderTest, VdsoComesBeforeExtraAuxv) {
  LoadArgs args = Args();
  args.extra_auxv = {{AT_L1D_CACHEGEOMETRY, 7}};
  auto r = LoadBytes(StaticExec().Build(), args, nullptr);
  ASSERT_TRUE(r.ok());
  ASSERT_GE(r->auxv.size(), 3u);
  EXPECT_EQ(r->auxv[0].first, static_cast<uint64_t>(AT_SYSINFO_EHDR));
  EXPECT_NE(r->auxv[0].second, 0u);
  EXPECT_EQ(r->auxv[1].first, static_cast<uint64_t>(AT_L1D_CACHEGEOMETRY));
  EXPECT_EQ(r->auxv[2].first, static_cast<uint64_t>(AT_MINSIGSTKSZ));
}

TEST_F(LoaderTest, EmptyArgvGetsEmptyArgv0) {
  LoadArgs args = Args();
  args.argv.clear();
  args.envp.clear();
  auto r = LoadBytes(StaticExec().Build(), args, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Read64(r->stack_pointer), 1u);
  EXPECT_EQ(ReadString(Read64(r->stack_pointer + 8)), "");
  EXPECT_EQ(Read64(r->stack_pointer + 16), 0u);
  EXPECT_EQ(Read64(r->stack_pointer + 24), 0u);
}

// Linux 6.1: a PIE with PT_INTERP goes to ELF_ET_DYN_BASE; one without
// (a static PIE, ld.so run directly) where mmap puts it (load_bias 0).
TEST_F(LoaderTest, PieWithInterpreterLoadsAtEtDynBase) {
  LoadArgs args = Args();
  const std::string interp = StaticPie().Build();
  args.open_interpreter =
      [&](const std::string&) -> KResult<std::unique_ptr<FileReader>> {
    return std::unique_ptr<FileReader>(new BufferReader(interp));
  };
  TestElf e = StaticPie();
  e.ph.insert(e.ph.begin(),
              testing::Phdr(PT_INTERP, PF_R, 0x200, 0x200, 11, 11, 1));
  e.eh.e_phnum = e.ph.size();
  e.patches.push_back({0x200, std::string("/lib/ld.so\0", 11)});
  std::string why;
  auto r = LoadBytes(e.Build(), args, &why);
  ASSERT_TRUE(r.ok()) << why;
  const uintptr_t base = 0x555555554000;  // ELF_ET_DYN_BASE without ASLR
  EXPECT_EQ(r->load_bias, base);
  EXPECT_EQ(r->program_entry, base + 0x1010);
  EXPECT_EQ(r->phdr_addr, base + 0x40);
  EXPECT_EQ(r->brk_start, base + 0x6000);
  uint8_t b = 0;
  ASSERT_TRUE(mm_->CopyIn(base + 0x1010, &b, 1).ok());
  EXPECT_EQ(b, PatternByte(0x1010));
  // The interpreter is below the mmap base; AT_BASE is its load bias.
  EXPECT_LT(r->interp_base, mm_->layout().mmap_base);
  EXPECT_GT(r->interp_base, base);
  EXPECT_EQ(r->entry, r->interp_base + 0x1010);
}

TEST_F(LoaderTest, StaticPieLoadsWhereMmapPutsIt) {
  std::string why;
  auto r = LoadBytes(StaticPie().Build(), Args(), &why);
  ASSERT_TRUE(r.ok()) << why;
  const uintptr_t base = r->load_bias;
  EXPECT_EQ(base % 4096, 0u);
  EXPECT_LE(base + 0x6000, mm_->layout().mmap_base);
  EXPECT_GT(base, 0x555555554000u);
  EXPECT_EQ(r->entry, base + 0x1010);
  EXPECT_EQ(r->phdr_addr, base + 0x40);
  EXPECT_EQ(r->brk_start, base + 0x6000);  // no ASLR: right after the image
  uint8_t b = 0;
  ASSERT_TRUE(mm_->CopyIn(base + 0x1010, &b, 1).ok());
  EXPECT_EQ(b, PatternByte(0x1010));
}

TEST_F(LoaderTest, RandomizedLayoutVaries) {
  NewMm(true);
  auto r1 = LoadBytes(StaticPie().Build(), Args(), nullptr);
  ASSERT_TRUE(r1.ok());
  NewMm(true);
  auto r2 = LoadBytes(StaticPie().Build(), Args(), nullptr);
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(r1->load_bias != r2->load_bias ||
              r1->stack_pointer != r2->stack_pointer);
  EXPECT_EQ(r1->stack_pointer % 16, 0u);
  EXPECT_EQ(r1->load_bias % 4096, 0u);
  // Without an interpreter the heap moves to ELF_ET_DYN_BASE (+ < 32 MiB).
  EXPECT_GE(r1->brk_start, 0x555555555000u);
  EXPECT_LT(r1->brk_start, 0x555555555000u + (32 << 20));
}

TEST_F(LoaderTest, ExecutableStack) {
  TestElf e = StaticExec();
  e.ph[3].p_flags |= PF_X;
  auto r = LoadBytes(e.Build(), Args(), nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->executable_stack);
  auto vmas = mm_->Vmas();
  EXPECT_EQ(VmaAt(vmas, r->stack_pointer)->prot,
            PROT_READ | PROT_WRITE | PROT_EXEC);
}

TEST_F(LoaderTest, InterpreterWithoutOpenerIsEnoexec) {
  std::string why;
  auto r =
      LoadBytes(WithInterp(StaticExec(), "/lib64/ld-linux-x86-64.so.2").Build(),
                Args(), &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kENOEXEC);
  EXPECT_THAT(why, HasSubstr("/lib64/ld-linux-x86-64.so.2"));
  EXPECT_THAT(why, HasSubstr("dynamically linked"));
}

TEST_F(LoaderTest, InterpreterIsLoadedWhenItCanBeOpened) {
  LoadArgs args = Args();
  std::string opened;
  const std::string interp = StaticPie().Build();
  args.open_interpreter =
      [&](const std::string& path) -> KResult<std::unique_ptr<FileReader>> {
    opened = path;
    return std::unique_ptr<FileReader>(new BufferReader(interp));
  };
  std::string why;
  auto r =
      LoadBytes(WithInterp(StaticExec(), "/lib/ld.so").Build(), args, &why);
  ASSERT_TRUE(r.ok()) << why;
  EXPECT_EQ(opened, "/lib/ld.so");
  EXPECT_EQ(r->interpreter, "/lib/ld.so");
  EXPECT_NE(r->interp_base, 0u);
  EXPECT_EQ(r->interp_base % 4096, 0u);
  EXPECT_LT(r->interp_base, mm_->layout().mmap_base);
  EXPECT_EQ(r->entry, r->interp_base + 0x1010);
  EXPECT_EQ(r->program_entry, 0x401000u);
  std::map<uint64_t, uint64_t> aux(r->auxv.begin(), r->auxv.end());
  EXPECT_EQ(aux[AT_BASE], r->interp_base);
  EXPECT_EQ(aux[AT_ENTRY], 0x401000u);
  EXPECT_EQ(aux[AT_PHNUM], 5u);
  uint8_t b = 0;
  ASSERT_TRUE(mm_->CopyIn(r->entry, &b, 1).ok());
  EXPECT_EQ(b, PatternByte(0x1010));

  // A bad interpreter is reported as such.
  NewMm(false);
  args.open_interpreter =
      [](const std::string&) -> KResult<std::unique_ptr<FileReader>> {
    return std::unique_ptr<FileReader>(new BufferReader("nope"));
  };
  r = LoadBytes(WithInterp(StaticExec(), "/lib/ld.so").Build(), args, &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kEIO);  // elf_read's short read
  EXPECT_THAT(why, HasSubstr("interpreter /lib/ld.so"));
  NewMm(false);
  args.open_interpreter =
      [](const std::string&) -> KResult<std::unique_ptr<FileReader>> {
    return std::unique_ptr<FileReader>(new BufferReader(std::string(100, 'x')));
  };
  r = LoadBytes(WithInterp(StaticExec(), "/lib/ld.so").Build(), args, &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kELIBBAD);
  // And one that cannot be opened gives the opener's error.
  NewMm(false);
  args.open_interpreter =
      [](const std::string&) -> KResult<std::unique_ptr<FileReader>> {
    return kENOENT;
  };
  r = LoadBytes(WithInterp(StaticExec(), "/lib/ld.so").Build(), args, &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kENOENT);
}

// What fails before Linux's point of no return is returned; what fails
// after it is flagged (execve then kills the process with SIGSEGV).
TEST_F(LoaderTest, CommittedSaysWhetherThePointOfNoReturnWasPassed) {
  bool committed = true;
  TestElf e = StaticExec();
  e.eh.e_machine = EM_386;
  BufferReader bad_header(e.Build());
  auto r = Load(*mm_, bad_header, Args(), nullptr, &committed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kENOEXEC);
  EXPECT_FALSE(committed);

  NewMm(false);
  e = StaticExec();
  e.ph[2].p_filesz = 0x2001;  // > p_memsz: Linux's EINVAL after the commit
  BufferReader bad_segment(e.Build());
  std::string why;
  r = Load(*mm_, bad_segment, Args(), &why, &committed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kEINVAL);
  EXPECT_TRUE(committed);

  // An interpreter of the wrong type: load_elf_interp's EINVAL, committed.
  NewMm(false);
  TestElf rel = StaticPie();
  rel.eh.e_type = ET_REL;
  const std::string rel_bytes = rel.Build();
  LoadArgs args = Args();
  args.open_interpreter =
      [&](const std::string&) -> KResult<std::unique_ptr<FileReader>> {
    return std::unique_ptr<FileReader>(new BufferReader(rel_bytes));
  };
  BufferReader prog(WithInterp(StaticExec(), "/lib/ld.so").Build());
  r = Load(*mm_, prog, args, &why, &committed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kEINVAL);
  EXPECT_TRUE(committed);
  EXPECT_THAT(why, HasSubstr("e_type 1"));

  NewMm(false);
  BufferReader good(StaticExec().Build());
  EXPECT_TRUE(Load(*mm_, good, Args(), nullptr, &committed).ok());
}

// The rest of a segment's last page: the file's next bytes without bss,
// zeros with bss (Linux's file mapping, then padzero).
TEST_F(LoaderTest, LastPageTailIsFileBytesOrZeroForBss) {
  auto r = LoadBytes(StaticExec().Build(), Args(), nullptr);
  ASSERT_TRUE(r.ok());
  uint8_t b[2] = {};
  // Segment 1: file 0x1000+0x123 at 0x401000, p_memsz == p_filesz.
  ASSERT_TRUE(mm_->CopyIn(0x401123, b, 2).ok());
  EXPECT_EQ(b[0], PatternByte(0x1123));
  EXPECT_EQ(b[1], PatternByte(0x1124));
  // Segment 2: file 0x2008+0x100 at 0x403008, bss up to 0x405008.
  ASSERT_TRUE(mm_->CopyIn(0x403107, b, 2).ok());
  EXPECT_EQ(b[0], PatternByte(0x2107));
  EXPECT_EQ(b[1], 0);
}

// A file with a page cache (a Mappable over the memory file), as tmpfs and
// Gofer files are: the loader maps its segments instead of copying them.
class MappableBufferReader : public BufferReader, public mm::Mappable {
 public:
  MappableBufferReader(platform::MemoryFile& mf, const std::string& data)
      : BufferReader(data), mf_(mf), size_(data.size()) {
    const uint64_t len = mm::PageRoundUp(std::max<uint64_t>(size_, 1));
    base_ = *mf_.Allocate(len);
    EXPECT_TRUE(mf_.Write(base_, data.data(), data.size()));
  }
  std::shared_ptr<mm::Mappable> GetMappable() override {
    return std::shared_ptr<mm::Mappable>(std::shared_ptr<void>(), this);
  }
  void AddMapping(mm::MappingSpace*, uintptr_t, uint64_t, uint64_t,
                  bool) override {
    ++mappings;
  }
  void RemoveMapping(mm::MappingSpace*, uintptr_t, uint64_t, uint64_t,
                     bool) override {
    --mappings;
  }
  KResult<std::vector<mm::Translation>> Translate(
      uint64_t off, uint64_t len, uint64_t, uint64_t,
      platform::AccessType) override {
    const uint64_t limit = mm::PageRoundUp(size_);
    if (off >= limit || len > limit - off) return kEFAULT;
    translated_pages += len / mm::kPageSize;
    return std::vector<mm::Translation>{
        {off, len, base_ + off, PROT_READ | PROT_WRITE | PROT_EXEC}};
  }
  // The file's own bytes, as its cache holds them.
  std::string Cached(uint64_t off, size_t n) {
    std::string out(n, '\0');
    EXPECT_TRUE(mf_.Read(base_ + off, out.data(), n));
    return out;
  }

  int mappings = 0;
  uint64_t translated_pages = 0;

 private:
  platform::MemoryFile& mf_;
  const uint64_t size_;
  uint64_t base_ = 0;
};

// With a Mappable the read-only segments are private file mappings
// (elf_map): the same contents as a copy (header page, code, the file's next
// bytes after a segment without bss), nothing read at load time; writable
// segments are still copied at load time.
TEST_F(LoaderTest, ReadOnlySegmentsAreMappedFromTheFilesPages) {
  const std::string file = StaticExec().Build();
  std::string why;
  MappableBufferReader reader(platform_.memory_file(), file);
  auto r = Load(*mm_, reader, Args(), &why);
  ASSERT_TRUE(r.ok()) << why;
  EXPECT_EQ(r->entry, 0x401000u);
  EXPECT_EQ(r->brk_start, 0x406000u);
  EXPECT_EQ(reader.translated_pages, 0u);  // nothing read yet
  EXPECT_EQ(reader.mappings, 2);           // header and code segments

  auto vmas = mm_->Vmas();
  const mm::VmaInfo* v = VmaAt(vmas, 0x400000);
  ASSERT_NE(v, nullptr);
  EXPECT_FALSE(v->anonymous);
  EXPECT_EQ(v->prot, PROT_READ);
  EXPECT_EQ(v->offset, 0u);
  EXPECT_EQ(v->name, "/bin/prog");
  v = VmaAt(vmas, 0x401000);
  ASSERT_NE(v, nullptr);
  EXPECT_FALSE(v->anonymous);
  EXPECT_EQ(v->prot, PROT_READ | PROT_EXEC);
  EXPECT_EQ(v->offset, 0x1000u);
  EXPECT_EQ(VmaAt(vmas, 0x402000), nullptr);
  v = VmaAt(vmas, 0x403008);  // the writable data segment: a copy
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->start, 0x403000u);
  EXPECT_EQ(v->end, 0x406000u);
  EXPECT_TRUE(v->anonymous);

  std::string got(0x300, '\0');
  ASSERT_TRUE(mm_->CopyIn(0x400000, got.data(), got.size()).ok());
  EXPECT_EQ(got, file.substr(0, 0x300));
  uint8_t b[2] = {};
  ASSERT_TRUE(mm_->CopyIn(0x401122, b, 2).ok());
  EXPECT_EQ(b[0], PatternByte(0x1122));
  EXPECT_EQ(b[1], PatternByte(0x1123));  // past p_filesz, no bss
  EXPECT_GT(reader.translated_pages, 0u);
  ASSERT_TRUE(mm_->CopyIn(0x403107, b, 2).ok());
  EXPECT_EQ(b[0], PatternByte(0x2107));
  EXPECT_EQ(b[1], 0);  // bss
  // The text stays read-only to the guest.
  const uint8_t x = 0x5a;
  EXPECT_FALSE(mm_->CopyOut(0x401000, &x, 1).ok());
  mm_.reset();  // unmaps before the reader goes
  EXPECT_EQ(reader.mappings, 0);
}

// A read-only segment with bss: its last file page is a private copy
// zeroed past p_filesz (padzero; the file's page keeps its bytes), then
// anonymous memory up to p_memsz.
TEST_F(LoaderTest, MappedSegmentWithBssGetsAZeroedCopyOfItsLastPage) {
  TestElf e = StaticExec();
  e.ph[2].p_flags = PF_R;
  e.file_size = 0x2400;  // file bytes after the segment's p_filesz
  const std::string file = e.Build();
  ASSERT_NE(file[0x2108], 0);
  std::string why;
  MappableBufferReader reader(platform_.memory_file(), file);
  auto r = Load(*mm_, reader, Args(), &why);
  ASSERT_TRUE(r.ok()) << why;
  EXPECT_EQ(reader.translated_pages, 1u);  // padzero's page only
  EXPECT_EQ(reader.mappings, 3);
  auto vmas = mm_->Vmas();
  const mm::VmaInfo* v = VmaAt(vmas, 0x403008);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->start, 0x403000u);
  EXPECT_EQ(v->end, 0x404000u);
  EXPECT_FALSE(v->anonymous);
  EXPECT_EQ(v->offset, 0x2000u);
  EXPECT_EQ(v->prot, PROT_READ);
  v = VmaAt(vmas, 0x404000);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->end, 0x406000u);
  EXPECT_TRUE(v->anonymous);
  EXPECT_EQ(v->prot, PROT_READ);
  uint8_t b[2] = {};
  ASSERT_TRUE(mm_->CopyIn(0x403107, b, 2).ok());
  EXPECT_EQ(b[0], PatternByte(0x2107));
  EXPECT_EQ(b[1], 0);
  std::string bss(0x1f00, 'x');
  ASSERT_TRUE(mm_->CopyIn(0x403108, bss.data(), bss.size()).ok());
  EXPECT_EQ(bss, std::string(bss.size(), '\0'));
  EXPECT_EQ(reader.Cached(0x2108, 1), file.substr(0x2108, 1));
  mm_.reset();
  EXPECT_EQ(reader.mappings, 0);
}

TEST_F(LoaderTest, BadElfIsEnoexec) {
  TestElf e = StaticExec();
  e.eh.e_machine = EM_386;
  std::string why;
  auto r = LoadBytes(e.Build(), Args(), &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kENOEXEC);
  EXPECT_THAT(why, HasSubstr("machine"));
  r = LoadBytes("#!/bin/sh\necho hi\n", Args(), &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kENOEXEC);
}

TEST_F(LoaderTest, SegmentsOutsideTheAddressSpaceAreEnoexec) {
  TestElf e = StaticExec();
  // Below mmap_min_addr.
  for (auto& p : e.ph) {
    if (p.p_type == PT_LOAD) p.p_vaddr -= 0x3f8000;
  }
  e.eh.e_entry -= 0x3f8000;
  std::string why;
  auto r = LoadBytes(e.Build(), Args(), &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kENOEXEC);
  EXPECT_THAT(why, HasSubstr("outside the user address space"));

  // Above the top.
  NewMm(false);
  e = StaticExec();
  e.ph[2].p_vaddr = 0x800000000008;
  r = LoadBytes(e.Build(), Args(), &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kENOMEM);  // a span over kMaxImageSpan

  // Over the stack.
  NewMm(false);
  e = StaticExec();
  for (auto& p : e.ph) {
    if (p.p_type == PT_LOAD) p.p_vaddr += 0x7fffff400000;
  }
  e.eh.e_entry += 0x7fffff400000;
  r = LoadBytes(e.Build(), Args(), &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kENOEXEC);
  EXPECT_THAT(why, HasSubstr("overlaps the stack"));
}

TEST_F(LoaderTest, ArgumentLimitsAreE2big) {
  LoadArgs args = Args();
  args.argv.push_back(std::string(kMaxArgStrLen, 'a'));  // + NUL: too long
  std::string why;
  auto r = LoadBytes(StaticExec().Build(), args, &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kE2BIG);

  NewMm(false);
  args = Args();
  args.envp.push_back(std::string(kMaxArgStrLen - 1, 'e'));  // fits alone
  r = LoadBytes(StaticExec().Build(), args, &why);
  ASSERT_TRUE(r.ok()) << why;

  // Total: a quarter of the 8 MiB stack limit.
  NewMm(false);
  args = Args();
  for (int i = 0; i < 25; ++i) args.envp.push_back(std::string(100000, 'x'));
  r = LoadBytes(StaticExec().Build(), args, &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kE2BIG);
}

// Real binaries from the build.
std::string Runfile(const char* name) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || ws == nullptr) return "";
  return std::string(srcdir) + "/" + ws + "/sentry/loader/" + name;
}

class RealBinaryTest : public LoaderTest,
                       public ::testing::WithParamInterface<const char*> {};

TEST_P(RealBinaryTest, LoadsThroughHostFd) {
  const std::string path = Runfile(GetParam());
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  HostFdReader reader(fd);
  std::string why;
  auto info = ParseElf(reader, &why);
  ASSERT_TRUE(info.ok()) << why;
  EXPECT_TRUE(info->interpreter.empty()) << info->interpreter;
  LoadArgs args = Args();
  auto r = Load(*mm_, reader, args, &why);
  close(fd);
  ASSERT_TRUE(r.ok()) << why;
  EXPECT_EQ(r->entry, info->ehdr.e_entry + r->load_bias);
  EXPECT_NE(r->phdr_addr, 0u);
  // AT_PHDR points at the program headers in guest memory.
  Elf64_Phdr first;
  ASSERT_TRUE(mm_->CopyIn(r->phdr_addr, &first, sizeof(first)).ok());
  EXPECT_EQ(first.p_type, info->phdrs[0].p_type);
  EXPECT_EQ(first.p_vaddr, info->phdrs[0].p_vaddr);
  // The entry point is executable.
  auto vmas = mm_->Vmas();
  const mm::VmaInfo* v = VmaAt(vmas, r->entry);
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(v->prot & PROT_EXEC);
  EXPECT_GT(r->brk_start, r->entry);
}

INSTANTIATE_TEST_SUITE_P(Binaries, RealBinaryTest,
                         ::testing::Values("hello_static", "hello_static_pie"));

// A dynamically linked host program and its real interpreter (ld.so).
TEST_F(LoaderTest, HostDynamicBinaryWithItsInterpreter) {
  const char* kProg = "/bin/true";
  int fd = open(kProg, O_RDONLY | O_CLOEXEC);
  if (fd < 0) GTEST_SKIP() << "no " << kProg << " on this host";
  HostFdReader reader(fd);
  std::vector<int> fds;
  LoadArgs args = Args();
  args.open_interpreter =
      [&](const std::string& path) -> KResult<std::unique_ptr<FileReader>> {
    int ifd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ifd < 0) return kENOENT;
    fds.push_back(ifd);
    return std::unique_ptr<FileReader>(new HostFdReader(ifd));
  };
  std::string why;
  auto r = Load(*mm_, reader, args, &why);
  close(fd);
  for (int f : fds) close(f);
  if (!r.ok() && r.error() == kENOENT) GTEST_SKIP() << "no interpreter";
  ASSERT_TRUE(r.ok()) << why;
  EXPECT_FALSE(r->interpreter.empty());
  EXPECT_NE(r->interp_base, 0u);
  EXPECT_NE(r->entry, r->program_entry);
  EXPECT_EQ(r->load_bias % 4096, 0u);
  // The interpreter's ELF header is at AT_BASE.
  Elf64_Ehdr eh;
  ASSERT_TRUE(mm_->CopyIn(r->interp_base, &eh, sizeof(eh)).ok());
  EXPECT_EQ(0, memcmp(eh.e_ident, ELFMAG, SELFMAG));
  EXPECT_EQ(eh.e_type, ET_DYN);
  EXPECT_EQ(r->entry, r->interp_base + eh.e_entry);
  auto vmas = mm_->Vmas();
  const mm::VmaInfo* v = VmaAt(vmas, r->entry);
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(v->prot & PROT_EXEC);
  EXPECT_EQ(v->name, r->interpreter);
}

TEST(HostFdReaderTest, ReadsAndRejectsNonFiles) {
  int fd = memfd_create("elf", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "abcdef", 6), 6);
  HostFdReader r(fd);
  EXPECT_EQ(r.Size().value(), 6u);
  char buf[8] = {};
  auto n = r.ReadAt(2, buf, 8);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 4u);
  EXPECT_STREQ(buf, "cdef");
  close(fd);
  int dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  HostFdReader d(dir);
  auto s = d.Size();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), kEACCES);
  close(dir);
  HostFdReader bad(-1);
  EXPECT_FALSE(bad.ReadAt(0, buf, 1).ok());
}

}  // namespace
}  // namespace sandbox::loader
