// overlay: a union of a read-only lower layer (any vfs::Filesystem: the
// Gofer's view of the host in production, tmpfs in tests) under a writable
// upper layer (a private tmpfs), as Linux's overlayfs with one lower layer
// (Documentation/filesystems/overlayfs.rst). See README.md for the design.
//
// Objects: an OverlayInode stands for one overlay file and refers to its
// real files: a lower dentry (null for files made in the overlay and for
// opaque directories) and an upper dentry (null until copy-up). The upper
// layer holds whiteouts (character devices 0:0) for names removed from the
// lower layer and marks opaque directories with the xattr
// "trusted.overlay.opaque" = "y", as Linux's upper layer does. The lower
// layer is never written.
//
// Identity: st_dev is the overlay's; st_ino is the lower file's inode
// number for every file that came from the lower layer (kept across
// copy-up), and kUpperInoBit | the upper inode number for files made in the
// overlay. Live OverlayInodes are found again by that number, so a lookup
// returns the same object an open file holds.
//
// Lock order (see README.md):
//   vfs::VfsFile::offset_mu_
//     OverlayFilesystem::tree_mu_            (the VFS's)
//       OverlayFilesystem::copy_mu_          (serializes copy-ups)
//         upper Filesystem::tree_mu_         (never with the lower's)
//         lower Filesystem::tree_mu_
//           real inodes' locks
//       OverlayInode::layer_mu_, name_mu_, dir_mu_, OverlayFilesystem::
//       ident_mu_                            (leaves)
//     vfs::Inode::mu_ (the overlay inode's mirror of the real attributes)
#ifndef SENTRY_FS_OVERLAY_OVERLAY_H_
#define SENTRY_FS_OVERLAY_OVERLAY_H_

#include <stdint.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/fs/pipe/pipe_file.h"
#include "sentry/vfs/dentry.h"
#include "sentry/vfs/filesystem.h"
#include "sentry/vfs/inode.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::fs::overlay {

inline constexpr uint64_t kOverlayMagic = 0x794c7630;  // OVERLAYFS_SUPER_MAGIC
// st_ino of files made in the overlay: the upper inode number with this
// bit, so they never collide with lower inode numbers (host inode numbers
// stay below 2^62 on every common file system).
inline constexpr uint64_t kUpperInoBit = uint64_t{1} << 62;
// The overlay's private xattrs (never shown to or accepted from the guest:
// EOPNOTSUPP, as Linux's ovl_own_xattr_get/set).
inline constexpr std::string_view kPrivateXattrPrefix = "trusted.overlay.";
inline constexpr std::string_view kOpaqueXattr = "trusted.overlay.opaque";

struct Options {
  // The lower layer: a directory seen through a mount (the overlay opens
  // lower files through it). Required. Never written.
  vfs::VirtualDentry lower;
  // The upper layer: an empty file system with tmpfs's semantics
  // (whiteouts as character devices 0:0, trusted.* xattrs), private to this
  // overlay. Required.
  std::shared_ptr<vfs::Filesystem> upper;
  // Names the directories' lookup caches keep, and dentries the dentry
  // cache keeps: each pins a lower dentry, so a Gofer handle. Boot sizes it
  // below the Gofer's handles (sentry/boot/root_fs.cc).
  size_t max_cached_names = 2048;
};

class OverlayInode;

class OverlayFilesystem final : public vfs::Filesystem {
 public:
  static KResult<std::shared_ptr<OverlayFilesystem>> Create(Options opts);
  ~OverlayFilesystem() override;

  std::string_view type_name() const override { return "overlay"; }
  std::shared_ptr<vfs::Dentry> root() const override { return root_; }
  // statfs with the overlay's magic: the upper layer's free space, and its
  // total and used plus what the lower layer uses (Linux's ovl_statfs
  // reports the upper layer alone; its upper usually shares a disk with the
  // image, ours is an empty tmpfs, so `df /` showed nothing used).
  vfs::FsStats StatFs() override;
  // The VFS's LRU of recently used overlay dentries, bounded like the
  // lookup caches (each pins a lower dentry, hence a Gofer handle).
  vfs::DentryCache* dentry_cache() override { return &dcache_; }

  const vfs::Filesystem& upper_fs() const { return *upper_fs_; }
  vfs::Filesystem& lower_fs() const { return lower_mount_->fs(); }
  const std::shared_ptr<vfs::Mount>& upper_mount() const {
    return upper_mount_;
  }
  const std::shared_ptr<vfs::Mount>& lower_mount() const {
    return lower_mount_;
  }

  // Number of copy-ups done (tests).
  uint64_t copy_ups() const {
    return copy_ups_.load(std::memory_order_relaxed);
  }

 private:
  friend class OverlayInode;
  friend class OverlayFile;
  explicit OverlayFilesystem(size_t max_cached_names)
      : max_cached_names_(std::max<size_t>(1, max_cached_names)),
        dcache_(max_cached_names_) {}

  // The overlay inode for the real (upper, lower) pair a lookup found
  // (either may be null, not both): the live one with that st_ino if it
  // refers to the same real files, else a new one.
  std::shared_ptr<OverlayInode> GetInode(std::shared_ptr<vfs::Dentry> upper,
                                         std::shared_ptr<vfs::Dentry> lower)
      ABSL_LOCKS_EXCLUDED(ident_mu_);
  // The overlay st_ino of an upper inode: its lower origin's if it was
  // copied up (or is a merged directory), else kUpperInoBit | ino.
  uint64_t UpperIno(uint64_t upper_ino) ABSL_LOCKS_EXCLUDED(ident_mu_);
  void RecordOrigin(uint64_t upper_ino, uint64_t ovl_ino)
      ABSL_LOCKS_EXCLUDED(ident_mu_);

  // Copies `n` up (and its parent chain first), copying at most
  // `data_limit` bytes of a regular file's data (O_TRUNC and truncate copy
  // less). No-op if it has an upper file.
  // Preconditions: tree_mu() held (shared or exclusive), so the parent
  // chain is stable.
  KResult<void> CopyUpLocked(OverlayInode& n, uint64_t data_limit)
      ABSL_LOCKS_EXCLUDED(copy_mu_);
  // CopyUpLocked taking tree_mu() shared itself.
  KResult<void> CopyUp(OverlayInode& n, uint64_t data_limit)
      ABSL_LOCKS_EXCLUDED(tree_mu(), copy_mu_);
  // The copy itself. Preconditions: the parent has an upper directory.
  KResult<void> CopyUpOneLocked(OverlayInode& n, uint64_t data_limit)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(copy_mu_);
  // Copies a lower regular file's data into an upper one.
  KResult<void> CopyData(const std::shared_ptr<vfs::Dentry>& lower,
                         const vfs::VirtualDentry& upper, uint64_t size);

  // The bound of the directories' lookup caches: each cached name pins
  // its lower dentry, hence a Gofer handle.
  const size_t max_cached_names_;
  // Records a cached name, evicting the oldest past the bound.
  void NoteCached(const std::shared_ptr<OverlayInode>& dir, std::string name)
      ABSL_LOCKS_EXCLUDED(cache_mu_);

  std::shared_ptr<vfs::Filesystem> upper_fs_;
  std::shared_ptr<vfs::Mount> upper_mount_;
  vfs::DentryCache dcache_;
  absl::Mutex cache_mu_;  // before any OverlayInode::dir_mu_
  std::deque<std::pair<std::weak_ptr<OverlayInode>, std::string>> cached_
      ABSL_GUARDED_BY(cache_mu_);
  std::shared_ptr<vfs::Mount> lower_mount_;
  std::shared_ptr<vfs::Dentry> root_;

  absl::Mutex copy_mu_;
  std::atomic<uint64_t> copy_ups_{0};

  absl::Mutex ident_mu_;
  // Live overlay inodes by st_ino.
  absl::flat_hash_map<uint64_t, std::weak_ptr<OverlayInode>> inodes_
      ABSL_GUARDED_BY(ident_mu_);
  uint32_t inserts_since_sweep_ ABSL_GUARDED_BY(ident_mu_) = 0;
  // Upper inode number -> overlay st_ino, for upper files copied up from
  // the lower layer (Linux's "trusted.overlay.origin"). Upper inode numbers
  // are never reused (tmpfs counts them), so entries never go stale.
  absl::flat_hash_map<uint64_t, uint64_t> origins_ ABSL_GUARDED_BY(ident_mu_);
  // Hard-link groups (Linux's index=on): a lower file with several links
  // that was copied up, by its st_ino: the upper file every other lower
  // link now shows, and how many lower links still have no upper name.
  struct IndexEntry {
    std::shared_ptr<vfs::Dentry> upper;
    uint64_t lower_links_left = 0;
  };
  absl::flat_hash_map<uint64_t, IndexEntry> index_ ABSL_GUARDED_BY(ident_mu_);
};

// One overlay file (Linux's ovl_inode). The directory operations are called
// by the VFS with the overlay's tree_mu() held (vfs/inode.h) and hold at
// most one real file system's tree_mu at a time.
class OverlayInode final : public vfs::Inode {
 public:
  OverlayInode(OverlayFilesystem& fs, uint64_t ino, uint32_t type,
               std::shared_ptr<vfs::Dentry> upper,
               std::shared_ptr<vfs::Dentry> lower);

  OverlayFilesystem& ofs() const {
    return static_cast<OverlayFilesystem&>(fs());
  }
  // The upper dentry, or null before copy-up.
  std::shared_ptr<vfs::Dentry> upper() const ABSL_LOCKS_EXCLUDED(layer_mu_);
  // The lower dentry (null for files made in the overlay and for opaque or
  // pure-upper directories). Immutable.
  const std::shared_ptr<vfs::Dentry>& lower() const { return lower_; }
  // The file whose data and attributes show: upper if any, else lower.
  std::shared_ptr<vfs::Dentry> real() const ABSL_LOCKS_EXCLUDED(layer_mu_);
  // A merged directory: both layers (Linux: nlink shows 1).
  bool merged() const { return IsDir() && lower_ != nullptr && upper(); }

  abi::Stat Stat() const override;
  // Refreshes the vfs::Inode attributes (which the VFS's permission checks
  // read) from the real file.
  void SyncAttrs() const;

  // Directories.
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

  // Xattrs: of the real file; changes copy up first. The overlay's private
  // names are EOPNOTSUPP and never listed.
  KResult<std::string> GetXattr(const std::string& name) override;
  KResult<void> SetXattr(const std::string& name, std::string_view value,
                         int flags) override;
  KResult<std::vector<std::string>> ListXattr() override;
  KResult<void> RemoveXattr(const std::string& name) override;

  KResult<std::string> Readlink() override;
  // Regular files: an OverlayFile on the real file (copied up first if
  // opened for writing); FIFOs: a pipe of this inode (never copied up, as
  // Linux's special files); other special files: ENXIO.
  KResult<std::shared_ptr<vfs::VfsFile>> Open(const vfs::VirtualDentry& vd,
                                              uint32_t flags) override;
  KResult<void> Allocate(uint32_t mode, uint64_t offset, uint64_t len) override;

 protected:
  // chmod/chown/utimes/truncate: copy up (a truncation copies only the
  // data it keeps), then apply on the upper file.
  KResult<void> CheckSetAttr(const vfs::SetAttrRequest& req) override;
  // Done on the upper file by CheckSetAttr.
  KResult<void> Truncate(uint64_t) override { return OkResult(); }

 private:
  friend class OverlayFilesystem;
  friend class OverlayFile;

  struct Found {
    std::shared_ptr<vfs::Dentry> upper;  // positive, never a whiteout
    std::shared_ptr<vfs::Dentry> lower;
    bool whiteout = false;  // the upper layer hides the lower name
  };
  // The real entries of `name` in this directory (ovl_lookup).
  KResult<Found> FindReal(std::string_view name);
  // FindReal + GetInode, and records (this, name) as the child's name.
  KResult<std::shared_ptr<OverlayInode>> LookupOverlay(std::string_view name);
  // Whether the lower layer has `name` here (ovl_lower_positive).
  bool LowerPositive(std::string_view name);
  // Makes sure `name` (an entry of this directory whose overlay inode `n`
  // has an upper file) exists in the upper directory: for hard-link group
  // members without an upper name, links the group's upper file there.
  // Preconditions: both copied up; the overlay tree_mu held exclusively.
  KResult<void> EnsureUpperName(std::string_view name, OverlayInode& n);
  // Removes every whiteout from this merged directory's upper directory
  // (before it is removed or replaced; the VFS checked it looks empty).
  KResult<void> ClearWhiteouts();
  // Upper `name` here: removes a whiteout at it (returns whether there was
  // one). Preconditions: upper tree_mu held exclusively.
  bool RemoveWhiteoutLocked(std::string_view name);
  KResult<void> MakeWhiteoutLocked(std::string_view name);

  void SetName(std::shared_ptr<OverlayInode> parent, std::string name)
      ABSL_LOCKS_EXCLUDED(name_mu_);
  std::pair<std::shared_ptr<OverlayInode>, std::string> Name() const
      ABSL_LOCKS_EXCLUDED(name_mu_);
  void SetUpper(std::shared_ptr<vfs::Dentry> upper)
      ABSL_LOCKS_EXCLUDED(layer_mu_);

  // getdents cookies of the lower pass: the lower layer's cookie if it is
  // below kLowerMapBit, else kLowerMapBit | an index into lower_cookies_.
  int64_t MapLowerCookie(int64_t cookie) ABSL_LOCKS_EXCLUDED(dir_mu_);
  int64_t UnmapLowerCookie(int64_t offset) ABSL_LOCKS_EXCLUDED(dir_mu_);

  const std::shared_ptr<vfs::Dentry> lower_;
  mutable absl::Mutex layer_mu_;
  std::shared_ptr<vfs::Dentry> upper_ ABSL_GUARDED_BY(layer_mu_);
  // Removed by unlink/rmdir/rename while lower-only (stat: nlink 0).
  bool removed_ ABSL_GUARDED_BY(layer_mu_) = false;

  // The directory and name this file was last found at (a hard-link group
  // has several; any serves for copy-up). Null parent: the root, or a file
  // whose name was removed (copied up as an unnamed upper file).
  mutable absl::Mutex name_mu_;
  // Weak: a directory caches its children strongly. The VFS dentries of a
  // file in use keep its parents alive.
  std::weak_ptr<OverlayInode> parent_ ABSL_GUARDED_BY(name_mu_);
  std::string name_ ABSL_GUARDED_BY(name_mu_);

  // Lookup cache of a directory: name -> overlay inode (strong), so that a
  // path walk does not merge the layers again (the VFS's dentry cache is
  // weak). Entries change only under the overlay's tree_mu held
  // exclusively (Forget), and the file system bounds their number
  // (Options::max_cached_names, oldest first).
  std::shared_ptr<OverlayInode> Cached(std::string_view name)
      ABSL_LOCKS_EXCLUDED(dir_mu_);
  void Remember(std::string_view name, std::shared_ptr<OverlayInode> n);
  void Forget(std::string_view name) ABSL_LOCKS_EXCLUDED(dir_mu_);

  absl::Mutex dir_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<OverlayInode>> children_
      ABSL_GUARDED_BY(dir_mu_);
  std::vector<int64_t> lower_cookies_ ABSL_GUARDED_BY(dir_mu_);
  absl::flat_hash_map<int64_t, int64_t> lower_cookie_index_
      ABSL_GUARDED_BY(dir_mu_);

  std::unique_ptr<pipe::FifoState> fifo_;  // FIFOs only
};

// An open regular file of the overlay (Linux's ovl file with its real
// file). Reads and writes go to the real file, reopened on the upper file
// if this one was opened on the lower file and the inode was copied up
// since (Linux >= 4.19: ovl_real_fdget sees the copy-up); mmap maps the
// file opened at open(2) (ovl_mmap uses that realfile, so a mapping of a
// lower file keeps the lower pages). fstat shows the overlay inode; locks
// are the overlay inode's.
class OverlayFile final : public vfs::VfsFile {
 public:
  OverlayFile(vfs::VirtualDentry vd, uint32_t flags,
              std::shared_ptr<vfs::VfsFile> real, bool real_is_upper);

  KResult<size_t> Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) override;
  KResult<size_t> Write(vfs::IoContext& ctx,
                        absl::Span<const uint8_t> src) override;
  KResult<size_t> PRead(vfs::IoContext& ctx, absl::Span<uint8_t> dst,
                        int64_t offset) override;
  KResult<size_t> PWrite(vfs::IoContext& ctx, absl::Span<const uint8_t> src,
                         int64_t offset) override;
  // Direct I/O (no bounce buffer) when the file opened at open(2) has it
  // (a Gofer or tmpfs lower file, the tmpfs upper file): forwarded to the
  // real file, so a buffer that faults part way moves the offset only by
  // what was copied.
  bool CanDirectIo(const platform::MemoryFile& mf) const override {
    return opened_->CanDirectIo(mf);
  }
  KResult<size_t> ReadDirect(vfs::IoContext& ctx, vfs::GuestIo& dst,
                             int64_t offset) override;
  KResult<size_t> WriteDirect(vfs::IoContext& ctx, vfs::GuestIo& src,
                              int64_t offset) override;
  KResult<int64_t> Seek(int64_t offset, int whence) override;
  KResult<uint64_t> Ioctl(vfs::IoContext& ctx, uint32_t cmd,
                          uint64_t arg) override;
  KResult<abi::Stat> Stat() override;
  KResult<void> Sync(bool data_only) override;
  std::shared_ptr<mm::Mappable> GetMappable() override;
  KResult<uint32_t> GetSeals() override;
  KResult<void> AddSeals(uint32_t seals) override;

  // The real file reads and writes go to now (tests).
  KResult<std::shared_ptr<vfs::VfsFile>> Current()
      ABSL_LOCKS_EXCLUDED(real_mu_);

 private:
  OverlayInode& oinode() const { return static_cast<OverlayInode&>(inode()); }

  const std::shared_ptr<vfs::VfsFile> opened_;  // at open(2): mmap
  absl::Mutex real_mu_;
  std::shared_ptr<vfs::VfsFile> current_ ABSL_GUARDED_BY(real_mu_);
  bool current_is_upper_ ABSL_GUARDED_BY(real_mu_);
};

}  // namespace sandbox::fs::overlay

#endif  // SENTRY_FS_OVERLAY_OVERLAY_H_
