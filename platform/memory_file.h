// The memory file: all guest memory lives in one memfd.
//
// The Sentry maps the whole file into itself, so copy-in/copy-out is a
// bounds-checked memcpy through that mapping (copies of 16 KiB and more use
// pread/pwrite on the memfd instead: no host page fault per page the Sentry
// has not touched); stubs map windows of it
// MAP_SHARED. Copies survive SIGBUS (shmem allocation can fail under memory
// pressure): they report failure, never crash the Sentry.
//
// Allocation hands out page-aligned runs of file offsets; Free punches the
// pages out (fallocate PUNCH_HOLE) so the host gets them back.
//
// Thread-safety: all methods are thread-safe.
#ifndef PLATFORM_MEMORY_FILE_H_
#define PLATFORM_MEMORY_FILE_H_

#include <stddef.h>
#include <stdint.h>

#include <functional>
#include <memory>

#include "absl/status/statusor.h"

namespace sandbox::platform {

class MemoryFile {
 public:
  virtual ~MemoryFile() = default;

  // Creates a memory file that can grow to `max_size` bytes (page-aligned).
  static absl::StatusOr<std::unique_ptr<MemoryFile>> Create(uint64_t max_size);

  // The memfd. Owned by the MemoryFile.
  virtual int fd() const = 0;

  // Allocates `length` bytes (a multiple of the page size) of zeroed,
  // contiguous file space and returns its offset. Fails with
  // RESOURCE_EXHAUSTED when the file is full.
  virtual absl::StatusOr<uint64_t> Allocate(uint64_t length) = 0;

  // Returns [offset, offset+length) to the allocator and releases its pages
  // to the host. The range must have come from Allocate (whole or in part).
  virtual void Free(uint64_t offset, uint64_t length) = 0;

  // Copies between Sentry memory and the file range [offset, offset+n).
  // Returns false (copying nothing or part) if the range is out of bounds or
  // the host could not back a page (SIGBUS).
  virtual bool Read(uint64_t offset, void* dst, size_t n) = 0;
  virtual bool Write(uint64_t offset, const void* src, size_t n) = 0;
  // Zeroes [offset, offset+n) through the mapping.
  virtual bool Zero(uint64_t offset, size_t n) = 0;
  // Copies [src, src+n) to [dst, dst+n) inside the file (the ranges may
  // overlap), e.g. from a tmpfs page straight into a guest's page. Same
  // failure rules as Read/Write. The default goes through a small buffer;
  // implementations with a mapping copy directly.
  virtual bool Copy(uint64_t dst, uint64_t src, size_t n) {
    uint8_t buf[4096];
    const bool forward = dst < src || dst >= src + n;  // memmove's order
    for (size_t done = 0; done < n;) {
      const size_t k = n - done < sizeof(buf) ? n - done : sizeof(buf);
      const size_t at = forward ? done : n - done - k;
      if (!Read(src + at, buf, k) || !Write(dst + at, buf, k)) return false;
      done += k;
    }
    return true;
  }

  // The Sentry's own mapping of [offset, offset+n), or nullptr if out of
  // bounds. Access through it is not SIGBUS-safe: use Read/Write for data
  // that the guest controls, and this only for atomics (futex words) on pages
  // known to be populated.
  virtual uint8_t* Internal(uint64_t offset, size_t n) = 0;

  // Bytes currently allocated (for tests and accounting).
  virtual uint64_t AllocatedBytes() const = 0;

  // The guest memory limit (runsc do --memory): Allocate fails once the
  // allocated bytes would pass it. 0 (the default) means only the file's
  // size limits them. Everything the file holds counts: anonymous memory,
  // tmpfs and page-cache pages, and the platform's per-thread regions, as a
  // memory cgroup charges a container's pages.
  virtual void SetLimit(uint64_t bytes) { (void)bytes; }
  virtual uint64_t Limit() const { return 0; }
  // Whether `bytes` more could ever be allocated next to what is allocated
  // now, within the limit (without one, the file's size). Size requests are
  // checked against it before their work starts (tmpfs fallocate: ENOSPC up
  // front, as shmem_fallocate against the mount's size; MAP_POPULATE stops).
  virtual bool CouldFit(uint64_t bytes) const {
    (void)bytes;
    return true;
  }
  // What Allocate calls, outside its own lock, when an allocation of
  // `needed` bytes would pass the limit (the OOM killer: it may end a guest
  // process and wait a bounded time for its pages): true if Allocate should
  // try again. Called on the allocating thread, which may hold mm, inode or
  // page-cache locks: the handler must take none of those.
  using OomHandler = std::function<bool(uint64_t needed)>;
  virtual void SetOomHandler(OomHandler handler) { (void)handler; }
  // How many allocations the limit has refused so far (a page fault that
  // failed with ENOMEM compares it before and after: a refusal means "out
  // of memory, retry the fault", as Linux's pagefault_out_of_memory does).
  virtual uint64_t LimitFailures() const { return 0; }
};

}  // namespace sandbox::platform

#endif  // PLATFORM_MEMORY_FILE_H_
