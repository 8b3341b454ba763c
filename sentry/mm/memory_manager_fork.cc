// MemoryManager::Fork: copy-on-write duplication of an address space.
#include <sys/mman.h>

#include <utility>
#include <vector>

#include "sentry/mm/memory_manager.h"

namespace sandbox::mm {

KResult<std::unique_ptr<MemoryManager>> MemoryManager::Fork(
    platform::Platform& platform) {
  auto as = platform.NewAddressSpace();
  // The host's resources for a new address space are exhausted (the
  // Sentry's FD budget, the host's process limit): EAGAIN, as fork under
  // RLIMIT_NPROC; anything else (memory) ENOMEM.
  if (!as.ok()) {
    return absl::IsResourceExhausted(as.status()) ? kEAGAIN : kENOMEM;
  }
  return Fork(std::move(*as));
}

KResult<std::unique_ptr<MemoryManager>> MemoryManager::Fork(
    std::unique_ptr<platform::AddressSpace> as) {
  std::unique_ptr<MemoryManager> child(
      new MemoryManager(std::move(as), mf_, layout_, refs_));
  struct NewMapping {
    std::shared_ptr<Mappable> mappable;
    uintptr_t addr;
    uint64_t offset;
    uint64_t length;
    bool writable;
  };
  std::vector<NewMapping> mappings;

  absl::MutexLock ml(&mapping_mu_);
  {
    absl::MutexLock cml(&child->mapping_mu_);
    absl::MutexLock al(&active_mu_);
    absl::MutexLock cal(&child->active_mu_);
    child->brk_start_ = brk_start_;
    child->image_ = image_;
    child->brk_ = brk_;
    child->as_limit_ = as_limit_;
    child->data_limit_ = data_limit_;
    for (const auto& [start, vma] : vmas_) {
      if (vma.dont_fork) continue;
      // Memory locks are not inherited (mlock(2)).
      child->vmas_.emplace(start, vma).first->second.locked = false;
      child->mapped_bytes_ += vma.end - start;
      if (vma.mappable) {
        mappings.push_back({vma.mappable, start, vma.offset, vma.end - start,
                            vma.shared && (vma.max_prot & PROT_WRITE)});
      }
    }
    auto vit = vmas_.begin();
    for (auto& [start, pma] : pmas_) {
      while (vit != vmas_.end() && vit->second.end <= start) ++vit;
      if (vit == vmas_.end() || vit->first > start) continue;  // no VMA: bug
      const Vma& vma = vit->second;
      // Shared mappings and not-yet-copied file pages are translated again
      // in the child; wiped and excluded VMAs start empty.
      if (vma.dont_fork || vma.wipe_on_fork || vma.shared || !pma.owned) {
        continue;
      }
      const uint64_t len = pma.end - start;
      refs_->IncRef(pma.file_offset, len);
      const bool was_writable = EffectiveProt(vma, pma) & PROT_WRITE;
      pma.cow = true;
      if (was_writable) (void)MapPmaLocked(start, pma, vma);
      child->pmas_.emplace(start, pma);
      child->owned_bytes_ += len;
    }
  }
  // Mappable locks come after mapping_mu_ and before active_mu_.
  for (const NewMapping& m : mappings) {
    m.mappable->AddMapping(child.get(), m.addr, m.offset, m.length, m.writable);
  }
  return child;
}

}  // namespace sandbox::mm
