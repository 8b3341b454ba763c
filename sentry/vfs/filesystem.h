// Filesystem: one instance of a file system (Linux struct super_block).
//
// Owns the lock that protects the shape of its tree (tree_mu_): the
// parent/name links and child caches of its dentries, and whatever directory
// structure the implementation keeps (tmpfs keeps its directory entries
// under it). Walks hold it shared for one component at a time; operations
// that change names (create, link, unlink, rmdir, rename) hold it
// exclusively, which also makes the VFS's rename checks (ancestry, empty
// directories, mount points) atomic with the change.
//
// Lifetime: shared (std::shared_ptr) by its mounts; dentries and inodes do
// not pin it, mounts do (a Mount holds its Filesystem and root dentry).
//
// Lock order: see inode.h.
#ifndef SENTRY_VFS_FILESYSTEM_H_
#define SENTRY_VFS_FILESYSTEM_H_

#include <stdint.h>

#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"

namespace sandbox::vfs {

class Dentry;
class DentryCache;
class HostSockets;

// statfs(2) as a file system reports it (struct statfs, x86-64 layout is
// produced by the syscall layer).
struct FsStats {
  uint64_t type = 0;  // f_type magic
  uint64_t block_size = 4096;
  uint64_t blocks = 0, blocks_free = 0, blocks_avail = 0;
  uint64_t files = 0, files_free = 0;
  uint64_t name_max = 255;
  uint64_t frsize = 4096;
  uint64_t flags = 0;  // ST_* from the mount
};

class Filesystem {
 public:
  virtual ~Filesystem() = default;
  Filesystem(const Filesystem&) = delete;
  Filesystem& operator=(const Filesystem&) = delete;

  // The type name as /proc/filesystems shows it ("tmpfs").
  virtual std::string_view type_name() const = 0;
  // The root dentry, created once by the implementation.
  virtual std::shared_ptr<Dentry> root() const = 0;
  virtual FsStats StatFs() = 0;
  // The cache that keeps this file system's unused dentries for later
  // lookups (dentry.h), or null: dentries live only while referenced
  // (synthetic file systems whose entries are generated per lookup). An
  // implementation that has one must Clear() it in its destructor, before
  // its own members that inodes use go away.
  virtual DentryCache* dentry_cache() { return nullptr; }
  // d_op->d_dname: the name d_path gives `d` of this file system instead
  // of a path ("pipe:[N]" for pipefs, "socket:[N]" for sockfs, whose files
  // have no path), or empty: d_path walks the tree (the default).
  virtual std::string DName(const Dentry& d) const {
    (void)d;
    return {};
  }
  // Host Unix sockets in this file system (host_socket.h), or null: the
  // Sentry's own sockets only (the default).
  virtual HostSockets* host_sockets() { return nullptr; }

  // st_dev of every inode here (an anonymous device, major 0).
  uint64_t dev() const { return dev_; }

  absl::Mutex& tree_mu() const ABSL_LOCK_RETURNED(tree_mu_) { return tree_mu_; }

 protected:
  Filesystem();

 private:
  const uint64_t dev_;
  mutable absl::Mutex tree_mu_;
};

// Encodes major:minor as Linux's new_encode_dev does for st_dev.
uint64_t MakeDev(uint32_t major, uint32_t minor);

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_FILESYSTEM_H_
