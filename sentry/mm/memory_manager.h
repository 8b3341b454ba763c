// MemoryManager: one guest address space (what Linux calls an mm_struct).
//
// VMAs record what the guest asked for (mmap/brk/mprotect); the platform
// AddressSpace holds what is actually mapped, backed by the MemoryFile.
// Faults populate in runs, not page by page. Copy-in/copy-out go through the
// Sentry's mapping of the MemoryFile (never through the stub) and never
// crash the Sentry: a bad guest address is EFAULT.
//
// Lock order: MemoryManager::mu_ -> MemoryFile (internal).
// Thread-safety: all public methods are thread-safe (guest threads of one
// process share an mm).
#ifndef SENTRY_MM_MEMORY_MANAGER_H_
#define SENTRY_MM_MEMORY_MANAGER_H_

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <string>

#include "platform/platform.h"
#include "sentry/base/result.h"

namespace sandbox::mm {

// Arguments of mmap(2) after the syscall layer has decoded them. File-backed
// mappings come with the VFS issue (a Mappable); until then only anonymous.
struct MmapOpts {
  uintptr_t addr = 0;
  size_t length = 0;
  int prot = 0;
  int flags = 0;  // MAP_*
};

class MemoryManager {
 public:
  // Creates an empty address space on `platform`.
  static KResult<std::unique_ptr<MemoryManager>> Create(
      platform::Platform& platform);
  virtual ~MemoryManager() = default;

  // The platform address space, for Context::Switch.
  virtual platform::AddressSpace& address_space() = 0;

  // Guest memory access. Return the number of bytes copied; a copy that
  // hits an unmapped or inaccessible page stops there and returns what it
  // copied, or EFAULT if that is nothing.
  virtual KResult<size_t> CopyIn(uintptr_t addr, void* dst, size_t n) = 0;
  virtual KResult<size_t> CopyOut(uintptr_t addr, const void* src,
                                  size_t n) = 0;
  // Reads a NUL-terminated string of at most max_len bytes (without the
  // NUL): ENAMETOOLONG if no NUL within max_len, EFAULT on a bad address.
  virtual KResult<std::string> CopyInString(uintptr_t addr,
                                            size_t max_len) = 0;

  // Resolves a guest fault at `addr`: maps the page(s) if the VMA allows
  // the access; EFAULT (deliver SIGSEGV) otherwise.
  virtual KResult<void> HandleFault(uintptr_t addr,
                                    platform::AccessType access) = 0;

  // brk(2): returns the new break (or the old one if the request fails).
  virtual uintptr_t Brk(uintptr_t addr) = 0;
  virtual KResult<uintptr_t> Mmap(const MmapOpts& opts) = 0;
  virtual KResult<void> Munmap(uintptr_t addr, size_t length) = 0;
  virtual KResult<void> Mprotect(uintptr_t addr, size_t length, int prot) = 0;
};

}  // namespace sandbox::mm

#endif  // SENTRY_MM_MEMORY_MANAGER_H_
