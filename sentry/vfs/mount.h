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
#include <string>
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
inline constexpr uint32_t kMountReadOnly = 1;           // MS_RDONLY
inline constexpr uint32_t kMountNoSuid = 2;             // MS_NOSUID
inline constexpr uint32_t kMountNoDev = 4;              // MS_NODEV
inline constexpr uint32_t kMountNoExec = 8;             // MS_NOEXEC
inline constexpr uint32_t kMountNoAtime = 1024;         // MS_NOATIME
inline constexpr uint32_t kMountNoDiratime = 2048;      // MS_NODIRATIME
inline constexpr uint32_t kMountStrictAtime = 1 << 24;  // MS_STRICTATIME
// What mount(2) and MS_REMOUNT|MS_BIND set (Linux MNT_USER_SETTABLE_MASK);
// relatime is the absence of kMountNoAtime and kMountStrictAtime.
inline constexpr uint32_t kMountSettable =
    kMountReadOnly | kMountNoSuid | kMountNoDev | kMountNoExec | kMountNoAtime |
    kMountNoDiratime | kMountStrictAtime;

// Lock bits (Linux MNT_LOCKED and MNT_LOCK_*, set by lock_mnt_tree when a
// mount tree is copied into a less privileged mount namespace). The
// sandbox's set-up mounts carry them (Mount::LockTree), so a guest with
// CAP_SYS_ADMIN cannot uncover what they cover or loosen their flags:
// - kLockMounted: umount2 is EINVAL, MS_MOVE is EINVAL, a non-recursive
//   bind of a location with locked mounts below it is EINVAL, and a lazy
//   umount of a parent leaves locked children connected to it.
// - kLockReadOnly/NoSuid/NoDev/NoExec: a remount may not clear the flag
//   (EPERM); kLockAtime: nor change the atime mode.
// Bind copies keep every bit except kLockMounted on the copy's top (copies
// of the mounts below keep it too).
inline constexpr uint32_t kLockMounted = 1;
inline constexpr uint32_t kLockReadOnly = 2;
inline constexpr uint32_t kLockNoSuid = 4;
inline constexpr uint32_t kLockNoDev = 8;
inline constexpr uint32_t kLockNoExec = 16;
inline constexpr uint32_t kLockAtime = 32;
// The atime mode bits (Linux MNT_ATIME_MASK; relatime is their absence).
inline constexpr uint32_t kMountAtimeMask =
    kMountNoAtime | kMountNoDiratime | kMountStrictAtime;

// Propagation type (MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE). There
// is one mount namespace, so nothing is propagated: the type and peer group
// are recorded for mountinfo's optional fields, bind mounts join their
// source's peer group as in Linux, and MS_UNBINDABLE refuses bind mounts.
enum class Propagation { kPrivate, kShared, kSlave, kUnbindable };

class Mount : public std::enable_shared_from_this<Mount> {
 public:
  // A detached mount of `root` (a dentry of `fs`).
  static std::shared_ptr<Mount> Create(std::shared_ptr<Filesystem> fs,
                                       std::shared_ptr<Dentry> root,
                                       uint32_t flags);
  // With mount(2)'s source string and the file system's options as
  // mountinfo shows them ("size=1024k,mode=755"; may be empty).
  static std::shared_ptr<Mount> Create(std::shared_ptr<Filesystem> fs,
                                       std::shared_ptr<Dentry> root,
                                       uint32_t flags, std::string source,
                                       std::string fs_options);
  // A kernel-internal mount (Linux's kern_mount, MNT_INTERNAL: the shm
  // mount of memfds), which no namespace contains and nothing attaches:
  // d_path of its files is their path inside it (DPath).
  static std::shared_ptr<Mount> CreateInternal(std::shared_ptr<Filesystem> fs,
                                               std::shared_ptr<Dentry> root);
  Mount(const Mount&) = delete;
  Mount& operator=(const Mount&) = delete;
  ~Mount();

  // Made by CreateInternal (bind copies of it are not).
  bool internal() const { return internal_; }

  Filesystem& fs() const { return *fs_; }
  const std::shared_ptr<Dentry>& root() const { return root_; }
  uint32_t flags() const { return flags_.load(std::memory_order_relaxed); }
  void set_flags(uint32_t f) { flags_.store(f, std::memory_order_relaxed); }
  bool read_only() const { return flags() & kMountReadOnly; }
  // kLock* bits (see above).
  uint32_t locks() const { return locks_.load(std::memory_order_relaxed); }
  bool locked() const { return locks() & kLockMounted; }
  // can_change_locked_flags: whether per-mount flags `f` keep every locked
  // flag (a remount to anything else is EPERM).
  bool CanChangeLockedFlags(uint32_t f) const;
  // lock_mnt_tree: locks this mount and every mount below it, each with
  // the flags it has now (the sandbox's set-up mounts, at boot).
  void LockTree() ABSL_LOCKS_EXCLUDED(MountLock());
  // Unique mount ID (/proc/self/mountinfo).
  uint64_t id() const { return id_; }
  // mount(2)'s source ("none", "tmpfs", ...); the type name if none given.
  const std::string& source() const { return source_; }
  // The super block's options for mountinfo (empty: none).
  const std::string& fs_options() const { return fs_options_; }
  // The mount's root inside its file system: "/" for a file system's root,
  // "/dir/file" for a bind mount of a subtree or file (mountinfo's field 4).
  std::string RootPath() const ABSL_LOCKS_EXCLUDED(MountLock());
  // mountinfo's optional fields: "shared:N", "master:N", "unbindable" or "".
  std::string PropagationFields() const ABSL_LOCKS_EXCLUDED(MountLock());
  Propagation propagation() const ABSL_LOCKS_EXCLUDED(MountLock());
  // MS_SHARED etc. on this mount, or with `recursive` (MS_REC) on it and
  // every mount below it.
  void SetPropagation(Propagation p, bool recursive)
      ABSL_LOCKS_EXCLUDED(MountLock());

  // Where this mount is attached: {null, null} if detached or a namespace
  // root. A locked mount left connected by a lazy umount of its parent
  // (DetachTree) is attached to that (detached) parent while it lives.
  VirtualDentry MountPoint() const ABSL_LOCKS_EXCLUDED(MountLock());
  std::shared_ptr<Mount> ParentLocked() const
      ABSL_SHARED_LOCKS_REQUIRED(MountLock()) {
    return parent_ != nullptr ? parent_ : umounted_parent_.lock();
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
  // teardown). With `keep_locked` (MNT_DETACH: Linux disconnect_mount),
  // locked mounts below stay connected to their (now detached) parents,
  // so a file still open in the detached tree cannot walk under them.
  void DetachTree(bool keep_locked) ABSL_LOCKS_EXCLUDED(MountLock());

  // ---- mount(2)/umount2(2) (sentry/syscalls/mount.cc). ----
  // MS_BIND: a new detached mount of `source` (its mount's file system,
  // rooted at source.dentry, with its flags and peer group); with
  // `recursive` (MS_REC) also copies of the mounts below source.dentry,
  // except unbindable ones. EINVAL if source.mount is unbindable, or if not
  // `recursive` and a locked mount is below source.dentry (has_locked_children:
  // a plain bind would uncover what it covers); EPERM if a locked mount to
  // copy is unbindable. The copy's top is not locked; copies below are.
  static KResult<std::shared_ptr<Mount>> CloneTree(const VirtualDentry& source,
                                                   bool recursive)
      ABSL_LOCKS_EXCLUDED(MountLock());
  // Attaches a detached mount (tree) at `point` (graft_tree): ENOTDIR if
  // one of the point and the mount's root is a directory and the other is
  // not, ENOENT if the point was removed, EBUSY as Attach.
  static KResult<void> Graft(const VirtualDentry& point,
                             std::shared_ptr<Mount> m)
      ABSL_LOCKS_EXCLUDED(MountLock());
  // MS_MOVE of the mount rooted at `source` to `point`: EINVAL if source
  // is not a mount root, is not attached, its parent is shared or it is
  // locked; ENOTDIR
  // on a type mismatch; ELOOP if `point` is inside the moved tree.
  static KResult<void> Move(const VirtualDentry& source,
                            const VirtualDentry& point)
      ABSL_LOCKS_EXCLUDED(MountLock());
  // umount2 without MNT_DETACH: EBUSY if other mounts are attached on this
  // one or anything but the mount table and `caller_refs` references (the
  // caller's own shared_ptrs) holds it (open files, cwds, roots: Linux's
  // mnt_count); EINVAL if not attached.
  KResult<void> Umount(long caller_refs) ABSL_LOCKS_EXCLUDED(MountLock());
  // Whether only the mount table and `caller_refs` hold this mount.
  bool Unused(long caller_refs) const ABSL_LOCKS_EXCLUDED(MountLock());
  // MNT_EXPIRE's mark: returns the old value and sets it.
  bool TestAndSetExpiryMark() { return expiry_mark_.exchange(true); }

 private:
  Mount(std::shared_ptr<Filesystem> fs, std::shared_ptr<Dentry> root,
        uint32_t flags, std::string source, std::string fs_options);
  // Detaches every mount below this one (see DetachTree's keep_locked).
  void UmountChildrenLocked(bool keep_locked)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(MountLock());
  // Whether a locked child of this mount is attached at `below` or under
  // it. Precondition: below->fs().tree_mu() held too (shared).
  bool HasLockedChildrenLocked(const Dentry* below) const
      ABSL_SHARED_LOCKS_REQUIRED(MountLock());
  // The recursive copy of child mount `m` for CloneTree: null if `m` is
  // unbindable (left out), EPERM if it is unbindable and locked.
  static KResult<std::shared_ptr<Mount>> CloneSubtree(
      const std::shared_ptr<Mount>& m) ABSL_LOCKS_EXCLUDED(MountLock());
  void SetPropagationLocked(Propagation p, bool recursive)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(MountLock());
  bool UnusedLocked(long caller_refs) const
      ABSL_SHARED_LOCKS_REQUIRED(MountLock());
  // Whether another attached mount is in this one's peer group.
  bool HasPeerLocked() const ABSL_SHARED_LOCKS_REQUIRED(MountLock());

  const std::shared_ptr<Filesystem> fs_;
  const std::shared_ptr<Dentry> root_;
  const uint64_t id_;
  std::atomic<uint32_t> flags_;
  std::atomic<uint32_t> locks_{0};
  const std::string source_;
  const std::string fs_options_;
  bool internal_ = false;  // set before the mount is shared
  std::atomic<bool> expiry_mark_{false};

  Propagation propagation_ ABSL_GUARDED_BY(MountLock()) = Propagation::kPrivate;
  // Peer group ID while shared (shared:N); the master's group while a
  // slave (master:N). 0: none.
  uint64_t peer_group_ ABSL_GUARDED_BY(MountLock()) = 0;
  uint64_t master_group_ ABSL_GUARDED_BY(MountLock()) = 0;

  std::shared_ptr<Mount> parent_ ABSL_GUARDED_BY(MountLock());
  std::shared_ptr<Dentry> mountpoint_ ABSL_GUARDED_BY(MountLock());
  // Set instead of parent_ while this locked mount stays connected to a
  // lazily unmounted parent (weak: the parent holds this one in its
  // children_, and keeps this one's mount-point reference until it dies).
  std::weak_ptr<Mount> umounted_parent_ ABSL_GUARDED_BY(MountLock());
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
