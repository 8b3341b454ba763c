#include "sentry/fs/tmpfs/regular_file.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

#include "platform/long_work.h"

namespace sandbox::fs::tmpfs {
namespace {

constexpr uint64_t kPage = abi::kPageSize;
constexpr uint64_t kMaxFileSize = std::numeric_limits<int64_t>::max();

// F_SEAL_* (linux/fcntl.h; F_SEAL_EXEC is Linux 6.3+).
constexpr uint32_t kSealSeal = 0x0001;
constexpr uint32_t kSealShrink = 0x0002;
constexpr uint32_t kSealGrow = 0x0004;
constexpr uint32_t kSealWrite = 0x0008;
constexpr uint32_t kSealFutureWrite = 0x0010;
constexpr uint32_t kSealExec = 0x0020;
constexpr uint32_t kAllSeals = kSealSeal | kSealShrink | kSealGrow |
                               kSealWrite | kSealFutureWrite | kSealExec;
constexpr uint32_t kWriteSeals = kSealWrite | kSealFutureWrite;

}  // namespace

RegularFile::RegularFile(Filesystem& fs, uint64_t ino,
                         const vfs::NewInodeAttrs& attrs)
    : TmpfsInode(fs, ino, attrs) {}

RegularFile::~RegularFile() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  for (const auto& [index, off] : pages_)
    tmpfs().memory_file().Free(off, kPage);
  tmpfs().ReleasePages(pages_.size());
}

uint64_t RegularFile::size() const {
  absl::ReaderMutexLock l(&mu_);
  return attrs_.size;
}

uint64_t RegularFile::BlocksLocked() const {
  return pages_.size() * (kPage / 512);
}

KResult<uint64_t> RegularFile::PageLocked(uint64_t index) {
  auto it = pages_.find(index);
  if (it != pages_.end()) return it->second;
  if (!tmpfs().ReservePages(1)) return kENOSPC;
  absl::StatusOr<uint64_t> off = tmpfs().memory_file().Allocate(kPage);
  if (!off.ok()) {
    // The sandbox's memory (--memory) is used up even after the OOM
    // killer ran: ENOMEM, as a failed memory cgroup charge in
    // shmem_get_folio (the size= limit above is ENOSPC).
    tmpfs().ReleasePages(1);
    return kENOMEM;
  }
  pages_.emplace(index, *off);
  return *off;
}

KResult<size_t> RegularFile::ReadAt(absl::Span<uint8_t> dst, uint64_t offset) {
  absl::ReaderMutexLock l(&mu_);
  if (offset >= attrs_.size) return size_t{0};
  size_t n =
      static_cast<size_t>(std::min<uint64_t>(dst.size(), attrs_.size - offset));
  size_t done = 0;
  while (done < n) {
    uint64_t pos = offset + done;
    uint64_t in_page = pos % kPage;
    size_t chunk =
        static_cast<size_t>(std::min<uint64_t>(kPage - in_page, n - done));
    auto it = pages_.find(pos / kPage);
    if (it == pages_.end()) {
      memset(dst.data() + done, 0, chunk);
    } else if (!tmpfs().memory_file().Read(it->second + in_page,
                                           dst.data() + done, chunk)) {
      if (done > 0) return done;
      return kEIO;
    }
    done += chunk;
  }
  return done;
}

KResult<size_t> RegularFile::ReadToGuest(vfs::GuestIo& dst, uint64_t offset) {
  platform::MemoryFile& mf = tmpfs().memory_file();
  {
    // filemap_read: at or past the end, 0 before the buffer is looked at.
    absl::ReaderMutexLock l(&mu_);
    if (offset >= attrs_.size) return size_t{0};
  }
  bool failed = false;
  KResult<size_t> r =
      dst.Walk(dst.size(), [&](uint64_t to, size_t at, size_t k) -> size_t {
        absl::ReaderMutexLock l(&mu_);
        const uint64_t start = offset + at;
        if (start >= attrs_.size) return 0;  // truncated meanwhile
        const size_t n =
            static_cast<size_t>(std::min<uint64_t>(k, attrs_.size - start));
        auto it = pages_.lower_bound(start / kPage);
        size_t done = 0;
        while (done < n) {
          const uint64_t pos = start + done;
          const uint64_t index = pos / kPage;
          const uint64_t in_page = pos % kPage;
          size_t chunk = static_cast<size_t>(
              std::min<uint64_t>(kPage - in_page, n - done));
          while (it != pages_.end() && it->first < index) ++it;
          bool ok;
          if (it != pages_.end() && it->first == index) {
            // One copy for a run of pages that also follow each other in
            // the memory file (sequential writes usually get such runs).
            const uint64_t src = it->second + in_page;
            for (auto next = std::next(it);
                 done + chunk < n && next != pages_.end() &&
                 next->first == it->first + 1 &&
                 next->second == it->second + kPage;
                 it = next, ++next) {
              chunk += static_cast<size_t>(
                  std::min<uint64_t>(kPage, n - done - chunk));
            }
            ok = mf.Copy(to + done, src, chunk);
          } else {
            ok = mf.Zero(to + done, chunk);  // a hole
          }
          if (!ok) {
            failed = true;
            return done;
          }
          done += chunk;
        }
        return n;
      });
  if (!r.ok()) return r.error();
  if (*r == 0 && failed) return kEIO;
  return *r;
}

KResult<size_t> RegularFile::WriteFromGuest(vfs::GuestIo& src, uint64_t* offset,
                                            bool append) {
  absl::MutexLock w(&write_mu_);
  if (append) {
    absl::ReaderMutexLock l(&mu_);
    *offset = attrs_.size;
  }
  if (src.size() == 0) return size_t{0};
  if (*offset >= kMaxFileSize) return kEFBIG;
  const size_t n = static_cast<size_t>(
      std::min<uint64_t>(src.size(), kMaxFileSize - *offset));
  const uint64_t start = *offset;
  platform::MemoryFile& mf = tmpfs().memory_file();
  Errno err = kENOMEM;
  KResult<size_t> r =
      src.Walk(n, [&](uint64_t from, size_t at, size_t k) -> size_t {
        absl::MutexLock l(&mu_);
        const uint32_t seals = seals_.load(std::memory_order_acquire);
        if (seals & kWriteSeals) {  // shmem_write_begin()
          err = kEPERM;
          return 0;
        }
        size_t done = 0;
        while (done < k) {
          const uint64_t pos = start + at + done;
          const uint64_t in_page = pos % kPage;
          const size_t chunk = static_cast<size_t>(
              std::min<uint64_t>(kPage - in_page, k - done));
          // F_SEAL_GROW: the first page-sized step that would extend the
          // file is refused (short write, or EPERM).
          if ((seals & kSealGrow) && pos + chunk > attrs_.size) {
            err = kEPERM;
            break;
          }
          KResult<uint64_t> page = PageLocked(pos / kPage);
          if (!page.ok()) {
            err = page.error();
            break;
          }
          if (!mf.Copy(*page + in_page, from + done, chunk)) {
            err = kENOMEM;
            break;
          }
          done += chunk;
          attrs_.size = std::max<uint64_t>(attrs_.size, pos + chunk);
        }
        return done;
      });
  if (!r.ok()) return r.error();  // EFAULT: nothing could be read
  if (*r == 0) return err;
  absl::MutexLock l(&mu_);
  attrs_.mtime = attrs_.ctime = vfs::Now();
  return *r;
}

KResult<size_t> RegularFile::WriteAt(absl::Span<const uint8_t> src,
                                     uint64_t* offset, bool append) {
  absl::MutexLock w(&write_mu_);
  absl::MutexLock l(&mu_);
  if (append) *offset = attrs_.size;
  if (src.empty()) return size_t{0};
  if (*offset >= kMaxFileSize) return kEFBIG;
  const uint32_t seals = seals_.load(std::memory_order_acquire);
  if (seals & kWriteSeals) return kEPERM;  // shmem_write_begin()
  size_t n = static_cast<size_t>(
      std::min<uint64_t>(src.size(), kMaxFileSize - *offset));
  size_t done = 0;
  while (done < n) {
    uint64_t pos = *offset + done;
    uint64_t in_page = pos % kPage;
    size_t chunk =
        static_cast<size_t>(std::min<uint64_t>(kPage - in_page, n - done));
    // F_SEAL_GROW: Linux refuses the first page-sized step that would
    // extend the file, so the write is short (or EPERM) there.
    if ((seals & kSealGrow) && pos + chunk > attrs_.size) {
      if (done > 0) break;
      return kEPERM;
    }
    KResult<uint64_t> page = PageLocked(pos / kPage);
    if (!page.ok()) {
      if (done > 0) break;
      return page.error();
    }
    if (!tmpfs().memory_file().Write(*page + in_page, src.data() + done,
                                     chunk)) {
      if (done > 0) break;
      return kENOMEM;
    }
    done += chunk;
  }
  attrs_.size = std::max<uint64_t>(attrs_.size, *offset + done);
  attrs_.mtime = attrs_.ctime = vfs::Now();
  return done;
}

KResult<void> RegularFile::Truncate(uint64_t size) {
  if (size > kMaxFileSize) return kEFBIG;
  absl::MutexLock ml(&mappings_mu_);
  std::vector<uint64_t> doomed;
  uint64_t old_size;
  {
    absl::MutexLock l(&mu_);
    old_size = attrs_.size;
    const uint32_t seals = seals_.load(std::memory_order_acquire);
    if ((size < old_size && (seals & kSealShrink)) ||
        (size > old_size && (seals & kSealGrow))) {
      return kEPERM;  // shmem_setattr()
    }
    if (size < old_size) {
      for (auto it = pages_.lower_bound((size + kPage - 1) / kPage);
           it != pages_.end(); it = pages_.erase(it)) {
        doomed.push_back(it->second);
      }
      if (size % kPage != 0) {
        auto last = pages_.find(size / kPage);
        if (last != pages_.end()) {
          tmpfs().memory_file().Zero(last->second + size % kPage,
                                     kPage - size % kPage);
        }
      }
    }
    attrs_.size = size;
  }
  if (size < old_size) {
    // truncate_pagecache(): every mapping of the pages past the new end is
    // zapped, private copies included (even when no file page is freed:
    // a private copy may outlive a punched hole), so they SIGBUS.
    InvalidateAndFree((size + kPage - 1) / kPage * kPage,
                      (old_size + kPage - 1) / kPage * kPage, doomed,
                      /*even_private=*/true);
  }
  return OkResult();
}

void RegularFile::ZeroInPageLocked(uint64_t from, uint64_t to) {
  auto it = pages_.find(from / kPage);
  if (it != pages_.end() && from < to) {
    tmpfs().memory_file().Zero(it->second + from % kPage, to - from);
  }
}

void RegularFile::InvalidateAndFree(uint64_t offset, uint64_t end,
                                    const std::vector<uint64_t>& pages,
                                    bool even_private) {
  if (offset < end) mappings_.Invalidate(offset, end, even_private);
  for (uint64_t off : pages) tmpfs().memory_file().Free(off, kPage);
  tmpfs().ReleasePages(pages.size());
}

KResult<void> RegularFile::Allocate(uint32_t mode, uint64_t offset,
                                    uint64_t len) {
  if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE)) return kEOPNOTSUPP;
  if (offset > kMaxFileSize || len > kMaxFileSize - offset) return kEFBIG;
  const uint64_t end = offset + len;
  if (mode & FALLOC_FL_PUNCH_HOLE) {
    absl::MutexLock ml(&mappings_mu_);
    // shmem_fallocate(): a write-sealed file keeps its data.
    if (seals_.load(std::memory_order_acquire) & kWriteSeals) return kEPERM;
    std::vector<uint64_t> doomed;
    const uint64_t first = (offset + kPage - 1) / kPage;  // whole pages
    const uint64_t last = end / kPage;                    // exclusive
    {
      absl::MutexLock l(&mu_);
      if (first > last) {  // inside one page
        ZeroInPageLocked(offset, end);
      } else {
        ZeroInPageLocked(offset, first * kPage);
        ZeroInPageLocked(last * kPage, end);
        for (auto it = pages_.lower_bound(first);
             it != pages_.end() && it->first < last; it = pages_.erase(it)) {
          doomed.push_back(it->second);
        }
      }
      attrs_.mtime = attrs_.ctime = vfs::Now();
    }
    if (!doomed.empty()) InvalidateAndFree(first * kPage, last * kPage, doomed);
    return OkResult();
  }
  absl::MutexLock l(&mu_);
  if ((seals_.load(std::memory_order_acquire) & kSealGrow) &&
      end > attrs_.size) {
    return kEPERM;  // even with FALLOC_FL_KEEP_SIZE, as shmem_fallocate()
  }
  // Sizes first, as shmem_fallocate checks the range against the mount's
  // size: a range that could never be backed is ENOSPC before any page
  // (the guest-memory bound, MemoryFile::CouldFit; the mount's size=).
  const uint64_t first = offset / kPage;
  const uint64_t pages = (end + kPage - 1) / kPage - first;
  if (!tmpfs().CouldHoldPages(pages -
                              std::min<uint64_t>(pages, pages_.size()))) {
    return kENOSPC;
  }
  // Page by page, checking for a signal every few MiB. As Linux: a signal
  // gives EINTR, and a failure (EINTR, ENOSPC) takes back the pages this
  // call added (shmem_undo_range of the fallocated part).
  std::vector<uint64_t> added;
  Errno err{0};
  for (uint64_t i = first; i * kPage < end; ++i) {
    if ((i - first) % platform::kLongWorkCheckPages ==
            platform::kLongWorkCheckPages - 1 &&
        platform::LongWorkInterrupted()) {
      err = kEINTR;
      break;
    }
    const bool had = pages_.contains(i);
    KResult<uint64_t> page = PageLocked(i);
    if (!page.ok()) {
      err = page.error();
      break;
    }
    if (!had) added.push_back(i);
  }
  if (err.number() != 0) {
    std::vector<uint64_t> offs;
    offs.reserve(added.size());
    for (uint64_t i : added) {
      auto it = pages_.find(i);
      offs.push_back(it->second);
      pages_.erase(it);
    }
    // Not mapped by anyone yet (mappings fault pages in under mu_ too, and
    // they were absent before this call): no invalidation needed.
    for (uint64_t off : offs) tmpfs().memory_file().Free(off, kPage);
    tmpfs().ReleasePages(offs.size());
    return err;
  }
  if (!(mode & FALLOC_FL_KEEP_SIZE) && end > attrs_.size) attrs_.size = end;
  attrs_.ctime = vfs::Now();
  return OkResult();
}

void RegularFile::AddMapping(mm::MappingSpace* space, uintptr_t addr,
                             uint64_t offset, uint64_t length, bool writable) {
  absl::MutexLock l(&mappings_mu_);
  mappings_.Add(space, addr, offset, length, writable);
}

KResult<void> RegularFile::AddNewMapping(mm::MappingSpace* space,
                                         uintptr_t addr, uint64_t offset,
                                         uint64_t length, bool writable) {
  absl::MutexLock l(&mappings_mu_);
  if (writable && (seals_.load(std::memory_order_acquire) & kWriteSeals)) {
    return kEPERM;
  }
  mappings_.Add(space, addr, offset, length, writable);
  return OkResult();
}

KResult<int> RegularFile::CheckNewMapping(bool shared, int prot, int max_prot) {
  if (!shared || !(seals_.load(std::memory_order_acquire) & kWriteSeals)) {
    return max_prot;
  }
  if (prot & PROT_WRITE) return kEPERM;
  return max_prot & ~PROT_WRITE;
}

KResult<void> RegularFile::AddSeals(uint32_t seals) {
  if (seals & ~kAllSeals) return kEINVAL;
  // Both locks: no mapping is added and no write runs meanwhile.
  absl::MutexLock ml(&mappings_mu_);
  absl::MutexLock l(&mu_);
  const uint32_t cur = seals_.load(std::memory_order_relaxed);
  if (cur & kSealSeal) return kEPERM;
  // mapping_deny_writable(): no shared writable mapping may exist. (Linux
  // also waits for pinned pages; nothing pins pages here.)
  if ((seals & kSealWrite) && !(cur & kSealWrite) && mappings_.AnyWritable()) {
    return kEBUSY;
  }
  // F_SEAL_EXEC implies the write seals, making W^X from the start (and,
  // as in Linux, without the EBUSY check above).
  if ((seals & kSealExec) && (attrs_.mode & 0111)) {
    seals |= kSealShrink | kSealGrow | kSealWrite | kSealFutureWrite;
  }
  seals_.store(cur | seals, std::memory_order_release);
  return OkResult();
}

void RegularFile::InitMemfd(uint32_t seals) {
  absl::MutexLock ml(&mappings_mu_);
  absl::MutexLock l(&mu_);
  seals_.store(seals, std::memory_order_release);
}

KResult<void> RegularFile::CheckSetAttr(const vfs::SetAttrRequest& req) {
  if (!(req.mask & vfs::SetAttrRequest::kMode) ||
      !(seals_.load(std::memory_order_acquire) & kSealExec)) {
    return OkResult();
  }
  absl::ReaderMutexLock l(&mu_);
  if ((attrs_.mode ^ req.mode) & 0111) return kEPERM;
  return OkResult();
}

KResult<void> RegularFile::PunchHole(uint64_t offset, uint64_t length) {
  return Allocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
}

void RegularFile::Residency(uint64_t offset, uint64_t pages, uint8_t* vec) {
  absl::ReaderMutexLock l(&mu_);
  const uint64_t first = offset / kPage;
  for (auto it = pages_.lower_bound(first);
       it != pages_.end() && it->first - first < pages; ++it) {
    vec[it->first - first] = 1;
  }
}

void RegularFile::RemoveMapping(mm::MappingSpace* space, uintptr_t addr,
                                uint64_t, uint64_t length, bool) {
  absl::MutexLock l(&mappings_mu_);
  mappings_.Remove(space, addr, length);
}

KResult<std::vector<mm::Translation>> RegularFile::Translate(
    uint64_t required_offset, uint64_t required_length,
    uint64_t optional_offset, uint64_t optional_length, platform::AccessType) {
  constexpr int kProt = PROT_READ | PROT_WRITE | PROT_EXEC;
  absl::MutexLock l(&mu_);
  // Pages that hold any byte below the size can be mapped; beyond: SIGBUS.
  const uint64_t limit = (attrs_.size + kPage - 1) / kPage * kPage;
  if (required_offset >= limit || required_length > limit - required_offset) {
    return kEFAULT;
  }
  const uint64_t required_end = required_offset + required_length;
  uint64_t end = required_end;
  if (optional_offset <= required_offset &&
      optional_length >= required_end - optional_offset) {
    end = std::min(limit, optional_offset + optional_length);
  }
  std::vector<mm::Translation> out;
  for (uint64_t off = required_offset; off < end; off += kPage) {
    // The required pages are allocated (as shmem_fault does); the optional
    // part maps only pages that exist (as Linux's fault-around maps only
    // cached pages), so a fault in a sparse file never fills its holes.
    KResult<uint64_t> page = kENOMEM;
    if (off < required_end) {
      page = PageLocked(off / kPage);
      if (!page.ok()) return kENOMEM;
    } else {
      auto it = pages_.find(off / kPage);
      if (it == pages_.end()) break;
      page = it->second;
    }
    if (!out.empty() && out.back().file_offset + out.back().length == *page) {
      out.back().length += kPage;
    } else {
      out.push_back({off, kPage, *page, kProt});
    }
  }
  return out;
}

KResult<int64_t> RegularFile::SeekDataOrHole(int64_t offset, bool data) {
  absl::ReaderMutexLock l(&mu_);
  if (offset < 0) return kENXIO;
  uint64_t off = static_cast<uint64_t>(offset);
  if (off >= attrs_.size) return kENXIO;
  uint64_t index = off / kPage;
  if (data) {
    auto it = pages_.lower_bound(index);
    if (it == pages_.end()) return kENXIO;
    uint64_t start = it->first == index ? off : it->first * kPage;
    if (start >= attrs_.size) return kENXIO;
    return static_cast<int64_t>(start);
  }
  // The first page at or after `index` that is absent; EOF is a hole.
  uint64_t i = index;
  for (auto it = pages_.lower_bound(index);
       it != pages_.end() && it->first == i; ++it) {
    ++i;
  }
  uint64_t hole = i == index ? off : i * kPage;
  return static_cast<int64_t>(std::min<uint64_t>(hole, attrs_.size));
}

KResult<std::shared_ptr<vfs::VfsFile>> RegularFile::Open(
    const vfs::VirtualDentry& vd, uint32_t flags) {
  return std::shared_ptr<vfs::VfsFile>(std::make_shared<RegularFileDescription>(
      vd, flags, std::static_pointer_cast<RegularFile>(shared_from_this())));
}

std::shared_ptr<mm::Mappable> RegularFileDescription::GetMappable() {
  struct Hold {
    vfs::VirtualDentry vd;
    std::shared_ptr<RegularFile> file;
  };
  auto hold = std::make_shared<Hold>(Hold{vd(), file_});
  mm::Mappable* m = hold->file.get();
  return std::shared_ptr<mm::Mappable>(std::move(hold), m);
}

KResult<int64_t> RegularFileDescription::Seek(int64_t offset, int whence) {
  absl::MutexLock l(&offset_mu_);
  if (whence == SEEK_DATA || whence == SEEK_HOLE) {
    TRY(int64_t pos, file_->SeekDataOrHole(offset, whence == SEEK_DATA));
    offset_ = pos;
    return pos;
  }
  return SeekLocked(offset, whence, static_cast<int64_t>(file_->size()));
}

}  // namespace sandbox::fs::tmpfs
