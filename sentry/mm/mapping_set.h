// MappingSet: the reverse map a Mappable keeps of where its pages are mapped,
// so that it can invalidate them (truncate, hole punch) before freeing pages.
//
// Thread-safety: none; the owning Mappable guards it with its AddMapping lock
// (mappable.h).
#ifndef SENTRY_MM_MAPPING_SET_H_
#define SENTRY_MM_MAPPING_SET_H_

#include <stdint.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "sentry/mm/mappable.h"

namespace sandbox::mm {

class MappingSet {
 public:
  // Records that [addr, addr+length) of `space` maps the Mappable's
  // [offset, offset+length); `writable`: a shared mapping that may be
  // written (Linux's VM_SHARED|VM_MAYWRITE, counted in i_mmap_writable).
  void Add(MappingSpace* space, uintptr_t addr, uint64_t offset,
           uint64_t length, bool writable = false) {
    mappings_.push_back({space, addr, offset, length, writable});
  }

  // Forgets [addr, addr+length) of `space`, which may be part of a recorded
  // mapping (a partial munmap): the rest of that mapping is kept.
  void Remove(MappingSpace* space, uintptr_t addr, uint64_t length) {
    std::vector<Mapping> out;
    const uintptr_t end = addr + length;
    for (const Mapping& m : mappings_) {
      const uintptr_t m_end = m.addr + m.length;
      if (m.space != space || end <= m.addr || m_end <= addr) {
        out.push_back(m);
        continue;
      }
      if (m.addr < addr) {
        out.push_back({m.space, m.addr, m.offset, addr - m.addr, m.writable});
      }
      if (end < m_end) {
        out.push_back(
            {m.space, end, m.offset + (end - m.addr), m_end - end, m.writable});
      }
    }
    mappings_ = std::move(out);
  }

  // Invalidates, in every space, the addresses that map any of the
  // Mappable's [offset, end). `even_private`: private copies too
  // (truncation; see MappingSpace::InvalidateEvenPrivate).
  void Invalidate(uint64_t offset, uint64_t end,
                  bool even_private = false) const {
    for (const Mapping& m : mappings_) {
      const uint64_t s = std::max(offset, m.offset);
      const uint64_t e = std::min(end, m.offset + m.length);
      if (s >= e) continue;
      if (even_private) {
        m.space->InvalidateEvenPrivate(m.addr + (s - m.offset), e - s);
      } else {
        m.space->Invalidate(m.addr + (s - m.offset), e - s);
      }
    }
  }

  bool empty() const { return mappings_.empty(); }
  // Whether any shared writable mapping is recorded (F_SEAL_WRITE: EBUSY).
  bool AnyWritable() const {
    return std::any_of(mappings_.begin(), mappings_.end(),
                       [](const Mapping& m) { return m.writable; });
  }

 private:
  struct Mapping {
    MappingSpace* space;
    uintptr_t addr;
    uint64_t offset;
    uint64_t length;
    bool writable;
  };
  std::vector<Mapping> mappings_;
};

}  // namespace sandbox::mm

#endif  // SENTRY_MM_MAPPING_SET_H_
