// Mount, VirtualDentry, MountNamespace (Linux struct mount, struct path,
// struct mnt_namespace).
//
// A Mount attaches a Filesystem's root dentry (or a subtree, for bind
// mounts) at a mount point: a (parent Mount, Dentry) pair. A VirtualDentry
// is a (Mount, Dentry) pair: a location in the tree that a walk, an open
// file, a task's root or cwd refer to.
//
// Ownership: a Mount holds its Filesystem, its root dentry, and, while
// attached, its parent Mount and mount-point dentry; the parent holds its
// children in children_. Umount breaks the links. A MountNamespace holds
// its root Mount and detaches the whole tree when destroyed.
//
// Locking: one global mount lock (MountLock(), Linux's mount_lock) protects
// every Mount's parent_, mountpoint_ and children_, and Dentry mount counts
// change under it. Walks take it shared to cross a mount point; mount and
// umount take it exclusively after the file system's tree_mu (so rmdir and
// rename, which hold tree_mu, see a stable mount_count).
//
// Lock order:
//   Filesystem::tree_mu_
//     MountLock()
#ifndef SENTRY_VFS_MOUNT_H_
#define SENTRY_VFS_MOUNT_H_

#include <stdint.h>

#include <atomic>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/vfs/dentry.h"
#include "sentry/vfs/filesystem.h"

namespace sandbox::vfs {

class Mount;

absl::Mutex& MountLock();

// A location in the tree: a dentry as seen through a mount.
struct VirtualDentry {
  std::shared_ptr<Mount> mount;
  std::shared_ptr<Dentry> dentry;

  bool ok() const { return mount != nullptr && dentry != nullptr; }
  friend bool operator==(const VirtualDentry& a, const VirtualDentry& b) {
    return a.mount == b.mount && a.dentry == b.dentry;
  }
};

// Per-mount flags (MS_* values so mount(2) can pass them through).
inline constexpr uint32_t kMountReadOnly = 1;  // MS_RDONLY
inline constexpr uint32_t kMountNoSuid = 2;    // MS_NOSUID
inline constexpr uint32_t kMountNoDev = 4;     // MS_NODEV
inline constexpr uint32_t kMountNoExec = 8;    // MS_NOEXEC

class Mount : public std::enable_shared_from_this<Mount> {
 public:
  // A detached mount of `root` (a dentry of `fs`).
  static std::shared_ptr<Mount> Create(std::shared_ptr<Filesystem> fs,
                                       std::shared_ptr<Dentry> root,
                                       uint32_t flags);
  Mount(const Mount&) = delete;
  Mount& operator=(const Mount&) = delete;

  Filesystem& fs() const { return *fs_; }
  const std::shared_ptr<Dentry>& root() const { return root_; }
  uint32_t flags() const { return flags_.load(std::memory_order_relaxed); }
  void set_flags(uint32_t f) { flags_.store(f, std::memory_order_relaxed); }
  bool read_only() const { return flags() & kMountReadOnly; }
  // Unique mount ID (/proc/self/mountinfo).
  uint64_t id() const { return id_; }

  // Where this mount is attached: {null, null} if detached or a namespace
  // root.
  VirtualDentry MountPoint() const ABSL_LOCKS_EXCLUDED(MountLock());
  std::shared_ptr<Mount> ParentLocked() const
      ABSL_SHARED_LOCKS_REQUIRED(MountLock()) {
    return parent_;
  }
  const std::shared_ptr<Dentry>& MountPointLocked() const
      ABSL_SHARED_LOCKS_REQUIRED(MountLock()) {
    return mountpoint_;
  }
  // The topmost mount attached at `dentry` of this mount, or null.
  std::shared_ptr<Mount> ChildAtLocked(const Dentry* dentry) const
      ABSL_SHARED_LOCKS_REQUIRED(MountLock());
  bool HasChildrenLocked() const ABSL_SHARED_LOCKS_REQUIRED(MountLock()) {
    return !children_.empty();
  }
  // The mounts attached on this one, in no order (/proc/pid/mountinfo).
  std::vector<std::shared_ptr<Mount>> ChildrenLocked() const
      ABSL_SHARED_LOCKS_REQUIRED(MountLock()) {
    std::vector<std::shared_ptr<Mount>> v;
    v.reserve(children_.size());
    for (const auto& [point, child] : children_) v.push_back(child);
    return v;
  }

  // Attaches `child` at `point` (point.mount must be this). EBUSY if a
  // mount is already attached exactly there (callers pass walked
  // locations, which are always the top of a stack).
  // Preconditions: point.dentry's fs tree_mu held exclusively, so the mount
  // point cannot be removed meanwhile; the caller checked it is not dead.
  static KResult<void> Attach(const VirtualDentry& point,
                              std::shared_ptr<Mount> child)
      ABSL_LOCKS_EXCLUDED(MountLock());
  // Detaches this mount (umount). EBUSY if other mounts are attached on it.
  KResult<void> Detach() ABSL_LOCKS_EXCLUDED(MountLock());
  // Detaches this mount and everything below it (MNT_DETACH, namespace
  // teardown).
  void DetachTree() ABSL_LOCKS_EXCLUDED(MountLock());

 private:
  Mount(std::shared_ptr<Filesystem> fs, std::shared_ptr<Dentry> root,
        uint32_t flags);
  void DetachTreeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(MountLock());

  const std::shared_ptr<Filesystem> fs_;
  const std::shared_ptr<Dentry> root_;
  const uint64_t id_;
  std::atomic<uint32_t> flags_;

  std::shared_ptr<Mount> parent_ ABSL_GUARDED_BY(MountLock());
  std::shared_ptr<Dentry> mountpoint_ ABSL_GUARDED_BY(MountLock());
  absl::flat_hash_map<const Dentry*, std::shared_ptr<Mount>> children_
      ABSL_GUARDED_BY(MountLock());
};

// A tree of mounts with a root (CLONE_NEWNS unit).
class MountNamespace {
 public:
  // A namespace whose root is `fs` mounted with `flags`.
  static std::shared_ptr<MountNamespace> Create(std::shared_ptr<Filesystem> fs,
                                                uint32_t flags);
  ~MountNamespace();
  MountNamespace(const MountNamespace&) = delete;
  MountNamespace& operator=(const MountNamespace&) = delete;

  const std::shared_ptr<Mount>& root_mount() const { return root_; }
  VirtualDentry Root() const { return {root_, root_->root()}; }

  // mount(2) of a new file system instance at `point` (a walked location
  // that must be a directory: ENOTDIR otherwise; ENOENT if it was removed).
  KResult<std::shared_ptr<Mount>> MountAt(const VirtualDentry& point,
                                          std::shared_ptr<Filesystem> fs,
                                          uint32_t flags);

 private:
  explicit MountNamespace(std::shared_ptr<Mount> root)
      : root_(std::move(root)) {}
  const std::shared_ptr<Mount> root_;
};

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_MOUNT_H_
