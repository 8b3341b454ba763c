// TmpfsInode: what every tmpfs inode has beyond vfs::Inode: extended
// attributes, kept in memory (at most kXattrBytesMax bytes of names and
// values per inode: ENOSPC beyond, so a guest cannot grow the Sentry without
// bound through one file).
//
// Locking: xattrs_ is protected by the inode's mu_.
#ifndef SENTRY_FS_TMPFS_INODE_H_
#define SENTRY_FS_TMPFS_INODE_H_

#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "sentry/vfs/inode.h"

namespace sandbox::fs::tmpfs {

class TmpfsInode : public vfs::Inode {
 public:
  static constexpr size_t kXattrBytesMax = 1 << 20;

  using vfs::Inode::Inode;
  // Gives the inode back to its file system's inode limit (each was
  // counted by Filesystem::NewInode).
  ~TmpfsInode() override;

  KResult<std::string> GetXattr(const std::string& name) override
      ABSL_LOCKS_EXCLUDED(mu_);
  KResult<void> SetXattr(const std::string& name, std::string_view value,
                         int flags) override ABSL_LOCKS_EXCLUDED(mu_);
  KResult<std::vector<std::string>> ListXattr() override
      ABSL_LOCKS_EXCLUDED(mu_);
  KResult<void> RemoveXattr(const std::string& name) override
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::btree_map<std::string, std::string> xattrs_ ABSL_GUARDED_BY(mu_);
  size_t xattr_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sandbox::fs::tmpfs

#endif  // SENTRY_FS_TMPFS_INODE_H_
