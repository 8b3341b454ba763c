// The overlay file system and its inodes: identity, attributes, xattrs,
// open. Directory operations are in directory.cc, copy-up in copy_up.cc,
// open files in file.cc.
#include "sentry/fs/overlay/overlay.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

#include <algorithm>

#include "sentry/fs/overlay/internal.h"

namespace sandbox::fs::overlay {

bool IsWhiteout(const vfs::Inode& inode) {
  return inode.type() == S_IFCHR && inode.Attrs().rdev == 0;
}

bool IsOpaque(vfs::Inode& upper_dir) {
  if (!upper_dir.IsDir()) return false;
  KResult<std::string> v = upper_dir.GetXattr(std::string(kOpaqueXattr));
  return v.ok() && *v == "y";
}

bool IsPrivateXattr(std::string_view name) {
  return name.starts_with(kPrivateXattrPrefix);
}

// --- OverlayFilesystem ---

KResult<std::shared_ptr<OverlayFilesystem>> OverlayFilesystem::Create(
    Options opts) {
  if (!opts.lower.ok() || opts.upper == nullptr) return kEINVAL;
  if (!opts.lower.dentry->inode().IsDir()) return kENOTDIR;
  std::shared_ptr<OverlayFilesystem> fs(
      new OverlayFilesystem(opts.max_cached_names));
  fs->upper_fs_ = opts.upper;
  fs->upper_mount_ =
      vfs::Mount::Create(opts.upper, opts.upper->root(), /*flags=*/0);
  fs->lower_mount_ = opts.lower.mount;
  std::shared_ptr<vfs::Dentry> upper_root = opts.upper->root();
  std::shared_ptr<vfs::Dentry> lower_root = opts.lower.dentry;
  // The root is a merged directory showing the lower root's mode, owner and
  // times (the upper tmpfs root starts as 01777 root).
  abi::Stat lst = lower_root->inode().Stat();
  vfs::SetAttrRequest req;
  req.mask = vfs::SetAttrRequest::kMode | vfs::SetAttrRequest::kUid |
             vfs::SetAttrRequest::kGid | vfs::SetAttrRequest::kAtime |
             vfs::SetAttrRequest::kMtime;
  req.mode = lst.st_mode & 07777;
  req.uid = lst.st_uid;
  req.gid = lst.st_gid;
  req.atime = lst.st_atim;
  req.mtime = lst.st_mtim;
  TRY_VOID(upper_root->inode().SetAttr(req));
  uint64_t ino = lower_root->inode().ino();
  fs->RecordOrigin(upper_root->inode().ino(), ino);
  auto root =
      std::make_shared<OverlayInode>(*fs, ino, S_IFDIR, upper_root, lower_root);
  {
    absl::MutexLock l(&fs->ident_mu_);
    fs->inodes_[ino] = root;
  }
  fs->root_ = vfs::Dentry::NewRoot(root);
  return fs;
}

OverlayFilesystem::~OverlayFilesystem() {
  dcache_.Clear();
  std::deque<std::pair<std::weak_ptr<OverlayInode>, std::string>> cached;
  {
    absl::MutexLock l(&cache_mu_);
    cached.swap(cached_);
  }
  for (auto& [weak, name] : cached) {
    if (std::shared_ptr<OverlayInode> d = weak.lock()) d->Forget(name);
  }
}

vfs::FsStats OverlayFilesystem::StatFs() {
  vfs::FsStats st = upper_fs_->StatFs();
  st.type = kOverlayMagic;
  // Free space is the upper layer's (where writes go); total and used also
  // count what the read-only lower layer holds, as a container's overlay
  // over one disk shows its image as used. An unlimited upper (no sizes)
  // stays as it is.
  if (st.blocks == 0 || st.frsize == 0) return st;
  const vfs::FsStats lower = lower_fs().StatFs();
  if (lower.frsize != 0 && lower.blocks >= lower.blocks_free) {
    const unsigned __int128 bytes =
        static_cast<unsigned __int128>(lower.blocks - lower.blocks_free) *
        lower.frsize;
    const unsigned __int128 used = (bytes + st.frsize - 1) / st.frsize;
    const uint64_t room = UINT64_MAX - st.blocks;
    st.blocks += used > room ? room : static_cast<uint64_t>(used);
  }
  if (st.files != 0 && lower.files >= lower.files_free) {
    const uint64_t used = lower.files - lower.files_free;
    st.files += std::min(used, UINT64_MAX - st.files);
  }
  return st;
}

uint64_t OverlayFilesystem::UpperIno(uint64_t upper_ino) {
  absl::MutexLock l(&ident_mu_);
  auto it = origins_.find(upper_ino);
  if (it != origins_.end()) return it->second;
  return kUpperInoBit | upper_ino;
}

void OverlayFilesystem::RecordOrigin(uint64_t upper_ino, uint64_t ovl_ino) {
  absl::MutexLock l(&ident_mu_);
  origins_[upper_ino] = ovl_ino;
}

std::shared_ptr<OverlayInode> OverlayFilesystem::GetInode(
    std::shared_ptr<vfs::Dentry> upper, std::shared_ptr<vfs::Dentry> lower) {
  uint32_t type = (upper ? upper : lower)->inode().type();
  uint64_t ino = lower ? lower->inode().ino() : UpperIno(upper->inode().ino());
  absl::ReleasableMutexLock l(&ident_mu_);
  if (!upper && lower && type != S_IFDIR) {
    // A member of a copied-up hard-link group shows the group's upper file.
    auto it = index_.find(ino);
    if (it != index_.end()) upper = it->second.upper;
  }
  auto it = inodes_.find(ino);
  if (it != inodes_.end()) {
    std::shared_ptr<OverlayInode> live = it->second.lock();
    if (live != nullptr && live->type() == type) {
      bool same = true;
      if (lower) {
        same = live->lower() != nullptr &&
               &live->lower()->inode() == &lower->inode();
      }
      if (same && upper) {
        std::shared_ptr<vfs::Dentry> lu = live->upper();
        same = lu != nullptr && &lu->inode() == &upper->inode();
      }
      if (same) return live;
    }
  }
  l.Release();
  // Constructed without ident_mu_ (the constructor stats the real file).
  auto n = std::make_shared<OverlayInode>(*this, ino, type, std::move(upper),
                                          std::move(lower));
  absl::MutexLock l2(&ident_mu_);
  inodes_[ino] = n;
  // Drop the entries of dead inodes now and then (a walk over a large tree
  // leaves many).
  if (++inserts_since_sweep_ >= 4096) {
    inserts_since_sweep_ = 0;
    absl::erase_if(inodes_, [](const auto& e) { return e.second.expired(); });
  }
  return n;
}

// --- OverlayInode: identity and attributes ---

OverlayInode::OverlayInode(OverlayFilesystem& fs, uint64_t ino, uint32_t type,
                           std::shared_ptr<vfs::Dentry> upper,
                           std::shared_ptr<vfs::Dentry> lower)
    : vfs::Inode(fs, ino, vfs::NewInodeAttrs{.mode = type}),
      lower_(std::move(lower)),
      upper_(std::move(upper)) {
  if (type == S_IFIFO) fifo_ = std::make_unique<pipe::FifoState>();
  SyncAttrs();
}

std::shared_ptr<vfs::Dentry> OverlayInode::upper() const {
  absl::MutexLock l(&layer_mu_);
  return upper_;
}

std::shared_ptr<vfs::Dentry> OverlayInode::real() const {
  absl::MutexLock l(&layer_mu_);
  return upper_ ? upper_ : lower_;
}

void OverlayInode::SetUpper(std::shared_ptr<vfs::Dentry> upper) {
  absl::MutexLock l(&layer_mu_);
  upper_ = std::move(upper);
}

void OverlayInode::SetName(std::shared_ptr<OverlayInode> parent,
                           std::string name) {
  absl::MutexLock l(&name_mu_);
  parent_ = std::move(parent);
  name_ = std::move(name);
}

std::pair<std::shared_ptr<OverlayInode>, std::string> OverlayInode::Name()
    const {
  absl::MutexLock l(&name_mu_);
  return {parent_.lock(), name_};
}

abi::Stat OverlayInode::Stat() const {
  std::shared_ptr<vfs::Dentry> up;
  bool removed;
  {
    absl::MutexLock l(&layer_mu_);
    up = upper_;
    removed = removed_;
  }
  std::shared_ptr<vfs::Dentry> r = up ? up : lower_;
  abi::Stat st = r->inode().Stat();
  st.st_dev = fs().dev();
  st.st_ino = ino();
  if (IsDir()) {
    // ovl_getattr: counting a merged directory's subdirectories is not
    // worth it; nlink 1 satisfies find and friends.
    if (up && lower_) st.st_nlink = 1;
  } else if (!up) {
    if (removed) st.st_nlink = 0;
  } else if (lower_ || ino() < kUpperInoBit) {
    OverlayFilesystem& o = ofs();
    absl::MutexLock l(&o.ident_mu_);
    auto it = o.index_.find(ino());
    if (it != o.index_.end()) st.st_nlink += it->second.lower_links_left;
  }
  // Mirror into vfs::Inode's attributes for the VFS's permission checks.
  auto* self = const_cast<OverlayInode*>(this);
  absl::MutexLock l(&self->mu_);
  self->attrs_.mode = st.st_mode;
  self->attrs_.uid = st.st_uid;
  self->attrs_.gid = st.st_gid;
  self->PublishPermLocked();
  self->attrs_.nlink = st.st_nlink;
  self->attrs_.size = static_cast<uint64_t>(st.st_size);
  self->attrs_.rdev = st.st_rdev;
  self->attrs_.atime = st.st_atim;
  self->attrs_.mtime = st.st_mtim;
  self->attrs_.ctime = st.st_ctim;
  return st;
}

void OverlayInode::SyncAttrs() const { (void)Stat(); }

KResult<void> OverlayInode::CheckSetAttr(const vfs::SetAttrRequest& req) {
  uint64_t limit =
      (req.mask & vfs::SetAttrRequest::kSize) ? req.size : kCopyAllData;
  TRY_VOID(ofs().CopyUp(*this, limit));
  TRY_VOID(upper()->inode().SetAttr(req));
  SyncAttrs();
  return OkResult();
}

KResult<void> OverlayInode::Allocate(uint32_t mode, uint64_t offset,
                                     uint64_t len) {
  TRY_VOID(ofs().CopyUp(*this, kCopyAllData));
  TRY_VOID(upper()->inode().Allocate(mode, offset, len));
  SyncAttrs();
  return OkResult();
}

// --- Xattrs ---

KResult<std::string> OverlayInode::GetXattr(const std::string& name) {
  if (IsPrivateXattr(name)) return kEOPNOTSUPP;
  return real()->inode().GetXattr(name);
}

KResult<void> OverlayInode::SetXattr(const std::string& name,
                                     std::string_view value, int flags) {
  if (IsPrivateXattr(name)) return kEOPNOTSUPP;
  TRY_VOID(ofs().CopyUp(*this, kCopyAllData));
  vfs::Inode& u = upper()->inode();
  TRY_VOID(u.SetXattr(name, value, flags));
  u.TouchCTime();
  SyncAttrs();
  return OkResult();
}

KResult<std::vector<std::string>> OverlayInode::ListXattr() {
  TRY(std::vector<std::string> names, real()->inode().ListXattr());
  std::erase_if(names, [](const std::string& n) { return IsPrivateXattr(n); });
  return names;
}

KResult<void> OverlayInode::RemoveXattr(const std::string& name) {
  if (IsPrivateXattr(name)) return kEOPNOTSUPP;
  // ovl_xattr_set: removing a name the lower file lacks copies nothing up.
  if (!upper()) TRY_VOID(lower_->inode().GetXattr(name));
  TRY_VOID(ofs().CopyUp(*this, kCopyAllData));
  vfs::Inode& u = upper()->inode();
  TRY_VOID(u.RemoveXattr(name));
  u.TouchCTime();
  SyncAttrs();
  return OkResult();
}

KResult<std::string> OverlayInode::Readlink() {
  return real()->inode().Readlink();
}

// --- Open ---

KResult<std::shared_ptr<vfs::VfsFile>> OverlayInode::Open(
    const vfs::VirtualDentry& vd, uint32_t flags) {
  if (type() == S_IFIFO) return fifo_->Open(vd, flags);
  if (!IsRegular()) return kENXIO;
  // ovl_open_need_copy_up: any open for writing copies up first (O_TRUNC
  // already did, with no data, through SetAttr).
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) {
    TRY_VOID(ofs().CopyUp(*this, kCopyAllData));
  }
  std::shared_ptr<vfs::Dentry> up = upper();
  std::shared_ptr<vfs::Dentry> r = up ? up : lower_;
  vfs::VirtualDentry rvd{up ? ofs().upper_mount() : ofs().lower_mount(), r};
  uint32_t rflags = flags & ~uint32_t{O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY};
  TRY(std::shared_ptr<vfs::VfsFile> rf, r->inode().Open(rvd, rflags));
  return std::shared_ptr<vfs::VfsFile>(
      std::make_shared<OverlayFile>(vd, flags, std::move(rf), up != nullptr));
}

}  // namespace sandbox::fs::overlay
