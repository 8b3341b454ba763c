// PageRefs: owner counts of MemoryFile pages that private mappings of
// several address spaces share after fork (copy on write).
//
// Every MemoryManager of one fork family (an mm made by Create and all mms
// forked from it) shares one PageRefs. A page an mm owns and that is absent
// here has exactly one owner; an entry records the number of *extra*
// owners. Counts are kept per range, so forking a 2 MiB run costs one
// entry, not 512.
//
// Lock order: MemoryManager::active_mu_ -> PageRefs::mu_ -> MemoryFile.
#ifndef SENTRY_MM_PAGE_REFS_H_
#define SENTRY_MM_PAGE_REFS_H_

#include <stdint.h>

#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "platform/memory_file.h"

namespace sandbox::mm {

class PageRefs {
 public:
  explicit PageRefs(platform::MemoryFile& mf) : mf_(mf) {}
  PageRefs(const PageRefs&) = delete;
  PageRefs& operator=(const PageRefs&) = delete;

  // One more owner for every page of [off, off+len).
  void IncRef(uint64_t off, uint64_t len);
  // One owner fewer; pages left without an owner are freed to the
  // MemoryFile (their contents go back to the host).
  void DecRef(uint64_t off, uint64_t len);
  // True if a page of [off, off+len) has more than one owner.
  bool Shared(uint64_t off, uint64_t len);
  // Number of ranges with extra owners (for tests).
  size_t RangeCount();

 private:
  struct Range {
    uint64_t end;
    uint32_t extra;  // > 0
  };
  void SplitLocked(uint64_t at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  platform::MemoryFile& mf_;
  absl::Mutex mu_;
  std::map<uint64_t, Range> ranges_ ABSL_GUARDED_BY(mu_);  // key: start
};

}  // namespace sandbox::mm

#endif  // SENTRY_MM_PAGE_REFS_H_
