// GuestSegments: a guest buffer (one range, or readv/writev's iovecs) as a
// vfs::GuestIo, so that a file whose data lives in the memory file copies
// between its pages and the guest's pages directly (MemoryManager::
// WalkGuest), with no bounce buffer in between.
//
// Fault rules are the copy rules of the MemoryManager: the walk stops at
// the first byte the guest may not access in that direction; nothing done
// before it is EFAULT. Segments are walked in order, like an iov_iter: a
// fault in a later segment ends the transfer short there.
//
// Not thread-safe (one per syscall); the MemoryManager must outlive it.
#ifndef SENTRY_MM_GUEST_IO_H_
#define SENTRY_MM_GUEST_IO_H_

#include <stddef.h>
#include <stdint.h>

#include "absl/container/inlined_vector.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/vfs/file_description.h"

namespace sandbox::mm {

class GuestSegments final : public vfs::GuestIo {
 public:
  // `guest_written`: a read's destination (CopyOut rules), else a write's
  // source (CopyIn rules).
  GuestSegments(MemoryManager& mm, bool guest_written)
      : mm_(mm), guest_written_(guest_written) {}
  // Appends a segment (zero-length ones are skipped). The caller checked
  // the range lies in user space (access_ok) and bounds the total.
  void Add(uintptr_t addr, size_t len) {
    if (len == 0) return;
    segs_.push_back({addr, len});
    size_ += len;
  }

  size_t size() const override { return size_; }
  platform::MemoryFile& memory_file() override { return mm_.memory_file(); }
  KResult<size_t> Walk(
      size_t n,
      absl::FunctionRef<size_t(uint64_t, size_t, size_t)> fn) override;
  // One segment, a read's destination, mapped writable in the address space
  // (MemoryManager::MappedWritable), and a guest side free to copy
  // (platform::CurrentGuestCopier).
  platform::GuestCopier* StartGuestCopy(int fd, uint64_t file_offset, size_t at,
                                        size_t n) override;

 private:
  struct Segment {
    uintptr_t addr;
    size_t len;
  };
  MemoryManager& mm_;
  const bool guest_written_;
  absl::InlinedVector<Segment, 1> segs_;
  size_t size_ = 0;
};

// Copies the NUL-terminated guest string at `addr` into `buf` (room for
// `max_len` bytes, the NUL included: at most max_len-1 characters) and
// returns its length without the NUL. MemoryManager::CopyInString's rules
// (EFAULT if a byte before the NUL cannot be read, ENAMETOOLONG if none of
// the first max_len bytes is a NUL; nothing past the 256-byte piece
// holding the NUL is read or faulted in) in one walk of the guest's pages
// (one pass of the MemoryManager's locks, not one per piece) and without
// a std::string: the path argument of stat/open (getname).
// The bytes of buf past the returned length are unspecified.
KResult<size_t> CopyInCString(MemoryManager& mm, uintptr_t addr, char* buf,
                              size_t max_len);

}  // namespace sandbox::mm

#endif  // SENTRY_MM_GUEST_IO_H_
