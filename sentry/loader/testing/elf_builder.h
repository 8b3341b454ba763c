// Builds small ELF64 x86-64 files in memory for loader tests and fuzz seeds.
#ifndef SENTRY_LOADER_TESTING_ELF_BUILDER_H_
#define SENTRY_LOADER_TESTING_ELF_BUILDER_H_

#include <elf.h>
#include <stdint.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace sandbox::loader::testing {

// The byte at file offset `off` (file contents are this pattern outside
// the headers, so copies can be checked).
inline uint8_t PatternByte(uint64_t off) {
  return static_cast<uint8_t>((off * 7 + 3) & 0xff);
}

struct TestElf {
  Elf64_Ehdr eh = {};
  std::vector<Elf64_Phdr> ph;
  uint64_t file_size = 0;
  // Extra bytes written at given offsets after the pattern (e.g. PT_INTERP).
  std::vector<std::pair<uint64_t, std::string>> patches;

  // Serialises: pattern bytes, then the ELF header at 0 and the program
  // headers at e_phoff (when they fit), then patches.
  std::string Build() const {
    std::string f(file_size, '\0');
    for (uint64_t i = 0; i < file_size; ++i) f[i] = PatternByte(i);
    std::memcpy(f.data(), &eh, std::min<uint64_t>(sizeof(eh), file_size));
    const uint64_t phbytes = ph.size() * sizeof(Elf64_Phdr);
    if (eh.e_phoff < file_size && phbytes <= file_size - eh.e_phoff) {
      std::memcpy(f.data() + eh.e_phoff, ph.data(), phbytes);
    }
    for (const auto& [off, bytes] : patches) {
      if (off < file_size) {
        std::memcpy(f.data() + off, bytes.data(),
                    std::min<uint64_t>(bytes.size(), file_size - off));
      }
    }
    return f;
  }
};

inline Elf64_Phdr Phdr(uint32_t type, uint32_t flags, uint64_t offset,
                       uint64_t vaddr, uint64_t filesz, uint64_t memsz,
                       uint64_t align = 0x1000) {
  Elf64_Phdr p = {};
  p.p_type = type;
  p.p_flags = flags;
  p.p_offset = offset;
  p.p_vaddr = p.p_paddr = vaddr;
  p.p_filesz = filesz;
  p.p_memsz = memsz;
  p.p_align = align;
  return p;
}

// A valid static ET_EXEC: headers in a read-only segment at 0x400000, code
// at 0x401000 (entry), data + bss at 0x403008, non-executable stack.
inline TestElf StaticExec() {
  TestElf e;
  std::memcpy(e.eh.e_ident, ELFMAG, SELFMAG);
  e.eh.e_ident[EI_CLASS] = ELFCLASS64;
  e.eh.e_ident[EI_DATA] = ELFDATA2LSB;
  e.eh.e_ident[EI_VERSION] = EV_CURRENT;
  e.eh.e_ident[EI_OSABI] = ELFOSABI_SYSV;
  e.eh.e_type = ET_EXEC;
  e.eh.e_machine = EM_X86_64;
  e.eh.e_version = EV_CURRENT;
  e.eh.e_entry = 0x401000;
  e.eh.e_phoff = sizeof(Elf64_Ehdr);
  e.eh.e_ehsize = sizeof(Elf64_Ehdr);
  e.eh.e_phentsize = sizeof(Elf64_Phdr);
  e.ph = {
      Phdr(PT_LOAD, PF_R, 0, 0x400000, 0x300, 0x300),
      Phdr(PT_LOAD, PF_R | PF_X, 0x1000, 0x401000, 0x123, 0x123),
      Phdr(PT_LOAD, PF_R | PF_W, 0x2008, 0x403008, 0x100, 0x2000),
      Phdr(PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0, 16),
  };
  e.eh.e_phnum = e.ph.size();
  e.file_size = 0x2108;
  return e;
}

// A static PIE (ET_DYN, no PT_INTERP) with segments from address 0.
inline TestElf StaticPie() {
  TestElf e = StaticExec();
  e.eh.e_type = ET_DYN;
  e.eh.e_entry = 0x1010;
  e.ph[0].p_vaddr = e.ph[0].p_paddr = 0;
  e.ph[1].p_vaddr = e.ph[1].p_paddr = 0x1000;
  e.ph[2].p_vaddr = e.ph[2].p_paddr = 0x3008;
  return e;
}

// StaticExec with a PT_INTERP naming `path`.
inline TestElf WithInterp(TestElf e, const std::string& path) {
  const uint64_t off = 0x200;
  e.ph.insert(e.ph.begin(), Phdr(PT_INTERP, PF_R, off, 0x400000 + off,
                                 path.size() + 1, path.size() + 1, 1));
  e.eh.e_phnum = e.ph.size();
  e.patches.push_back({off, path + std::string(1, '\0')});
  return e;
}

}  // namespace sandbox::loader::testing

#endif  // SENTRY_LOADER_TESTING_ELF_BUILDER_H_
