// VfsFile: a FileDescription opened through the VFS, so it knows where it
// was opened (a VirtualDentry: fstat, fchmod, fchdir, *at(dirfd) and
// /proc/self/fd use it) and its inode.
//
// Two generic kinds live here: DirectoryFile (getdents64 with "." and ".."
// and the directory's stable offsets) and PathFile (O_PATH: no I/O).
// File systems derive their own (tmpfs::RegularFile).
//
// Lock order: VfsFile::offset_mu_
//               Filesystem::tree_mu_ (getdents) / Inode::mu_ (read, write)
#ifndef SENTRY_VFS_VFS_FILE_H_
#define SENTRY_VFS_VFS_FILE_H_

#include <stdint.h>

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/inode.h"
#include "sentry/vfs/mount.h"

namespace sandbox::vfs {

class VfsFile : public FileDescription {
 public:
  VfsFile(VirtualDentry vd, uint32_t flags)
      : FileDescription(flags), vd_(std::move(vd)) {}

  const VirtualDentry& vd() const { return vd_; }
  const VirtualDentry* location() const override { return &vd_; }
  Inode& inode() const { return vd_.dentry->inode(); }

  KResult<abi::Stat> Stat() override { return inode().Stat(); }
  // In-memory file systems have nothing to write back (noop_fsync).
  KResult<void> Sync(bool) override { return OkResult(); }
  // The inode's advisory locks; the last close drops this description's
  // OFD and flock locks.
  lock::FileLocks* locks() override;
  ~VfsFile() override;

  // Records that this description holds one Inode::GetWriteAccess (open
  // for writing), released when it is destroyed. Called once by open.
  void HoldWriteAccess() { holds_write_access_ = true; }

  // getdents64: appends entries to `sink` from the current offset and
  // advances it past the entries taken. ENOTDIR for non-directories,
  // ENOENT for a directory that was removed.
  virtual KResult<void> IterDirents(DirentSink sink) { return kENOTDIR; }

 protected:
  // file_remove_privs: before a write by ctx.creds, drops S_ISUID (and
  // S_ISGID if group-executable) unless the writer has CAP_FSETID.
  KResult<void> RemovePrivs(const IoContext& ctx);

  // Generic lseek for a file whose size is `size` (SEEK_SET/CUR/END):
  // EINVAL for a negative result or an unknown whence.
  KResult<int64_t> SeekLocked(int64_t offset, int whence, int64_t size)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(offset_mu_);

  // The offset rule of read/write and pread/pwrite: `io(off)` transfers at
  // `off` (a write may move it first, to the end for O_APPEND) and returns
  // the count. With offset >= 0 (pread/pwrite) it runs at that offset and
  // the description's offset is untouched; with -1 it runs at the
  // description's offset under offset_mu_, which then ends just past what
  // was transferred (only what reached the guest, on a partial fault).
  KResult<size_t> IoAtOffset(int64_t offset,
                             absl::FunctionRef<KResult<size_t>(uint64_t&)> io)
      ABSL_LOCKS_EXCLUDED(offset_mu_);

  const VirtualDentry vd_;
  bool holds_write_access_ = false;  // set before the file is shared
  absl::Mutex offset_mu_;
  int64_t offset_ ABSL_GUARDED_BY(offset_mu_) = 0;
};

// An open directory. Offsets: 0 = ".", 1 = "..", then the file system's
// cookies (>= 2).
class DirectoryFile final : public VfsFile {
 public:
  using VfsFile::VfsFile;
  KResult<void> IterDirents(DirentSink sink) override;
  // SEEK_SET and SEEK_CUR to any offset >= 0 (a telldir cookie); EINVAL for
  // SEEK_END and others, as tmpfs gives.
  KResult<int64_t> Seek(int64_t offset, int whence) override;
  KResult<size_t> Read(IoContext&, absl::Span<uint8_t>) override {
    return kEISDIR;
  }
  KResult<size_t> PRead(IoContext&, absl::Span<uint8_t>, int64_t) override {
    return kEISDIR;
  }
};

// An O_PATH description: fstat, fchdir, *at() and close only; the other
// operations fail with EBADF, as Linux's empty f_op does.
class PathFile final : public VfsFile {
 public:
  using VfsFile::VfsFile;
  KResult<size_t> Read(IoContext&, absl::Span<uint8_t>) override {
    return kEBADF;
  }
  KResult<size_t> Write(IoContext&, absl::Span<const uint8_t>) override {
    return kEBADF;
  }
  KResult<size_t> PRead(IoContext&, absl::Span<uint8_t>, int64_t) override {
    return kEBADF;
  }
  KResult<size_t> PWrite(IoContext&, absl::Span<const uint8_t>,
                         int64_t) override {
    return kEBADF;
  }
  KResult<int64_t> Seek(int64_t, int) override { return kEBADF; }
  KResult<uint64_t> Ioctl(IoContext&, uint32_t, uint64_t) override {
    return kEBADF;
  }
  KResult<void> IterDirents(DirentSink) override { return kEBADF; }
};

// Serializes one entry as struct linux_dirent64 into `buf` at `*used`;
// false (nothing written) if it does not fit.
bool AppendDirent64(absl::Span<uint8_t> buf, size_t* used, const DirEntry& e);

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_VFS_FILE_H_
