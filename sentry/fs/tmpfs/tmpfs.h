// tmpfs: an in-memory file system whose file data lives in the memory file.
//
// Structure: directories keep their entries themselves (Directory), under
// the Filesystem's tree_mu (vfs/filesystem.h); the VFS dentry cache sits on
// top. Regular files keep a page map into the MemoryFile (RegularFile).
// Symlinks hold their target; FIFOs, sockets and device nodes are inodes
// only (opening them is the pipes/devices issues' business).
//
// Lifetime: the MemoryFile must outlive every tmpfs instance using it.
//
// Lock order:
//   VfsFile::offset_mu_
//     vfs::Filesystem::tree_mu_
//       vfs::Dentry::cache_mu_
//       vfs::Inode::mu_ (RegularFile data is under its inode's mu_)
//         platform::MemoryFile
#ifndef SENTRY_FS_TMPFS_TMPFS_H_
#define SENTRY_FS_TMPFS_TMPFS_H_

#include <stdint.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string_view>

#include "platform/memory_file.h"
#include "sentry/base/result.h"
#include "sentry/vfs/dentry.h"
#include "sentry/vfs/filesystem.h"
#include "sentry/vfs/inode.h"

namespace sandbox::fs::tmpfs {

inline constexpr uint64_t kTmpfsMagic = 0x01021994;

struct Options {
  // Limit on data pages (bytes, rounded down to pages); 0 = only the memory
  // file's own limit (statfs then shows no sizes, as Linux's size=0).
  // Unset: Linux's default, half of RAM (DefaultMaxPages).
  std::optional<uint64_t> max_bytes;
  // Limit on inodes (nr_inodes=); 0 = none (statfs shows no inode counts).
  // Unset: Linux's default, one per page of half of RAM.
  std::optional<uint64_t> max_inodes;
  uint32_t root_mode = 01777;
  uint32_t root_uid = 0;
  uint32_t root_gid = 0;
};

// Linux's default size and inode limit of a tmpfs (shmem_default_max_blocks,
// shmem_default_max_inodes): half of RAM's pages (sysinfo's totalram, as
// the guest sees it).
uint64_t DefaultMaxPages();
// The same for a tmpfs in `mf`: with a memory limit (runsc do --memory),
// RAM is that limit.
uint64_t DefaultMaxPages(const platform::MemoryFile& mf);

class Filesystem final : public vfs::Filesystem {
 public:
  static std::shared_ptr<Filesystem> Create(platform::MemoryFile& mf,
                                            const Options& opts = {});

  std::string_view type_name() const override { return "tmpfs"; }
  std::shared_ptr<vfs::Dentry> root() const override { return root_; }
  vfs::FsStats StatFs() override;
  vfs::DentryCache* dentry_cache() override { return &dcache_; }

  // A new inode of the type in attrs.mode (not yet linked anywhere).
  KResult<std::shared_ptr<vfs::Inode>> NewInode(
      const vfs::NewInodeAttrs& attrs, std::string_view symlink_target);

  platform::MemoryFile& memory_file() const { return mf_; }

  // Page accounting for the size limit: reserve before allocating.
  bool ReservePages(uint64_t n);
  // Whether `n` more pages could ever be held: within the size limit and
  // the guest-memory bound (MemoryFile::CouldFit). Reserves nothing:
  // for up-front checks of large requests (fallocate: ENOSPC at once).
  bool CouldHoldPages(uint64_t n) const;
  void ReleasePages(uint64_t n);
  // Inode accounting for the inode limit (every TmpfsInode holds one from
  // NewInode to its destruction).
  void ReleaseInode() { inodes_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  Filesystem(platform::MemoryFile& mf, const Options& opts);

  platform::MemoryFile& mf_;
  const uint64_t max_pages_;   // 0: unlimited
  const uint64_t max_inodes_;  // 0: unlimited
  std::atomic<uint64_t> used_pages_{0};
  std::atomic<uint64_t> next_ino_{1};
  std::atomic<uint64_t> inodes_{0};  // live inodes
  // Declared after everything an inode's destructor uses (mf_, the page
  // and inode counters), so the dentries it holds, and their inodes, go
  // first.
  vfs::DentryCache dcache_;
  std::shared_ptr<vfs::Dentry> root_;  // set once by Create
};

}  // namespace sandbox::fs::tmpfs

#endif  // SENTRY_FS_TMPFS_TMPFS_H_
