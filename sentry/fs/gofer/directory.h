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
// getdents on exclusive mounts uses GetdentsPlus (READDIRPLUS): each entry
// comes with its walked inode, cached here like a lookup (same bound), so
// the stat of every entry that follows a listing (ls -l, find, nftw) makes
// no Gofer call. A Gofer without it (EOPNOTSUPP) gets Getdents.
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

  // Drops the entry `name` if nothing but this cache uses its inode (or it
  // is negative). Returns whether the entry is gone (or was not there).
  bool EvictIfUnused(const std::string& name) ABSL_LOCKS_EXCLUDED(children_mu_);
  // Whether `name` has an entry (positive or negative).
  bool HasEntry(const std::string& name) ABSL_LOCKS_EXCLUDED(children_mu_);

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
  // One batch of entries from `cookie`: GetdentsPlus on exclusive mounts
  // (each walked child is cached, so a stat of it makes no Gofer call),
  // else Getdents.
  KResult<void> FetchDirents(uint64_t cookie, std::vector<wire::Dirent>* out);
  // Caches `name` -> the inode of wi (its handle is consumed: given to a
  // new inode or released), unless a positive entry exists.
  void CacheChild(const std::string& name, const wire::Inode& wi)
      ABSL_LOCKS_EXCLUDED(children_mu_);

  absl::Mutex children_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<GoferInode>> children_
      ABSL_GUARDED_BY(children_mu_);
};

}  // namespace sandbox::fs::gofer

#endif  // SENTRY_FS_GOFER_DIRECTORY_H_
