#include "sentry/vfs/inode.h"

#include <dirent.h>
#include <time.h>

#include "sentry/vfs/filesystem.h"
#include "sentry/vfs/mount.h"

namespace sandbox::vfs {

abi::Timespec Now() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return {ts.tv_sec, ts.tv_nsec};
}

uint8_t DirentType(uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return DT_REG;
    case S_IFDIR:
      return DT_DIR;
    case S_IFLNK:
      return DT_LNK;
    case S_IFIFO:
      return DT_FIFO;
    case S_IFSOCK:
      return DT_SOCK;
    case S_IFCHR:
      return DT_CHR;
    case S_IFBLK:
      return DT_BLK;
    default:
      return DT_UNKNOWN;
  }
}

Inode::Inode(Filesystem& fs, uint64_t ino, const NewInodeAttrs& attrs)
    : fs_(fs), ino_(ino), type_(attrs.mode & S_IFMT) {
  abi::Timespec now = Now();
  absl::MutexLock l(&mu_);
  attrs_.mode = attrs.mode;
  attrs_.uid = attrs.uid;
  attrs_.gid = attrs.gid;
  attrs_.rdev = attrs.rdev;
  attrs_.nlink = 1;
  attrs_.atime = attrs_.mtime = attrs_.ctime = now;
  PublishPermLocked();
}

InodeAttrs Inode::Attrs() const {
  absl::ReaderMutexLock l(&mu_);
  return attrs_;
}

uint32_t Inode::mode() const {
  absl::ReaderMutexLock l(&mu_);
  return attrs_.mode;
}

uint64_t Inode::nlink() const {
  absl::ReaderMutexLock l(&mu_);
  return attrs_.nlink;
}

uint64_t Inode::BlocksLocked() const { return (attrs_.size + 511) / 512; }

abi::Stat Inode::Stat() const {
  abi::Stat st{};
  absl::ReaderMutexLock l(&mu_);
  st.st_dev = fs_.dev();
  st.st_ino = ino_;
  st.st_nlink = attrs_.nlink;
  st.st_mode = attrs_.mode;
  st.st_uid = attrs_.uid;
  st.st_gid = attrs_.gid;
  st.st_rdev = attrs_.rdev;
  st.st_size = static_cast<int64_t>(attrs_.size);
  st.st_blksize = 4096;
  st.st_blocks = static_cast<int64_t>(BlocksLocked());
  st.st_atim = attrs_.atime;
  st.st_mtim = attrs_.mtime;
  st.st_ctim = attrs_.ctime;
  return st;
}

KResult<void> Inode::SetAttr(const SetAttrRequest& req) {
  TRY_VOID(CheckSetAttr(req));
  if (req.mask & SetAttrRequest::kSize) {
    if (type_ == S_IFDIR) return kEISDIR;
    if (type_ != S_IFREG) return kEINVAL;
    TRY_VOID(Truncate(req.size));
  }
  absl::MutexLock l(&mu_);
  if (req.mask & SetAttrRequest::kMode) {
    attrs_.mode = (attrs_.mode & S_IFMT) | (req.mode & 07777);
  }
  if (req.mask & SetAttrRequest::kUid) attrs_.uid = req.uid;
  if (req.mask & SetAttrRequest::kGid) attrs_.gid = req.gid;
  PublishPermLocked();
  if (req.mask & SetAttrRequest::kAtime) attrs_.atime = req.atime;
  if (req.mask & SetAttrRequest::kMtime) attrs_.mtime = req.mtime;
  if (req.mask & SetAttrRequest::kCtime) attrs_.ctime = req.ctime;
  return OkResult();
}

void Inode::TouchCMTime() {
  abi::Timespec now = Now();
  absl::MutexLock l(&mu_);
  attrs_.ctime = attrs_.mtime = now;
}

void Inode::TouchCTime() {
  abi::Timespec now = Now();
  absl::MutexLock l(&mu_);
  attrs_.ctime = now;
}

void Inode::TouchATime() {
  abi::Timespec now = Now();
  absl::MutexLock l(&mu_);
  attrs_.atime = now;
}

void Inode::IncLinks() {
  abi::Timespec now = Now();
  absl::MutexLock l(&mu_);
  ++attrs_.nlink;
  attrs_.ctime = now;
}

void Inode::DecLinks() {
  abi::Timespec now = Now();
  absl::MutexLock l(&mu_);
  if (attrs_.nlink > 0) --attrs_.nlink;
  attrs_.ctime = now;
}

KResult<std::shared_ptr<Inode>> Inode::Lookup(std::string_view) {
  return kENOTDIR;
}
KResult<std::shared_ptr<Inode>> Inode::CreateChild(std::string_view,
                                                   const NewInodeAttrs&,
                                                   std::string_view) {
  return kENOTDIR;
}
KResult<std::shared_ptr<Inode>> Inode::CreateTmpfile(const NewInodeAttrs&) {
  return kEOPNOTSUPP;
}
KResult<void> Inode::LinkChild(std::string_view,
                               const std::shared_ptr<Inode>&) {
  return kENOTDIR;
}
KResult<void> Inode::RemoveChild(std::string_view, Inode&) { return kENOTDIR; }
KResult<void> Inode::RenameChild(std::string_view, Inode&, std::string_view,
                                 uint32_t) {
  return kENOTDIR;
}
KResult<void> Inode::IterDirents(int64_t, DirentSink) { return kENOTDIR; }
bool Inode::IsEmptyDir() { return false; }
KResult<void> Inode::GetWriteAccess() {
  int n = write_count_.load(std::memory_order_acquire);
  do {
    if (n < 0) return kETXTBSY;
  } while (
      !write_count_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel));
  return OkResult();
}

KResult<void> Inode::DenyWriteAccess() {
  int n = write_count_.load(std::memory_order_acquire);
  do {
    if (n > 0) return kETXTBSY;
  } while (
      !write_count_.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel));
  return OkResult();
}

KResult<std::string> Inode::Readlink() { return kEINVAL; }
KResult<VirtualDentry> Inode::MagicLink() { return kENOENT; }
KResult<std::string> Inode::GetXattr(const std::string&) { return kEOPNOTSUPP; }
KResult<void> Inode::SetXattr(const std::string&, std::string_view, int) {
  return kEOPNOTSUPP;
}
KResult<std::vector<std::string>> Inode::ListXattr() { return kEOPNOTSUPP; }
KResult<void> Inode::RemoveXattr(const std::string&) { return kEOPNOTSUPP; }
KResult<std::shared_ptr<VfsFile>> Inode::Open(const VirtualDentry&, uint32_t) {
  return kENXIO;
}
KResult<void> Inode::Truncate(uint64_t) { return kEINVAL; }
KResult<void> Inode::Allocate(uint32_t, uint64_t, uint64_t) {
  return kEOPNOTSUPP;
}

}  // namespace sandbox::vfs
