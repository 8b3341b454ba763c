// Dentry: a name in the tree (Linux struct dentry), always positive.
//
// Ownership: a dentry holds its parent and its inode (shared_ptr); a parent
// indexes its children weakly (name -> weak_ptr). What keeps a dentry
// alive: open files, a task's root/cwd, a walk in progress, a mount on it
// or rooted at it (Mount holds both, so a mount point keeps its identity
// for the mount table), and, for file systems that have one
// (Filesystem::dentry_cache(), e.g. tmpfs), the file system's DentryCache:
// a bounded LRU of strong references to recently looked-up dentries, like
// Linux's dcache LRU. Without a DentryCache an unreferenced subtree is
// freed at once and looked up again from the inodes the next time (kernfs:
// /proc entries are generated per lookup and must not outlive their use).
//
// Linux's rules kept by the cache: an unlinked, removed or replaced dentry
// is dead, leaves its parent's index and the LRU at once (so the inode of
// an unlinked file goes as soon as nothing else holds it, as d_delete); a
// renamed one moves with its name; no negative entries are kept.
//
// Locking: parent_, name_ and dead_ are protected by the Filesystem's
// tree_mu() (shared to read, exclusive to change); children_ by cache_mu_,
// a leaf taken under tree_mu(); the LRU links by DentryCache::mu_, also a
// leaf under tree_mu(). inode_ and fs_ are immutable.
#ifndef SENTRY_VFS_DENTRY_H_
#define SENTRY_VFS_DENTRY_H_

#include <atomic>
#include <list>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/vfs/filesystem.h"
#include "sentry/vfs/inode.h"

namespace sandbox::vfs {

class Dentry;

// A bounded cache of dentries kept alive for later lookups (Linux's dcache
// LRU with its "referenced" second chance). A hit costs one atomic store
// (the referenced bit); only a dentry entering the cache takes the lock.
// When the cache is over capacity, the oldest dentry whose referenced bit is
// clear is dropped (a set bit is cleared and buys one more round).
//
// Locking: mu_ is a leaf, taken under the file system's tree_mu(). Dropped
// dentries are released after mu_ is unlocked (their destructors take their
// parents' cache_mu_).
class DentryCache {
 public:
  static constexpr size_t kDefaultCapacity = 16384;
  explicit DentryCache(size_t capacity = kDefaultCapacity)
      : capacity_(capacity) {}
  ~DentryCache() { Clear(); }
  DentryCache(const DentryCache&) = delete;
  DentryCache& operator=(const DentryCache&) = delete;

  // `d` was just looked up: keep it (or mark it referenced).
  void Touch(const std::shared_ptr<Dentry>& d) ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets `d` (unlinked, removed or replaced). The reference is released
  // before returning, after mu_ is unlocked.
  void Remove(Dentry& d) ABSL_LOCKS_EXCLUDED(mu_);
  // Drops every dentry (the owning file system goes away).
  void Clear() ABSL_LOCKS_EXCLUDED(mu_);
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::list<std::shared_ptr<Dentry>> lru_ ABSL_GUARDED_BY(mu_);  // oldest first
};

class Dentry : public std::enable_shared_from_this<Dentry> {
 public:
  // A file system's root dentry (no parent).
  static std::shared_ptr<Dentry> NewRoot(std::shared_ptr<Inode> inode);
  // An unnamed file's dentry (O_TMPFILE): under `parent` as "#<ino>" but
  // in no cache, so no lookup finds it, and dead from the start.
  static std::shared_ptr<Dentry> NewAnonymous(std::shared_ptr<Dentry> parent,
                                              std::shared_ptr<Inode> inode);
  // The same named `name` (a memfd's "memfd:NAME", which d_path shows).
  static std::shared_ptr<Dentry> NewAnonymous(std::shared_ptr<Dentry> parent,
                                              std::shared_ptr<Inode> inode,
                                              std::string name);
  ~Dentry();
  Dentry(const Dentry&) = delete;
  Dentry& operator=(const Dentry&) = delete;

  Filesystem& fs() const { return inode_->fs(); }
  Inode& inode() const { return *inode_; }
  const std::shared_ptr<Inode>& inode_ref() const { return inode_; }

  // Preconditions (all three): fs().tree_mu() held (shared or exclusive).
  std::shared_ptr<Dentry> parent() const
      ABSL_SHARED_LOCKS_REQUIRED(fs().tree_mu()) {
    return parent_;
  }
  const std::string& name() const ABSL_SHARED_LOCKS_REQUIRED(fs().tree_mu()) {
    return name_;
  }
  // True once unlinked, removed or replaced by a rename.
  bool dead() const ABSL_SHARED_LOCKS_REQUIRED(fs().tree_mu()) { return dead_; }

  // Locking wrappers for callers that hold no lock.
  std::shared_ptr<Dentry> Parent() const;
  bool IsDead() const;

  // The child `name` (not "." or ".."), from the cache or the inode's
  // Lookup. Preconditions: fs().tree_mu() held; this is a directory.
  KResult<std::shared_ptr<Dentry>> LookupChild(std::string_view name)
      ABSL_SHARED_LOCKS_REQUIRED(fs().tree_mu());

  // Tree changes, after the file system made them.
  // Preconditions: fs().tree_mu() held exclusively.
  // `name` was created: nothing to do (lookups find it); provided for
  // symmetry with file systems that keep negative entries.
  // `child` (named `name` here) was unlinked or replaced: it is dead.
  void ChildRemoved(const std::string& name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(fs().tree_mu());
  // The cached child `old_name` moved to `new_name` in `new_parent`.
  void ChildMoved(const std::string& old_name, Dentry& new_parent,
                  const std::string& new_name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(fs().tree_mu());
  // `a_name` here and `b_name` in `b_parent` swapped (RENAME_EXCHANGE).
  void ChildrenExchanged(const std::string& a_name, Dentry& b_parent,
                         const std::string& b_name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(fs().tree_mu());

  // Whether `this` is `other` or one of its ancestors in this file system.
  // Preconditions: fs().tree_mu() held.
  bool IsAncestorOf(const Dentry& other) const
      ABSL_SHARED_LOCKS_REQUIRED(fs().tree_mu());

  // Number of mounts whose mount point is this dentry (any mount). Changed
  // under the mount lock; read without it as a fast path.
  int mount_count() const { return mounts_.load(std::memory_order_acquire); }
  void AddMountRef() { mounts_.fetch_add(1, std::memory_order_acq_rel); }
  void DropMountRef() { mounts_.fetch_sub(1, std::memory_order_acq_rel); }

 private:
  Dentry(std::shared_ptr<Dentry> parent, std::string name,
         std::shared_ptr<Inode> inode);

  friend class DentryCache;

  // The cached live child `name`, or null. Takes cache_mu_.
  std::shared_ptr<Dentry> CachedChild(std::string_view name);
  void Uncache(const std::string& name);  // takes cache_mu_
  void Cache(const std::string& name, const std::shared_ptr<Dentry>& child);

  const std::shared_ptr<Inode> inode_;
  std::shared_ptr<Dentry> parent_ ABSL_GUARDED_BY(fs().tree_mu());
  std::string name_ ABSL_GUARDED_BY(fs().tree_mu());
  bool dead_ ABSL_GUARDED_BY(fs().tree_mu()) = false;

  absl::Mutex cache_mu_;
  absl::flat_hash_map<std::string, std::weak_ptr<Dentry>> children_
      ABSL_GUARDED_BY(cache_mu_);

  // DentryCache links: in_lru_ and lru_pos_ are written under that cache's
  // mu_; in_lru_ is also read without it (Touch's fast path), and
  // referenced_ is a hint updated without any lock.
  std::atomic<bool> in_lru_{false};
  std::atomic<bool> referenced_{false};
  std::list<std::shared_ptr<Dentry>>::iterator lru_pos_;

  std::atomic<int> mounts_{0};
};

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_DENTRY_H_
