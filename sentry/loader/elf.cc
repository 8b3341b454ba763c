#include "sentry/loader/elf.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"

namespace sandbox::loader {
namespace {

constexpr uint64_t kPage = 4096;

bool AddOverflows(uint64_t a, uint64_t b) { return a + b < a; }

const char* TypeName(uint16_t t) {
  switch (t) {
    case ET_NONE:
      return "ET_NONE";
    case ET_REL:
      return "a relocatable object (ET_REL)";
    case ET_CORE:
      return "a core dump (ET_CORE)";
    default:
      return "of an unknown type";
  }
}

}  // namespace

KResult<ElfInfo> ParseElf(FileReader& file, std::string* error) {
  auto fail = [&](std::string msg) -> Errno {
    if (error != nullptr) *error = std::move(msg);
    return kENOEXEC;
  };
  auto io_fail = [&](Errno e, const char* what) -> Errno {
    if (error != nullptr) {
      *error = absl::StrFormat("reading the %s: %s", what, e.name());
    }
    return e;
  };

  ElfInfo info;
  auto size_or = file.Size();
  if (!size_or.ok()) return io_fail(size_or.error(), "file size");
  const uint64_t file_size = *size_or;
  if (file_size < sizeof(Elf64_Ehdr)) {
    return fail(
        absl::StrFormat("file too short for an ELF header (%d bytes, need %d)",
                        file_size, sizeof(Elf64_Ehdr)));
  }
  auto got = file.ReadAt(0, &info.ehdr, sizeof(info.ehdr));
  if (!got.ok()) return io_fail(got.error(), "ELF header");
  if (*got != sizeof(info.ehdr))
    return fail("file shrank while reading the ELF header");
  const Elf64_Ehdr& eh = info.ehdr;

  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    return fail("not an ELF file (bad magic)");
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) {
    return fail(absl::StrFormat("not a 64-bit ELF file (EI_CLASS %d)",
                                eh.e_ident[EI_CLASS]));
  }
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return fail(absl::StrFormat("not a little-endian ELF file (EI_DATA %d)",
                                eh.e_ident[EI_DATA]));
  }
  if (eh.e_ident[EI_VERSION] != EV_CURRENT) {
    return fail(absl::StrFormat("unknown ELF identification version %d",
                                eh.e_ident[EI_VERSION]));
  }
  if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
    return fail(absl::StrFormat("not an executable: the file is %s (e_type %d)",
                                TypeName(eh.e_type), eh.e_type));
  }
  if (eh.e_machine != EM_X86_64) {
    return fail(absl::StrFormat(
        "built for another machine (e_machine %d, need x86-64 = %d)",
        eh.e_machine, EM_X86_64));
  }
  if (eh.e_version != EV_CURRENT) {
    return fail(absl::StrFormat("unknown ELF version %d", eh.e_version));
  }
  if (eh.e_ehsize != sizeof(Elf64_Ehdr)) {
    return fail(absl::StrFormat("bad ELF header size e_ehsize %d (need %d)",
                                eh.e_ehsize, sizeof(Elf64_Ehdr)));
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr)) {
    return fail(absl::StrFormat(
        "bad program header entry size e_phentsize %d (need %d)",
        eh.e_phentsize, sizeof(Elf64_Phdr)));
  }
  if (eh.e_phnum == 0) return fail("no program headers (e_phnum 0)");
  const uint64_t ph_bytes = uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
  if (ph_bytes > kMaxPhdrBytes) {
    return fail(
        absl::StrFormat("too many program headers (e_phnum %d)", eh.e_phnum));
  }
  if (AddOverflows(eh.e_phoff, ph_bytes) || eh.e_phoff + ph_bytes > file_size) {
    return fail(absl::StrFormat(
        "program headers (e_phoff %#x, %d bytes) extend past the end of the "
        "file (%d bytes)",
        eh.e_phoff, ph_bytes, file_size));
  }
  info.phdrs.resize(eh.e_phnum);
  got = file.ReadAt(eh.e_phoff, info.phdrs.data(), ph_bytes);
  if (!got.ok()) return io_fail(got.error(), "program headers");
  if (*got != ph_bytes)
    return fail("file shrank while reading program headers");

  bool have_load = false;
  bool have_interp = false;
  bool have_phdr = false;
  uint64_t prev_end = 0;
  uint64_t phdr_vaddr_from_load = 0;
  for (size_t i = 0; i < info.phdrs.size(); ++i) {
    const Elf64_Phdr& ph = info.phdrs[i];
    switch (ph.p_type) {
      case PT_LOAD: {
        if (ph.p_filesz > ph.p_memsz) {
          return fail(absl::StrFormat(
              "segment %d: p_filesz %#x is larger than p_memsz %#x", i,
              ph.p_filesz, ph.p_memsz));
        }
        if (AddOverflows(ph.p_offset, ph.p_filesz) ||
            ph.p_offset + ph.p_filesz > file_size) {
          return fail(absl::StrFormat(
              "segment %d: file range [%#x, +%#x) extends past the end of the "
              "file (%d bytes)",
              i, ph.p_offset, ph.p_filesz, file_size));
        }
        if (AddOverflows(ph.p_vaddr, ph.p_memsz) ||
            AddOverflows(ph.p_vaddr + ph.p_memsz, kPage)) {
          return fail(
              absl::StrFormat("segment %d: address range [%#x, +%#x) overflows",
                              i, ph.p_vaddr, ph.p_memsz));
        }
        if (ph.p_align > 1 && (ph.p_align & (ph.p_align - 1)) != 0) {
          return fail(absl::StrFormat(
              "segment %d: p_align %#x is not a power of two", i, ph.p_align));
        }
        if ((ph.p_vaddr - ph.p_offset) % kPage != 0) {
          return fail(absl::StrFormat(
              "segment %d: p_vaddr %#x and p_offset %#x differ modulo the page "
              "size",
              i, ph.p_vaddr, ph.p_offset));
        }
        if (ph.p_memsz == 0) break;
        if (have_load && ph.p_vaddr < prev_end) {
          return fail(absl::StrFormat(
              "segment %d at %#x overlaps or precedes the previous PT_LOAD "
              "(ending at %#x)",
              i, ph.p_vaddr, prev_end));
        }
        if (!have_load) info.min_vaddr = ph.p_vaddr & ~(kPage - 1);
        have_load = true;
        prev_end = ph.p_vaddr + ph.p_memsz;
        info.max_vaddr = (prev_end + kPage - 1) & ~(kPage - 1);
        if (ph.p_align > info.max_align) info.max_align = ph.p_align;
        if (phdr_vaddr_from_load == 0 && ph.p_offset <= eh.e_phoff &&
            eh.e_phoff + ph_bytes <= ph.p_offset + ph.p_filesz) {
          phdr_vaddr_from_load = eh.e_phoff - ph.p_offset + ph.p_vaddr;
        }
        break;
      }
      case PT_INTERP: {
        if (have_interp) return fail("more than one PT_INTERP");
        have_interp = true;
        if (ph.p_filesz < 2 || ph.p_filesz > kMaxInterpLen) {
          return fail(absl::StrFormat("PT_INTERP size %d is out of range",
                                      ph.p_filesz));
        }
        if (AddOverflows(ph.p_offset, ph.p_filesz) ||
            ph.p_offset + ph.p_filesz > file_size) {
          return fail("PT_INTERP extends past the end of the file");
        }
        std::string path(ph.p_filesz, '\0');
        got = file.ReadAt(ph.p_offset, path.data(), path.size());
        if (!got.ok()) return io_fail(got.error(), "interpreter path");
        if (*got != path.size())
          return fail("file shrank while reading PT_INTERP");
        if (path.back() != '\0' || path.find('\0') != path.size() - 1) {
          return fail("PT_INTERP is not a NUL-terminated path");
        }
        path.pop_back();
        info.interpreter = std::move(path);
        break;
      }
      case PT_PHDR:
        if (have_phdr) return fail("more than one PT_PHDR");
        have_phdr = true;
        info.phdr_vaddr = ph.p_vaddr;
        break;
      case PT_GNU_STACK:
        info.executable_stack = (ph.p_flags & PF_X) != 0;
        break;
      case PT_TLS:
        if (ph.p_filesz > ph.p_memsz) {
          return fail(absl::StrFormat("PT_TLS: p_filesz %#x > p_memsz %#x",
                                      ph.p_filesz, ph.p_memsz));
        }
        if (ph.p_align > 1 && (ph.p_align & (ph.p_align - 1)) != 0) {
          return fail("PT_TLS: p_align is not a power of two");
        }
        break;
      default:
        break;
    }
  }
  if (!have_load) return fail("no loadable segment (PT_LOAD)");
  if (info.max_vaddr - info.min_vaddr > kMaxImageSpan) {
    return fail(absl::StrFormat("loadable segments span %#x bytes, too large",
                                info.max_vaddr - info.min_vaddr));
  }
  if (!have_phdr) info.phdr_vaddr = phdr_vaddr_from_load;

  bool entry_ok = false;
  for (const Elf64_Phdr& ph : info.phdrs) {
    if (ph.p_type == PT_LOAD && ph.p_memsz > 0 && eh.e_entry >= ph.p_vaddr &&
        eh.e_entry - ph.p_vaddr < ph.p_memsz) {
      entry_ok = true;
      break;
    }
  }
  if (!entry_ok) {
    return fail(absl::StrFormat(
        "entry point %#x is not inside a loadable segment", eh.e_entry));
  }
  return info;
}

}  // namespace sandbox::loader
