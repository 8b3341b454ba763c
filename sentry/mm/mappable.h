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
};

class Mappable {
 public:
  virtual ~Mappable() = default;

  // `space` maps [offset, offset+length) of this Mappable at `addr`.
  // `writable` is true for shared mappings that may be written (for
  // write-back accounting). Called with MemoryManager::mapping_mu_ held.
  virtual void AddMapping(MappingSpace* space, uintptr_t addr, uint64_t offset,
                          uint64_t length, bool writable) = 0;
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
};

}  // namespace sandbox::mm

#endif  // SENTRY_MM_MAPPABLE_H_
