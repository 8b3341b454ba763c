// The ELF loader: maps an executable (and its interpreter, if asked to) into
// a fresh MemoryManager and builds the initial stack exactly as Linux's
// load_elf_binary()/create_elf_tables() lay it out on x86-64.
//
// Initial stack, from the top (stack_top) down:
//   8 zero bytes
//   exec path string (AT_EXECFN)
//   envp strings, argv strings (argv[0] lowest)
//   [random padding < 8 KiB when randomising, then 16-byte alignment]
//   "x86_64\0" (AT_PLATFORM)
//   16 random bytes (AT_RANDOM)
//   [padding to 16 bytes]
//   auxv pairs ending in AT_NULL
//   NULL, envp pointers, NULL, argv pointers, argc   <- stack_pointer
// stack_pointer is 16-byte aligned.
#ifndef SENTRY_LOADER_LOADER_H_
#define SENTRY_LOADER_LOADER_H_

#include <stdint.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "platform/platform.h"
#include "sentry/base/result.h"
#include "sentry/loader/elf.h"
#include "sentry/loader/file_reader.h"
#include "sentry/mm/memory_manager.h"

namespace sandbox::loader {

// Linux's per-string and total limits for execve arguments.
inline constexpr size_t kMaxArgStrLen = 32 * 4096;  // MAX_ARG_STRLEN
inline constexpr size_t kArgMax = 32 * 4096;        // ARG_MAX (minimum room)

struct LoadArgs {
  std::vector<std::string> argv;  // empty: Linux inserts argv[0] = ""
  std::vector<std::string> envp;
  // The path as given to execve: AT_EXECFN's string.
  std::string exec_path;
  // The name /proc/pid/maps shows for the program's segments: the loaded
  // file's path from the root (d_path; a script's interpreter). Empty:
  // exec_path.
  std::string maps_name;
  uint32_t uid = 0, euid = 0, gid = 0, egid = 0;
  bool secure = false;  // AT_SECURE (set-id exec)
  uint64_t hwcap = 0;   // AT_HWCAP: CPUID leaf 1 EDX (HwcapFromPlatform)
  uint64_t hwcap2 = 0;  // AT_HWCAP2
  // AT_MINSIGSTKSZ: the size of the kernel's signal frame. 0: a Linux-like
  // estimate for a 2.7 KB XSAVE area (DefaultMinSigStkSz).
  uint64_t minsigstksz = 0;
  uint64_t clktck = 100;  // AT_CLKTCK
  // Opens the PT_INTERP path. Unset: dynamically linked programs fail with
  // ENOEXEC and a message saying so.
  std::function<KResult<std::unique_ptr<FileReader>>(const std::string&)>
      open_interpreter;
  // Map the vDSO ([vvar] + [vdso], sentry/vdso) after the program and its
  // interpreter, as Linux's arch_setup_additional_pages, and pass it as
  // AT_SYSINFO_EHDR (the first auxv entry, as ARCH_DLINFO puts it).
  bool vdso = true;
  // Entries placed first (after AT_SYSINFO_EHDR), as Linux's ARCH_DLINFO
  // does.
  std::vector<std::pair<uint64_t, uint64_t>> extra_auxv;
};

struct LoadResult {
  uintptr_t entry = 0;          // first instruction (the interpreter's if any)
  uintptr_t stack_pointer = 0;  // initial rsp: argc lives there
  uintptr_t program_entry = 0;  // AT_ENTRY
  uintptr_t load_bias = 0;      // 0 for ET_EXEC
  uintptr_t phdr_addr = 0;      // AT_PHDR
  uint64_t phnum = 0;           // AT_PHNUM
  uintptr_t interp_base = 0;    // AT_BASE (0 without an interpreter)
  uintptr_t vdso_base = 0;      // AT_SYSINFO_EHDR (0: no vDSO mapped)
  std::string interpreter;      // PT_INTERP path, empty if none
  uintptr_t brk_start = 0;      // already set in the MemoryManager
  uintptr_t stack_top = 0;      // end of the [stack] VMA
  uintptr_t stack_bottom = 0;   // its start
  bool executable_stack = false;
  // Where argv/envp strings are ([start, end)): /proc/pid/cmdline, environ.
  uintptr_t arg_start = 0, arg_end = 0, env_start = 0, env_end = 0;
  uintptr_t execfn_addr = 0, random_addr = 0, platform_addr = 0;
  // The auxiliary vector as written (ends with AT_NULL): /proc/pid/auxv.
  std::vector<std::pair<uint64_t, uint64_t>> auxv;
};

// Loads `file` into `mm`, which must be fresh (no VMAs). On failure returns
// ENOEXEC (bad or unsupported file; *error says why), ELIBBAD (bad
// interpreter header), the interpreter's open error, EIO (headers past the
// end of the file), EINVAL (bad segments, interpreter type), E2BIG
// (arguments too large), ENOMEM, or the reader's error; `mm` is then
// half-built and must be discarded. `error` may be null.
//
// *committed (if not null) says whether the failure came after the point
// where Linux's execve can no longer return an error (begin_new_exec: the
// ELF and interpreter headers were good); execve then kills the process
// with SIGSEGV instead of returning the errno (elf.h lists which checks
// are on which side).
KResult<LoadResult> Load(mm::MemoryManager& mm, FileReader& file,
                         const LoadArgs& args, std::string* error = nullptr,
                         bool* committed = nullptr);

// AT_HWCAP as Linux computes it on x86: CPUID leaf 1 EDX.
uint64_t HwcapFromPlatform(const platform::Platform& platform);
// A Linux-like AT_MINSIGSTKSZ for an XSAVE area of `fp_state_size` bytes.
uint64_t DefaultMinSigStkSz(size_t fp_state_size);

}  // namespace sandbox::loader

#endif  // SENTRY_LOADER_LOADER_H_
