// MemoryManager: madvise(2) and mremap(2).
#include <sys/mman.h>

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

#include "sentry/mm/memory_manager.h"

#ifndef MADV_SOFT_OFFLINE
#define MADV_SOFT_OFFLINE 101
#endif
#ifndef MADV_FREE
#define MADV_FREE 8
#endif
#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#define MADV_KEEPONFORK 19
#endif
#ifndef MADV_COLD
#define MADV_COLD 20
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

namespace sandbox::mm {

KResult<void> MemoryManager::Madvise(uintptr_t addr, size_t length,
                                     int advice) {
  enum class Kind { kHint, kDrop, kFree, kRemove, kPopulate, kForkFlag };
  Kind kind;
  switch (advice) {
    case MADV_DONTFORK:
    case MADV_DOFORK:
    case MADV_WIPEONFORK:
    case MADV_KEEPONFORK:
      kind = Kind::kForkFlag;
      break;
    case MADV_NORMAL:
    case MADV_RANDOM:
    case MADV_SEQUENTIAL:
    case MADV_WILLNEED:
    case MADV_MERGEABLE:
    case MADV_UNMERGEABLE:
    case MADV_HUGEPAGE:
    case MADV_NOHUGEPAGE:
    case MADV_DONTDUMP:
    case MADV_DODUMP:
    case MADV_COLD:
    case MADV_PAGEOUT:
    case MADV_COLLAPSE:
      kind = Kind::kHint;
      break;
    case MADV_DONTNEED:
    case MADV_DONTNEED_LOCKED:
      kind = Kind::kDrop;
      break;
    case MADV_FREE:
      kind = Kind::kFree;
      break;
    case MADV_REMOVE:
      kind = Kind::kRemove;
      break;
    case MADV_POPULATE_READ:
    case MADV_POPULATE_WRITE:
      kind = Kind::kPopulate;
      break;
    case MADV_HWPOISON:
    case MADV_SOFT_OFFLINE:
      return kEPERM;
    default:
      return kEINVAL;
  }
  if (!IsPageAligned(addr)) return kEINVAL;
  if (length > UINT64_MAX - kPageSize + 1) return kEINVAL;
  const uintptr_t end = addr + PageRoundUp(length);
  if (end < addr) return kEINVAL;
  if (end == addr) return OkResult();

  if (kind == Kind::kForkFlag) {
    absl::MutexLock ml(&mapping_mu_);
    bool hole = false;
    std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
    uintptr_t cur = addr;
    auto it = vmas_.upper_bound(addr);
    if (it != vmas_.begin() && std::prev(it)->second.end > addr) --it;
    for (; it != vmas_.end() && it->first < end; ++it) {
      if (it->first > cur) hole = true;
      // Linux: MADV_WIPEONFORK only for private anonymous memory.
      if (advice == MADV_WIPEONFORK &&
          (it->second.shared || it->second.mappable)) {
        return kEINVAL;
      }
      ranges.emplace_back(std::max(it->first, addr),
                          std::min(it->second.end, end));
      cur = it->second.end;
    }
    if (cur < end) hole = true;
    for (const auto& [s, e] : ranges) {
      SplitVmaLocked(s);
      SplitVmaLocked(e);
      Vma& vma = vmas_.find(s)->second;
      switch (advice) {
        case MADV_DONTFORK:
          vma.dont_fork = true;
          break;
        case MADV_DOFORK:
          vma.dont_fork = false;
          break;
        case MADV_WIPEONFORK:
          vma.wipe_on_fork = true;
          break;
        case MADV_KEEPONFORK:
          vma.wipe_on_fork = false;
          break;
      }
      MergeAroundLocked(s);
    }
    if (hole) return kENOMEM;
    return OkResult();
  }

  bool hole = false;
  {
    absl::ReaderMutexLock ml(&mapping_mu_);
    uintptr_t cur = addr;
    auto it = vmas_.upper_bound(addr);
    if (it != vmas_.begin() && std::prev(it)->second.end > addr) --it;
    for (; it != vmas_.end() && it->first < end; ++it) {
      const Vma& vma = it->second;
      if (it->first > cur) hole = true;
      const uintptr_t s = std::max(it->first, addr);
      const uintptr_t e = std::min(vma.end, end);
      cur = e;
      switch (kind) {
        case Kind::kHint:
        case Kind::kForkFlag:
          break;
        case Kind::kPopulate:
          if (vma.prot == PROT_NONE) return kENOMEM;
          break;
        case Kind::kFree:
          if (vma.shared || vma.mappable) return kEINVAL;
          [[fallthrough]];
        case Kind::kDrop:
          // Shared memory keeps its contents (they belong to the shared
          // object); only private pages are dropped.
          if (!vma.shared) {
            absl::MutexLock al(&active_mu_);
            DropPmasLocked(s, e);
          }
          break;
        case Kind::kRemove:
          // madvise_remove(): locked or fileless (private anonymous)
          // mappings are EINVAL; the mapping must be shared and may-write
          // (VM_SHARED|VM_MAYWRITE: PROT_WRITE itself is not needed).
          if (vma.locked || !vma.mappable) return kEINVAL;
          if (!vma.shared || !(vma.max_prot & PROT_WRITE)) return kEACCES;
          // Frees the pages for every mapping of the object (takes the
          // Mappable's locks, then the active_mu_ of each mm, ours
          // included).
          TRY_VOID(
              vma.mappable->PunchHole(vma.offset + (s - it->first), e - s));
          break;
      }
    }
    if (cur < end) hole = true;
  }
  if (kind == Kind::kPopulate) TRY_VOID(Populate(addr, end - addr));
  if (hole) return kENOMEM;
  return OkResult();
}

void MemoryManager::MoveLocked(uintptr_t old_addr, size_t old_len,
                               uintptr_t new_addr, size_t new_len,
                               bool keep_old) {
  SplitVmaLocked(old_addr);
  SplitVmaLocked(old_addr + old_len);
  auto vit = vmas_.find(old_addr);
  Vma nv = vit->second;
  nv.end = new_addr + new_len;
  {
    absl::MutexLock al(&active_mu_);
    std::vector<std::pair<uintptr_t, Pma>> moved;
    auto it = pmas_.lower_bound(old_addr);
    while (it != pmas_.end() && it->first < old_addr + old_len) {
      moved.emplace_back(it->first, it->second);
      it = pmas_.erase(it);
    }
    if (!moved.empty()) (void)as_->Unmap(old_addr, old_len);
    for (auto& [start, pma] : moved) {
      // A shrinking move leaves pages beyond new_len behind: free them.
      const uintptr_t ns = new_addr + (start - old_addr);
      if (ns >= new_addr + new_len) {
        if (pma.owned) {
          refs_->DecRef(pma.file_offset, pma.end - start);
          owned_bytes_ -= pma.end - start;
        }
        continue;
      }
      Pma np = pma;
      np.end = ns + (pma.end - start);
      if (np.end > new_addr + new_len) {
        const uint64_t cut = np.end - (new_addr + new_len);
        if (pma.owned) {
          refs_->DecRef(pma.file_offset + (np.end - ns) - cut, cut);
          owned_bytes_ -= cut;
        }
        np.end -= cut;
      }
      pmas_.emplace(ns, np);
      (void)MapPmaLocked(ns, np, nv);
    }
  }
  if (nv.mappable) {
    nv.mappable->AddMapping(this, new_addr, nv.offset, new_len,
                            nv.shared && (nv.max_prot & PROT_WRITE));
  }
  if (keep_old) {
    // The old range stays mapped, now without pages (anonymous memory reads
    // as zeros, file pages are re-read).
  } else {
    UnmapLocked(old_addr, old_addr + old_len);
  }
  // Duplicating (old size 0) split the old VMA at old_addr for nothing.
  if (old_len == 0) MergeAroundLocked(old_addr);
  InsertVmaLocked(new_addr, std::move(nv));
}

// vma_to_resize(): the file offset of the resized mapping's end must not
// wrap (Linux checks the page offset; mmap's EOVERFLOW check keeps offsets
// within INT64_MAX, so this is defence in depth for the byte offsets here).
static bool OffsetOverflows(uintptr_t vma_start, const auto& vma,
                            uintptr_t addr, size_t new_len) {
  if (!vma.mappable) return false;
  const uint64_t off = vma.offset + (addr - vma_start);
  return off + new_len < off;
}

KResult<uintptr_t> MemoryManager::Mremap(uintptr_t old_addr, size_t old_size,
                                         size_t new_size, int flags,
                                         uintptr_t new_addr) {
  if (flags & ~(MREMAP_FIXED | MREMAP_MAYMOVE | MREMAP_DONTUNMAP)) {
    return kEINVAL;
  }
  const bool may_move = flags & MREMAP_MAYMOVE;
  const bool fixed = flags & MREMAP_FIXED;
  const bool dontunmap = flags & MREMAP_DONTUNMAP;
  if (fixed && !may_move) return kEINVAL;
  if (dontunmap && (!may_move || old_size != new_size)) return kEINVAL;
  if (!IsPageAligned(old_addr)) return kEINVAL;
  if (old_size > UINT64_MAX - kPageSize + 1 ||
      new_size > UINT64_MAX - kPageSize + 1) {
    return kEINVAL;
  }
  size_t old_len = PageRoundUp(old_size);
  const size_t new_len = PageRoundUp(new_size);
  if (new_len == 0) return kEINVAL;
  const uintptr_t max = layout_.max_addr;

  absl::MutexLock ml(&mapping_mu_);
  if (fixed || dontunmap) {
    if (fixed) {
      if (!IsPageAligned(new_addr)) return kEINVAL;
      if (new_len > max || new_addr > max - new_len) return kEINVAL;
      if (old_addr + old_len > new_addr && new_addr + new_len > old_addr) {
        return kEINVAL;
      }
      if (new_addr < layout_.min_addr) return kEPERM;
    }
    auto vit = FindVmaLocked(old_addr);
    if (vit == vmas_.end() || old_len > vit->second.end - old_addr) {
      return kEFAULT;
    }
    // Old size 0 duplicates a shared mapping (VM_MAYSHARE); a private one
    // would be unrelated new memory, which Linux refuses.
    if (old_len == 0 && !vit->second.shared) return kEINVAL;
    if (OffsetOverflows(vit->first, vit->second, old_addr, new_len)) {
      return kEINVAL;
    }
    if (fixed) {
      UnmapLocked(new_addr, new_addr + new_len);
      if (old_len > new_len) {
        UnmapLocked(old_addr + new_len, old_addr + old_len);
        old_len = new_len;
      }
    } else {
      TRY(new_addr, FindUnmappedLocked(0, new_len, false));
    }
    if (VmaCountAfterLocked(new_addr, new_addr + new_len, true) + 2 >
        kMaxMapCount) {
      return kENOMEM;
    }
    if (!MayExpandLocked(dontunmap
                             ? new_len
                             : (new_len > old_len ? new_len - old_len : 0))) {
      return kENOMEM;
    }
    MoveLocked(old_addr, old_len, new_addr, new_len, dontunmap);
    return new_addr;
  }

  auto vit = FindVmaLocked(old_addr);
  if (vit == vmas_.end() || old_len > vit->second.end - old_addr) {
    return kEFAULT;
  }
  if (old_len == 0 && !vit->second.shared) return kEINVAL;
  if (new_len > old_len &&
      OffsetOverflows(vit->first, vit->second, old_addr, new_len)) {
    return kEINVAL;
  }
  if (new_len <= old_len) {
    if (new_len < old_len) UnmapLocked(old_addr + new_len, old_addr + old_len);
    return old_addr;
  }
  // Grow in place if the range ends its VMA and the space above is free.
  const uintptr_t old_end = old_addr + old_len;
  const uint64_t grow = new_len - old_len;
  if (vit->second.end == old_end && old_end <= max - grow &&
      RangeFreeLocked(old_end, old_end + grow)) {
    auto next = vmas_.lower_bound(old_end);
    const bool gap_ok =
        next == vmas_.end() ||
        old_end + grow <= (next->second.grows_down
                               ? next->first - std::min<uintptr_t>(
                                                   next->first, kStackGuardGap)
                               : next->first);
    if (gap_ok) {
      Vma& vma = vit->second;
      // vma_to_resize(): the check comes before anything changes.
      if (!MayExpandLocked(grow)) return kENOMEM;
      if (vma.mappable) {
        // Cannot be refused: the mapping exists already (a shared writable
        // one keeps F_SEAL_WRITE off its file).
        vma.mappable->AddMapping(this, old_end,
                                 vma.offset + (old_end - vit->first), grow,
                                 vma.shared && (vma.max_prot & PROT_WRITE));
      }
      vma.end = old_end + grow;
      mapped_bytes_ += grow;
      MergeAroundLocked(vit->first);
      return old_addr;
    }
  }
  if (!may_move) return kENOMEM;
  if (!MayExpandLocked(new_len - old_len)) return kENOMEM;
  TRY(uintptr_t dest, FindUnmappedLocked(0, new_len, false));
  MoveLocked(old_addr, old_len, dest, new_len, /*keep_old=*/false);
  return dest;
}

}  // namespace sandbox::mm
