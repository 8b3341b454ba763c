// Inode: a file's identity and attributes (Linux struct inode), and the
// operations a file system implements on it.
//
// An Inode belongs to one Filesystem and is shared (std::shared_ptr) by the
// dentries that name it (hard links), by open files, and by its directory
// entries inside the file system. The VFS does every permission check and
// argument validation before calling an operation; implementations only
// perform it and keep their own structures consistent.
//
// Directory operations (Lookup, CreateChild, LinkChild, RemoveChild,
// RenameChild, IterDirents, IsEmptyDir) are called with the owning
// Filesystem's tree_mu() held: shared for Lookup/IterDirents/IsEmptyDir,
// exclusive for the others.
//
// Lock order:
//   Filesystem::tree_mu_
//     Dentry::cache_mu_            (leaf)
//     Inode::mu_                   (one inode at a time, except RenameChild
//                                   which may lock the moved and the
//                                   replaced inode: tree_mu_ held exclusively
//                                   makes that safe)
//       platform::MemoryFile
#ifndef SENTRY_VFS_INODE_H_
#define SENTRY_VFS_INODE_H_

#include <stdint.h>
#include <sys/stat.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "sentry/abi/linux.h"
#include "sentry/base/result.h"
#include "sentry/vfs/lock/file_locks.h"

namespace sandbox::vfs {

class Filesystem;
class VfsFile;
struct VirtualDentry;

inline constexpr size_t kNameMax = 255;   // NAME_MAX
inline constexpr size_t kPathMax = 4096;  // PATH_MAX, including the NUL
inline constexpr int kMaxSymlinks = 40;   // MAXSYMLINKS

// The current CLOCK_REALTIME, for timestamps.
abi::Timespec Now();

// d_type of a mode (DT_REG, DT_DIR...).
uint8_t DirentType(uint32_t mode);

// One directory entry as getdents64 reports it. `next_offset` is the d_off
// to resume after this entry (seekdir/telldir cookie).
struct DirEntry {
  std::string_view name;
  uint64_t ino = 0;
  uint8_t type = 0;  // DT_*
  int64_t next_offset = 0;
};
// Receives entries; returns false when it cannot take this one (the caller's
// buffer is full), which stops the iteration without consuming it.
using DirentSink = absl::FunctionRef<bool(const DirEntry&)>;

// Attributes of a new inode, computed by the VFS (owner, setgid
// inheritance, umask) before CreateChild.
struct NewInodeAttrs {
  uint32_t mode = 0;  // S_IFMT type and permission bits
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t rdev = 0;
};

// A chmod/chown/utimes/truncate request, after the VFS checks.
struct SetAttrRequest {
  static constexpr uint32_t kMode = 1, kUid = 2, kGid = 4, kSize = 8,
                            kAtime = 16, kMtime = 32, kCtime = 64;
  uint32_t mask = 0;
  uint32_t mode = 0;  // permission bits only (07777)
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  abi::Timespec atime{}, mtime{}, ctime{};
};

struct InodeAttrs {
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t nlink = 0;
  uint64_t size = 0;
  uint64_t rdev = 0;
  abi::Timespec atime{}, mtime{}, ctime{};
};

class Inode : public std::enable_shared_from_this<Inode> {
 public:
  // `fs` must outlive the inode (mounts and dentries pin the Filesystem).
  Inode(Filesystem& fs, uint64_t ino, const NewInodeAttrs& attrs);
  virtual ~Inode() = default;
  Inode(const Inode&) = delete;
  Inode& operator=(const Inode&) = delete;

  Filesystem& fs() const { return fs_; }
  uint64_t ino() const { return ino_; }
  // The file type never changes, so it is readable without the lock.
  uint32_t type() const { return type_; }
  bool IsDir() const { return type_ == S_IFDIR; }
  bool IsSymlink() const { return type_ == S_IFLNK; }
  bool IsRegular() const { return type_ == S_IFREG; }

  InodeAttrs Attrs() const ABSL_LOCKS_EXCLUDED(mu_);
  // mode, uid and gid for permission checks, read without mu_ (Linux's
  // RCU-walk reads i_mode, i_uid, i_gid with READ_ONCE each): each field is
  // a value it had, but a concurrent chmod and chown may be seen half
  // done, as in Linux.
  struct PermAttrs {
    uint32_t mode;
    uint32_t uid;
    uint32_t gid;
  };
  PermAttrs Perm() const {
    const uint64_t mode_uid = perm_mode_uid_.load(std::memory_order_acquire);
    return {static_cast<uint32_t>(mode_uid >> 32),
            static_cast<uint32_t>(mode_uid),
            perm_gid_.load(std::memory_order_acquire)};
  }
  uint32_t mode() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t nlink() const ABSL_LOCKS_EXCLUDED(mu_);

  // stat(2) of this inode.
  virtual abi::Stat Stat() const ABSL_LOCKS_EXCLUDED(mu_);
  // Applies a checked request. kSize goes to Truncate (EISDIR for a
  // directory, EINVAL for other non-regular files) before the other
  // attributes change.
  KResult<void> SetAttr(const SetAttrRequest& req) ABSL_LOCKS_EXCLUDED(mu_);
  // Updates ctime (and mtime) to now, e.g. after a directory change.
  void TouchCMTime() ABSL_LOCKS_EXCLUDED(mu_);
  void TouchCTime() ABSL_LOCKS_EXCLUDED(mu_);
  void TouchATime() ABSL_LOCKS_EXCLUDED(mu_);
  // Link-count changes made by the file system implementation.
  void IncLinks() ABSL_LOCKS_EXCLUDED(mu_);
  void DecLinks() ABSL_LOCKS_EXCLUDED(mu_);
  // An O_TMPFILE inode opened without O_EXCL may get its first link with
  // linkat(AT_EMPTY_PATH) (Linux's I_LINKABLE); the first link clears it.
  bool linkable() const { return linkable_.load(std::memory_order_acquire); }
  // Linux's i_writecount: open descriptions that may write (> 0) or
  // holders that deny writing (< 0: a running executable, execve's
  // exe_file_deny_write_access). GetWriteAccess (open for writing, path
  // truncate): ETXTBSY while writing is denied. DenyWriteAccess (execve):
  // ETXTBSY while the file is open for writing. Each success is undone by
  // PutWriteAccess / AllowWriteAccess. Lock-free (one atomic counter).
  KResult<void> GetWriteAccess();
  void PutWriteAccess() {
    write_count_.fetch_sub(1, std::memory_order_acq_rel);
  }
  KResult<void> DenyWriteAccess();
  void AllowWriteAccess() {
    write_count_.fetch_add(1, std::memory_order_acq_rel);
  }
  int write_count() const {
    return write_count_.load(std::memory_order_acquire);
  }
  // Advisory locks (fcntl record/OFD locks, flock) on this file.
  lock::FileLocks& locks() { return locks_; }
  void set_linkable(bool v) { linkable_.store(v, std::memory_order_release); }

  // --- Directory operations (default: ENOTDIR). ---
  // The child `name` (never "." or ".."; at most kNameMax bytes), ENOENT if
  // absent.
  virtual KResult<std::shared_ptr<Inode>> Lookup(std::string_view name);
  // Creates `name` (absent, checked by the VFS) of the type in attrs.mode;
  // `symlink_target` is used for S_IFLNK only. ENOENT if this directory was
  // removed, EMLINK/ENOSPC as the file system limits.
  virtual KResult<std::shared_ptr<Inode>> CreateChild(
      std::string_view name, const NewInodeAttrs& attrs,
      std::string_view symlink_target);
  // O_TMPFILE: a new unnamed inode (nlink 0) meant for this directory.
  // Default: EOPNOTSUPP.
  virtual KResult<std::shared_ptr<Inode>> CreateTmpfile(
      const NewInodeAttrs& attrs);
  // Adds a hard link `name` (absent) to the non-directory `target` of the
  // same file system.
  virtual KResult<void> LinkChild(std::string_view name,
                                  const std::shared_ptr<Inode>& target);
  // Removes `name`, whose inode is `child` (for a directory: checked empty
  // by the VFS with IsEmptyDir under the same lock).
  virtual KResult<void> RemoveChild(std::string_view name, Inode& child);
  // Moves `old_name` here to `new_name` in `new_dir` (same file system).
  // The VFS checked every rule; an existing target is replaced, or with
  // RENAME_EXCHANGE swapped.
  virtual KResult<void> RenameChild(std::string_view old_name, Inode& new_dir,
                                    std::string_view new_name, uint32_t flags);
  // Entries from cookie `offset` (>= 2: the VFS emits "." and ".." itself).
  // Entries added or removed during iteration never disturb the offsets of
  // the others.
  virtual KResult<void> IterDirents(int64_t offset, DirentSink sink);
  virtual bool IsEmptyDir();

  // --- Extended attributes (default: EOPNOTSUPP), after the VFS checks of
  // xattr_ops.cc (namespace, permission, sizes). ---
  // ENODATA if absent.
  virtual KResult<std::string> GetXattr(const std::string& name);
  // `flags`: XATTR_CREATE (EEXIST if present), XATTR_REPLACE (ENODATA if
  // absent).
  virtual KResult<void> SetXattr(const std::string& name,
                                 std::string_view value, int flags);
  virtual KResult<std::vector<std::string>> ListXattr();
  virtual KResult<void> RemoveXattr(const std::string& name);

  // --- Symlinks (default: EINVAL). ---
  virtual KResult<std::string> Readlink();
  // Magic links (Linux's proc "get_link" with nd_jump_link: /proc/PID/fd/N,
  // exe, cwd, root): a symlink that a walk follows by jumping to a
  // location, not by walking its text; readlink still gives the text.
  // Called without locks. MagicLink: where the walk jumps, or an error
  // (ENOENT when the target is gone or has no location a walk can reach,
  // e.g. a pipe or a host file).
  virtual bool IsMagicLink() const { return false; }
  virtual KResult<VirtualDentry> MagicLink();

  // --- Files. ---
  // Opens a file description on this inode, reached at `vd`, after the VFS
  // checks (access mode, O_TRUNC done). Directories and O_PATH are opened by
  // the VFS itself; the default returns ENXIO (device or FIFO without a
  // driver yet).
  virtual KResult<std::shared_ptr<VfsFile>> Open(const VirtualDentry& vd,
                                                 uint32_t flags);
  // fallocate(2) after the VFS checks (regular file, open for writing,
  // offset >= 0, len > 0, no overflow). Default: EOPNOTSUPP.
  virtual KResult<void> Allocate(uint32_t mode, uint64_t offset, uint64_t len)
      ABSL_LOCKS_EXCLUDED(mu_);

 protected:
  // Called first by SetAttr, without mu_: the file system's own refusal of
  // a change (tmpfs: F_SEAL_EXEC forbids changing exec bits, EPERM, as
  // shmem_setattr). Default: none.
  virtual KResult<void> CheckSetAttr(const SetAttrRequest&)
      ABSL_LOCKS_EXCLUDED(mu_) {
    return OkResult();
  }
  // Changes the size of a regular file (truncate/ftruncate/O_TRUNC). Called
  // without mu_ so that an implementation can invalidate mappings (which
  // takes MemoryManager locks) between its own critical sections.
  virtual KResult<void> Truncate(uint64_t size) ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks for st_blocks (512-byte units). Default: size rounded up.
  virtual uint64_t BlocksLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Copies attrs_.mode, uid and gid to what Perm() reads. Every change of
  // one of them (here or in a file system) must call it before releasing
  // mu_.
  void PublishPermLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    perm_mode_uid_.store(uint64_t{attrs_.mode} << 32 | attrs_.uid,
                         std::memory_order_release);
    perm_gid_.store(attrs_.gid, std::memory_order_release);
  }

  Filesystem& fs_;
  const uint64_t ino_;
  const uint32_t type_;

  mutable absl::Mutex mu_;
  // Changes of mode, uid or gid are followed by PublishPermLocked().
  InodeAttrs attrs_ ABSL_GUARDED_BY(mu_);

 private:
  // Perm()'s copies of attrs_.mode << 32 | attrs_.uid, and attrs_.gid;
  // written under mu_ by PublishPermLocked, read without it.
  std::atomic<uint64_t> perm_mode_uid_{0};
  std::atomic<uint32_t> perm_gid_{0};
  std::atomic<bool> linkable_{false};
  std::atomic<int> write_count_{0};
  lock::FileLocks locks_;
};

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_INODE_H_
