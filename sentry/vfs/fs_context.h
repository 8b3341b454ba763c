// FsContext: a task's file-system state (Linux struct fs_struct): root
// (chroot), current directory, umask. Shared by threads created with
// CLONE_FS, copied by Fork otherwise.
//
// Lock order: FsContext::mu_ is a leaf.
#ifndef SENTRY_VFS_FS_CONTEXT_H_
#define SENTRY_VFS_FS_CONTEXT_H_

#include <stdint.h>

#include <atomic>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/vfs/mount.h"

namespace sandbox::vfs {

class FsContext {
 public:
  FsContext(VirtualDentry root, VirtualDentry cwd, uint32_t umask = 022)
      : root_(std::move(root)), cwd_(std::move(cwd)), umask_(umask) {}
  FsContext(const FsContext&) = delete;
  FsContext& operator=(const FsContext&) = delete;

  // A copy (fork without CLONE_FS).
  std::shared_ptr<FsContext> Fork() const;

  VirtualDentry Root() const ABSL_LOCKS_EXCLUDED(mu_);
  VirtualDentry Cwd() const ABSL_LOCKS_EXCLUDED(mu_);
  // Both, under one lock (a relative walk from AT_FDCWD needs both).
  void RootAndCwd(VirtualDentry* root, VirtualDentry* cwd) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Callers (chdir, chroot) resolved `vd` and checked it is a searchable
  // directory.
  void SetRoot(VirtualDentry vd) ABSL_LOCKS_EXCLUDED(mu_);
  void SetCwd(VirtualDentry vd) ABSL_LOCKS_EXCLUDED(mu_);

  uint32_t umask() const { return umask_.load(std::memory_order_relaxed); }
  // umask(2): sets mask & 0777, returns the old one.
  uint32_t SwapUmask(uint32_t mask) {
    return umask_.exchange(mask & 0777, std::memory_order_relaxed);
  }

 private:
  mutable absl::Mutex mu_;
  VirtualDentry root_ ABSL_GUARDED_BY(mu_);
  VirtualDentry cwd_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint32_t> umask_;
};

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_FS_CONTEXT_H_
