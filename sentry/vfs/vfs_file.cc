#include "sentry/vfs/vfs_file.h"

#include <dirent.h>
#include <string.h>
#include <unistd.h>

#include "sentry/vfs/lock/file_locks.h"
#include "sentry/vfs/permissions.h"

namespace sandbox::vfs {

VfsFile::~VfsFile() {
  if (vd_.dentry == nullptr) return;
  inode().locks().ReleaseDescription(this);
  if (holds_write_access_) inode().PutWriteAccess();
}

lock::FileLocks* VfsFile::locks() { return &inode().locks(); }

KResult<void> VfsFile::RemovePrivs(const IoContext& ctx) {
  if (ctx.creds == nullptr) return OkResult();
  uint32_t mode = inode().mode() & 07777;
  uint32_t kept = ModeAfterWrite(*ctx.creds, mode);
  if (kept == mode) return OkResult();
  SetAttrRequest req;
  req.mask = SetAttrRequest::kMode | SetAttrRequest::kCtime;
  req.mode = kept;
  req.ctime = Now();
  return inode().SetAttr(req);
}

KResult<size_t> VfsFile::IoAtOffset(
    int64_t offset, absl::FunctionRef<KResult<size_t>(uint64_t&)> io) {
  if (offset >= 0) {
    uint64_t off = static_cast<uint64_t>(offset);
    return io(off);
  }
  absl::MutexLock l(&offset_mu_);
  uint64_t off = static_cast<uint64_t>(offset_);
  TRY(size_t n, io(off));
  offset_ = static_cast<int64_t>(off + n);
  return n;
}

KResult<int64_t> VfsFile::SeekLocked(int64_t offset, int whence, int64_t size) {
  int64_t base;
  switch (whence) {
    case SEEK_SET:
      base = 0;
      break;
    case SEEK_CUR:
      base = offset_;
      break;
    case SEEK_END:
      base = size;
      break;
    default:
      return kEINVAL;
  }
  int64_t result;
  if (__builtin_add_overflow(base, offset, &result)) return kEOVERFLOW;
  if (result < 0) return kEINVAL;
  offset_ = result;
  return result;
}

KResult<void> DirectoryFile::IterDirents(DirentSink sink) {
  absl::MutexLock ol(&offset_mu_);
  Dentry& d = *vd_.dentry;
  // iterate_dir: a removed directory (IS_DEADDIR) lists nothing.
  if (d.IsDead()) return kENOENT;
  if (offset_ == 0) {
    if (!sink(DirEntry{".", d.inode().ino(), DT_DIR, 1})) return OkResult();
    offset_ = 1;
  }
  absl::ReaderMutexLock l(&d.fs().tree_mu());
  if (offset_ == 1) {
    // The parent inside this file system (a file system root is its own
    // parent, as Linux's dcache_readdir reports it).
    std::shared_ptr<Dentry> parent = d.parent();
    uint64_t pino = parent ? parent->inode().ino() : d.inode().ino();
    if (!sink(DirEntry{"..", pino, DT_DIR, 2})) return OkResult();
    offset_ = 2;
  }
  if (d.dead()) return kENOENT;
  int64_t next = offset_;
  KResult<void> r = d.inode().IterDirents(offset_, [&](const DirEntry& e) {
    if (!sink(e)) return false;
    next = e.next_offset;
    return true;
  });
  offset_ = next;
  return r;
}

KResult<int64_t> DirectoryFile::Seek(int64_t offset, int whence) {
  absl::MutexLock ol(&offset_mu_);
  if (whence != SEEK_SET && whence != SEEK_CUR) return kEINVAL;
  return SeekLocked(offset, whence, 0);
}

bool AppendDirent64(absl::Span<uint8_t> buf, size_t* used, const DirEntry& e) {
  // struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen;
  //                         u8 d_type; char d_name[]; } padded to 8.
  constexpr size_t kHeader = 19;
  size_t reclen = (kHeader + e.name.size() + 1 + 7) & ~size_t{7};
  if (buf.size() - *used < reclen) return false;
  uint8_t* p = buf.data() + *used;
  memset(p, 0, reclen);
  uint64_t ino = e.ino;
  int64_t off = e.next_offset;
  uint16_t rl = static_cast<uint16_t>(reclen);
  memcpy(p, &ino, 8);
  memcpy(p + 8, &off, 8);
  memcpy(p + 16, &rl, 2);
  p[18] = e.type;
  memcpy(p + kHeader, e.name.data(), e.name.size());
  *used += reclen;
  return true;
}

}  // namespace sandbox::vfs
