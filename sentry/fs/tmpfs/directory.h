// Directory: a tmpfs directory's entries.
//
// Entries are ordered by a cookie that is never reused, which is also the
// getdents offset: iteration resumes at the first cookie >= the offset, so
// entries added or removed meanwhile never shift the others (no entry is
// reported twice or skipped unless it was itself removed or added).
//
// Locking: entries_, by_name_, next_cookie_ and removed_ are protected by
// the Filesystem's tree_mu (shared for Lookup/IterDirents/IsEmptyDir,
// exclusive for changes), which the VFS holds when calling; each operation
// asserts it (absl::Mutex::AssertHeld), which also tells the analysis.
#ifndef SENTRY_FS_TMPFS_DIRECTORY_H_
#define SENTRY_FS_TMPFS_DIRECTORY_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "sentry/fs/tmpfs/inode.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/vfs/inode.h"

namespace sandbox::fs::tmpfs {

class Directory final : public TmpfsInode {
 public:
  Directory(Filesystem& fs, uint64_t ino, const vfs::NewInodeAttrs& attrs);

  KResult<std::shared_ptr<vfs::Inode>> Lookup(std::string_view name) override;
  KResult<std::shared_ptr<vfs::Inode>> CreateChild(
      std::string_view name, const vfs::NewInodeAttrs& attrs,
      std::string_view symlink_target) override;
  KResult<std::shared_ptr<vfs::Inode>> CreateTmpfile(
      const vfs::NewInodeAttrs& attrs) override;
  KResult<void> LinkChild(std::string_view name,
                          const std::shared_ptr<vfs::Inode>& target) override;
  KResult<void> RemoveChild(std::string_view name, vfs::Inode& child) override;
  KResult<void> RenameChild(std::string_view old_name, vfs::Inode& new_dir,
                            std::string_view new_name, uint32_t flags) override;
  KResult<void> IterDirents(int64_t offset, vfs::DirentSink sink) override;
  bool IsEmptyDir() override;
  // st_size as Linux's tmpfs reports it: BOGO_DIRENT_SIZE (20) per entry
  // plus two for "." and ".."; no blocks.
  abi::Stat Stat() const override;

 private:
  struct Entry {
    std::string name;
    std::shared_ptr<vfs::Inode> inode;
  };
  Filesystem& tmpfs() const { return static_cast<Filesystem&>(fs()); }
  void Insert(std::string_view name, std::shared_ptr<vfs::Inode> inode)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(fs_.tree_mu());
  // Removes `name` and returns its inode (null if absent).
  std::shared_ptr<vfs::Inode> Erase(std::string_view name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(fs_.tree_mu());
  // The last link of a directory went: nlink 0, no more creations.
  void MarkRemoved() ABSL_EXCLUSIVE_LOCKS_REQUIRED(fs_.tree_mu());

  std::map<int64_t, Entry> entries_  // by cookie (>= 2)
      ABSL_GUARDED_BY(fs_.tree_mu());
  absl::flat_hash_map<std::string, int64_t> by_name_
      ABSL_GUARDED_BY(fs_.tree_mu());
  int64_t next_cookie_ ABSL_GUARDED_BY(fs_.tree_mu()) = 2;
  bool removed_ ABSL_GUARDED_BY(fs_.tree_mu()) = false;
  // entries_.size(), readable by stat without tree_mu.
  std::atomic<uint64_t> num_entries_{0};
};

}  // namespace sandbox::fs::tmpfs

#endif  // SENTRY_FS_TMPFS_DIRECTORY_H_
