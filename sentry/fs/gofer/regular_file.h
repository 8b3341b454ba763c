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
// mmap (page_cache.cc): the inode is an mm::Mappable whose pages are a page
// cache in the memory file (Options::memory_file), filled from the host FD
// on first touch. Coherence with read/write: write(2) goes to the host and
// into the cached pages it overlaps; read(2) first writes dirty pages back.
// Pages translated while a shared writable mapping exists are dirty (stores
// do not fault, so they stay dirty while such a mapping exists); they are
// written back (never past the host's end of file) when such a mapping
// goes, on fsync, before read and truncate, and when the inode dies.
// msync(2) does not reach the Mappable yet (the mm has no hook): a store is
// on the host at the latest when its mapping goes.
// Shared (non-exclusive) mounts do not see host changes to cached pages.
//
// Small files (exclusive read-only mounts: the sandbox's root): the first
// read of a file of at most Options::max_cached_file_size bytes reads all
// of it from the host into data_ (within max_cached_file_bytes for the
// whole file system); from then on read(2) copies from there into the
// guest's pages (no host syscall, as tmpfs), and an O_RDONLY open needs no
// host FD (the host allowed it once; nothing changes on an exclusive
// mount). Nothing can change the content: the Sentry does not write to a
// read-only mount and the host does not change an exclusive one. atime:
// Linux does not update it on a read-only mount, and these reads no longer
// make the host do it either (the cached stat never showed the host's
// change). The data lives until the inode dies.
//
// Locking: append_mu_ serializes appending writes of this inode (it is
// taken before Inode::mu_, and a Gofer Open may be made under it).
// mappings_mu_ (an AddMapping lock) is taken before MemoryManager locks,
// cache_mu_ (the pages) after them (Translate); a Gofer Open may be made
// under cache_mu_ (filling a page needs an FD). data_mu_ serializes the
// fill of data_ (a Gofer Open may be made under it; it is taken before
// Inode::mu_); data_ is immutable once data_state_ says kDataCached, and
// read without a lock from then on.
#ifndef SENTRY_FS_GOFER_REGULAR_FILE_H_
#define SENTRY_FS_GOFER_REGULAR_FILE_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/types/span.h"
#include "sentry/fs/fsutil/regular_file_io.h"
#include "sentry/fs/gofer/fd_cache.h"
#include "sentry/fs/gofer/inode.h"
#include "sentry/mm/mappable.h"
#include "sentry/mm/mapping_set.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::fs::gofer {

class GoferRegularFile final : public GoferInode, public mm::Mappable {
 public:
  using GoferInode::GoferInode;
  ~GoferRegularFile() override;

  // mm::Mappable (page_cache.cc).
  void AddMapping(mm::MappingSpace* space, uintptr_t addr, uint64_t offset,
                  uint64_t length, bool writable) override
      ABSL_LOCKS_EXCLUDED(mappings_mu_);
  void RemoveMapping(mm::MappingSpace* space, uintptr_t addr, uint64_t offset,
                     uint64_t length, bool writable) override
      ABSL_LOCKS_EXCLUDED(mappings_mu_);
  KResult<std::vector<mm::Translation>> Translate(
      uint64_t required_offset, uint64_t required_length,
      uint64_t optional_offset, uint64_t optional_length,
      platform::AccessType access) override ABSL_LOCKS_EXCLUDED(cache_mu_);
  void Residency(uint64_t offset, uint64_t pages, uint8_t* vec) override
      ABSL_LOCKS_EXCLUDED(cache_mu_);
  // MADV_REMOVE: fallocate(PUNCH_HOLE | KEEP_SIZE).
  KResult<void> PunchHole(uint64_t offset, uint64_t length) override;
  // fallocate(2) on a writable host FD: 0 and KEEP_SIZE allocate,
  // PUNCH_HOLE|KEEP_SIZE frees (cached pages read zeros there at once);
  // other modes EOPNOTSUPP. The host's errors (ENOSPC, EOPNOTSUPP) pass.
  KResult<void> Allocate(uint32_t mode, uint64_t offset, uint64_t len) override;
  // Writes dirty cached pages in [offset, end) back to the host.
  KResult<void> WriteBack(uint64_t offset, uint64_t end)
      ABSL_LOCKS_EXCLUDED(cache_mu_);
  size_t cached_pages() const ABSL_LOCKS_EXCLUDED(cache_mu_);

  KResult<std::shared_ptr<vfs::VfsFile>> Open(const vfs::VirtualDentry& vd,
                                              uint32_t flags) override;

  // A host FD that can read and/or write the file: a cached one, or a new
  // one from the Gofer (one Open call).
  KResult<std::shared_ptr<HostFd>> GetFd(bool read, bool write);
  // Caches `fd`, opened by the Gofer with access mode `acc` (O_RDONLY...).
  void AdoptFd(int acc, ::gofer::UniqueFd fd);

  KResult<size_t> ReadAt(absl::Span<uint8_t> dst, uint64_t offset);
  // Whether the file's whole content is held in the Sentry (small files).
  bool data_cached() const {
    return data_state_.load(std::memory_order_acquire) == kDataCached;
  }
  // read(2) straight into guest memory: one host pread per run of the
  // guest's pages that is contiguous in the memory file (one for a buffer
  // in one run), into the Sentry's mapping of those pages; no bounce
  // buffer. Returns the bytes read: short at the end of file or where the
  // buffer stops being writable (EFAULT if nothing was read, but 0 at the
  // end of file even into a bad buffer, as Linux). The preads run inside
  // the guest walk, under the MemoryManager's reader locks, so a page
  // cannot be freed (MADV_DONTNEED, munmap) while the host writes into it.
  KResult<size_t> ReadToGuest(vfs::GuestIo& dst, uint64_t offset);
  // write(2) straight from guest memory (one host pwrite per run), at
  // *offset or at the end if `append` (*offset is set to where it went).
  // Short where the buffer stops being readable (EFAULT if nothing).
  KResult<size_t> WriteFromGuest(vfs::GuestIo& src, uint64_t* offset,
                                 bool append, uint32_t sync_flags);
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

  // Copies src (just written at `offset`) into the cached pages it covers.
  void UpdateCachedPages(absl::Span<const uint8_t> src, uint64_t offset)
      ABSL_LOCKS_EXCLUDED(cache_mu_);
  // The same from n bytes at `src_off` of `src_mf` (guest pages), copied
  // inside the memory file when it is the page cache's.
  void UpdateCachedPagesFrom(platform::MemoryFile& src_mf, uint64_t src_off,
                             size_t n, uint64_t offset)
      ABSL_LOCKS_EXCLUDED(cache_mu_);
  // After a write of [offset, offset + n): size, sync flags.
  KResult<void> FinishWrite(HostFd& fd, uint64_t end, uint32_t sync_flags);
  // Drops cached pages past `size` (truncation) and zeroes the tail of the
  // last one; mappings of the dropped range are invalidated first.
  void TruncateCache(uint64_t old_size, uint64_t size)
      ABSL_LOCKS_EXCLUDED(mappings_mu_, cache_mu_);
  KResult<void> WriteBackLocked(uint64_t offset, uint64_t end)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(cache_mu_);
  // Caches the run of absent pages from `off` (page-aligned; at most
  // kFillRun pages, below `end`) with one pread of the host FD.
  KResult<void> FillLocked(HostFd& fd, uint64_t off, uint64_t end)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(cache_mu_);
  static constexpr uint64_t kFillRun = 16;

  // The file's content if it is (or can now be) held in the Sentry, else
  // null (then read from the host).
  const std::string* CachedData();
  const std::string* FillData() ABSL_LOCKS_EXCLUDED(data_mu_, mu_);
  enum : uint8_t { kDataUnknown, kDataCached, kDataUncacheable };
  absl::Mutex data_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::atomic<uint8_t> data_state_{kDataUnknown};
  // Written once under data_mu_ before data_state_ becomes kDataCached.
  std::string data_;

  FdCache::Slot slots_[3];  // by access mode; guarded by the FdCache
  absl::Mutex append_mu_ ABSL_ACQUIRED_BEFORE(mu_);

  struct Page {
    uint64_t mf_offset = 0;
    bool dirty = false;
  };
  absl::Mutex mappings_mu_;
  mm::MappingSet mappings_ ABSL_GUARDED_BY(mappings_mu_);
  // Shared writable mappings now (read by Translate without mappings_mu_).
  std::atomic<int64_t> writable_mappings_{0};
  mutable absl::Mutex cache_mu_;
  absl::btree_map<uint64_t, Page> pages_ ABSL_GUARDED_BY(cache_mu_);
  // Whether pages_ holds a dirty page (read without cache_mu_ as a hint).
  std::atomic<bool> any_dirty_{false};
  std::atomic<bool> any_pages_{false};
};

// read/write, pread/pwrite and direct I/O are fsutil::RegularFileIo's.
class GoferFileDescription final
    : public fsutil::RegularFileIo<GoferFileDescription, GoferRegularFile> {
 public:
  GoferFileDescription(vfs::VirtualDentry vd, uint32_t flags,
                       std::shared_ptr<GoferRegularFile> file)
      : RegularFileIo(std::move(vd), flags, std::move(file)) {}

  // Direct I/O with any memory file: the host FD reads into (writes from)
  // the Sentry's mapping of the guest's pages.
  bool CanDirectIo(const platform::MemoryFile&) const override { return true; }
  KResult<int64_t> Seek(int64_t offset, int whence) override;
  KResult<void> Sync(bool data_only) override;
  // The inode's page cache, or null (ENODEV) without a memory file.
  std::shared_ptr<mm::Mappable> GetMappable() override;

 private:
  friend RegularFileIo;
  // The writes of RegularFileIo: O_SYNC/O_DSYNC pass on to the host.
  KResult<size_t> WriteFile(absl::Span<const uint8_t> src, uint64_t* off,
                            bool append) {
    return file_->WriteAt(src, off, append, SyncFlags());
  }
  KResult<size_t> WriteFileFromGuest(vfs::GuestIo& src, uint64_t* off,
                                     bool append) {
    return file_->WriteFromGuest(src, off, append, SyncFlags());
  }
  uint32_t SyncFlags() const { return status_flags() & (O_SYNC | O_DSYNC); }
};

}  // namespace sandbox::fs::gofer

#endif  // SENTRY_FS_GOFER_REGULAR_FILE_H_
