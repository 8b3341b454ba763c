// MemoryManager: msync(2) and mincore(2).
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "sentry/mm/memory_manager.h"

namespace sandbox::mm {

KResult<void> MemoryManager::Msync(uintptr_t addr, size_t length, int flags) {
  if (flags & ~(MS_ASYNC | MS_INVALIDATE | MS_SYNC)) return kEINVAL;
  if (!IsPageAligned(addr)) return kEINVAL;
  if ((flags & MS_ASYNC) && (flags & MS_SYNC)) return kEINVAL;
  // Linux rounds with wrap-around: a length within a page of 2^64 becomes 0
  // and the call succeeds; a range that wraps is ENOMEM.
  const size_t len = (length + kPageSize - 1) & ~(kPageSize - 1);
  uintptr_t start = addr;
  const uintptr_t end = start + len;
  if (end < start) return kENOMEM;
  if (end == start) return OkResult();

  absl::ReaderMutexLock ml(&mapping_mu_);
  bool unmapped = false;
  // find_vma(): the first VMA that ends above start.
  auto it = vmas_.upper_bound(start);
  if (it != vmas_.begin() && std::prev(it)->second.end > start) --it;
  for (;;) {
    if (it == vmas_.end()) return kENOMEM;
    if (start < it->first) {
      // A hole: MS_ASYNC alone has nothing to do, so it stops here.
      if (flags == MS_ASYNC) return kENOMEM;
      start = it->first;
      if (start >= end) return kENOMEM;
      unmapped = true;
    }
    if ((flags & MS_INVALIDATE) && it->second.locked) return kEBUSY;
    // MS_SYNC of a shared file mapping is vfs_fsync_range(): the pages are
    // the file's own (tmpfs, memfd, shared anonymous memory), so nothing
    // is written back.
    start = it->second.end;
    if (start >= end) break;
    ++it;
  }
  if (unmapped) return kENOMEM;
  return OkResult();
}

KResult<size_t> MemoryManager::Mincore(uintptr_t addr, size_t max_pages,
                                       uint8_t* vec) {
  absl::ReaderMutexLock ml(&mapping_mu_);
  auto vit = FindVmaLocked(addr);
  if (vit == vmas_.end()) return kENOMEM;
  const Vma& vma = vit->second;
  const uintptr_t start = PageRoundDown(addr);
  const uint64_t room = (vma.end - start) / kPageSize;
  const size_t pages = static_cast<size_t>(std::min<uint64_t>(room, max_pages));
  std::memset(vec, 0, pages);
  if (vma.mappable) {
    // Pages of the file (or shared memory) that it holds, mapped here or
    // not, as Linux's mincore_page() looks in the page cache. Private
    // copies are found below.
    vma.mappable->Residency(vma.offset + (start - vit->first), pages, vec);
  }
  absl::ReaderMutexLock al(&active_mu_);
  const uintptr_t end = start + pages * kPageSize;
  auto pit = pmas_.upper_bound(start);
  if (pit != pmas_.begin() && std::prev(pit)->second.end > start) --pit;
  for (; pit != pmas_.end() && pit->first < end; ++pit) {
    const uintptr_t s = std::max(pit->first, start);
    const uintptr_t e = std::min(pit->second.end, end);
    for (uintptr_t p = s; p < e; p += kPageSize) {
      vec[(p - start) / kPageSize] = 1;
    }
  }
  return pages;
}

}  // namespace sandbox::mm
