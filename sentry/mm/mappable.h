// Mappable: an object whose pages can be mapped into guest address spaces
// (a file's page cache, a shared-memory segment, a shared anonymous region).
//
// The MemoryManager asks a Mappable to Translate a range of its offsets into
// ranges of the MemoryFile and maps those ranges into the platform
// AddressSpace. The Mappable owns those MemoryFile pages: the mm never Frees
// them. Private (MAP_PRIVATE) mappings are copied on write into pages the mm
// owns.
//
// The Mappable keeps a reverse map (AddMapping/RemoveMapping) so that it can
// tell each MappingSpace to drop translations it has invalidated (truncate,
// eviction, hole punch) with MappingSpace::Invalidate.
//
// Lock order (see memory_manager.h):
//   MemoryManager::mapping_mu_
//     locks taken by Mappable::AddMapping / RemoveMapping (and held while
//     calling MappingSpace::Invalidate)
//       MemoryManager::active_mu_
//         locks taken by Mappable::Translate
//           AddressSpace, MemoryFile
#ifndef SENTRY_MM_MAPPABLE_H_
#define SENTRY_MM_MAPPABLE_H_

#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "platform/platform.h"
#include "sentry/base/result.h"

namespace sandbox::mm {

// [offset, offset+length) of a Mappable is backed by
// [file_offset, file_offset+length) of the MemoryFile.
struct Translation {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t file_offset = 0;
  // The widest PROT_* these pages may be mapped with (a page-cache page that
  // must be written back through the Mappable may be PROT_READ only, so a
  // write faults and the Mappable hears of it).
  int max_prot = 0;
};

// Something that maps Mappables: implemented by MemoryManager.
class MappingSpace {
 public:
  virtual ~MappingSpace() = default;

  // The Mappable's pages that this space maps at [addr, addr+length) are no
  // longer valid: drop them (they are re-translated on the next access).
  // Called with the Mappable's AddMapping/RemoveMapping locks held; takes
  // MemoryManager::active_mu_ only.
  virtual void Invalidate(uintptr_t addr, uint64_t length) = 0;

  // Like Invalidate, and private copies of those pages (MAP_PRIVATE pages
  // already written) are dropped too: the file was truncated, so these
  // addresses now lie beyond its end and must SIGBUS, as Linux's
  // unmap_mapping_range(even_cows=1) makes them. Same locking as
  // Invalidate. Default: Invalidate.
  virtual void InvalidateEvenPrivate(uintptr_t addr, uint64_t length) {
    Invalidate(addr, length);
  }
};

class Mappable {
 public:
  virtual ~Mappable() = default;

  // `space` maps [offset, offset+length) of this Mappable at `addr`.
  // `writable` is true for shared mappings that may be written (for
  // write-back accounting). Called with MemoryManager::mapping_mu_ held.
  virtual void AddMapping(MappingSpace* space, uintptr_t addr, uint64_t offset,
                          uint64_t length, bool writable) = 0;
  // mmap(2) is about to make a new mapping of this Mappable (`shared`:
  // MAP_SHARED; `prot`: the requested PROT_*; `max_prot`: what the open
  // file allows). Returns the mapping's max prot, possibly narrowed, or an
  // error refusing the mapping. A memfd sealed against writes refuses a
  // shared mapping with PROT_WRITE (EPERM) and takes PROT_WRITE out of a
  // shared read-only one's max prot (mprotect then gives EACCES), like
  // Linux's memfd_check_seals_mmap. Called with MemoryManager::mapping_mu_
  // held, before any old mapping in the range is replaced. Default: no
  // restriction.
  virtual KResult<int> CheckNewMapping(bool shared, int prot, int max_prot) {
    (void)shared;
    (void)prot;
    return max_prot;
  }
  // AddMapping for a new mmap, which may still be refused atomically with
  // recording it: a shared writable mapping of a file on which F_SEAL_WRITE
  // was set since CheckNewMapping (EPERM). Default: AddMapping.
  virtual KResult<void> AddNewMapping(MappingSpace* space, uintptr_t addr,
                                      uint64_t offset, uint64_t length,
                                      bool writable) {
    AddMapping(space, addr, offset, length, writable);
    return OkResult();
  }
  // Undoes one AddMapping (of the same or a sub-range after splitting).
  virtual void RemoveMapping(MappingSpace* space, uintptr_t addr,
                             uint64_t offset, uint64_t length,
                             bool writable) = 0;

  // Returns translations, in increasing offset order and without gaps,
  // that cover at least [required_offset, required_offset+required_length)
  // and at most [optional_offset, optional_offset+optional_length) (a
  // superset of the required range, so the Mappable can populate in runs).
  // All values are page-aligned. Errors: EFAULT/SIGBUS-worthy (the offset is
  // beyond the end of the file) as kEFAULT, kENOMEM when out of memory, kEIO.
  virtual KResult<std::vector<Translation>> Translate(
      uint64_t required_offset, uint64_t required_length,
      uint64_t optional_offset, uint64_t optional_length,
      platform::AccessType access) = 0;

  // madvise(MADV_REMOVE), which Linux turns into fallocate(PUNCH_HOLE |
  // KEEP_SIZE) of the mapped object: frees [offset, offset+length) (page-
  // aligned) for every mapping; it reads as zeros afterwards. The object's
  // own errors apply (EPERM for a write-sealed memfd). Called with
  // MemoryManager::mapping_mu_ held (shared) and no other mm lock.
  // Default: EOPNOTSUPP (an object without hole punching).
  virtual KResult<void> PunchHole(uint64_t offset, uint64_t length) {
    (void)offset;
    (void)length;
    return kEOPNOTSUPP;
  }

  // mincore(2) of pages not mapped in the asking space: sets vec[i] to 1 if
  // page `offset/page + i` is resident in this Mappable (a file's page
  // cache), for i < pages. Default: leaves vec as is (not resident).
  virtual void Residency(uint64_t offset, uint64_t pages, uint8_t* vec) {
    (void)offset;
    (void)pages;
    (void)vec;
  }
};

}  // namespace sandbox::mm

#endif  // SENTRY_MM_MAPPABLE_H_
