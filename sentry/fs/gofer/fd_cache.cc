#include "sentry/fs/gofer/fd_cache.h"

#include <vector>

namespace sandbox::fs::gofer {

std::shared_ptr<HostFd> FdCache::Get(Slot& slot) {
  absl::MutexLock l(&mu_);
  if (slot.fd == nullptr) return nullptr;
  lru_.splice(lru_.begin(), lru_, slot.pos);
  return slot.fd;
}

std::shared_ptr<HostFd> FdCache::Install(Slot& slot,
                                         std::shared_ptr<HostFd> fd) {
  std::vector<std::shared_ptr<HostFd>> evicted;  // closed after unlocking
  std::shared_ptr<HostFd> result;
  {
    absl::MutexLock l(&mu_);
    if (slot.fd != nullptr) {
      lru_.splice(lru_.begin(), lru_, slot.pos);
      evicted.push_back(std::move(fd));
      return slot.fd;
    }
    slot.fd = std::move(fd);
    lru_.push_front(&slot);
    slot.pos = lru_.begin();
    result = slot.fd;
    while (lru_.size() > capacity_) {
      Slot* victim = lru_.back();
      lru_.pop_back();
      evicted.push_back(std::move(victim->fd));
      victim->fd = nullptr;
      ++evictions_;
    }
  }
  return result;
}

void FdCache::Forget(Slot& slot) {
  std::shared_ptr<HostFd> dropped;
  absl::MutexLock l(&mu_);
  if (slot.fd == nullptr) return;
  lru_.erase(slot.pos);
  dropped = std::move(slot.fd);
  slot.fd = nullptr;
  // `dropped` is destroyed after mu_ is released (declared before the lock).
}

void FdCache::EvictAll() {
  std::vector<std::shared_ptr<HostFd>> evicted;  // closed after unlocking
  absl::MutexLock l(&mu_);
  evicted.reserve(lru_.size());
  for (Slot* victim : lru_) {
    evicted.push_back(std::move(victim->fd));
    victim->fd = nullptr;
    ++evictions_;
  }
  lru_.clear();
  // `evicted` is destroyed after mu_ is released (declared before the lock).
}

size_t FdCache::size() const {
  absl::MutexLock l(&mu_);
  return lru_.size();
}

uint64_t FdCache::evictions() const {
  absl::MutexLock l(&mu_);
  return evictions_;
}

}  // namespace sandbox::fs::gofer
