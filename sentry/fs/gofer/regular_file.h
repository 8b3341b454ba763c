// GoferRegularFile: a host regular file, and GoferFileDescription, its open
// file description.
//
// Data goes straight to host FDs donated by the Gofer (pread/pwrite), never
// over the socket. The inode has one FD slot per access mode (FdCache): an
// open whose mode (or O_RDWR) is cached makes no Gofer call, every other
// open makes one Open call, and an FD evicted by the LRU is opened again at
// the next read or write.
//
// Sizes: on exclusive mounts the cached size is kept exact after each
// write; times and blocks are refetched by fstat on the cached FD at the
// next stat (no Gofer call). O_APPEND writes take the host size from fstat
// under append_mu_, so appends are atomic among the Sentry's writers.
// O_SYNC / O_DSYNC descriptions fsync / fdatasync after each write.
//
// Locking: append_mu_ serializes appending writes of this inode (it is
// taken before Inode::mu_, and a Gofer Open may be made under it).
#ifndef SENTRY_FS_GOFER_REGULAR_FILE_H_
#define SENTRY_FS_GOFER_REGULAR_FILE_H_

#include <memory>

#include "absl/types/span.h"
#include "sentry/fs/gofer/fd_cache.h"
#include "sentry/fs/gofer/inode.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::fs::gofer {

class GoferRegularFile final : public GoferInode {
 public:
  using GoferInode::GoferInode;
  ~GoferRegularFile() override;

  KResult<std::shared_ptr<vfs::VfsFile>> Open(const vfs::VirtualDentry& vd,
                                              uint32_t flags) override;

  // A host FD that can read and/or write the file: a cached one, or a new
  // one from the Gofer (one Open call).
  KResult<std::shared_ptr<HostFd>> GetFd(bool read, bool write);
  // Caches `fd`, opened by the Gofer with access mode `acc` (O_RDONLY...).
  void AdoptFd(int acc, ::gofer::UniqueFd fd);

  KResult<size_t> ReadAt(absl::Span<uint8_t> dst, uint64_t offset);
  // Writes at *offset, or at the end if `append` (*offset is set to where
  // the write went).
  KResult<size_t> WriteAt(absl::Span<const uint8_t> src, uint64_t* offset,
                          bool append, uint32_t sync_flags);
  // The host's size (fstat on an FD; EIO if none can be had).
  KResult<uint64_t> HostSize();
  KResult<int64_t> SeekDataOrHole(int64_t offset, int whence);
  KResult<void> Fsync(bool data_only);

 protected:
  // ftruncate on a cached writable FD, else a SetAttr call.
  KResult<void> Truncate(uint64_t size) override;
  bool HostFstat(struct stat* st) override;

 private:
  static int SlotIndex(bool read, bool write) {
    return read && write ? O_RDWR : (write ? O_WRONLY : O_RDONLY);
  }
  // Any cached FD (for fstat, fsync), or null.
  std::shared_ptr<HostFd> AnyCachedFd();
  void NoteWrite(uint64_t end) ABSL_LOCKS_EXCLUDED(mu_);

  FdCache::Slot slots_[3];  // by access mode; guarded by the FdCache
  absl::Mutex append_mu_ ABSL_ACQUIRED_BEFORE(mu_);
};

class GoferFileDescription final : public vfs::VfsFile {
 public:
  GoferFileDescription(vfs::VirtualDentry vd, uint32_t flags,
                       std::shared_ptr<GoferRegularFile> file)
      : vfs::VfsFile(std::move(vd), flags), file_(std::move(file)) {}

  KResult<size_t> Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) override;
  KResult<size_t> Write(vfs::IoContext& ctx,
                        absl::Span<const uint8_t> src) override;
  KResult<size_t> PRead(vfs::IoContext& ctx, absl::Span<uint8_t> dst,
                        int64_t offset) override;
  KResult<size_t> PWrite(vfs::IoContext& ctx, absl::Span<const uint8_t> src,
                         int64_t offset) override;
  KResult<int64_t> Seek(int64_t offset, int whence) override;
  KResult<void> Sync(bool data_only) override;
  // mmap is not done yet (no page cache over the host FD): ENODEV.

 private:
  static constexpr uint32_t kRwfAppend = 0x10, kRwfNoappend = 0x20;
  bool Appends(const vfs::IoContext& ctx) const;
  uint32_t SyncFlags() const { return status_flags() & (O_SYNC | O_DSYNC); }

  const std::shared_ptr<GoferRegularFile> file_;
};

}  // namespace sandbox::fs::gofer

#endif  // SENTRY_FS_GOFER_REGULAR_FILE_H_
