#include "sentry/mm/anon_shared.h"

#include <sys/mman.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "sentry/abi/linux.h"

namespace sandbox::mm {

AnonSharedMappable::AnonSharedMappable(platform::MemoryFile& mf, uint64_t size)
    : mf_(mf), size_(size) {}

AnonSharedMappable::~AnonSharedMappable() {
  absl::MutexLock l(&translate_mu_);
  for (const auto& [off, run] : runs_) mf_.Free(run.file_offset, run.end - off);
}

void AnonSharedMappable::AddMapping(MappingSpace* space, uintptr_t addr,
                                    uint64_t offset, uint64_t length, bool) {
  absl::MutexLock l(&mu_);
  mappings_.Add(space, addr, offset, length);
}

void AnonSharedMappable::RemoveMapping(MappingSpace* space, uintptr_t addr,
                                       uint64_t offset, uint64_t length, bool) {
  absl::MutexLock l(&mu_);
  mappings_.Remove(space, addr, length);
  (void)offset;
}

KResult<std::vector<Translation>> AnonSharedMappable::Translate(
    uint64_t required_offset, uint64_t required_length,
    uint64_t optional_offset, uint64_t optional_length, platform::AccessType) {
  if (required_offset >= size_ || required_length > size_ - required_offset) {
    return kEFAULT;
  }
  uint64_t lo = optional_offset;
  uint64_t hi = std::min(optional_offset + optional_length, size_);
  absl::MutexLock l(&translate_mu_);
  // Shrink the optional range to the required one's surroundings that do
  // not need new allocations split across existing runs.
  std::vector<Translation> out;
  uint64_t cur = lo;
  auto it = runs_.upper_bound(cur);
  if (it != runs_.begin() && std::prev(it)->second.end > cur) --it;
  while (cur < hi) {
    if (it != runs_.end() && it->first <= cur) {
      const uint64_t e = std::min(it->second.end, hi);
      out.push_back({cur, e - cur, it->second.file_offset + (cur - it->first),
                     PROT_READ | PROT_WRITE | PROT_EXEC});
      cur = e;
      ++it;
      continue;
    }
    const uint64_t gap_end = it == runs_.end() ? hi : std::min(hi, it->first);
    auto off = mf_.Allocate(gap_end - cur);
    if (!off.ok()) {
      // Out of room for the whole gap: settle for what was required.
      if (cur >= required_offset + required_length) break;
      off = mf_.Allocate(std::min(gap_end, required_offset + required_length) -
                         cur);
      if (!off.ok()) return kENOMEM;
      const uint64_t e = std::min(gap_end, required_offset + required_length);
      it = runs_.emplace_hint(it, cur, Run{e, *off});
      out.push_back({cur, e - cur, *off, PROT_READ | PROT_WRITE | PROT_EXEC});
      cur = e;
      ++it;
      continue;
    }
    it = runs_.emplace_hint(it, cur, Run{gap_end, *off});
    out.push_back(
        {cur, gap_end - cur, *off, PROT_READ | PROT_WRITE | PROT_EXEC});
    cur = gap_end;
    ++it;
  }
  // Only what starts at or before the required range and is contiguous
  // counts; drop a prefix that ends before it is fine (callers clip).
  return out;
}

void AnonSharedMappable::Punch(uint64_t offset, uint64_t length) {
  absl::MutexLock l(&mu_);
  const uint64_t end = offset + length;
  // Invariant: a page is freed only when no address space can map it any
  // more. Translate runs under translate_mu_ alone (not mu_), so a fault in
  // any mm could hand out a run between an Invalidate and its removal here
  // and keep it mapped after the Free. Hence: first take the runs out (a
  // later Translate allocates new pages), then make every mapping drop the
  // range (old pages and any it got meanwhile), then free.
  std::vector<std::pair<uint64_t, uint64_t>> to_free;  // file offset, length
  {
    absl::MutexLock t(&translate_mu_);
    auto it = runs_.upper_bound(offset);
    if (it != runs_.begin() && std::prev(it)->second.end > offset) --it;
    while (it != runs_.end() && it->first < end) {
      const uint64_t s = std::max(it->first, offset);
      const uint64_t e = std::min(it->second.end, end);
      Run run = it->second;
      const uint64_t start = it->first;
      it = runs_.erase(it);
      if (start < s) runs_.emplace(start, Run{s, run.file_offset});
      if (e < run.end) {
        it =
            runs_.emplace(e, Run{run.end, run.file_offset + (e - start)}).first;
        ++it;
      }
      to_free.emplace_back(run.file_offset + (s - start), e - s);
    }
  }
  mappings_.Invalidate(offset, end);
  for (const auto& [off, len] : to_free) mf_.Free(off, len);
}

void AnonSharedMappable::Residency(uint64_t offset, uint64_t pages,
                                   uint8_t* vec) {
  constexpr uint64_t kPage = abi::kPageSize;
  const uint64_t end = pages > (UINT64_MAX - offset) / kPage
                           ? UINT64_MAX
                           : offset + pages * kPage;
  absl::MutexLock l(&translate_mu_);
  auto it = runs_.upper_bound(offset);
  if (it != runs_.begin() && std::prev(it)->second.end > offset) --it;
  for (; it != runs_.end() && it->first < end; ++it) {
    const uint64_t s = std::max(it->first, offset);
    const uint64_t e = std::min(it->second.end, end);
    for (uint64_t p = s; p < e; p += kPage) vec[(p - offset) / kPage] = 1;
  }
}

uint64_t AnonSharedMappable::AllocatedBytes() {
  absl::MutexLock l(&translate_mu_);
  uint64_t n = 0;
  for (const auto& [off, run] : runs_) n += run.end - off;
  return n;
}

}  // namespace sandbox::mm
