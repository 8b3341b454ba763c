// ELF64 x86-64 executable parsing and validation (no memory is touched).
//
// Everything in the file is hostile: every header field that the loader
// relies on is checked, and a bad file gives ENOEXEC with a message saying
// what is wrong.
#ifndef SENTRY_LOADER_ELF_H_
#define SENTRY_LOADER_ELF_H_

#include <elf.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "sentry/base/result.h"
#include "sentry/loader/file_reader.h"

namespace sandbox::loader {

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
  // PT_INTERP path without its NUL; empty if none.
  std::string interpreter;
  // PT_GNU_STACK has PF_X.
  bool executable_stack = false;
  // Page-rounded extent of the PT_LOAD segments (before any load bias).
  uint64_t min_vaddr = 0;
  uint64_t max_vaddr = 0;
  // Largest power-of-two p_align of the PT_LOAD segments (>= page size).
  uint64_t max_align = 4096;
  // Where the program headers are in memory (before the bias): PT_PHDR's
  // p_vaddr, else inside the PT_LOAD that maps e_phoff; 0 if unmapped.
  uint64_t phdr_vaddr = 0;
};

// Reads and validates the ELF header and program headers. On error returns
// ENOEXEC (or the reader's error, e.g. EIO) and, if `error` is not null,
// sets it to a one-line explanation.
KResult<ElfInfo> ParseElf(FileReader& file, std::string* error);

}  // namespace sandbox::loader

#endif  // SENTRY_LOADER_ELF_H_
