// The bound on guest memory the Sentry checks size requests against before
// it starts the work (fallocate of a tmpfs file: ENOSPC up front, as Linux's
// shmem_fallocate does against the mount's size).
//
// Today the bound is the memory file's size (sentry/boot: kMemoryFileSize):
// no request can be served past it, so one that asks for more fails at once
// instead of allocating page by page until the file is full. A --memory
// limit (guest memory: anonymous, tmpfs and page cache together) belongs
// here too: set it with SetGuestMemoryLimit at boot, and every check below
// follows.
#ifndef PLATFORM_MEMORY_BUDGET_H_
#define PLATFORM_MEMORY_BUDGET_H_

#include <stdint.h>

#include <atomic>

namespace sandbox::platform {

namespace internal {
inline std::atomic<uint64_t> guest_memory_limit{UINT64_MAX};
}  // namespace internal

// Bytes of guest memory the sandbox may ever hold (UINT64_MAX: unbounded).
inline uint64_t GuestMemoryLimit() {
  return internal::guest_memory_limit.load(std::memory_order_relaxed);
}
inline void SetGuestMemoryLimit(uint64_t bytes) {
  internal::guest_memory_limit.store(bytes, std::memory_order_relaxed);
}

// Whether `bytes` more could ever fit next to `allocated` bytes.
inline bool GuestMemoryCouldFit(uint64_t allocated, uint64_t bytes) {
  const uint64_t lim = GuestMemoryLimit();
  return allocated <= lim && bytes <= lim - allocated;
}

}  // namespace sandbox::platform

#endif  // PLATFORM_MEMORY_BUDGET_H_
