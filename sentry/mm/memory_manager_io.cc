// MemoryManager: what is backed (pmas), faults, and guest memory access.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <vector>

#include "platform/long_work.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/stats.h"

namespace sandbox::mm {
namespace {

constexpr int kProtRWX = PROT_READ | PROT_WRITE | PROT_EXEC;

uintptr_t AlignDown(uintptr_t x, uintptr_t align) { return x & ~(align - 1); }

// The window a fault of a file mapping translates (power of two): Linux
// reads ahead 128 KiB and maps up to 64 KiB of cached pages around a fault
// (fault_around_bytes); here the pages are read from the host (Gofer files)
// in the same call and mapped populated, so a larger window trades
// unneeded pages (read with pread/pwrite, about a microsecond each) for
// fewer guest faults, each two round trips to the stub (the fault, the map).
// Anonymous memory uses kFaultWindow (its pages cost nothing until touched).
constexpr uintptr_t kFileFaultWindow = 1 << 20;

// x + align rounded down to align, saturating at the top of the space.
uintptr_t AlignUpPast(uintptr_t x, uintptr_t align) {
  uintptr_t r = AlignDown(x, align) + align;
  return r < x ? UINTPTR_MAX & ~(align - 1) : r;
}

// Linux x86 access_error(): a write needs VM_WRITE, an instruction fetch
// VM_EXEC (NX), a read any of VM_READ|VM_WRITE|VM_EXEC.
bool AccessAllowed(int prot, bool read, bool write, bool exec) {
  if (write && !(prot & PROT_WRITE)) return false;
  if (exec && !(prot & PROT_EXEC)) return false;
  if (read && !(prot & kProtRWX)) return false;
  return (prot & kProtRWX) != 0;
}

}  // namespace

// ---- pmas. ----

MemoryManager::PmaMap::iterator MemoryManager::FindPmaLocked(uintptr_t addr) {
  auto it = pmas_.upper_bound(addr);
  if (it == pmas_.begin()) return pmas_.end();
  --it;
  return addr < it->second.end ? it : pmas_.end();
}

void MemoryManager::SplitPmaLocked(uintptr_t addr) {
  auto it = FindPmaLocked(addr);
  if (it == pmas_.end() || it->first == addr) return;
  Pma upper = it->second;
  upper.file_offset += addr - it->first;
  it->second.end = addr;
  pmas_.emplace(addr, upper);
}

void MemoryManager::DropPmasLocked(uintptr_t start, uintptr_t end,
                                   bool owned_too) {
  SplitPmaLocked(start);
  SplitPmaLocked(end);
  // Unmap before Free: the stub must never see a page that another address
  // space may get next. One Unmap per run of adjacent pmas.
  std::vector<std::pair<uint64_t, uint64_t>> to_free;
  uintptr_t run_start = 0, run_end = 0;
  auto flush = [&] {
    if (run_end > run_start) {
      Count(Stats().host_unmaps);
      (void)as_->Unmap(run_start, run_end - run_start);
    }
    run_start = run_end = 0;
  };
  auto it = pmas_.lower_bound(start);
  while (it != pmas_.end() && it->first < end) {
    const uint64_t len = it->second.end - it->first;
    if (it->second.owned && !owned_too) {
      ++it;
      continue;
    }
    if (it->first != run_end) flush();
    if (run_end == 0) run_start = it->first;
    run_end = it->second.end;
    if (it->second.owned) {
      to_free.emplace_back(it->second.file_offset, len);
      owned_bytes_ -= len;
    }
    it = pmas_.erase(it);
  }
  flush();
  for (const auto& [off, len] : to_free) refs_->DecRef(off, len);
}

KResult<void> MemoryManager::MapPmaLocked(uintptr_t start, const Pma& pma,
                                          const Vma& vma) {
  const uint64_t len = pma.end - start;
  const int prot = EffectiveProt(vma, pma);
  if (prot == PROT_NONE) {
    Count(Stats().host_unmaps);
  } else {
    Count(Stats().host_maps);
    Count(Stats().host_map_pages, len / kPageSize);
  }
  absl::Status s = prot == PROT_NONE
                       ? as_->Unmap(start, len)
                       : as_->MapFile(start, pma.file_offset, len, prot);
  if (!s.ok()) return kENOMEM;
  return OkResult();
}

void MemoryManager::RemapPmasLocked(uintptr_t start, uintptr_t end,
                                    const Vma& vma) {
  for (auto it = pmas_.lower_bound(start); it != pmas_.end() && it->first < end;
       ++it) {
    (void)MapPmaLocked(it->first, it->second, vma);
  }
}

KResult<MemoryManager::PmaMap::iterator> MemoryManager::EnsurePmaLocked(
    uintptr_t vma_start, const Vma& vma, uintptr_t addr, bool write,
    uintptr_t bound_lo, uintptr_t bound_hi) {
  auto pit = FindPmaLocked(addr);
  if (pit != pmas_.end()) {
    if (write && NeedsCow(vma, pit->second)) {
      return BreakCowLocked(vma_start, vma, pit, addr);
    }
    if (!write || (pit->second.max_prot & PROT_WRITE)) return pit;
    // A shared page its Mappable gave out read-only: translate it again
    // for writing, so the Mappable knows it is dirty.
    const uintptr_t page = PageRoundDown(addr);
    DropPmasLocked(page, page + kPageSize, /*owned_too=*/false);
  }
  // The run to back: a window around addr, within the VMA, not reaching
  // into pages already backed.
  const bool file_backed = vma.mappable != nullptr && !vma.anon_shared;
  const uintptr_t window = vma.grows_down ? kStackFaultWindow
                           : file_backed  ? kFileFaultWindow
                                          : kFaultWindow;
  uintptr_t lo = std::max({AlignDown(addr, window), vma_start, bound_lo});
  uintptr_t hi = std::min({AlignUpPast(addr, window), vma.end, bound_hi});
  auto next = pmas_.upper_bound(addr);
  if (next != pmas_.end()) hi = std::min(hi, next->first);
  if (next != pmas_.begin()) lo = std::max(lo, std::prev(next)->second.end);
  const uintptr_t page = PageRoundDown(addr);

  if (vma.mappable) {
    const uint64_t moff = vma.offset - vma_start;  // + address = offset
    platform::AccessType at;
    at.read = true;
    at.write = write && vma.shared;
    Count(Stats().translates);
    auto ts =
        vma.mappable->Translate(page + moff, kPageSize, lo + moff, hi - lo, at);
    if (!ts.ok()) return ts.error() == kENOMEM ? kENOMEM : kEIO;
    for (const Translation& t : *ts) {
      // Trust, but clip: never let a Mappable place pages outside [lo, hi).
      if (!IsPageAligned(t.offset) || !IsPageAligned(t.length) ||
          !IsPageAligned(t.file_offset) || t.length == 0) {
        return kEIO;
      }
      uintptr_t s = t.offset - moff;
      uintptr_t e = s + t.length;
      uint64_t foff = t.file_offset;
      if (t.offset < lo + moff) {
        if (t.offset + t.length <= lo + moff) continue;
        foff += lo + moff - t.offset;
        s = lo;
      }
      e = std::min(e, hi);
      if (s >= e) continue;
      Pma pma;
      pma.end = e;
      pma.file_offset = foff;
      pma.owned = false;
      pma.max_prot = t.max_prot & kProtRWX;
      auto [it, inserted] = pmas_.emplace(s, pma);
      if (!inserted) continue;
      const int prot = EffectiveProt(vma, pma);
      if (file_backed && prot != PROT_NONE) {
        // A file's pages exist (Translate filled them): install them all
        // now rather than take a host fault per page at the guest's first
        // touch. Shared anonymous memory is left out: its untouched pages
        // are holes, which populating would allocate.
        Count(Stats().host_maps);
        Count(Stats().host_map_pages, (e - s) / kPageSize);
        if (!as_->MapFilePopulate(s, foff, e - s, prot).ok()) return kENOMEM;
      } else {
        TRY_VOID(MapPmaLocked(s, pma, vma));
      }
    }
    pit = FindPmaLocked(addr);
    if (pit == pmas_.end()) return kEIO;
    if (write && NeedsCow(vma, pit->second)) {
      return BreakCowLocked(vma_start, vma, pit, addr);
    }
    if (write && !(pit->second.max_prot & PROT_WRITE)) return kEIO;
    return pit;
  }

  uintptr_t len = hi - lo;
  auto off = mf_.Allocate(len);
  if (!off.ok()) {
    lo = page;
    len = kPageSize;
    off = mf_.Allocate(len);
    if (!off.ok()) return kENOMEM;
  }
  Pma pma;
  pma.end = lo + len;
  pma.file_offset = *off;
  pma.owned = true;
  owned_bytes_ += len;
  auto [it, inserted] = pmas_.emplace(lo, pma);
  (void)inserted;
  if (!MapPmaLocked(lo, pma, vma).ok()) {
    pmas_.erase(it);
    mf_.Free(*off, len);
    owned_bytes_ -= len;
    return kENOMEM;
  }
  // Merge with neighbours in the same VMA that continue the same run of the
  // MemoryFile: fewer pmas, fewer (and larger) platform map/unmap calls.
  auto mergeable = [&](const PmaMap::iterator& a, const PmaMap::iterator& b) {
    return a->second.end == b->first && a->second.owned && b->second.owned &&
           a->second.max_prot == b->second.max_prot &&
           a->second.cow == b->second.cow &&
           a->second.file_offset + (a->second.end - a->first) ==
               b->second.file_offset;
  };
  if (it != pmas_.begin() && lo > vma_start) {
    auto prev = std::prev(it);
    if (mergeable(prev, it)) {
      prev->second.end = it->second.end;
      pmas_.erase(it);
      it = prev;
    }
  }
  auto next_it = std::next(it);
  if (next_it != pmas_.end() && it->second.end < vma.end &&
      mergeable(it, next_it)) {
    it->second.end = next_it->second.end;
    pmas_.erase(next_it);
  }
  return it;
}

KResult<MemoryManager::PmaMap::iterator> MemoryManager::BreakCowLocked(
    uintptr_t vma_start, const Vma& vma, PmaMap::iterator pit, uintptr_t addr) {
  (void)vma_start;
  if (pit->second.owned) {
    // Shared with another mm since fork. If the others are gone, the pages
    // are ours alone: just make them writable.
    if (!refs_->Shared(pit->second.file_offset, pit->second.end - pit->first)) {
      pit->second.cow = false;
      (void)MapPmaLocked(pit->first, pit->second, vma);
      return pit;
    }
  }
  // Copy a run around addr, within the pma.
  const uintptr_t lo = std::max(AlignDown(addr, kStackFaultWindow), pit->first);
  const uintptr_t hi =
      std::min(AlignUpPast(addr, kStackFaultWindow), pit->second.end);
  SplitPmaLocked(lo);
  SplitPmaLocked(hi);
  pit = pmas_.find(lo);
  const uint64_t len = hi - lo;
  Count(Stats().cow_copies);
  auto off = mf_.Allocate(len);
  if (!off.ok()) return kENOMEM;
  std::vector<uint8_t> buf(std::min<uint64_t>(len, 64 << 10));
  for (uint64_t done = 0; done < len; done += buf.size()) {
    size_t k = std::min<uint64_t>(buf.size(), len - done);
    if (!mf_.Read(pit->second.file_offset + done, buf.data(), k) ||
        !mf_.Write(*off + done, buf.data(), k)) {
      mf_.Free(*off, len);
      return kEIO;
    }
  }
  const uint64_t old_offset = pit->second.file_offset;
  const bool old_owned = pit->second.owned;
  if (!old_owned) owned_bytes_ += len;
  pit->second.file_offset = *off;
  pit->second.owned = true;
  pit->second.cow = false;
  pit->second.max_prot = kProtRWX;
  // Invariant: the stub maps only pages this mm holds a reference to. So
  // the old pages' reference goes only once the stub maps the copy: until
  // then this process's other threads still read them through the old
  // read-only mapping, and an unreferenced page may meanwhile be taken back
  // writable by the other mm of the fork (BreakCowLocked's "not shared"
  // path) or freed and handed to anyone, whose writes those threads would
  // see. If the map fails, the run is unmapped instead (systrap has by then
  // killed the stub anyway: nothing runs there to see the old pages).
  if (!MapPmaLocked(lo, pit->second, vma).ok()) {
    Count(Stats().host_unmaps);
    (void)as_->Unmap(lo, len);
  }
  if (old_owned) refs_->DecRef(old_offset, len);
  return pit;
}

// ---- Faults. ----

KResult<void> MemoryManager::HandleFault(uintptr_t addr,
                                         platform::AccessType access) {
  if (addr < layout_.min_addr || addr >= layout_.max_addr) return kEFAULT;
  const bool read = !access.write && !access.execute;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt == 1) {
      // No VMA: maybe a grows-down VMA just above can extend to addr.
      absl::MutexLock ml(&mapping_mu_);
      if (FindVmaLocked(addr) == vmas_.end() && !GrowDownLocked(addr)) {
        return kEFAULT;
      }
    }
    absl::ReaderMutexLock ml(&mapping_mu_);
    auto vit = FindVmaLocked(addr);
    if (vit == vmas_.end()) continue;
    const Vma& vma = vit->second;
    if (!AccessAllowed(vma.prot, read, access.write, access.execute)) {
      return kEFAULT;
    }
    absl::MutexLock al(&active_mu_);
    Count(Stats().faults);
    const uint64_t before = owned_bytes_;
    const bool existed = FindPmaLocked(addr) != pmas_.end();
    TRY(auto pit, EnsurePmaLocked(vit->first, vma, addr, access.write));
    if (owned_bytes_ > before) {
      Count(Stats().fault_pages, (owned_bytes_ - before) / kPageSize);
    }
    if (existed) {
      // A spurious fault (another thread mapped it first) or a lost host
      // mapping: map it again, which is idempotent.
      TRY_VOID(MapPmaLocked(pit->first, pit->second, vma));
    }
    return OkResult();
  }
  return kEFAULT;
}

bool MemoryManager::FaultIsAccessError(uintptr_t addr) {
  absl::ReaderMutexLock ml(&mapping_mu_);
  return FindVmaLocked(addr) != vmas_.end();
}

KResult<void> MemoryManager::Populate(uintptr_t addr, size_t length) {
  const uintptr_t start = PageRoundDown(addr);
  if (length > UINT64_MAX - kPageSize || addr + length < addr) return kENOMEM;
  const uintptr_t end = PageRoundUp(addr + length);
  absl::ReaderMutexLock ml(&mapping_mu_);
  uintptr_t cur = start;
  while (cur < end) {
    // Best effort, as Linux's populate: it stops (the mapping stays, faults
    // back the rest) when the task is interrupted (a kill: at once, not
    // after a 1 TiB populate) or guest memory runs short.
    if (platform::LongWorkInterrupted() || !mf_.CouldFit(kFaultWindow)) {
      break;
    }
    auto vit = FindVmaLocked(cur);
    if (vit == vmas_.end()) {
      auto next = vmas_.upper_bound(cur);
      if (next == vmas_.end() || next->first >= end) break;
      cur = next->first;
      continue;
    }
    const Vma& vma = vit->second;
    if ((vma.prot & kProtRWX) == 0) {
      cur = vma.end;
      continue;
    }
    absl::MutexLock al(&active_mu_);
    TRY(auto pit, EnsurePmaLocked(vit->first, vma, cur,
                                  (vma.prot & PROT_WRITE) != 0, start, end));
    cur = pit->second.end;
  }
  return OkResult();
}

// ---- Copies. ----

MemoryManager::WalkResult MemoryManager::WalkLoop(
    uintptr_t addr, size_t n, bool write, bool force,
    absl::FunctionRef<size_t(uint64_t, size_t, size_t)> fn) {
  WalkResult r;
  if (n == 0) return r;
  absl::ReaderMutexLock ml(&mapping_mu_);
  while (r.done < n) {
    const uintptr_t cur = addr + r.done;
    if (cur < addr || cur >= layout_.max_addr) break;
    auto vit = FindVmaLocked(cur);
    if (vit == vmas_.end()) break;
    const Vma& vma = vit->second;
    if (!force && !AccessAllowed(vma.prot, !write, write, false)) break;
    size_t k = 0;
    size_t got = 0;
    {
      absl::ReaderMutexLock al(&active_mu_);
      auto pit = FindPmaLocked(cur);
      if (pit != pmas_.end() && !(write && WriteNeedsWork(vma, pit->second))) {
        k = std::min<uint64_t>(n - r.done, pit->second.end - cur);
        got = fn(pit->second.file_offset + (cur - pit->first), r.done, k);
      }
    }
    if (k == 0) {
      absl::MutexLock al(&active_mu_);
      auto pit = EnsurePmaLocked(vit->first, vma, cur, write);
      if (!pit.ok()) break;
      k = std::min<uint64_t>(n - r.done, (*pit)->second.end - cur);
      got = fn((*pit)->second.file_offset + (cur - (*pit)->first), r.done, k);
    }
    r.done += std::min(got, k);
    if (got < k) {
      r.stopped = true;
      break;
    }
  }
  return r;
}

KResult<size_t> MemoryManager::CopyLoop(
    uintptr_t addr, size_t n, bool write, bool force,
    absl::FunctionRef<bool(uint64_t, size_t, size_t)> fn) {
  if (n == 0) return size_t{0};
  WalkResult r = WalkLoop(addr, n, write, force,
                          [&](uint64_t off, size_t at, size_t k) -> size_t {
                            return fn(off, at, k) ? k : 0;
                          });
  if (r.done == 0) return kEFAULT;
  return r.done;
}

KResult<size_t> MemoryManager::WalkGuest(
    uintptr_t addr, size_t n, bool write,
    absl::FunctionRef<size_t(uint64_t, size_t, size_t)> fn) {
  if (n == 0) return size_t{0};
  WalkResult r = WalkLoop(addr, n, write, /*force=*/false, fn);
  if (r.done == 0 && !r.stopped) return kEFAULT;
  return r.done;
}

bool MemoryManager::MappedWritable(uintptr_t addr, size_t n) {
  const uintptr_t end = addr + n;
  if (n == 0 || end < addr || end > layout_.max_addr) return false;
  absl::ReaderMutexLock ml(&mapping_mu_);
  absl::ReaderMutexLock al(&active_mu_);
  for (uintptr_t cur = addr; cur < end;) {
    auto vit = FindVmaLocked(cur);
    if (vit == vmas_.end()) return false;
    const Vma& vma = vit->second;
    if (!AccessAllowed(vma.prot, false, true, false)) return false;
    auto pit = FindPmaLocked(cur);
    if (pit == pmas_.end() || WriteNeedsWork(vma, pit->second)) return false;
    cur = std::min(vma.end, pit->second.end);
  }
  return true;
}

KResult<size_t> MemoryManager::CopyIn(uintptr_t addr, void* dst, size_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  return CopyLoop(addr, n, /*write=*/false, /*force=*/false,
                  [&](uint64_t off, size_t at, size_t k) {
                    return mf_.Read(off, out + at, k);
                  });
}

KResult<size_t> MemoryManager::CopyOut(uintptr_t addr, const void* src,
                                       size_t n) {
  const auto* in = static_cast<const uint8_t*>(src);
  return CopyLoop(addr, n, /*write=*/true, /*force=*/false,
                  [&](uint64_t off, size_t at, size_t k) {
                    return mf_.Write(off, in + at, k);
                  });
}

KResult<size_t> MemoryManager::ZeroOut(uintptr_t addr, size_t n) {
  return CopyLoop(
      addr, n, /*write=*/true, /*force=*/false,
      [&](uint64_t off, size_t, size_t k) { return mf_.Zero(off, k); });
}

KResult<size_t> MemoryManager::ForceCopyIn(uintptr_t addr, void* dst,
                                           size_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  return CopyLoop(addr, n, /*write=*/false, /*force=*/true,
                  [&](uint64_t off, size_t at, size_t k) {
                    return mf_.Read(off, out + at, k);
                  });
}

KResult<size_t> MemoryManager::ForceCopyOut(uintptr_t addr, const void* src,
                                            size_t n) {
  const auto* in = static_cast<const uint8_t*>(src);
  return CopyLoop(addr, n, /*write=*/true, /*force=*/true,
                  [&](uint64_t off, size_t at, size_t k) {
                    return mf_.Write(off, in + at, k);
                  });
}

KResult<std::string> MemoryManager::CopyInString(uintptr_t addr,
                                                 size_t max_len) {
  std::string out;
  char buf[256];
  while (out.size() < max_len) {
    const uintptr_t cur = addr + out.size();
    if (cur < addr) return kEFAULT;
    // Never read past the page the NUL may be on.
    size_t k = std::min<size_t>({sizeof(buf), max_len - out.size(),
                                 kPageSize - (cur & (kPageSize - 1))});
    auto r = CopyIn(cur, buf, k);
    if (!r.ok()) return kEFAULT;
    const void* nul = std::memchr(buf, 0, *r);
    if (nul != nullptr) {
      out.append(buf, static_cast<const char*>(nul) - buf);
      return out;
    }
    out.append(buf, *r);
    if (*r < k) return kEFAULT;
  }
  return kENAMETOOLONG;
}

KResult<void> MemoryManager::WithInternalMapping(
    uintptr_t addr, size_t len, platform::AccessType access,
    absl::FunctionRef<void(uint8_t*)> fn) {
  if (len == 0 || len > kPageSize || addr + len < addr ||
      PageRoundDown(addr) != PageRoundDown(addr + len - 1)) {
    return kEFAULT;
  }
  absl::ReaderMutexLock ml(&mapping_mu_);
  auto vit = FindVmaLocked(addr);
  if (vit == vmas_.end()) return kEFAULT;
  const Vma& vma = vit->second;
  if (!AccessAllowed(vma.prot, !access.write, access.write, false)) {
    return kEFAULT;
  }
  absl::MutexLock al(&active_mu_);
  auto pit = EnsurePmaLocked(vit->first, vma, addr, access.write);
  if (!pit.ok()) return kEFAULT;
  uint8_t* p =
      mf_.Internal((*pit)->second.file_offset + (addr - (*pit)->first), len);
  if (p == nullptr) return kEFAULT;
  fn(p);
  return OkResult();
}

KResult<MemoryManager::SharedObject> MemoryManager::FutexObjectAt(
    uintptr_t addr, bool write) {
  absl::ReaderMutexLock ml(&mapping_mu_);
  auto vit = FindVmaLocked(addr);
  if (vit == vmas_.end()) return kEFAULT;
  const Vma& vma = vit->second;
  // get_user_pages: FOLL_WRITE first, then (unless `write`) a read; an
  // exec-only or PROT_NONE VMA allows neither.
  const int need = write ? PROT_WRITE : PROT_READ | PROT_WRITE;
  if (!(vma.prot & need)) return kEFAULT;
  {
    absl::MutexLock al(&active_mu_);
    if (!EnsurePmaLocked(vit->first, vma, addr, write).ok()) {
      return kEFAULT;
    }
  }
  if (!vma.shared || vma.mappable == nullptr) return SharedObject{};
  return SharedObject{vma.mappable, vma.offset + (addr - vit->first)};
}

// ---- Introspection, invalidation. ----

uint64_t MemoryManager::BackedBytes() {
  absl::MutexLock al(&active_mu_);
  return owned_bytes_;
}

size_t MemoryManager::PmaCount() {
  absl::MutexLock al(&active_mu_);
  return pmas_.size();
}

void MemoryManager::Invalidate(uintptr_t addr, uint64_t length) {
  if (length == 0) return;
  const uintptr_t start = PageRoundDown(addr);
  const uintptr_t end =
      addr + length < addr ? layout_.max_addr : PageRoundUp(addr + length);
  absl::MutexLock al(&active_mu_);
  DropPmasLocked(start, end, /*owned_too=*/false);
}

void MemoryManager::InvalidateEvenPrivate(uintptr_t addr, uint64_t length) {
  if (length == 0) return;
  const uintptr_t start = PageRoundDown(addr);
  const uintptr_t end =
      addr + length < addr ? layout_.max_addr : PageRoundUp(addr + length);
  // Only VMAs that map a Mappable hear of it (MappingSet), so private
  // anonymous memory is never dropped here.
  absl::MutexLock al(&active_mu_);
  DropPmasLocked(start, end, /*owned_too=*/true);
}

}  // namespace sandbox::mm
