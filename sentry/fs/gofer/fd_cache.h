// FdCache: the budget of host FDs donated by the Gofer (file data).
//
// Each regular-file inode has one Slot per access mode (O_RDONLY, O_WRONLY,
// O_RDWR); a slot holds at most one host FD, shared by every open file
// description of that inode that can use it, so an open of a file whose FD
// is cached costs no Gofer round trip. The cache keeps every filled slot on
// one LRU list and, past `capacity` FDs, empties the least recently used
// slot. A reader that got the FD before the eviction keeps it (HostFd is
// reference counted) until its pread/pwrite returns, so the number of host
// FDs is at most capacity + the I/O calls in flight.
//
// Locking: mu_ guards the list and every Slot's fields (the slots live in
// the inodes but only FdCache touches them). It is a leaf: no Gofer call,
// no other lock, and no close(2) is made under it (evicted FDs are closed
// after it is released).
#ifndef SENTRY_FS_GOFER_FD_CACHE_H_
#define SENTRY_FS_GOFER_FD_CACHE_H_

#include <stddef.h>

#include <list>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gofer/protocol/unique_fd.h"

namespace sandbox::fs::gofer {

// One donated host FD; closed when the last user drops it.
class HostFd {
 public:
  explicit HostFd(::gofer::UniqueFd fd) : fd_(std::move(fd)) {}
  int get() const { return fd_.get(); }

 private:
  const ::gofer::UniqueFd fd_;
};

class FdCache {
 public:
  // An inode's FD for one access mode. Guarded by the owning cache's mu_.
  struct Slot {
    std::shared_ptr<HostFd> fd;
    std::list<Slot*>::iterator pos;  // valid iff fd != nullptr
  };

  explicit FdCache(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}
  FdCache(const FdCache&) = delete;
  FdCache& operator=(const FdCache&) = delete;

  // The slot's FD (made most recently used), or null if it is empty.
  std::shared_ptr<HostFd> Get(Slot& slot) ABSL_LOCKS_EXCLUDED(mu_);
  // Fills an empty slot with `fd` and returns it; if another thread filled
  // it meanwhile, returns that one (and `fd` is dropped). May evict the
  // least recently used slot (possibly of another inode).
  std::shared_ptr<HostFd> Install(Slot& slot, std::shared_ptr<HostFd> fd)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Empties the slot (its inode is going away).
  void Forget(Slot& slot) ABSL_LOCKS_EXCLUDED(mu_);
  // Empties every slot (the process is out of FDs): an FD in use by I/O
  // closes when that I/O returns; the others close now. Later I/O opens
  // its FD again.
  void EvictAll() ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t capacity() const { return capacity_; }
  uint64_t evictions() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::list<Slot*> lru_ ABSL_GUARDED_BY(mu_);  // front: most recently used
  uint64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sandbox::fs::gofer

#endif  // SENTRY_FS_GOFER_FD_CACHE_H_
