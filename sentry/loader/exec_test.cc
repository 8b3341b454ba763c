// LoadExecutable over a tmpfs root seeded with the host's own dynamic
// programs and their interpreter: PT_INTERP through the VFS, auxv, the
// mappings, "#!" scripts, and execve's errors for interpreters.
#include "sentry/loader/exec.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/testing.h"
#include "sentry/loader/vfs_reader.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/testing/fake_platform.h"

namespace sandbox::loader {
namespace {

using ::testing::HasSubstr;

bool ReadHostFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

// PT_INTERP of an ELF image in memory ("" if none).
std::string InterpOf(const std::string& elf) {
  if (elf.size() < sizeof(Elf64_Ehdr)) return "";
  Elf64_Ehdr eh;
  memcpy(&eh, elf.data(), sizeof(eh));
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (eh.e_phoff + (i + 1) * sizeof(ph) > elf.size()) return "";
    memcpy(&ph, elf.data() + eh.e_phoff + i * sizeof(ph), sizeof(ph));
    if (ph.p_type == PT_INTERP && ph.p_offset + ph.p_filesz <= elf.size()) {
      return std::string(elf.c_str() + ph.p_offset);
    }
  }
  return "";
}

class ExecTest : public fs::tmpfs::TmpfsTest {
 protected:
  void SetUp() override {
    TmpfsTest::SetUp();
    NewMm();
  }
  // Creates every missing directory of `path` and the file.
  void Put(const std::string& path, const std::string& data, uint32_t mode) {
    for (size_t i = 1; (i = path.find('/', i)) != std::string::npos; ++i) {
      (void)Mkdir(path.substr(0, i));
    }
    WriteFile(path, data, mode);
  }
  // Copies a host program and its interpreter in; false if the host has
  // no such dynamic program.
  bool SeedHostProgram(const std::string& prog, std::string* interp) {
    std::string bytes, ibytes;
    if (!ReadHostFile(prog, &bytes)) return false;
    *interp = InterpOf(bytes);
    if (interp->empty() || !ReadHostFile(*interp, &ibytes)) return false;
    Put(prog, bytes, 0755);
    Put(*interp, ibytes, 0755);
    return true;
  }
  KResult<ExecResult> Exec(const std::string& path,
                           std::vector<std::string> argv, std::string* why,
                           bool* committed = nullptr) {
    TRY(std::shared_ptr<vfs::VfsFile> f, OpenExecutable(Base(), path));
    ExecRequest req{Base(), std::move(f), path};
    req.args.argv = std::move(argv);
    req.args.envp = {"A=1"};
    req.args.uid = 1000;
    return LoadExecutable(*mm_, std::move(req), why, committed);
  }
  // The mm and the tmpfs share one memory file, as in the Sentry: the
  // loader maps the files' own pages (their Mappable's translations are
  // offsets in that file).
  void NewMm() {
    auto as = platform_.NewAddressSpace();
    ASSERT_TRUE(as.ok());
    mm_ = mm::MemoryManager::CreateWith(
        std::move(*as), *mf_,
        mm::PickLayout(platform_.MinUserAddress(), platform_.MaxUserAddress(),
                       {.randomize = false}));
  }
  std::vector<std::string> StackArgv(const LoadResult& r) {
    uint64_t argc = 0;
    EXPECT_TRUE(mm_->CopyIn(r.stack_pointer, &argc, 8).ok());
    std::vector<std::string> out;
    for (uint64_t i = 0; i < argc && i < 64; ++i) {
      uint64_t p = 0;
      EXPECT_TRUE(mm_->CopyIn(r.stack_pointer + 8 + 8 * i, &p, 8).ok());
      auto s = mm_->CopyInString(p, 4096);
      out.push_back(s.ok() ? *s : "?");
    }
    return out;
  }

  mm::testing::FakePlatform platform_;
  std::unique_ptr<mm::MemoryManager> mm_;
};

TEST_F(ExecTest, HostDynamicProgramAndItsInterpreterThroughTheVfs) {
  for (const char* prog : {"/usr/bin/true", "/bin/ls"}) {
    SCOPED_TRACE(prog);
    std::string interp;
    if (!SeedHostProgram(prog, &interp)) {
      GTEST_SKIP() << "SKIP: no dynamically linked " << prog << " on the host";
    }
    NewMm();
    std::string why;
    bool committed = false;
    auto r = Exec(prog, {prog, "-x"}, &why, &committed);
    ASSERT_TRUE(r.ok()) << r.error().name() << ": " << why;
    const LoadResult& l = r->load;
    EXPECT_EQ(r->exe_path, prog);
    EXPECT_EQ(l.interpreter, interp);
    // A PIE program at ELF_ET_DYN_BASE (no ASLR here).
    Elf64_Ehdr eh;
    ASSERT_TRUE(mm_->CopyIn(l.load_bias, &eh, sizeof(eh)).ok());
    ASSERT_EQ(0, memcmp(eh.e_ident, ELFMAG, SELFMAG));
    if (eh.e_type == ET_DYN) EXPECT_EQ(l.load_bias, 0x555555554000u);
    // The interpreter below the mmap base, its header at AT_BASE.
    Elf64_Ehdr ieh;
    ASSERT_TRUE(mm_->CopyIn(l.interp_base, &ieh, sizeof(ieh)).ok());
    EXPECT_EQ(0, memcmp(ieh.e_ident, ELFMAG, SELFMAG));
    EXPECT_EQ(ieh.e_type, ET_DYN);
    EXPECT_LT(l.interp_base, mm_->layout().mmap_base);
    EXPECT_EQ(l.entry, l.interp_base + ieh.e_entry);

    std::map<uint64_t, uint64_t> aux(l.auxv.begin(), l.auxv.end());
    EXPECT_EQ(aux[AT_BASE], l.interp_base);
    EXPECT_EQ(aux[AT_ENTRY], l.load_bias + eh.e_entry);
    EXPECT_EQ(aux[AT_PHENT], sizeof(Elf64_Phdr));
    EXPECT_EQ(aux[AT_PHNUM], eh.e_phnum);
    EXPECT_EQ(aux[AT_PAGESZ], 4096u);
    EXPECT_EQ(aux[AT_SECURE], 0u);
    EXPECT_EQ(aux[AT_UID], 1000u);
    // The vDSO below the interpreter (mapped after it, top-down).
    EXPECT_EQ(aux[AT_SYSINFO_EHDR], l.vdso_base);
    EXPECT_NE(l.vdso_base, 0u);
    EXPECT_LT(l.vdso_base, l.interp_base);
    EXPECT_NE(aux[AT_MINSIGSTKSZ], 0u);
    // AT_PHDR points at the program's headers in memory.
    Elf64_Phdr ph0;
    ASSERT_TRUE(mm_->CopyIn(aux[AT_PHDR], &ph0, sizeof(ph0)).ok());
    Elf64_Phdr file_ph0;
    ASSERT_TRUE(
        mm_->CopyIn(l.load_bias + eh.e_phoff, &file_ph0, sizeof(ph0)).ok());
    EXPECT_EQ(0, memcmp(&ph0, &file_ph0, sizeof(ph0)));
    auto execfn = mm_->CopyInString(aux[AT_EXECFN], 4096);
    ASSERT_TRUE(execfn.ok());
    EXPECT_EQ(*execfn, prog);
    EXPECT_EQ(StackArgv(l), (std::vector<std::string>{prog, "-x"}));

    // Mappings: the program's and the interpreter's executable segments.
    bool prog_x = false, interp_x = false;
    for (const mm::VmaInfo& v : mm_->Vmas()) {
      if (!(v.prot & PROT_EXEC)) continue;
      if (v.name == prog) prog_x = true;
      if (v.name == interp) interp_x = true;
    }
    EXPECT_TRUE(prog_x);
    EXPECT_TRUE(interp_x);
  }
}

TEST_F(ExecTest, InterpreterErrorsAsLinux) {
  std::string interp;
  if (!SeedHostProgram("/usr/bin/true", &interp)) {
    GTEST_SKIP() << "SKIP: no dynamically linked /usr/bin/true on the host";
  }
  std::string ld;
  ASSERT_TRUE(ReadHostFile(interp, &ld));
  std::string why;
  bool committed = true;

  // Not executable: open_exec's EACCES. (WriteFile keeps the mode of an
  // existing file: recreate it.)
  ASSERT_TRUE(vfs::UnlinkAt(Base(), interp, 0).ok());
  WriteFile(interp, ld, 0644);
  auto r = Exec("/usr/bin/true", {"true"}, &why, &committed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kEACCES);
  EXPECT_FALSE(committed);

  // Not ELF: ELIBBAD.
  NewMm();
  ASSERT_TRUE(vfs::UnlinkAt(Base(), interp, 0).ok());
  WriteFile(interp, std::string(200, 'x'), 0755);
  r = Exec("/usr/bin/true", {"true"}, &why, &committed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kELIBBAD);
  EXPECT_FALSE(committed);

  // Another machine: ELIBBAD.
  NewMm();
  std::string other = ld;
  reinterpret_cast<Elf64_Ehdr*>(other.data())->e_machine = EM_AARCH64;
  WriteFile(interp, other, 0755);
  r = Exec("/usr/bin/true", {"true"}, &why, &committed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kELIBBAD);

  // A directory: EACCES; missing: ENOENT.
  NewMm();
  ASSERT_TRUE(vfs::UnlinkAt(Base(), interp, 0).ok());
  r = Exec("/usr/bin/true", {"true"}, &why, &committed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kENOENT);
  EXPECT_FALSE(committed);
  NewMm();
  ASSERT_TRUE(Mkdir(interp).ok());
  r = Exec("/usr/bin/true", {"true"}, &why, &committed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kEACCES);
}

TEST_F(ExecTest, ScriptsGetTheirInterpreterAndArguments) {
  std::string interp;
  if (!SeedHostProgram("/usr/bin/true", &interp)) {
    GTEST_SKIP() << "SKIP: no dynamically linked /usr/bin/true on the host";
  }
  WriteFile("/s1", "#! /usr/bin/true  -a b \nexit 1\n", 0755);
  WriteFile("/s2", "#!/s1\n", 0755);
  std::string why;
  auto r = Exec("/s2", {"s2-argv0", "x", "y"}, &why);
  ASSERT_TRUE(r.ok()) << r.error().name() << ": " << why;
  // binfmt_script, twice: {interp, arg, script} replaces argv[0].
  EXPECT_EQ(StackArgv(r->load),
            (std::vector<std::string>{"/usr/bin/true", "-a b", "/s1", "/s2",
                                      "x", "y"}));
  EXPECT_EQ(r->exe_path, "/usr/bin/true");
  std::map<uint64_t, uint64_t> aux(r->load.auxv.begin(), r->load.auxv.end());
  auto execfn = mm_->CopyInString(aux[AT_EXECFN], 4096);
  ASSERT_TRUE(execfn.ok());
  EXPECT_EQ(*execfn, "/s2");  // bprm->filename, not the interpreter

  // 5 scripts in a chain work; 6 are ELOOP.
  WriteFile("/c0", "#!/usr/bin/true\n", 0755);
  for (int i = 1; i <= 5; ++i) {
    WriteFile("/c" + std::to_string(i), "#!/c" + std::to_string(i - 1) + "\n",
              0755);
  }
  NewMm();
  EXPECT_TRUE(Exec("/c4", {"c4"}, &why).ok()) << why;
  NewMm();
  r = Exec("/c5", {"c5"}, &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kELOOP);

  // A missing interpreter is ENOENT; an unknown format ENOEXEC.
  WriteFile("/nointerp", "#!/no/such\n", 0755);
  NewMm();
  r = Exec("/nointerp", {"n"}, &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kENOENT);
  WriteFile("/text", "echo hi\n", 0755);
  NewMm();
  r = Exec("/text", {"t"}, &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kENOEXEC);
  WriteFile("/empty", "", 0755);
  NewMm();
  r = Exec("/empty", {"e"}, &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kENOEXEC);
}

}  // namespace
}  // namespace sandbox::loader
