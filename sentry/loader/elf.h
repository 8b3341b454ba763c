// ELF64 x86-64 executable parsing and validation (no memory is touched).
//
// Everything in the file is hostile: every header field that the loader
// relies on is checked, and a bad file gives ENOEXEC with a message saying
// what is wrong.
#ifndef SENTRY_LOADER_ELF_H_
#define SENTRY_LOADER_ELF_H_

#include <elf.h>
#include <errno.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "sentry/base/result.h"
#include "sentry/loader/file_reader.h"

namespace sandbox::loader {

// A bad interpreter (sentry/base has no constant for it).
inline constexpr Errno kELIBBAD{ELIBBAD};

// Linux's limits: program headers may take at most 64 KiB, PT_INTERP at most
// PATH_MAX bytes.
inline constexpr size_t kMaxPhdrBytes = 65536;
inline constexpr size_t kMaxInterpLen = 4096;
// Largest span of PT_LOAD segments accepted (Linux has no explicit limit;
// this keeps size arithmetic far from overflow).
inline constexpr uint64_t kMaxImageSpan = 1ull << 46;

struct ElfInfo {
  Elf64_Ehdr ehdr = {};
  std::vector<Elf64_Phdr> phdrs;
  // PT_INTERP's path (up to its first NUL); has_interpreter says whether
  // there is one (the path may be empty, which fails to open).
  std::string interpreter;
  bool has_interpreter = false;
  // PT_GNU_STACK has PF_X.
  bool executable_stack = false;
  // The file's size when the headers were read.
  uint64_t file_size = 0;
  // Page-rounded extent of the PT_LOAD segments (before any load bias).
  uint64_t min_vaddr = 0;
  uint64_t max_vaddr = 0;
  // Largest power-of-two p_align of the PT_LOAD segments (>= page size).
  uint64_t max_align = 4096;
  // Where the program headers are in memory (before the bias): PT_PHDR's
  // p_vaddr, else inside the PT_LOAD that maps e_phoff; 0 if unmapped.
  uint64_t phdr_vaddr = 0;
};

// Which file is parsed: execve's program, or the interpreter its PT_INTERP
// names. Linux reports a bad interpreter header as ELIBBAD, not ENOEXEC,
// and ignores an interpreter's own PT_INTERP.
enum class ElfRole { kProgram, kInterpreter };

// Stage 1, what Linux's load_elf_binary() checks before execve's point of
// no return (begin_new_exec), with its errors:
//  - program: bad magic, type (not ET_EXEC/ET_DYN), machine, e_phentsize,
//    e_phnum 0 or > 64 KiB of headers: ENOEXEC. Stricter than Linux (also
//    ENOEXEC): EI_CLASS/EI_DATA/EI_VERSION/e_version/e_ehsize, a file
//    shorter than the ELF header.
//  - interpreter: bad magic or machine, bad program header size or count:
//    ELIBBAD (its type is checked in stage 2, as load_elf_interp does).
//  - program headers or PT_INTERP past the end of the file: EIO (elf_read's
//    short read); PT_INTERP of fewer than 2 or more than PATH_MAX bytes, or
//    whose last byte is not NUL: ENOEXEC. The first PT_INTERP counts and
//    its path ends at its first NUL, as in Linux.
// Reader errors pass through. On error *error (if not null) says why.
KResult<ElfInfo> ParseElfHeaders(FileReader& file, ElfRole role,
                                 std::string* error);

// Stage 2, the segment checks (in Linux after the point of no return, where
// a failure kills the exec'ing process with SIGSEGV; several of these Linux
// does not make and would instead fault at run time, which also kills it):
// p_filesz > p_memsz (EINVAL, as Linux's check), segment past the end of
// the file, address overflow, non-power-of-two p_align, p_vaddr/p_offset
// not congruent mod 4096 (Linux's mmap EINVAL), PT_LOADs overlapping or out
// of order, no PT_LOAD, entry point outside every PT_LOAD, bad PT_TLS,
// duplicate PT_PHDR: ENOEXEC or EINVAL; a span over kMaxImageSpan: ENOMEM.
// Also fills min_vaddr, max_vaddr, max_align and phdr_vaddr.
KResult<void> ValidateSegments(ElfInfo& info, uint64_t file_size,
                               std::string* error);

// Both stages for a program (tests, fuzzing).
KResult<ElfInfo> ParseElf(FileReader& file, std::string* error);

}  // namespace sandbox::loader

#endif  // SENTRY_LOADER_ELF_H_
