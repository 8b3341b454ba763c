#include "sentry/fs/gofer/inode.h"

#include <string.h>
#include <sys/stat.h>

namespace sandbox::fs::gofer {
namespace {

vfs::NewInodeAttrs InitialAttrs(const wire::Stat& st) {
  vfs::NewInodeAttrs a;
  a.mode = st.mode;
  a.uid = st.uid;
  a.gid = st.gid;
  a.rdev = st.rdev;
  return a;
}

// The largest xattr value or name list the Gofer sends (one call each).
constexpr uint32_t kXattrMax = wire::kMaxXattrValueLen;

}  // namespace

GoferInode::GoferInode(GoferFilesystem& fs, const wire::Inode& wi)
    : vfs::Inode(fs, wi.stat.ino, InitialAttrs(wi.stat)),
      handle_(wi.handle),
      host_dev_(wi.stat.dev) {
  ApplyStat(wi.stat);
}

GoferInode::~GoferInode() {
  gfs().ForgetInode(host_dev_, ino(), this);
  gfs().ReleaseHandle(handle_);
}

void GoferInode::ApplyStat(const wire::Stat& st) {
  if ((st.mode & S_IFMT) != type()) return;
  absl::MutexLock l(&mu_);
  attrs_.mode = st.mode;
  attrs_.uid = st.uid;
  attrs_.gid = st.gid;
  PublishPermLocked();
  attrs_.nlink = st.nlink;
  attrs_.size = st.size;
  attrs_.rdev = st.rdev;
  attrs_.atime = ToTimespec(st.atime);
  attrs_.mtime = ToTimespec(st.mtime);
  attrs_.ctime = ToTimespec(st.ctime);
  blocks_ = st.blocks;
  blksize_.store(st.blksize, std::memory_order_relaxed);
  stale_.store(false, std::memory_order_release);
}

void GoferInode::ApplyHostStat(const struct stat& st) {
  wire::Stat w;
  w.mode = st.st_mode;
  w.uid = st.st_uid;
  w.gid = st.st_gid;
  w.nlink = static_cast<uint32_t>(st.st_nlink);
  w.size = static_cast<uint64_t>(st.st_size);
  w.rdev = st.st_rdev;
  w.blocks = static_cast<uint64_t>(st.st_blocks);
  w.blksize = static_cast<uint32_t>(st.st_blksize);
  w.atime = {st.st_atim.tv_sec, static_cast<uint32_t>(st.st_atim.tv_nsec)};
  w.mtime = {st.st_mtim.tv_sec, static_cast<uint32_t>(st.st_mtim.tv_nsec)};
  w.ctime = {st.st_ctim.tv_sec, static_cast<uint32_t>(st.st_ctim.tv_nsec)};
  ApplyStat(w);
}

void GoferInode::MarkStale() {
  absl::MutexLock l(&mu_);
  MarkStaleLocked();
}

bool GoferInode::NeedsRefresh() const {
  if (!gfs().exclusive()) return true;
  return stale_.load(std::memory_order_acquire);
}

KResult<void> GoferInode::Refresh() {
  struct stat hs;
  if (HostFstat(&hs)) {
    ApplyHostStat(hs);
    return OkResult();
  }
  wire::StatResp resp;
  TRY_VOID(gfs().Call(wire::StatReq{handle_}, &resp));
  if ((resp.stat.mode & S_IFMT) != type()) return kEIO;
  ApplyStat(resp.stat);
  return OkResult();
}

abi::Stat GoferInode::Stat() const {
  if (NeedsRefresh()) {
    // Stat() is const for the VFS; refetching only refreshes the cache.
    (void)const_cast<GoferInode*>(this)->Refresh();
  }
  // The cached path: one shared lock (the base's), no allocation, no call.
  abi::Stat st = vfs::Inode::Stat();
  st.st_blksize = blksize_.load(std::memory_order_relaxed);
  return st;
}

KResult<void> GoferInode::CheckSetAttr(const vfs::SetAttrRequest& req) {
  using R = vfs::SetAttrRequest;
  // The base's checks come after this hook; Linux's order puts them first.
  if (req.mask & R::kSize) {
    if (IsDir()) return kEISDIR;
    if (!IsRegular()) return kEINVAL;
  }
  if (gfs().read_only()) return kEROFS;
  wire::SetAttrReq w;
  w.handle = handle_;
  if (req.mask & R::kMode) {
    w.mask |= wire::kSetMode;
    w.mode = req.mode & 07777;
  }
  if (req.mask & R::kUid) {
    w.mask |= wire::kSetUid;
    w.uid = req.uid;
  }
  if (req.mask & R::kGid) {
    w.mask |= wire::kSetGid;
    w.gid = req.gid;
  }
  // With a size change the times are "now", which the host's truncation
  // sets itself (do_truncate's ATTR_MTIME | ATTR_CTIME): no extra call.
  if (!(req.mask & R::kSize)) {
    if (req.mask & R::kAtime) {
      w.mask |= wire::kSetAtime;
      w.atime = {req.atime.tv_sec, static_cast<uint32_t>(req.atime.tv_nsec)};
    }
    if (req.mask & R::kMtime) {
      w.mask |= wire::kSetMtime;
      w.mtime = {req.mtime.tv_sec, static_cast<uint32_t>(req.mtime.tv_nsec)};
    }
  }
  // ctime (and blocks) are the host's: refetched at the next stat, after
  // the base class has updated the cache and Truncate has run.
  MarkStale();
  if (w.mask == 0) return OkResult();
  wire::Empty e;
  return gfs().Call(w, &e);
}

KResult<void> GoferInode::Truncate(uint64_t size) {
  if (gfs().read_only()) return kEROFS;
  wire::SetAttrReq w;
  w.handle = handle_;
  w.mask = wire::kSetSize;
  w.size = size;
  wire::Empty e;
  KResult<void> r = gfs().Call(w, &e);
  MarkStale();
  TRY_VOID(r);
  absl::MutexLock l(&mu_);
  attrs_.size = size;
  return OkResult();
}

KResult<std::string> GoferInode::GetXattr(const std::string& name) {
  wire::GetXattrResp resp;
  TRY_VOID(gfs().Call(wire::GetXattrReq{handle_, name, kXattrMax}, &resp));
  if (resp.length != resp.value.size()) return kEIO;
  return std::move(resp.value);
}

KResult<void> GoferInode::SetXattr(const std::string& name,
                                   std::string_view value, int flags) {
  if (gfs().read_only()) return kEROFS;
  wire::Empty e;
  KResult<void> r =
      gfs().Call(wire::SetXattrReq{handle_, name, std::string(value),
                                   static_cast<uint32_t>(flags)},
                 &e);
  MarkStale();  // ctime
  return r;
}

KResult<std::vector<std::string>> GoferInode::ListXattr() {
  // The Gofer serves user.* names only, which Linux keeps on regular files
  // and directories alone: any other file (a symlink: llistxattr) lists
  // none, as Linux's does without security labels, and the Gofer is not
  // asked (it refuses such nodes).
  uint32_t type;
  {
    absl::MutexLock l(&mu_);
    type = attrs_.mode & S_IFMT;
  }
  if (type != S_IFREG && type != S_IFDIR) return std::vector<std::string>{};
  wire::ListXattrResp resp;
  TRY_VOID(gfs().Call(wire::ListXattrReq{handle_, kXattrMax}, &resp));
  if (resp.length != resp.names.size()) return kEIO;
  std::vector<std::string> names;
  std::string_view rest = resp.names;
  while (!rest.empty()) {
    size_t nul = rest.find('\0');
    // Each name is NUL-terminated and non-empty.
    if (nul == std::string_view::npos || nul == 0) return kEIO;
    names.emplace_back(rest.substr(0, nul));
    rest.remove_prefix(nul + 1);
  }
  return names;
}

KResult<void> GoferInode::RemoveXattr(const std::string& name) {
  if (gfs().read_only()) return kEROFS;
  wire::Empty e;
  KResult<void> r = gfs().Call(wire::RemoveXattrReq{handle_, name}, &e);
  MarkStale();
  return r;
}

KResult<std::string> GoferSymlink::Readlink() {
  if (gfs().exclusive()) {
    absl::MutexLock l(&target_mu_);
    if (cached_) return target_;
  }
  wire::ReadlinkResp resp;
  TRY_VOID(gfs().Call(wire::ReadlinkReq{handle()}, &resp));
  // The decoder bounds the size and ReplyFits refuses an empty target; a
  // NUL inside cannot be a symlink target.
  if (resp.target.find('\0') != std::string::npos) return kEIO;
  if (gfs().exclusive()) {
    absl::MutexLock l(&target_mu_);
    target_ = resp.target;
    cached_ = true;
  }
  return std::move(resp.target);
}

}  // namespace sandbox::fs::gofer
