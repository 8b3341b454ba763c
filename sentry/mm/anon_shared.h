// AnonSharedMappable: the pages of a MAP_SHARED|MAP_ANONYMOUS region (what
// Linux backs with a shmem file), shared by every mapping of it, including
// those fork copies.
//
// Pages are allocated on first Translate, in runs; offsets at or beyond the
// size are a SIGBUS (EFAULT from Translate), as for a shmem file.
//
// Lock order: AnonSharedMappable::mu_ is a Mappable AddMapping lock (see
// mappable.h); Translate takes translate_mu_, which comes after
// MemoryManager::active_mu_.
#ifndef SENTRY_MM_ANON_SHARED_H_
#define SENTRY_MM_ANON_SHARED_H_

#include <stdint.h>

#include <map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "platform/memory_file.h"
#include "sentry/mm/mappable.h"
#include "sentry/mm/mapping_set.h"

namespace sandbox::mm {

class AnonSharedMappable : public Mappable {
 public:
  // `size` is page-aligned.
  AnonSharedMappable(platform::MemoryFile& mf, uint64_t size);
  ~AnonSharedMappable() override;

  void AddMapping(MappingSpace* space, uintptr_t addr, uint64_t offset,
                  uint64_t length, bool writable) override;
  void RemoveMapping(MappingSpace* space, uintptr_t addr, uint64_t offset,
                     uint64_t length, bool writable) override;
  KResult<std::vector<Translation>> Translate(
      uint64_t required_offset, uint64_t required_length,
      uint64_t optional_offset, uint64_t optional_length,
      platform::AccessType access) override;

  // MADV_REMOVE / fallocate(PUNCH_HOLE): frees [offset, offset+length) and
  // makes every mapping drop it (it reads as zeros afterwards).
  void Punch(uint64_t offset, uint64_t length);
  KResult<void> PunchHole(uint64_t offset, uint64_t length) override {
    Punch(offset, length);
    return OkResult();
  }
  // Pages allocated are resident.
  void Residency(uint64_t offset, uint64_t pages, uint8_t* vec) override;

  uint64_t size() const { return size_; }
  // Bytes allocated (for tests).
  uint64_t AllocatedBytes();

 private:
  struct Run {
    uint64_t end;
    uint64_t file_offset;
  };

  platform::MemoryFile& mf_;
  const uint64_t size_;

  absl::Mutex mu_ ABSL_ACQUIRED_BEFORE(translate_mu_);
  MappingSet mappings_ ABSL_GUARDED_BY(mu_);

  absl::Mutex translate_mu_;
  std::map<uint64_t, Run> runs_ ABSL_GUARDED_BY(translate_mu_);  // offset ->
};

}  // namespace sandbox::mm

#endif  // SENTRY_MM_ANON_SHARED_H_
