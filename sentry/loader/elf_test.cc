#include "sentry/loader/elf.h"

#include <functional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sentry/loader/file_reader.h"
#include "sentry/loader/testing/elf_builder.h"

namespace sandbox::loader {
namespace {

using ::sandbox::loader::testing::Phdr;
using ::sandbox::loader::testing::StaticExec;
using ::sandbox::loader::testing::TestElf;
using ::sandbox::loader::testing::WithInterp;
using ::testing::HasSubstr;

KResult<ElfInfo> Parse(const std::string& bytes, std::string* why) {
  BufferReader r(bytes);
  return ParseElf(r, why);
}

TEST(ElfTest, ValidStaticExecutable) {
  std::string why;
  auto info = Parse(StaticExec().Build(), &why);
  ASSERT_TRUE(info.ok()) << why;
  EXPECT_EQ(info->min_vaddr, 0x400000u);
  EXPECT_EQ(info->max_vaddr, 0x406000u);   // 0x403008 + 0x2000, rounded
  EXPECT_EQ(info->phdr_vaddr, 0x400040u);  // e_phoff inside segment 0
  EXPECT_EQ(info->phdrs.size(), 4u);
  EXPECT_TRUE(info->interpreter.empty());
  EXPECT_FALSE(info->executable_stack);
  EXPECT_EQ(info->max_align, 0x1000u);
}

TEST(ElfTest, InterpreterPathAndExecStackAndPtPhdr) {
  TestElf e = WithInterp(StaticExec(), "/lib64/ld-linux-x86-64.so.2");
  e.ph.back().p_flags |= PF_X;
  e.ph.push_back(Phdr(PT_PHDR, PF_R, 64, 0x400040, 56 * 6, 56 * 6, 8));
  e.eh.e_phnum = e.ph.size();
  std::string why;
  auto info = Parse(e.Build(), &why);
  ASSERT_TRUE(info.ok()) << why;
  EXPECT_EQ(info->interpreter, "/lib64/ld-linux-x86-64.so.2");
  EXPECT_TRUE(info->executable_stack);
  EXPECT_EQ(info->phdr_vaddr, 0x400040u);
}

// As Linux: the first PT_INTERP counts, and its path is the C string it
// holds (only the last byte must be NUL).
TEST(ElfTest, InterpreterPathIsTheFirstPtInterpUpToItsFirstNul) {
  std::string why;
  auto info = Parse(
      WithInterp(StaticExec(), std::string("/lib\0ld.so", 10)).Build(), &why);
  ASSERT_TRUE(info.ok()) << why;
  EXPECT_TRUE(info->has_interpreter);
  EXPECT_EQ(info->interpreter, "/lib");
  TestElf two = StaticExec();
  two = WithInterp(two, "/b");
  two.ph.insert(two.ph.begin(),
                Phdr(PT_INTERP, PF_R, 0x210, 0x400210, 3, 3, 1));
  two.eh.e_phnum = two.ph.size();
  two.patches.push_back({0x210, std::string("/a\0", 3)});
  info = Parse(two.Build(), &why);
  ASSERT_TRUE(info.ok()) << why;
  EXPECT_EQ(info->interpreter, "/a");
  // An empty path is accepted here (its open fails with ENOENT).
  info = Parse(WithInterp(StaticExec(), "").Build(), &why);
  ASSERT_FALSE(info.ok());  // 1 byte: below Linux's minimum of 2
  EXPECT_EQ(info.error(), kENOEXEC);
  info = Parse(WithInterp(StaticExec(), std::string("\0", 1)).Build(), &why);
  ASSERT_TRUE(info.ok()) << why;
  EXPECT_TRUE(info->has_interpreter);
  EXPECT_EQ(info->interpreter, "");
}

// An interpreter's bad header is ELIBBAD (Linux's check in load_elf_binary);
// its type is not checked at this stage.
TEST(ElfTest, InterpreterHeaderErrorsAreElibbad) {
  auto parse = [](TestElf e, std::string* why) {
    BufferReader r(e.Build());
    return ParseElfHeaders(r, ElfRole::kInterpreter, why);
  };
  std::string why;
  TestElf e = StaticExec();
  e.eh.e_ident[1] = 'X';
  EXPECT_EQ(parse(e, &why).error(), kELIBBAD);
  e = StaticExec();
  e.eh.e_machine = EM_386;
  EXPECT_EQ(parse(e, &why).error(), kELIBBAD);
  e = StaticExec();
  e.eh.e_phentsize = 32;
  EXPECT_EQ(parse(e, &why).error(), kELIBBAD);
  e = StaticExec();
  e.eh.e_phoff = 0x2100;
  EXPECT_EQ(parse(e, &why).error(), kELIBBAD);
  e = StaticExec();
  e.file_size = 40;
  EXPECT_EQ(parse(e, &why).error(), kEIO);  // elf_read's short read
  e = StaticExec();
  e.eh.e_type = ET_REL;
  EXPECT_TRUE(parse(e, &why).ok());
  e.eh.e_type = ET_DYN;
  auto ok = parse(WithInterp(e, "/ignored"), &why);
  ASSERT_TRUE(ok.ok());
  EXPECT_FALSE(ok->has_interpreter);
}

TEST(ElfTest, PhdrsOutsideSegmentsGiveZero) {
  TestElf e = StaticExec();
  e.eh.e_phoff = 0x2000 - 4 * 56;  // past segment 0's file bytes
  std::string why;
  auto info = Parse(e.Build(), &why);
  ASSERT_TRUE(info.ok()) << why;
  EXPECT_EQ(info->phdr_vaddr, 0u);
}

struct BadCase {
  const char* name;
  std::function<void(TestElf&)> mutate;
  const char* message;  // substring of the error
  Errno err = kENOEXEC;
};

class ElfBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ElfBadTest, FailsWithErrnoAndMessage) {
  TestElf e = StaticExec();
  GetParam().mutate(e);
  std::string why;
  auto info = Parse(e.Build(), &why);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error(), GetParam().err) << info.error().name();
  EXPECT_THAT(why, HasSubstr(GetParam().message));
}

const BadCase kBadCases[] = {
    {"Empty", [](TestElf& e) { e.file_size = 0; }, "too short"},
    {"Short", [](TestElf& e) { e.file_size = 63; }, "too short"},
    {"Magic", [](TestElf& e) { e.eh.e_ident[1] = 'X'; }, "bad magic"},
    {"Class32", [](TestElf& e) { e.eh.e_ident[EI_CLASS] = ELFCLASS32; },
     "not a 64-bit"},
    {"ClassNone", [](TestElf& e) { e.eh.e_ident[EI_CLASS] = 0; },
     "not a 64-bit"},
    {"BigEndian", [](TestElf& e) { e.eh.e_ident[EI_DATA] = ELFDATA2MSB; },
     "little-endian"},
    {"IdentVersion", [](TestElf& e) { e.eh.e_ident[EI_VERSION] = 2; },
     "identification version"},
    {"Relocatable", [](TestElf& e) { e.eh.e_type = ET_REL; }, "relocatable"},
    {"Core", [](TestElf& e) { e.eh.e_type = ET_CORE; }, "core dump"},
    {"TypeNone", [](TestElf& e) { e.eh.e_type = ET_NONE; },
     "not an executable"},
    {"Machine", [](TestElf& e) { e.eh.e_machine = EM_AARCH64; },
     "another machine"},
    {"Version", [](TestElf& e) { e.eh.e_version = 0; }, "ELF version"},
    {"Ehsize", [](TestElf& e) { e.eh.e_ehsize = 52; }, "e_ehsize"},
    {"Phentsize", [](TestElf& e) { e.eh.e_phentsize = 32; }, "e_phentsize"},
    {"NoPhdrs", [](TestElf& e) { e.eh.e_phnum = 0; }, "no program headers"},
    {"TooManyPhdrs", [](TestElf& e) { e.eh.e_phnum = 1171; },
     "too many program headers"},
    {"PhoffPastEof", [](TestElf& e) { e.eh.e_phoff = 0x2100; },
     "past the end of the file", kEIO},
    {"PhoffOverflow", [](TestElf& e) { e.eh.e_phoff = ~0ull - 8; },
     "past the end of the file", kEIO},
    {"FileszOverMemsz", [](TestElf& e) { e.ph[2].p_filesz = 0x2001; },
     "larger than p_memsz", kEINVAL},
    {"SegmentPastEof",
     [](TestElf& e) { e.ph[1].p_filesz = e.ph[1].p_memsz = 0x2000; },
     "past the end of the file"},
    {"SegmentOffsetOverflow",
     [](TestElf& e) { e.ph[1].p_offset = ~0ull - 0x10; },
     "past the end of the file"},
    {"VaddrOverflow", [](TestElf& e) { e.ph[2].p_vaddr = ~0ull - 0xfff; },
     "overflows", kEINVAL},
    {"AlignNotPowerOfTwo", [](TestElf& e) { e.ph[1].p_align = 0x3000; },
     "power of two"},
    {"Incongruent", [](TestElf& e) { e.ph[1].p_vaddr = 0x401100; },
     "modulo the page size", kEINVAL},
    {"Overlapping", [](TestElf& e) { e.ph[2].p_vaddr = 0x401008; }, "overlaps"},
    {"Descending", [](TestElf& e) { e.ph[2].p_vaddr = 0x3ff008; },
     "overlaps or precedes"},
    {"NoLoad",
     [](TestElf& e) {
       for (auto& p : e.ph) {
         if (p.p_type == PT_LOAD) p.p_type = PT_NOTE;
       }
     },
     "no loadable segment", kEINVAL},
    {"OnlyEmptyLoads",
     [](TestElf& e) {
       for (auto& p : e.ph) p.p_memsz = p.p_filesz = 0;
     },
     "no loadable segment", kEINVAL},
    {"EntryOutside", [](TestElf& e) { e.eh.e_entry = 0x402000; },
     "entry point"},
    {"EntryZero", [](TestElf& e) { e.eh.e_entry = 0; }, "entry point"},
    {"HugeSpan",
     [](TestElf& e) {
       e.ph[2].p_vaddr = 0x403008 + (1ull << 47);
       e.eh.e_entry = 0x401000;
     },
     "too large", kENOMEM},
    {"InterpTooShort",
     [](TestElf& e) {
       e = WithInterp(e, "/l");
       e.ph[0].p_filesz = 1;
     },
     "PT_INTERP size"},
    {"InterpTooLong",
     [](TestElf& e) {
       e = WithInterp(e, "/l");
       e.ph[0].p_filesz = 4097;
     },
     "PT_INTERP size"},
    {"InterpNoNul",
     [](TestElf& e) {
       e = WithInterp(e, "/lib/ld.so");
       e.ph[0].p_filesz -= 1;
     },
     "NUL-terminated"},
    {"InterpPastEof",
     [](TestElf& e) {
       e = WithInterp(e, "/lib/ld.so");
       e.ph[0].p_offset = 0x2100;
     },
     "PT_INTERP extends past", kEIO},
    {"TwoPtPhdr",
     [](TestElf& e) {
       e.ph.push_back(Phdr(PT_PHDR, PF_R, 64, 0x400040, 56, 56, 8));
       e.ph.push_back(Phdr(PT_PHDR, PF_R, 64, 0x400040, 56, 56, 8));
       e.eh.e_phnum = e.ph.size();
     },
     "more than one PT_PHDR"},
    {"TlsFileszOverMemsz",
     [](TestElf& e) {
       e.ph.push_back(Phdr(PT_TLS, PF_R, 0x2008, 0x403008, 0x10, 0x8, 8));
       e.eh.e_phnum = e.ph.size();
     },
     "PT_TLS"},
};

INSTANTIATE_TEST_SUITE_P(All, ElfBadTest, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return info.param.name; });

TEST(ElfTest, ErrorPointerMayBeNull) {
  TestElf e = StaticExec();
  e.eh.e_machine = 3;
  BufferReader r(e.Build());
  auto info = ParseElf(r, nullptr);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error(), kENOEXEC);
}

class FailingReader : public FileReader {
 public:
  KResult<size_t> ReadAt(uint64_t, void*, size_t) override { return kEIO; }
  KResult<uint64_t> Size() override { return uint64_t{4096}; }
};

TEST(ElfTest, ReaderErrorsPassThrough) {
  FailingReader r;
  std::string why;
  auto info = ParseElf(r, &why);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error(), kEIO);
  EXPECT_THAT(why, HasSubstr("ELF header"));
}

}  // namespace
}  // namespace sandbox::loader
