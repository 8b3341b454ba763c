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

KResult<ElfInfo> ParseElfHeaders(FileReader& file, ElfRole role,
                                 std::string* error) {
  const bool interp = role == ElfRole::kInterpreter;
  // A bad program header is ENOEXEC; a bad interpreter header ELIBBAD.
  const Errno bad = interp ? kELIBBAD : kENOEXEC;
  auto fail = [&](std::string msg, Errno e = kENOEXEC) -> Errno {
    if (error != nullptr) *error = std::move(msg);
    return e;
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
  info.file_size = file_size;
  if (file_size < sizeof(Elf64_Ehdr)) {
    // Linux reads the interpreter's header with elf_read (a short read is
    // EIO); the program's first 256 bytes come zero-filled, so a short one
    // fails the type check.
    return fail(
        absl::StrFormat("file too short for an ELF header (%d bytes, need %d)",
                        file_size, sizeof(Elf64_Ehdr)),
        interp ? kEIO : kENOEXEC);
  }
  auto got = file.ReadAt(0, &info.ehdr, sizeof(info.ehdr));
  if (!got.ok()) return io_fail(got.error(), "ELF header");
  if (*got != sizeof(info.ehdr))
    return fail("file shrank while reading the ELF header", kEIO);
  const Elf64_Ehdr& eh = info.ehdr;

  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    return fail("not an ELF file (bad magic)", bad);
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) {
    return fail(absl::StrFormat("not a 64-bit ELF file (EI_CLASS %d)",
                                eh.e_ident[EI_CLASS]),
                bad);
  }
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return fail(absl::StrFormat("not a little-endian ELF file (EI_DATA %d)",
                                eh.e_ident[EI_DATA]),
                bad);
  }
  if (eh.e_ident[EI_VERSION] != EV_CURRENT) {
    return fail(absl::StrFormat("unknown ELF identification version %d",
                                eh.e_ident[EI_VERSION]),
                bad);
  }
  // An interpreter's type is load_elf_interp's check (stage 2).
  if (!interp && eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
    return fail(absl::StrFormat("not an executable: the file is %s (e_type %d)",
                                TypeName(eh.e_type), eh.e_type));
  }
  if (eh.e_machine != EM_X86_64) {
    return fail(
        absl::StrFormat(
            "built for another machine (e_machine %d, need x86-64 = %d)",
            eh.e_machine, EM_X86_64),
        bad);
  }
  if (eh.e_version != EV_CURRENT) {
    return fail(absl::StrFormat("unknown ELF version %d", eh.e_version), bad);
  }
  if (eh.e_ehsize != sizeof(Elf64_Ehdr)) {
    return fail(absl::StrFormat("bad ELF header size e_ehsize %d (need %d)",
                                eh.e_ehsize, sizeof(Elf64_Ehdr)),
                bad);
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr)) {
    return fail(absl::StrFormat(
                    "bad program header entry size e_phentsize %d (need %d)",
                    eh.e_phentsize, sizeof(Elf64_Phdr)),
                bad);
  }
  if (eh.e_phnum == 0) return fail("no program headers (e_phnum 0)", bad);
  const uint64_t ph_bytes = uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
  if (ph_bytes > kMaxPhdrBytes) {
    return fail(
        absl::StrFormat("too many program headers (e_phnum %d)", eh.e_phnum),
        bad);
  }
  if (AddOverflows(eh.e_phoff, ph_bytes) || eh.e_phoff + ph_bytes > file_size) {
    // elf_read's short read: EIO (ELIBBAD for an interpreter, whose
    // load_elf_phdrs failure is reported as such).
    return fail(absl::StrFormat(
                    "program headers (e_phoff %#x, %d bytes) extend past the "
                    "end of the file (%d bytes)",
                    eh.e_phoff, ph_bytes, file_size),
                interp ? kELIBBAD : kEIO);
  }
  info.phdrs.resize(eh.e_phnum);
  got = file.ReadAt(eh.e_phoff, info.phdrs.data(), ph_bytes);
  if (!got.ok()) {
    if (interp) return fail("reading the program headers", kELIBBAD);
    return io_fail(got.error(), "program headers");
  }
  if (*got != ph_bytes) {
    return fail("file shrank while reading program headers",
                interp ? kELIBBAD : kEIO);
  }

  for (const Elf64_Phdr& ph : info.phdrs) {
    if (ph.p_type == PT_GNU_STACK) {
      info.executable_stack = (ph.p_flags & PF_X) != 0;
    }
  }
  if (interp) return info;
  // The first PT_INTERP names the interpreter (load_elf_binary stops at
  // it); only its size and last byte are checked, and the path is the C
  // string it holds.
  for (const Elf64_Phdr& ph : info.phdrs) {
    if (ph.p_type != PT_INTERP) continue;
    if (ph.p_filesz < 2 || ph.p_filesz > kMaxInterpLen) {
      return fail(
          absl::StrFormat("PT_INTERP size %d is out of range", ph.p_filesz));
    }
    if (AddOverflows(ph.p_offset, ph.p_filesz) ||
        ph.p_offset + ph.p_filesz > file_size) {
      return fail("PT_INTERP extends past the end of the file", kEIO);
    }
    std::string path(ph.p_filesz, '\0');
    got = file.ReadAt(ph.p_offset, path.data(), path.size());
    if (!got.ok()) return io_fail(got.error(), "interpreter path");
    if (*got != path.size())
      return fail("file shrank while reading PT_INTERP", kEIO);
    if (path.back() != '\0') {
      return fail("PT_INTERP is not a NUL-terminated path");
    }
    path.resize(path.find('\0'));
    // An empty path fails the interpreter's open with ENOENT, as in Linux.
    info.interpreter = std::move(path);
    info.has_interpreter = true;
    break;
  }
  return info;
}

KResult<void> ValidateSegments(ElfInfo& info, uint64_t file_size,
                               std::string* error) {
  auto fail = [&](std::string msg, Errno e = kENOEXEC) -> Errno {
    if (error != nullptr) *error = std::move(msg);
    return e;
  };
  const Elf64_Ehdr& eh = info.ehdr;
  const uint64_t ph_bytes = uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
  bool have_load = false;
  bool have_phdr = false;
  uint64_t prev_end = 0;
  uint64_t phdr_vaddr_from_load = 0;
  info.min_vaddr = info.max_vaddr = 0;
  info.max_align = 4096;
  info.phdr_vaddr = 0;
  for (size_t i = 0; i < info.phdrs.size(); ++i) {
    const Elf64_Phdr& ph = info.phdrs[i];
    switch (ph.p_type) {
      case PT_LOAD: {
        if (ph.p_filesz > ph.p_memsz) {
          return fail(absl::StrFormat(
                          "segment %d: p_filesz %#x is larger than p_memsz %#x",
                          i, ph.p_filesz, ph.p_memsz),
                      kEINVAL);
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
                              i, ph.p_vaddr, ph.p_memsz),
              kEINVAL);
        }
        if (ph.p_align > 1 && (ph.p_align & (ph.p_align - 1)) != 0) {
          return fail(absl::StrFormat(
              "segment %d: p_align %#x is not a power of two", i, ph.p_align));
        }
        if ((ph.p_vaddr - ph.p_offset) % kPage != 0) {
          return fail(
              absl::StrFormat("segment %d: p_vaddr %#x and p_offset %#x differ "
                              "modulo the page size",
                              i, ph.p_vaddr, ph.p_offset),
              kEINVAL);
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
      case PT_PHDR:
        if (have_phdr) return fail("more than one PT_PHDR");
        have_phdr = true;
        info.phdr_vaddr = ph.p_vaddr;
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
  // Linux's total_mapping_size() of 0 (ET_DYN) is EINVAL.
  if (!have_load) return fail("no loadable segment (PT_LOAD)", kEINVAL);
  if (info.max_vaddr - info.min_vaddr > kMaxImageSpan) {
    return fail(absl::StrFormat("loadable segments span %#x bytes, too large",
                                info.max_vaddr - info.min_vaddr),
                kENOMEM);
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
  return OkResult();
}

KResult<ElfInfo> ParseElf(FileReader& file, std::string* error) {
  TRY(ElfInfo info, ParseElfHeaders(file, ElfRole::kProgram, error));
  TRY_VOID(ValidateSegments(info, info.file_size, error));
  return info;
}

}  // namespace sandbox::loader
