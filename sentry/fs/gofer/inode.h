// GoferInode: a host file reached through the Gofer (one handle), the base
// of every inode of the gofer file system; GoferSymlink and GoferSpecial
// (FIFOs, sockets, device nodes: attributes only) live here too.
//
// Attributes are the host's stat, cached in vfs::Inode::attrs_ (plus
// blocks and blksize here). Exclusive mounts serve stat from the cache
// (no Gofer call); after a change the Sentry made (write, truncate, a
// directory change, ...) the inode is marked stale and the next stat
// refetches it once, so stat always matches the host's lstat. Shared mounts
// refetch on every stat. A refetch uses fstat on a cached host FD when the
// inode has one (regular files: no Gofer call), else a Stat call.
//
// Locking: attrs_ and blocks_ are under the inode's mu_; blksize_ and
// stale_ are atomics written under it and read without it, so a cached
// stat takes mu_ once (shared). No Gofer call is made holding mu_.
#ifndef SENTRY_FS_GOFER_INODE_H_
#define SENTRY_FS_GOFER_INODE_H_

#include <sys/stat.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "sentry/fs/gofer/filesystem.h"
#include "sentry/fs/pipe/pipe_file.h"
#include "sentry/vfs/inode.h"

namespace sandbox::fs::gofer {

class GoferInode : public vfs::Inode {
 public:
  GoferInode(GoferFilesystem& fs, const wire::Inode& wi);
  ~GoferInode() override;

  GoferFilesystem& gfs() const { return static_cast<GoferFilesystem&>(fs()); }
  wire::Handle handle() const { return handle_; }
  uint64_t host_dev() const { return host_dev_; }

  // Cached unless stale or on a shared mount (then refetched first; if
  // that fails the cached values are returned).
  abi::Stat Stat() const override ABSL_LOCKS_EXCLUDED(mu_);

  // Replaces the cached attributes with a host stat (ignored if its type
  // differs: a hostile reply must not change an inode's type).
  void ApplyStat(const wire::Stat& st) ABSL_LOCKS_EXCLUDED(mu_);
  // The host's attributes changed (by the Sentry): refetch at next stat.
  void MarkStale() ABSL_LOCKS_EXCLUDED(mu_);
  // Refetches the attributes now.
  KResult<void> Refresh() ABSL_LOCKS_EXCLUDED(mu_);

  // Extended attributes (user.* only, as the Gofer serves them).
  KResult<std::string> GetXattr(const std::string& name) override;
  KResult<void> SetXattr(const std::string& name, std::string_view value,
                         int flags) override;
  KResult<std::vector<std::string>> ListXattr() override;
  KResult<void> RemoveXattr(const std::string& name) override;

 protected:
  // Called first by vfs::Inode::SetAttr: applies mode, owner and times on
  // the host (one SetAttr call, none for a size-only change) before the
  // base class updates the cache and calls Truncate for the size. A
  // failure leaves the cache alone (the host may have applied a prefix:
  // the inode is stale either way).
  KResult<void> CheckSetAttr(const vfs::SetAttrRequest& req) override
      ABSL_LOCKS_EXCLUDED(mu_);
  // Truncate(2) of a regular file on the host.
  KResult<void> Truncate(uint64_t size) override ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t BlocksLocked() const override ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return blocks_;
  }
  // fstat of a cached host FD, if the inode has one (regular files).
  virtual bool HostFstat(struct stat* st) { return false; }
  void MarkStaleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    stale_.store(true, std::memory_order_release);
  }
  // Whether the cache must be refetched before it is used.
  bool NeedsRefresh() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void ApplyHostStat(const struct stat& st) ABSL_LOCKS_EXCLUDED(mu_);

  const wire::Handle handle_;
  const uint64_t host_dev_;
  uint64_t blocks_ ABSL_GUARDED_BY(mu_) = 0;
  // Written under mu_, read without it (the cached stat takes mu_ once).
  std::atomic<uint32_t> blksize_{4096};
  std::atomic<bool> stale_{false};
};

// A symlink; the target is cached on exclusive mounts.
class GoferSymlink final : public GoferInode {
 public:
  using GoferInode::GoferInode;
  KResult<std::string> Readlink() override ABSL_LOCKS_EXCLUDED(target_mu_);

 private:
  absl::Mutex target_mu_;
  bool cached_ ABSL_GUARDED_BY(target_mu_) = false;
  std::string target_ ABSL_GUARDED_BY(target_mu_);
};

// A FIFO: its pipe lives in the Sentry (sentry/fs/pipe), shared by the
// sandbox's openers of this inode, as Linux's i_pipe; a host process using
// the host FIFO is not connected to it.
class GoferFifo final : public GoferInode {
 public:
  using GoferInode::GoferInode;
  KResult<std::shared_ptr<vfs::VfsFile>> Open(const vfs::VirtualDentry& vd,
                                              uint32_t flags) override {
    return fifo_.Open(vd, flags);
  }

 private:
  pipe::FifoState fifo_;
};

// Sockets, device nodes: attributes only (open gives ENXIO; the Gofer never
// opens devices, and host sockets are not connected through it).
class GoferSpecial final : public GoferInode {
 public:
  using GoferInode::GoferInode;
};

}  // namespace sandbox::fs::gofer

#endif  // SENTRY_FS_GOFER_INODE_H_
