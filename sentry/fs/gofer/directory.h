// GoferDirectory: a host directory, and this file system's name cache.
//
// Exclusive mounts cache each looked-up name here: a positive entry holds
// its child inode (and so its Gofer handle), a negative one (null) records
// that the name does not exist, so a repeated lookup or stat of a missing
// file makes no Gofer call either. The Sentry's own changes (create, link,
// unlink, rename) update the entries after the Gofer made them. Shared
// mounts cache nothing here: every lookup walks.
//
// The cache is bounded by Options::max_cached_inodes: the file system keeps
// the order in which entries were added (filesystem.h) and drops the oldest
// entries that nothing else uses (EvictIfUnused).
//
// getdents on exclusive mounts chooses per directory between Getdents and
// GetdentsPlus (READDIRPLUS: each entry comes with its walked inode, cached
// here like a lookup, so the stat of every entry that follows a listing
// makes no Gofer call; but the Gofer fstats and opens every entry on the
// host), much as Linux's NFS client does (nfs_advise_use_readdirplus,
// nfs_readdirplus_parent_cache_miss):
//  - A directory lists with plain Getdents until something asks for its
//    entries' inodes: a bare listing (ls, readdir without stat) costs the
//    host one getdents64 per batch and nothing per entry.
//  - The second name that has to be walked (a cache miss that finds the
//    file) after a plain listing of its directory shows a walker (ls -l,
//    find, nftw: getdents, then lstat of each entry; one walk alone is
//    often not one: ls, then cat a file): the rest of that listing uses
//    GetdentsPlus, and the directory is fetched again from the start with
//    GetdentsPlus, kPrefetchEntries entries at a time (the next part when
//    a walk shows the walker got past the last), so the stats that follow
//    make no Gofer call (one more listing instead of a Walk per entry).
//  - A child directory seen (walked or listed) from a directory in plus
//    mode is put in plus mode: a tree walk lists every directory below the
//    first with GetdentsPlus at once.
//  - Once a GetdentsPlus listing (or the prefetch) has reached the end of
//    the directory, every entry is cached: the next listing is plain
//    again (a walker that finds entries evicted switches it back).
// Shared mounts (no name cache) and a Gofer that answers EOPNOTSUPP use
// plain Getdents; Options::listing = kAlwaysPlus lists with GetdentsPlus
// always.
//
// getdents offsets: 0 and 1 are "." and ".." (the VFS's), a Gofer cookie c
// is offset c + 2 (the host's d_off; cookies past INT64_MAX - 2 are the
// host's end-of-directory markers and resume at INT64_MAX).
//
// Locking: children_ is under children_mu_ (taken alone, never across a
// Gofer call). The VFS calls Lookup/IterDirents with tree_mu shared and the
// changes with tree_mu exclusive.
#ifndef SENTRY_FS_GOFER_DIRECTORY_H_
#define SENTRY_FS_GOFER_DIRECTORY_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "sentry/fs/gofer/inode.h"

namespace sandbox::fs::gofer {

// A host mount point below a served directory that the Gofer does not
// cross (its walks are RESOLVE_NO_XDEV; e.g. the host's /proc, /sys and
// /dev, left locked in place when a user namespace forbade the
// non-recursive bind of "/"): an empty, read-only directory owned by root,
// as the covered directory of a non-recursive bind usually is. It has no
// Gofer handle; the Sentry mounts its own file systems on such points.
class GoferMountPoint final : public vfs::Inode {
 public:
  explicit GoferMountPoint(vfs::Filesystem& fs);
  KResult<std::shared_ptr<vfs::Inode>> Lookup(std::string_view) override {
    return kENOENT;
  }
  KResult<std::shared_ptr<vfs::Inode>> CreateChild(std::string_view,
                                                   const vfs::NewInodeAttrs&,
                                                   std::string_view) override {
    return kEROFS;
  }
  KResult<void> IterDirents(int64_t, vfs::DirentSink) override {
    return OkResult();
  }
  bool IsEmptyDir() override { return true; }
};

class GoferDirectory final : public GoferInode {
 public:
  GoferDirectory(GoferFilesystem& fs, const wire::Inode& wi)
      : GoferInode(fs, wi) {}
  ~GoferDirectory() override;

  KResult<std::shared_ptr<vfs::Inode>> Lookup(std::string_view name) override;
  KResult<std::shared_ptr<vfs::Inode>> CreateChild(
      std::string_view name, const vfs::NewInodeAttrs& attrs,
      std::string_view symlink_target) override;
  KResult<void> LinkChild(std::string_view name,
                          const std::shared_ptr<vfs::Inode>& target) override;
  KResult<void> RemoveChild(std::string_view name, vfs::Inode& child) override;
  KResult<void> RenameChild(std::string_view old_name, vfs::Inode& new_dir,
                            std::string_view new_name, uint32_t flags) override;
  KResult<void> IterDirents(int64_t offset, vfs::DirentSink sink) override;
  // The host decides: rmdir and rename give its ENOTEMPTY (no Gofer call
  // here).
  bool IsEmptyDir() override { return true; }

  // bind(2) of a host socket at `name` (GoferFilesystem::BindSocket): the
  // Gofer's BindSocket, then the new node cached as CreateChild's. Called
  // with tree_mu held exclusively.
  KResult<std::shared_ptr<vfs::Inode>> BindSocketChild(
      std::string_view name, const vfs::NewInodeAttrs& attrs, int type,
      wire::UniqueFd* fd);

  // Drops the entry `name` if nothing but this cache uses its inode (or it
  // is negative). Returns whether the entry is gone (or was not there).
  bool EvictIfUnused(const std::string& name) ABSL_LOCKS_EXCLUDED(children_mu_);
  // Whether `name` has an entry (positive or negative).
  bool HasEntry(const std::string& name) ABSL_LOCKS_EXCLUDED(children_mu_);
  // Whether the next listing batch uses GetdentsPlus (tests).
  bool lists_plus() const { return plus_.load(std::memory_order_relaxed); }

  // Entries fetched with GetdentsPlus per part of a walker's prefetch.
  static constexpr uint32_t kPrefetchEntries = 2048;

 private:
  struct Entry {
    bool found = false;
    std::shared_ptr<GoferInode> inode;  // null: negative entry
  };
  // Exclusive mounts only: records name -> inode (null: absent).
  void Put(std::string_view name, std::shared_ptr<GoferInode> inode)
      ABSL_LOCKS_EXCLUDED(children_mu_);
  // Removes and returns the entry for `name` (found = false if unknown).
  Entry Take(std::string_view name) ABSL_LOCKS_EXCLUDED(children_mu_);
  uint32_t OwnerId(uint32_t id) const;
  // One batch of entries from `cookie`: GetdentsPlus in plus mode (each
  // walked child is cached, so a stat of it makes no Gofer call), else
  // Getdents. `plus` is the mode to use; it is cleared if the Gofer has
  // no GetdentsPlus.
  KResult<void> FetchDirents(uint64_t cookie, bool* plus,
                             std::vector<wire::Dirent>* out);
  // The next part of a walker's prefetch, if one is under way: about
  // kPrefetchEntries entries with GetdentsPlus, cached (errors are
  // ignored: lookups walk instead).
  void PrefetchPlus();
  // The Sentry changed the directory: its end is not known any more.
  void ForgetEnd() { end_cookie_.store(kNoEnd, std::memory_order_relaxed); }
  // Puts a child directory in plus mode if this one is.
  void Inherit(GoferInode& child);
  // Whether the next batch of a listing uses GetdentsPlus.
  bool UsePlus() const;
  // Names walked after a plain listing that make a walker.
  static constexpr uint32_t kWalkerWalks = 2;
  // Caches `name` -> the inode of wi (its handle is consumed: given to a
  // new inode or released), unless a positive entry exists.
  void CacheChild(const std::string& name, const wire::Inode& wi)
      ABSL_LOCKS_EXCLUDED(children_mu_);

  absl::Mutex children_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<GoferInode>> children_
      ABSL_GUARDED_BY(children_mu_);

  // The listing mode (see above). Hints only, so atomics without a lock:
  // a race costs at most one batch or listing in the other mode.
  // Whether the next batches use GetdentsPlus (kAdaptive).
  std::atomic<bool> plus_{false};
  // A plain batch was listed and no walker has acted on it yet.
  std::atomic<bool> plain_listed_{false};
  // The cookie at which the last listing found the end, or kNoEnd.
  static constexpr uint64_t kNoEnd = ~uint64_t{0};
  std::atomic<uint64_t> end_cookie_{kNoEnd};
  // Whether the listing in progress (or the last) used only GetdentsPlus.
  std::atomic<bool> listing_all_plus_{false};
  // Names walked since the listing in progress (or the last one) began.
  std::atomic<uint32_t> walks_after_listing_{0};
  // Where the walker's prefetch goes on, or kNoPrefetch.
  static constexpr uint64_t kNoPrefetch = ~uint64_t{0};
  std::atomic<uint64_t> prefetch_cookie_{kNoPrefetch};
};

}  // namespace sandbox::fs::gofer

#endif  // SENTRY_FS_GOFER_DIRECTORY_H_
