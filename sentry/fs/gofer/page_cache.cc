// GoferRegularFile as an mm::Mappable: a page cache in the memory file over
// the host FD (regular_file.h has the design).
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "sentry/fs/gofer/regular_file.h"

namespace sandbox::fs::gofer {
namespace {

constexpr uint64_t kPage = abi::kPageSize;

uint64_t PageUp(uint64_t x) { return (x + kPage - 1) / kPage * kPage; }

}  // namespace

void GoferRegularFile::AddMapping(mm::MappingSpace* space, uintptr_t addr,
                                  uint64_t offset, uint64_t length,
                                  bool writable) {
  absl::MutexLock l(&mappings_mu_);
  mappings_.Add(space, addr, offset, length, writable);
  if (writable) writable_mappings_.fetch_add(1, std::memory_order_acq_rel);
}

void GoferRegularFile::RemoveMapping(mm::MappingSpace* space, uintptr_t addr,
                                     uint64_t offset, uint64_t length,
                                     bool writable) {
  {
    absl::MutexLock l(&mappings_mu_);
    mappings_.Remove(space, addr, length);
  }
  if (writable) {
    // What the mapping stored reaches the host when it goes (fsync and
    // read(2) write back earlier).
    writable_mappings_.fetch_sub(1, std::memory_order_acq_rel);
    (void)WriteBack(offset, offset + length);
  }
}

KResult<std::vector<mm::Translation>> GoferRegularFile::Translate(
    uint64_t required_offset, uint64_t required_length,
    uint64_t optional_offset, uint64_t optional_length,
    platform::AccessType access) {
  constexpr int kProt = PROT_READ | PROT_WRITE | PROT_EXEC;
  platform::MemoryFile* mf = gfs().options().memory_file;
  if (mf == nullptr) return kENODEV;
  TRY(uint64_t size, HostSize());
  // Pages that hold any byte below the size can be mapped; beyond: SIGBUS.
  const uint64_t limit = PageUp(size);
  if (required_offset >= limit || required_length > limit - required_offset) {
    return kEFAULT;
  }
  const uint64_t required_end = required_offset + required_length;
  uint64_t end = required_end;
  if (optional_offset <= required_offset &&
      optional_length >= required_end - optional_offset) {
    end = std::min(limit, optional_offset + optional_length);
  }
  // Every page a shared writable mapping may store to is dirty (private
  // mappings copy on write: they never change the cache).
  const bool dirty = writable_mappings_.load(std::memory_order_acquire) > 0;
  (void)access;
  std::vector<mm::Translation> out;
  absl::MutexLock l(&cache_mu_);
  std::shared_ptr<HostFd> fd;
  for (uint64_t off = required_offset; off < end; off += kPage) {
    auto it = pages_.find(off / kPage);
    if (it == pages_.end()) {
      if (fd == nullptr) {
        KResult<std::shared_ptr<HostFd>> got = GetFd(true, false);
        if (!got.ok()) {
          if (off >= required_end) break;
          return got.error();
        }
        fd = std::move(got).value();
      }
      KResult<void> filled = FillLocked(*fd, off, end);
      if (!filled.ok()) {
        if (off >= required_end) break;  // the optional part may stay out
        return filled.error();
      }
      it = pages_.find(off / kPage);
    }
    if (dirty) {
      it->second.dirty = true;
      any_dirty_.store(true, std::memory_order_release);
    }
    const uint64_t mf_off = it->second.mf_offset;
    if (!out.empty() && out.back().file_offset + out.back().length == mf_off) {
      out.back().length += kPage;
    } else {
      out.push_back({off, kPage, mf_off, kProt});
    }
  }
  return out;
}

KResult<void> GoferRegularFile::FillLocked(HostFd& fd, uint64_t off,
                                           uint64_t end) {
  platform::MemoryFile* mf = gfs().options().memory_file;
  // The run of absent pages from `off`, read with one pread.
  uint64_t run = 0;
  while (run < kFillRun && off + run * kPage < end &&
         !pages_.contains(off / kPage + run)) {
    ++run;
  }
  const size_t bytes = static_cast<size_t>(run * kPage);
  std::unique_ptr<uint8_t[]> buf(new uint8_t[bytes]);
  size_t got = 0;
  while (got < bytes) {  // short reads only at the end of the file
    ssize_t n = pread(fd.get(), buf.get() + got, bytes - got,
                      static_cast<off_t>(off + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return kEIO;
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  absl::StatusOr<uint64_t> base = mf->Allocate(bytes);
  if (!base.ok()) return kENOMEM;
  // What lies past the host's end of file stays zero (Allocate zeroes).
  if (got > 0 && !mf->Write(*base, buf.get(), got)) {
    mf->Free(*base, bytes);
    return kENOMEM;
  }
  for (uint64_t i = 0; i < run; ++i) {
    pages_.emplace(off / kPage + i, Page{*base + i * kPage, false});
  }
  any_pages_.store(true, std::memory_order_release);
  return OkResult();
}

void GoferRegularFile::Residency(uint64_t offset, uint64_t pages,
                                 uint8_t* vec) {
  absl::MutexLock l(&cache_mu_);
  const uint64_t first = offset / kPage;
  for (auto it = pages_.lower_bound(first);
       it != pages_.end() && it->first - first < pages; ++it) {
    vec[it->first - first] = 1;
  }
}

KResult<void> GoferRegularFile::WriteBack(uint64_t offset, uint64_t end) {
  if (!any_dirty_.load(std::memory_order_acquire)) return OkResult();
  absl::MutexLock l(&cache_mu_);
  return WriteBackLocked(offset, end);
}

KResult<void> GoferRegularFile::WriteBackLocked(uint64_t offset, uint64_t end) {
  platform::MemoryFile* mf = gfs().options().memory_file;
  if (mf == nullptr || gfs().read_only()) return OkResult();
  TRY(std::shared_ptr<HostFd> fd, GetFd(false, true));
  struct stat st;
  if (fstat(fd->get(), &st) != 0) return Errno(errno);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  // While a shared writable mapping exists its pages may be stored to at
  // any time (stores do not fault): they stay dirty after a write-back.
  const bool keep_dirty =
      writable_mappings_.load(std::memory_order_acquire) > 0;
  bool still_dirty = false;
  for (auto& [index, page] : pages_) {
    if (!page.dirty) continue;
    const uint64_t pos = index * kPage;
    if (pos + kPage <= offset || pos >= end) {
      still_dirty = true;
      continue;
    }
    page.dirty = keep_dirty;
    still_dirty |= keep_dirty;
    if (pos >= size) continue;  // never past the host's end of file
    const size_t n = static_cast<size_t>(std::min(kPage, size - pos));
    alignas(64) uint8_t buf[kPage];
    if (!mf->Read(page.mf_offset, buf, n)) return kEIO;
    ssize_t w;
    do {
      w = pwrite(fd->get(), buf, n, static_cast<off_t>(pos));
    } while (w < 0 && errno == EINTR);
    if (w < 0) {
      page.dirty = true;
      any_dirty_.store(true, std::memory_order_release);
      return Errno(errno);
    }
  }
  any_dirty_.store(still_dirty, std::memory_order_release);
  return OkResult();
}

void GoferRegularFile::UpdateCachedPages(absl::Span<const uint8_t> src,
                                         uint64_t offset) {
  platform::MemoryFile* mf = gfs().options().memory_file;
  if (mf == nullptr || src.empty()) return;
  absl::MutexLock l(&cache_mu_);
  const uint64_t end = offset + src.size();
  for (auto it = pages_.lower_bound(offset / kPage);
       it != pages_.end() && it->first * kPage < end; ++it) {
    const uint64_t pos = it->first * kPage;
    const uint64_t from = std::max(pos, offset);
    const uint64_t to = std::min(pos + kPage, end);
    mf->Write(it->second.mf_offset + (from - pos), src.data() + (from - offset),
              to - from);
  }
}

void GoferRegularFile::UpdateCachedPagesFrom(platform::MemoryFile& src_mf,
                                             uint64_t src_off, size_t n,
                                             uint64_t offset) {
  platform::MemoryFile* mf = gfs().options().memory_file;
  if (mf == nullptr || n == 0) return;
  absl::MutexLock l(&cache_mu_);
  const uint64_t end = offset + n;
  for (auto it = pages_.lower_bound(offset / kPage);
       it != pages_.end() && it->first * kPage < end; ++it) {
    const uint64_t pos = it->first * kPage;
    const uint64_t from = std::max(pos, offset);
    const uint64_t to = std::min(pos + kPage, end);
    const uint64_t dst = it->second.mf_offset + (from - pos);
    const uint64_t src = src_off + (from - offset);
    if (&src_mf == mf) {
      mf->Copy(dst, src, to - from);  // SIGBUS-safe, overlap-safe
    } else {
      uint8_t buf[kPage];
      if (src_mf.Read(src, buf, to - from)) mf->Write(dst, buf, to - from);
    }
  }
}

void GoferRegularFile::TruncateCache(uint64_t old_size, uint64_t size) {
  platform::MemoryFile* mf = gfs().options().memory_file;
  if (mf == nullptr || !any_pages_.load(std::memory_order_acquire)) return;
  absl::MutexLock ml(&mappings_mu_);
  std::vector<uint64_t> doomed;
  {
    absl::MutexLock l(&cache_mu_);
    for (auto it = pages_.lower_bound(PageUp(size) / kPage); it != pages_.end();
         it = pages_.erase(it)) {
      doomed.push_back(it->second.mf_offset);
    }
    if (size % kPage != 0) {
      auto last = pages_.find(size / kPage);
      if (last != pages_.end()) {
        mf->Zero(last->second.mf_offset + size % kPage, kPage - size % kPage);
      }
    }
  }
  const uint64_t from = PageUp(size);
  const uint64_t to = std::max(PageUp(old_size), from);
  // truncate_pagecache(): mappings past the end go, private copies too.
  if (from < to) mappings_.Invalidate(from, to, /*even_private=*/true);
  for (uint64_t off : doomed) mf->Free(off, kPage);
}

size_t GoferRegularFile::cached_pages() const {
  absl::MutexLock l(&cache_mu_);
  return pages_.size();
}

}  // namespace sandbox::fs::gofer
