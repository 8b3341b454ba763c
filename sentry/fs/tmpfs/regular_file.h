// RegularFile: a tmpfs regular file, and RegularFileDescription, its open
// file description.
//
// Data: a sparse map from page index to the MemoryFile page that holds it;
// absent pages are holes that read as zeros (SEEK_DATA/SEEK_HOLE report
// them). Pages beyond the size are freed on truncate, and the tail of the
// last page is zeroed so that growing the file again shows zeros.
//
// The same pages back mmap: RegularFile is the file's mm::Mappable, so
// read/write and every mapping share one copy. Translate allocates missing
// pages below the size (EFAULT, i.e. SIGBUS, at or past it). Truncate
// takes the doomed pages out of the map first (the file reads zeros there
// at once), then makes every mapping drop them, then frees them, so no
// guest ever maps a freed page.
//
// Direct I/O: read(2)/write(2) copy between the file's pages and the
// guest's pages inside the memory file (ReadToGuest/WriteFromGuest over a
// vfs::GuestIo), page by page under mu_, with no bounce buffer.
//
// Locking: pages_ and the size are protected by the inode's mu_; the list
// of mappings by mappings_mu_, an AddMapping lock (mm/mappable.h).
// write_mu_ (Linux's i_rwsem for writes) makes each write atomic with
// respect to other writes (O_APPEND) while mu_ is only held per piece:
// direct I/O takes mu_ under the MemoryManager's locks (as Translate
// does), so mu_ cannot be held across a whole transfer.
// Lock order:
//   VfsFile::offset_mu_
//     write_mu_
//       mappings_mu_
//         MemoryManager::mapping_mu_, active_mu_ (MappingSpace::Invalidate,
//                                    MemoryManager::WalkGuest)
//           Inode::mu_ (Translate, direct I/O pieces)
//             platform::MemoryFile
#ifndef SENTRY_FS_TMPFS_REGULAR_FILE_H_
#define SENTRY_FS_TMPFS_REGULAR_FILE_H_

#include <stdint.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/types/span.h"
#include "sentry/fs/fsutil/regular_file_io.h"
#include "sentry/fs/tmpfs/inode.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/mm/mappable.h"
#include "sentry/mm/mapping_set.h"
#include "sentry/vfs/inode.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::fs::tmpfs {

class RegularFile final : public TmpfsInode, public mm::Mappable {
 public:
  RegularFile(Filesystem& fs, uint64_t ino, const vfs::NewInodeAttrs& attrs);
  ~RegularFile() override;

  // Reads up to dst.size() bytes at `offset`, short at the end of file.
  KResult<size_t> ReadAt(absl::Span<uint8_t> dst, uint64_t offset)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Writes at `offset`, or at the end of file if `append` (then *offset is
  // set to where the write went). Short only if space ran out after some
  // bytes were written (ENOSPC otherwise); EFBIG past the maximum size.
  KResult<size_t> WriteAt(absl::Span<const uint8_t> src, uint64_t* offset,
                          bool append) ABSL_LOCKS_EXCLUDED(mu_);
  // Direct I/O. ReadToGuest: ReadAt into `dst` (0 at or past the end of
  // file without touching `dst`). WriteFromGuest: WriteAt from `src`; the
  // guest's bytes are checked first (EFAULT), then seals and space, per
  // page, as Linux's generic_perform_write (fault-in, then write_begin).
  KResult<size_t> ReadToGuest(vfs::GuestIo& dst, uint64_t offset)
      ABSL_LOCKS_EXCLUDED(mu_);
  KResult<size_t> WriteFromGuest(vfs::GuestIo& src, uint64_t* offset,
                                 bool append) ABSL_LOCKS_EXCLUDED(mu_);
  platform::MemoryFile& memory_file() const { return tmpfs().memory_file(); }
  // SEEK_DATA / SEEK_HOLE from `offset`: ENXIO at or past the end.
  KResult<int64_t> SeekDataOrHole(int64_t offset, bool data)
      ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t size() const ABSL_LOCKS_EXCLUDED(mu_);

  KResult<std::shared_ptr<vfs::VfsFile>> Open(const vfs::VirtualDentry& vd,
                                              uint32_t flags) override;

  // mm::Mappable.
  void AddMapping(mm::MappingSpace* space, uintptr_t addr, uint64_t offset,
                  uint64_t length, bool writable) override
      ABSL_LOCKS_EXCLUDED(mappings_mu_);
  void RemoveMapping(mm::MappingSpace* space, uintptr_t addr, uint64_t offset,
                     uint64_t length, bool writable) override
      ABSL_LOCKS_EXCLUDED(mappings_mu_);
  KResult<std::vector<mm::Translation>> Translate(
      uint64_t required_offset, uint64_t required_length,
      uint64_t optional_offset, uint64_t optional_length,
      platform::AccessType access) override ABSL_LOCKS_EXCLUDED(mu_);
  void Residency(uint64_t offset, uint64_t pages, uint8_t* vec) override
      ABSL_LOCKS_EXCLUDED(mu_);
  // MADV_REMOVE: fallocate(PUNCH_HOLE | KEEP_SIZE), seals and all.
  KResult<void> PunchHole(uint64_t offset, uint64_t length) override
      ABSL_LOCKS_EXCLUDED(mu_, mappings_mu_);
  // Write seals: a new shared writable mapping is EPERM, a shared read-only
  // one may never gain PROT_WRITE (memfd_check_seals_mmap).
  KResult<int> CheckNewMapping(bool shared, int prot, int max_prot) override;
  // AddMapping, but EPERM for a writable one if the file is write-sealed
  // (checked under mappings_mu_, atomically with AddSeals' EBUSY check).
  KResult<void> AddNewMapping(mm::MappingSpace* space, uintptr_t addr,
                              uint64_t offset, uint64_t length,
                              bool writable) override
      ABSL_LOCKS_EXCLUDED(mappings_mu_);

  // ---- Seals (fcntl F_ADD_SEALS / F_GET_SEALS) and memfd. ----
  // Every tmpfs file is sealable in principle, as Linux's shmem files are,
  // but starts with F_SEAL_SEAL (no seal may be added); memfd_create with
  // MFD_ALLOW_SEALING (or MFD_NOEXEC_SEAL) starts without it. Seals are
  // enforced by WriteAt (F_SEAL_WRITE, F_SEAL_FUTURE_WRITE, F_SEAL_GROW),
  // Truncate (SHRINK, GROW), Allocate (WRITE for hole punching, GROW) and
  // mmap (CheckNewMapping).
  uint32_t seals() const { return seals_.load(std::memory_order_acquire); }
  // F_ADD_SEALS (the caller checked the description is writable): EINVAL
  // for unknown bits, EPERM if F_SEAL_SEAL is set, EBUSY for F_SEAL_WRITE
  // while a shared writable mapping exists. F_SEAL_EXEC on a file with an
  // exec bit implies the write, shrink and grow seals (Linux 6.3+).
  KResult<void> AddSeals(uint32_t seals) ABSL_LOCKS_EXCLUDED(mappings_mu_, mu_);
  // memfd_create (memfd.h): the initial seals. Called before the file is
  // shared with anyone. (Its name is its dentry's.)
  void InitMemfd(uint32_t seals);

 protected:
  KResult<void> Truncate(uint64_t size) override
      ABSL_LOCKS_EXCLUDED(mu_, mappings_mu_);
  // 0 and KEEP_SIZE allocate pages (ENOSPC), PUNCH_HOLE|KEEP_SIZE frees
  // whole pages and zeroes partial ones; other modes EOPNOTSUPP.
  KResult<void> Allocate(uint32_t mode, uint64_t offset, uint64_t len) override
      ABSL_LOCKS_EXCLUDED(mu_, mappings_mu_);
  uint64_t BlocksLocked() const override ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // F_SEAL_EXEC: the exec bits may not change (EPERM).
  KResult<void> CheckSetAttr(const vfs::SetAttrRequest& req) override
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  Filesystem& tmpfs() const { return static_cast<Filesystem&>(fs()); }
  // Every mapping drops [offset, end) (page-aligned), then `pages` (taken
  // out of pages_ already) are freed. `even_private`: private copies of
  // those pages are dropped too (truncation: they now lie past the end).
  void InvalidateAndFree(uint64_t offset, uint64_t end,
                         const std::vector<uint64_t>& pages,
                         bool even_private = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mappings_mu_);
  // Zeroes [from, to), which lies within one page, if that page exists.
  void ZeroInPageLocked(uint64_t from, uint64_t to)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The MemoryFile offset of page `index`, allocating it if absent.
  KResult<uint64_t> PageLocked(uint64_t index)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::btree_map<uint64_t, uint64_t> pages_ ABSL_GUARDED_BY(mu_);

  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mappings_mu_, mu_);

  absl::Mutex mappings_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mm::MappingSet mappings_ ABSL_GUARDED_BY(mappings_mu_);

  // F_SEAL_* bits. Changed only with mappings_mu_ and mu_ both held (so
  // AddSeals' EBUSY check is atomic with mapping and with writes); read
  // under either lock, or without one where a stale value is harmless.
  std::atomic<uint32_t> seals_{0x0001 /* F_SEAL_SEAL */};
};

// An open tmpfs regular file: offset, O_APPEND, lseek incl. SEEK_DATA and
// SEEK_HOLE.
// read/write, pread/pwrite and direct I/O are fsutil::RegularFileIo's.
class RegularFileDescription final
    : public fsutil::RegularFileIo<RegularFileDescription, RegularFile> {
 public:
  RegularFileDescription(vfs::VirtualDentry vd, uint32_t flags,
                         std::shared_ptr<RegularFile> file)
      : RegularFileIo(std::move(vd), flags, std::move(file)) {}

  bool CanDirectIo(const platform::MemoryFile& mf) const override {
    return &mf == &file_->memory_file();
  }
  KResult<int64_t> Seek(int64_t offset, int whence) override;
  // The file's pages, holding what an open file holds (Linux's
  // vma->vm_file): the mount, and through it the tmpfs instance the
  // file's pages are counted in, so a mapping may outlive the last
  // descriptor (a memfd's private mount goes with its last descriptor).
  // The pointer is file_ itself, the same for every mapping of the file.
  std::shared_ptr<mm::Mappable> GetMappable() override;
  KResult<uint32_t> GetSeals() override { return file_->seals(); }
  KResult<void> AddSeals(uint32_t seals) override {
    return file_->AddSeals(seals);
  }
  const std::shared_ptr<RegularFile>& file() const { return file_; }

 private:
  friend RegularFileIo;
  // The writes of RegularFileIo.
  KResult<size_t> WriteFile(absl::Span<const uint8_t> src, uint64_t* off,
                            bool append) {
    return file_->WriteAt(src, off, append);
  }
  KResult<size_t> WriteFileFromGuest(vfs::GuestIo& src, uint64_t* off,
                                     bool append) {
    return file_->WriteFromGuest(src, off, append);
  }
};

}  // namespace sandbox::fs::tmpfs

#endif  // SENTRY_FS_TMPFS_REGULAR_FILE_H_
