// MemoryManager: creation, VMA bookkeeping and the mapping syscalls
// (mmap, munmap, mprotect, brk). Faults and copies: memory_manager_io.cc.
#include "sentry/mm/memory_manager.h"

#include <sys/mman.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_format.h"
#include "sentry/mm/anon_shared.h"

namespace sandbox::mm {
namespace {

constexpr int kProtRWX = PROT_READ | PROT_WRITE | PROT_EXEC;

#ifndef PROT_SEM
#define PROT_SEM 0x8
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif
#ifndef MAP_UNINITIALIZED
#define MAP_UNINITIALIZED 0x4000000
#endif

// Linux's LEGACY_MAP_MASK: flags that MAP_SHARED silently accepts.
constexpr int kLegacyMapMask =
    MAP_SHARED | MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_DENYWRITE |
    MAP_EXECUTABLE | MAP_UNINITIALIZED | MAP_GROWSDOWN | MAP_LOCKED |
    MAP_NORESERVE | MAP_POPULATE | MAP_NONBLOCK | MAP_STACK | MAP_HUGETLB;

// MAP_32BIT on x86-64: [1 GiB, 2 GiB).
constexpr uintptr_t k32BitLow = 0x40000000;
constexpr uintptr_t k32BitHigh = 0x80000000;

}  // namespace

KResult<std::unique_ptr<MemoryManager>> MemoryManager::Create(
    platform::Platform& platform, const LayoutOptions& opts) {
  auto as = platform.NewAddressSpace();
  if (!as.ok()) return kENOMEM;
  Layout layout =
      PickLayout(platform.MinUserAddress(), platform.MaxUserAddress(), opts);
  return CreateWith(std::move(*as), platform.memory_file(), layout);
}

std::unique_ptr<MemoryManager> MemoryManager::CreateWith(
    std::unique_ptr<platform::AddressSpace> as, platform::MemoryFile& mf,
    const Layout& layout) {
  return std::unique_ptr<MemoryManager>(new MemoryManager(
      std::move(as), mf, layout, std::make_shared<PageRefs>(mf)));
}

MemoryManager::MemoryManager(std::unique_ptr<platform::AddressSpace> as,
                             platform::MemoryFile& mf, const Layout& layout,
                             std::shared_ptr<PageRefs> refs)
    : as_(std::move(as)), mf_(mf), layout_(layout), refs_(std::move(refs)) {}

MemoryManager::~MemoryManager() {
  VmaMap vmas;
  {
    absl::MutexLock ml(&mapping_mu_);
    absl::MutexLock al(&active_mu_);
    for (auto& [start, pma] : pmas_) {
      if (pma.owned) refs_->DecRef(pma.file_offset, pma.end - start);
    }
    pmas_.clear();
    owned_bytes_ = 0;
    vmas.swap(vmas_);
  }
  for (auto& [start, vma] : vmas) {
    if (vma.mappable) {
      vma.mappable->RemoveMapping(this, start, vma.offset, vma.end - start,
                                  vma.shared && (vma.max_prot & PROT_WRITE));
    }
  }
}

// ---- VMA helpers. ----

MemoryManager::VmaMap::iterator MemoryManager::FindVmaLocked(uintptr_t addr) {
  auto it = vmas_.upper_bound(addr);
  if (it == vmas_.begin()) return vmas_.end();
  --it;
  return addr < it->second.end ? it : vmas_.end();
}

void MemoryManager::SplitVmaLocked(uintptr_t addr) {
  auto it = FindVmaLocked(addr);
  if (it != vmas_.end() && it->first < addr) {
    Vma upper = it->second;
    upper.offset += addr - it->first;
    it->second.end = addr;
    vmas_.emplace(addr, std::move(upper));
  }
  absl::MutexLock al(&active_mu_);
  SplitPmaLocked(addr);
}

bool MemoryManager::RangeFreeLocked(uintptr_t start, uintptr_t end) {
  auto it = vmas_.lower_bound(start);
  if (it != vmas_.end() && it->first < end) return false;
  if (it != vmas_.begin() && std::prev(it)->second.end > start) return false;
  return true;
}

size_t MemoryManager::VmaCountAfterLocked(uintptr_t start, uintptr_t end,
                                          bool insert) {
  size_t count = vmas_.size() + (insert ? 1 : 0);
  auto first = FindVmaLocked(start);
  if (first == vmas_.end()) first = vmas_.lower_bound(start);
  for (auto it = first; it != vmas_.end() && it->first < end; ++it) {
    bool keeps_lower = it->first < start;
    bool keeps_upper = it->second.end > end;
    if (keeps_lower && keeps_upper) {
      ++count;
    } else if (!keeps_lower && !keeps_upper) {
      --count;
    }
  }
  return count;
}

// The lowest address a new mapping below `it` may end at: Linux's
// vm_start_gap() keeps stack_guard_gap free below grows-down VMAs.
static uintptr_t StartGap(uintptr_t start, bool grows_down) {
  if (!grows_down) return start;
  return start > kStackGuardGap ? start - kStackGuardGap : 0;
}

KResult<uintptr_t> MemoryManager::FindGapTopDownLocked(uintptr_t low,
                                                       uintptr_t high,
                                                       size_t length) {
  if (high <= low || high - low < length) return kENOMEM;
  // The first VMA at or above `high` bounds the topmost gap; a VMA that
  // straddles `high` is handled as the first "below" VMA.
  auto it = vmas_.lower_bound(high);
  uintptr_t gap_end = high;
  if (it != vmas_.end()) {
    gap_end = std::min(high, StartGap(it->first, it->second.grows_down));
  }
  for (;;) {
    uintptr_t gap_start = low;
    if (it != vmas_.begin())
      gap_start = std::max(low, std::prev(it)->second.end);
    if (gap_end > gap_start && gap_end - gap_start >= length) {
      return gap_end - length;
    }
    if (it == vmas_.begin()) break;
    --it;
    gap_end = std::min(high, StartGap(it->first, it->second.grows_down));
    if (gap_end <= low) break;
  }
  return kENOMEM;
}

KResult<uintptr_t> MemoryManager::FindGapBottomUpLocked(uintptr_t low,
                                                        uintptr_t high,
                                                        size_t length) {
  if (high <= low || high - low < length) return kENOMEM;
  uintptr_t gap_start = low;
  auto it = vmas_.upper_bound(low);
  if (it != vmas_.begin()) {
    gap_start = std::max(low, std::prev(it)->second.end);
  }
  for (; gap_start < high; ++it) {
    uintptr_t gap_end = high;
    if (it != vmas_.end()) {
      gap_end = std::min(high, StartGap(it->first, it->second.grows_down));
    }
    if (gap_end > gap_start && gap_end - gap_start >= length) return gap_start;
    if (it == vmas_.end()) break;
    gap_start = std::max(gap_start, it->second.end);
  }
  return kENOMEM;
}

KResult<uintptr_t> MemoryManager::FindUnmappedLocked(uintptr_t hint,
                                                     size_t length,
                                                     bool fixed) {
  const uintptr_t max = layout_.max_addr;
  if (length > max) return kENOMEM;
  if (fixed) {
    if (hint > max - length) return kENOMEM;
    if (!IsPageAligned(hint)) return kEINVAL;
    if (hint < layout_.min_addr) return kEPERM;  // cap_mmap_addr
    return hint;
  }
  if (length > max - layout_.min_addr) return kENOMEM;
  if (hint != 0) {
    // round_hint_to_min() then the hint check of
    // arch_get_unmapped_area_topdown().
    hint = PageRoundDown(hint);
    if (hint < layout_.min_addr) hint = layout_.min_addr;
    if (hint <= max - length) {
      auto next = vmas_.lower_bound(hint);
      bool prev_ok =
          next == vmas_.begin() || std::prev(next)->second.end <= hint;
      bool next_ok =
          next == vmas_.end() ||
          hint + length <= StartGap(next->first, next->second.grows_down);
      if (prev_ok && next_ok) return hint;
    }
  }
  auto r = FindGapTopDownLocked(layout_.min_addr, layout_.mmap_base, length);
  if (r.ok()) return r;
  // Linux falls back to a bottom-up search of the whole space.
  return FindGapBottomUpLocked(layout_.legacy_mmap_base, max, length);
}

void MemoryManager::UnmapLocked(uintptr_t start, uintptr_t end) {
  SplitVmaLocked(start);
  SplitVmaLocked(end);
  std::vector<std::pair<uintptr_t, Vma>> removed;
  {
    absl::MutexLock al(&active_mu_);
    DropPmasLocked(start, end);
    auto it = vmas_.lower_bound(start);
    while (it != vmas_.end() && it->first < end) {
      if (it->second.mappable) removed.emplace_back(it->first, it->second);
      mapped_bytes_ -= it->second.end - it->first;
      it = vmas_.erase(it);
    }
  }
  // Mappable locks come before active_mu_ (see the lock order).
  for (auto& [s, vma] : removed) {
    vma.mappable->RemoveMapping(this, s, vma.offset, vma.end - s,
                                vma.shared && (vma.max_prot & PROT_WRITE));
  }
}

static bool Mergeable(uintptr_t a_start, const auto& a, uintptr_t b_start,
                      const auto& b) {
  if (a.end != b_start) return false;
  if (a.prot != b.prot || a.max_prot != b.max_prot || a.shared != b.shared ||
      a.grows_down != b.grows_down || a.name != b.name ||
      a.mappable != b.mappable || a.anon_shared != b.anon_shared ||
      a.dont_fork != b.dont_fork || a.wipe_on_fork != b.wipe_on_fork ||
      a.locked != b.locked || a.dev != b.dev || a.ino != b.ino) {
    return false;
  }
  // An anonymous copy of a file (MmapOpts::ino) shows its file offset.
  if (a.ino != 0 && a.offset + (a.end - a_start) != b.offset) return false;
  // Shared anonymous memory is one object per mmap: never merge it.
  if (a.shared && !a.mappable) return false;
  if (a.mappable && a.offset + (a.end - a_start) != b.offset) return false;
  return true;
}

void MemoryManager::MergeAroundLocked(uintptr_t addr) {
  auto it = vmas_.find(addr);
  if (it == vmas_.end()) return;
  if (it != vmas_.begin()) {
    auto prev = std::prev(it);
    if (Mergeable(prev->first, prev->second, it->first, it->second)) {
      prev->second.end = it->second.end;
      vmas_.erase(it);
      it = prev;
    }
  }
  auto next = std::next(it);
  if (next != vmas_.end() &&
      Mergeable(it->first, it->second, next->first, next->second)) {
    it->second.end = next->second.end;
    vmas_.erase(next);
  }
}

void MemoryManager::InsertVmaLocked(uintptr_t start, Vma vma) {
  mapped_bytes_ += vma.end - start;
  vmas_.emplace(start, std::move(vma));
  MergeAroundLocked(start);
}

bool MemoryManager::GrowDownLocked(uintptr_t addr) {
  const uintptr_t page = PageRoundDown(addr);
  if (page < layout_.min_addr) return false;
  auto next = vmas_.upper_bound(addr);
  if (next == vmas_.end() || !next->second.grows_down) return false;
  if (next->second.end - page > layout_.max_stack_size) return false;
  if (!MayExpandLocked(next->first - page)) return false;
  if (next != vmas_.begin()) {
    const auto& prev = std::prev(next)->second;
    // expand_downwards(): keep the guard gap to an accessible VMA below.
    if (!prev.grows_down && prev.prot != PROT_NONE &&
        page - prev.end < kStackGuardGap) {
      return false;
    }
  }
  uint64_t delta = next->first - page;
  if (next->second.mappable && next->second.offset < delta) return false;
  auto node = vmas_.extract(next);
  node.key() = page;
  mapped_bytes_ += delta;
  if (node.mapped().mappable) node.mapped().offset -= delta;
  vmas_.insert(std::move(node));
  return true;
}

// ---- Syscalls. ----

// do_mmap()'s checks of the file, after the address is chosen. Returns the
// mapping's max prot (VM_MAY* bits).
KResult<int> MemoryManager::CheckFileMapping(const MmapOpts& o, size_t length,
                                             bool shared, int max_prot) {
  const MmapOpts::FileAccess& f = *o.file;
  const int prot = o.prot & kProtRWX;
  // file_mmap_ok(): regular files reach MAX_LFS_FILESIZE (INT64_MAX).
  constexpr uint64_t kMaxFileSize = INT64_MAX;
  if (length > kMaxFileSize || o.offset > kMaxFileSize - length) {
    return kEOVERFLOW;
  }
  if (shared) {
    // MAP_SHARED silently drops unknown flags; MAP_SHARED_VALIDATE refuses
    // them (no file here supports MAP_SYNC).
    const int checked =
        (o.flags & MAP_TYPE) == MAP_SHARED ? o.flags & kLegacyMapMask : o.flags;
    if (checked & ~(kLegacyMapMask | MAP_SHARED_VALIDATE)) return kEOPNOTSUPP;
    if ((prot & PROT_WRITE) && !f.writable) return kEACCES;
    if (!f.writable) max_prot &= ~PROT_WRITE;
  }
  if (!f.readable) return kEACCES;
  if (f.noexec) {
    if (prot & PROT_EXEC) return kEPERM;
    max_prot &= ~PROT_EXEC;
  }
  if (o.mappable == nullptr) return kENODEV;
  if (o.flags & MAP_GROWSDOWN) return kEINVAL;
  if (prot & ~max_prot) return kEACCES;
  return max_prot;
}

KResult<uintptr_t> MemoryManager::Mmap(const MmapOpts& o) {
  if (!IsPageAligned(o.offset)) return kEINVAL;
  if (o.length == 0) return kEINVAL;
  int flags = o.flags;
  if (flags & MAP_FIXED_NOREPLACE) flags |= MAP_FIXED;
  const bool fixed = flags & MAP_FIXED;
  if (o.length > UINT64_MAX - kPageSize + 1) return kENOMEM;
  const size_t length = PageRoundUp(o.length);
  if (o.mappable && o.offset + length < o.offset) return kEOVERFLOW;
  // No huge page pool: hugetlb_file_setup() fails. (A file that is not on
  // hugetlbfs with MAP_HUGETLB is EINVAL, decided by the syscall layer.)
  if (!o.file && (flags & MAP_HUGETLB)) return kENOMEM;

  const bool anonymous = !o.file && o.mappable == nullptr;
  bool shared = false;
  switch (flags & MAP_TYPE) {
    case MAP_PRIVATE:
      break;
    case MAP_SHARED:
      if (anonymous && (flags & MAP_GROWSDOWN)) return kEINVAL;
      shared = true;
      break;
    case MAP_SHARED_VALIDATE:
      if (anonymous) return kEINVAL;
      // Files: EOPNOTSUPP after placement (below), as do_mmap orders it.
      if (!o.file && (flags & ~(kLegacyMapMask | MAP_SHARED_VALIDATE))) {
        return kEOPNOTSUPP;
      }
      shared = true;
      break;
    default:
      return kEINVAL;
  }

  const int prot = o.prot & kProtRWX;
  int max_prot = o.max_prot & kProtRWX;
  if (!o.file && (prot & ~max_prot)) return kEACCES;

  uintptr_t addr;
  {
    absl::MutexLock ml(&mapping_mu_);
    if (vmas_.size() > kMaxMapCount) return kENOMEM;
    if ((flags & MAP_32BIT) && !fixed) {
      uintptr_t hint_end = o.addr + length;
      if (o.addr >= k32BitLow && hint_end > o.addr && hint_end <= k32BitHigh &&
          RangeFreeLocked(PageRoundDown(o.addr),
                          PageRoundDown(o.addr) + length) &&
          IsPageAligned(o.addr)) {
        addr = o.addr;
      } else {
        TRY(addr, FindGapBottomUpLocked(k32BitLow, k32BitHigh, length));
      }
    } else {
      TRY(addr, FindUnmappedLocked(o.addr, length, fixed));
    }
    const uintptr_t end = addr + length;
    if ((o.flags & MAP_FIXED_NOREPLACE) && !RangeFreeLocked(addr, end)) {
      return kEEXIST;
    }
    if (o.file) {
      TRY(max_prot, CheckFileMapping(o, length, shared, max_prot));
    }
    if (VmaCountAfterLocked(addr, end, true) > kMaxMapCount) return kENOMEM;
    if (!MayExpandLocked(length - (fixed ? MappedInLocked(addr, end) : 0))) {
      return kENOMEM;
    }
    if (o.mappable) {
      // The Mappable's own rules (memfd seals) come last, as its ->mmap
      // does, and before an old mapping in the range is replaced.
      TRY(max_prot, o.mappable->CheckNewMapping(shared, prot, max_prot));
      max_prot &= kProtRWX;
      if (prot & ~max_prot) return kEPERM;  // a Mappable's narrowing
    }
    if (fixed) UnmapLocked(addr, end);

    Vma vma;
    vma.end = end;
    vma.prot = prot;
    vma.max_prot = max_prot;
    vma.shared = shared;
    vma.grows_down = (flags & MAP_GROWSDOWN) != 0;
    vma.mappable = o.mappable;
    vma.offset = anonymous && o.ino == 0 ? 0 : o.offset;
    if (anonymous && shared) {
      // Like Linux's shmem file behind MAP_SHARED|MAP_ANONYMOUS.
      vma.mappable = std::make_shared<AnonSharedMappable>(mf_, length);
      vma.anon_shared = true;
    }
    vma.name = o.name;
    vma.dev = o.dev;
    vma.ino = o.ino;
    vma.locked = (flags & MAP_LOCKED) != 0;
    if (vma.anon_shared) {
      vma.mappable->AddMapping(this, addr, vma.offset, length,
                               max_prot & PROT_WRITE);
    } else if (vma.mappable) {
      // Refused only if F_SEAL_WRITE raced in since CheckNewMapping; a
      // MAP_FIXED range stays unmapped then, as Linux before 6.12 leaves it
      // when ->mmap fails.
      TRY_VOID(vma.mappable->AddNewMapping(this, addr, vma.offset, length,
                                           shared && (max_prot & PROT_WRITE)));
    }
    InsertVmaLocked(addr, std::move(vma));
  }
  if (flags & (MAP_POPULATE | MAP_LOCKED)) {
    // Like mm_populate(): errors are not reported to the caller.
    (void)Populate(addr, length);
  }
  return addr;
}

KResult<void> MemoryManager::Munmap(uintptr_t addr, size_t length) {
  const uintptr_t max = layout_.max_addr;
  if (!IsPageAligned(addr) || addr > max || length > max - addr) {
    return kEINVAL;
  }
  const size_t len = PageRoundUp(length);
  if (len == 0) return kEINVAL;
  const uintptr_t end = addr + len;
  absl::MutexLock ml(&mapping_mu_);
  auto it = FindVmaLocked(addr);
  if (it != vmas_.end() && it->first < addr && end < it->second.end &&
      vmas_.size() >= kMaxMapCount) {
    return kENOMEM;
  }
  UnmapLocked(addr, end);
  return OkResult();
}

KResult<void> MemoryManager::Mprotect(uintptr_t addr, size_t length, int prot) {
  if (!IsPageAligned(addr)) return kEINVAL;
  if (length == 0) return OkResult();
  if (length > UINT64_MAX - kPageSize + 1) return kENOMEM;
  const size_t len = PageRoundUp(length);
  uintptr_t start = addr;
  const uintptr_t end = addr + len;
  if (end <= start) return kENOMEM;
  const int grows = prot & (PROT_GROWSDOWN | PROT_GROWSUP);
  prot &= ~grows;
  if (grows == (PROT_GROWSDOWN | PROT_GROWSUP)) return kEINVAL;
  // arch_validate_prot() on x86: R/W/X and PROT_SEM only.
  if (prot & ~(kProtRWX | PROT_SEM)) return kEINVAL;
  prot &= kProtRWX;

  absl::MutexLock ml(&mapping_mu_);
  auto it = vmas_.upper_bound(start);
  if (it != vmas_.begin() && std::prev(it)->second.end > start) --it;
  if (it == vmas_.end()) return kENOMEM;
  if (grows & PROT_GROWSDOWN) {
    if (it->first >= end) return kENOMEM;
    if (!it->second.grows_down) return kEINVAL;
    start = it->first;
  } else {
    if (it->first > start) return kENOMEM;
    if (grows & PROT_GROWSUP) return kEINVAL;  // no grows-up VMAs on x86
  }

  uintptr_t nstart = start;
  for (;;) {
    it = FindVmaLocked(nstart);
    if (it == vmas_.end()) return kENOMEM;  // a hole
    if (prot & ~it->second.max_prot) return kEACCES;
    const uintptr_t tmp = std::min(it->second.end, end);
    if (it->second.prot != prot) {
      size_t splits =
          (it->first < nstart ? 1 : 0) + (tmp < it->second.end ? 1 : 0);
      if (splits > 0 && vmas_.size() + splits > kMaxMapCount) return kENOMEM;
      SplitVmaLocked(nstart);
      SplitVmaLocked(tmp);
      auto cur = vmas_.find(nstart);
      cur->second.prot = prot;
      {
        absl::MutexLock al(&active_mu_);
        RemapPmasLocked(nstart, tmp, cur->second);
      }
      MergeAroundLocked(nstart);
    }
    nstart = tmp;
    if (nstart >= end) break;
  }
  return OkResult();
}

uintptr_t MemoryManager::Brk(uintptr_t brk) {
  absl::MutexLock ml(&mapping_mu_);
  const uintptr_t orig = brk_;
  if (brk_start_ == 0 || brk < brk_start_) return orig;
  if (brk > layout_.max_addr) return orig;
  const uintptr_t newbrk = PageRoundUp(brk);
  const uintptr_t oldbrk = PageRoundUp(brk_);
  if (newbrk == oldbrk) {
    brk_ = brk;
    return brk;
  }
  if (brk <= brk_) {
    // Always allow shrinking.
    brk_ = brk;
    UnmapLocked(newbrk, oldbrk);
    return brk;
  }
  // The new break must stay a page (plus a stack guard gap) below whatever
  // is mapped above the old one.
  const uint64_t probe_end =
      std::min<uint64_t>(layout_.max_addr, newbrk + kPageSize + kStackGuardGap);
  auto it = vmas_.upper_bound(oldbrk);
  if (it != vmas_.begin() && std::prev(it)->second.end > oldbrk) --it;
  for (; it != vmas_.end() && it->first < probe_end; ++it) {
    if (newbrk + kPageSize > StartGap(it->first, it->second.grows_down)) {
      return orig;
    }
  }
  if (newbrk + kPageSize > layout_.max_addr) return orig;
  // check_data_rlimit() and may_expand_vm().
  if (brk - brk_start_ > data_limit_) return orig;
  if (!MayExpandLocked(newbrk - oldbrk)) return orig;
  if (vmas_.size() >= kMaxMapCount) return orig;
  Vma vma;
  vma.end = newbrk;
  vma.prot = PROT_READ | PROT_WRITE;
  vma.max_prot = kProtRWX;
  InsertVmaLocked(oldbrk, std::move(vma));
  brk_ = brk;
  return brk;
}

void MemoryManager::SetBrkStart(uintptr_t start) {
  absl::MutexLock ml(&mapping_mu_);
  brk_start_ = brk_ = start;
}

uintptr_t MemoryManager::brk_start() {
  absl::MutexLock ml(&mapping_mu_);
  return brk_start_;
}

void MemoryManager::SetProcessImage(ProcessImage image) {
  absl::MutexLock ml(&mapping_mu_);
  image_ = std::move(image);
}

MemoryManager::ProcessImage MemoryManager::process_image() {
  absl::ReaderMutexLock ml(&mapping_mu_);
  return image_;
}

std::vector<VmaInfo> MemoryManager::Vmas() {
  absl::ReaderMutexLock ml(&mapping_mu_);
  std::vector<VmaInfo> out;
  out.reserve(vmas_.size());
  const uintptr_t heap_end = PageRoundUp(brk_);
  for (const auto& [start, vma] : vmas_) {
    VmaInfo info;
    info.start = start;
    info.end = vma.end;
    info.prot = vma.prot;
    info.max_prot = vma.max_prot;
    info.shared = vma.shared;
    info.grows_down = vma.grows_down;
    info.anonymous = vma.mappable == nullptr || vma.anon_shared;
    info.dont_fork = vma.dont_fork;
    info.wipe_on_fork = vma.wipe_on_fork;
    info.locked = vma.locked;
    info.offset = vma.offset;
    info.name = vma.name;
    info.dev = vma.dev;
    info.ino = vma.ino;
    if (info.name.empty() && info.anonymous && !vma.shared &&
        start < heap_end && vma.end > brk_start_) {
      info.name = "[heap]";
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::string MemoryManager::MapsText() {
  std::string out;
  for (const VmaInfo& v : Vmas()) {
    std::string line = absl::StrFormat(
        "%08x-%08x %c%c%c%c %08x 00:00 0 ", v.start, v.end,
        (v.prot & PROT_READ) ? 'r' : '-', (v.prot & PROT_WRITE) ? 'w' : '-',
        (v.prot & PROT_EXEC) ? 'x' : '-', v.shared ? 's' : 'p', v.offset);
    if (!v.name.empty()) {
      // show_map_vma(): seq_pad() to width 72, a space, the name.
      if (line.size() < 72) line.append(72 - line.size(), ' ');
      line += ' ';
      line += v.name;
    }
    out += line;
    out += '\n';
  }
  return out;
}

uint64_t MemoryManager::MappedInLocked(uintptr_t start, uintptr_t end) {
  uint64_t n = 0;
  auto it = vmas_.upper_bound(start);
  if (it != vmas_.begin()) --it;
  for (; it != vmas_.end() && it->first < end; ++it) {
    const uintptr_t s = std::max(it->first, start);
    const uintptr_t e = std::min(it->second.end, end);
    if (s < e) n += e - s;
  }
  return n;
}

void MemoryManager::SetAddressSpaceLimit(uint64_t bytes) {
  absl::MutexLock ml(&mapping_mu_);
  as_limit_ = bytes;
}

void MemoryManager::SetDataLimit(uint64_t bytes) {
  absl::MutexLock ml(&mapping_mu_);
  data_limit_ = bytes;
}

uint64_t MemoryManager::MappedBytes() {
  absl::ReaderMutexLock ml(&mapping_mu_);
  return mapped_bytes_;
}

size_t MemoryManager::VmaCount() {
  absl::ReaderMutexLock ml(&mapping_mu_);
  return vmas_.size();
}

}  // namespace sandbox::mm
