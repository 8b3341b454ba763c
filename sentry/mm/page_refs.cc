#include "sentry/mm/page_refs.h"

#include <iterator>
#include <utility>
#include <vector>

namespace sandbox::mm {

void PageRefs::SplitLocked(uint64_t at) {
  auto it = ranges_.upper_bound(at);
  if (it == ranges_.begin()) return;
  --it;
  if (it->first < at && at < it->second.end) {
    Range upper = it->second;
    it->second.end = at;
    ranges_.emplace(at, upper);
  }
}

void PageRefs::IncRef(uint64_t off, uint64_t len) {
  if (len == 0) return;
  const uint64_t end = off + len;
  absl::MutexLock l(&mu_);
  SplitLocked(off);
  SplitLocked(end);
  uint64_t cur = off;
  auto it = ranges_.lower_bound(off);
  while (cur < end) {
    if (it == ranges_.end() || it->first > cur) {
      const uint64_t gap_end =
          it == ranges_.end() ? end : std::min(end, it->first);
      it = ranges_.emplace_hint(it, cur, Range{gap_end, 1});
    } else {
      ++it->second.extra;
    }
    cur = it->second.end;
    ++it;
  }
}

void PageRefs::DecRef(uint64_t off, uint64_t len) {
  if (len == 0) return;
  const uint64_t end = off + len;
  std::vector<std::pair<uint64_t, uint64_t>> to_free;
  {
    absl::MutexLock l(&mu_);
    SplitLocked(off);
    SplitLocked(end);
    uint64_t cur = off;
    auto it = ranges_.lower_bound(off);
    while (cur < end) {
      if (it == ranges_.end() || it->first > cur) {
        const uint64_t gap_end =
            it == ranges_.end() ? end : std::min(end, it->first);
        to_free.emplace_back(cur, gap_end - cur);
        cur = gap_end;
        continue;
      }
      cur = it->second.end;
      if (--it->second.extra == 0) {
        it = ranges_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& [o, l] : to_free) mf_.Free(o, l);
}

bool PageRefs::Shared(uint64_t off, uint64_t len) {
  absl::MutexLock l(&mu_);
  auto it = ranges_.upper_bound(off);
  if (it != ranges_.begin() && std::prev(it)->second.end > off) return true;
  return it != ranges_.end() && it->first < off + len;
}

size_t PageRefs::RangeCount() {
  absl::MutexLock l(&mu_);
  return ranges_.size();
}

}  // namespace sandbox::mm
