#include "sentry/fs/gofer/regular_file.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "platform/guest_copy.h"
#include "platform/memory_file.h"

namespace sandbox::fs::gofer {
namespace {

constexpr uint64_t kMaxFileSize = std::numeric_limits<int64_t>::max();
constexpr uint64_t kPage = abi::kPageSize;

Errno HostErrno() { return Errno(errno); }

}  // namespace

GoferRegularFile::~GoferRegularFile() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  // Nobody else can reach the inode now.
  if (any_dirty_.load()) (void)WriteBackLocked(0, ~uint64_t{0});
  if (platform::MemoryFile* mf = gfs().options().memory_file) {
    for (const auto& [index, page] : pages_) mf->Free(page.mf_offset, kPage);
  }
  for (FdCache::Slot& s : slots_) gfs().fd_cache().Forget(s);
  if (data_cached()) gfs().ReleaseFileData(data_.size());
}

const std::string* GoferRegularFile::CachedData() {
  const uint8_t state = data_state_.load(std::memory_order_acquire);
  if (state == kDataCached) return &data_;
  if (state == kDataUncacheable || !gfs().caches_file_data()) return nullptr;
  return FillData();
}

const std::string* GoferRegularFile::FillData() {
  absl::MutexLock l(&data_mu_);
  switch (data_state_.load(std::memory_order_relaxed)) {
    case kDataCached:
      return &data_;
    case kDataUncacheable:
      return nullptr;
    default:
      break;
  }
  // Exact: the attributes of an exclusive read-only mount are the host's.
  const uint64_t size = Attrs().size;
  if (size > gfs().options().max_cached_file_size) {
    data_state_.store(kDataUncacheable, std::memory_order_relaxed);
    return nullptr;
  }
  // Budget spent: read from the host until other files' data goes.
  if (!gfs().ReserveFileData(size)) return nullptr;
  KResult<std::shared_ptr<HostFd>> fd = GetFd(/*read=*/true, /*write=*/false);
  if (!fd.ok()) {
    gfs().ReleaseFileData(size);
    return nullptr;  // the host read reports the error
  }
  // One byte more than the size, to see the end of file.
  std::string buf(size + 1, '\0');
  size_t got = 0;
  while (got < buf.size()) {
    ssize_t n = pread((*fd)->get(), buf.data() + got, buf.size() - got,
                      static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      gfs().ReleaseFileData(size);
      return nullptr;
    }
    if (n == 0) break;
    got += std::min(static_cast<size_t>(n), buf.size() - got);
  }
  if (got != size) {
    // Not the size the host gave: it changed behind an exclusive mount.
    // Read from the host from now on, as a file that is not cached.
    gfs().ReleaseFileData(size);
    data_state_.store(kDataUncacheable, std::memory_order_relaxed);
    return nullptr;
  }
  buf.resize(size);
  data_ = std::move(buf);
  data_state_.store(kDataCached, std::memory_order_release);
  return &data_;
}

void GoferRegularFile::AdoptFd(int acc, ::gofer::UniqueFd fd) {
  gfs().fd_cache().Install(slots_[acc & O_ACCMODE],
                           std::make_shared<HostFd>(std::move(fd)));
}

KResult<std::shared_ptr<HostFd>> GoferRegularFile::GetFd(bool read,
                                                         bool write) {
  FdCache& cache = gfs().fd_cache();
  // Prefer the exact mode, then O_RDWR, which serves both.
  const int want = SlotIndex(read, write);
  if (auto fd = cache.Get(slots_[want])) return fd;
  if (want != O_RDWR) {
    if (auto fd = cache.Get(slots_[O_RDWR])) return fd;
  }
  wire::Empty e;
  ::gofer::UniqueFd fd;
  TRY_VOID(gfs().Call(wire::OpenReq{handle(), static_cast<uint32_t>(want)}, &e,
                      &fd));
  if (!fd.valid()) return kEIO;
  return cache.Install(slots_[want], std::make_shared<HostFd>(std::move(fd)));
}

std::shared_ptr<HostFd> GoferRegularFile::AnyCachedFd() {
  FdCache& cache = gfs().fd_cache();
  for (FdCache::Slot& s : slots_) {
    if (auto fd = cache.Get(s)) return fd;
  }
  return nullptr;
}

bool GoferRegularFile::HostFstat(struct stat* st) {
  std::shared_ptr<HostFd> fd = AnyCachedFd();
  if (fd == nullptr || fstat(fd->get(), st) != 0) return false;
  // A donated FD of a regular file must still be one.
  return S_ISREG(st->st_mode);
}

KResult<uint64_t> GoferRegularFile::HostSize() {
  struct stat st;
  if (HostFstat(&st)) return static_cast<uint64_t>(st.st_size);
  if (gfs().exclusive()) return Attrs().size;  // kept exact by writes
  TRY(std::shared_ptr<HostFd> fd, GetFd(/*read=*/true, /*write=*/false));
  if (fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) return kEIO;
  return static_cast<uint64_t>(st.st_size);
}

KResult<std::shared_ptr<vfs::VfsFile>> GoferRegularFile::Open(
    const vfs::VirtualDentry& vd, uint32_t flags) {
  const int acc = flags & O_ACCMODE;
  const bool write = acc == O_WRONLY || acc == O_RDWR;
  if (write && gfs().read_only()) return kEROFS;
  // Opened now, so that open reports the host's refusal; kept for I/O.
  // A file whose data is held here was opened for reading before, and
  // reads need no host FD.
  if (write || !data_cached()) TRY_VOID(GetFd(acc != O_WRONLY, write));
  return std::shared_ptr<vfs::VfsFile>(std::make_shared<GoferFileDescription>(
      vd, flags,
      std::static_pointer_cast<GoferRegularFile>(shared_from_this())));
}

KResult<size_t> GoferRegularFile::ReadAt(absl::Span<uint8_t> dst,
                                         uint64_t offset) {
  if (dst.empty()) return size_t{0};
  if (offset >= kMaxFileSize) return size_t{0};
  if (const std::string* data = CachedData()) {
    if (offset >= data->size()) return size_t{0};
    const size_t n = std::min<uint64_t>(dst.size(), data->size() - offset);
    memcpy(dst.data(), data->data() + offset, n);
    return n;
  }
  // Stores through shared mappings first, so read(2) sees them.
  // (Best effort: a failed write-back stays dirty and is retried.)
  if (any_dirty_.load(std::memory_order_acquire)) {
    (void)WriteBack(0, ~uint64_t{0});
  }
  TRY(std::shared_ptr<HostFd> fd, GetFd(/*read=*/true, /*write=*/false));
  for (;;) {
    ssize_t n =
        pread(fd->get(), dst.data(), dst.size(), static_cast<off_t>(offset));
    if (n >= 0) {
      // The host cannot return more than asked; a hostile FD is not a
      // concern here (it is a real host file).
      return static_cast<size_t>(n);
    }
    if (errno != EINTR) return HostErrno();
  }
}

void GoferRegularFile::NoteWrite(uint64_t end) {
  absl::MutexLock l(&mu_);
  attrs_.size = std::max<uint64_t>(attrs_.size, end);
  // mtime, ctime, blocks: the host's, refetched (fstat) at the next stat.
  MarkStaleLocked();
}

KResult<size_t> GoferRegularFile::WriteAt(absl::Span<const uint8_t> src,
                                          uint64_t* offset, bool append,
                                          uint32_t sync_flags) {
  if (gfs().read_only()) return kEROFS;
  TRY(std::shared_ptr<HostFd> fd, GetFd(/*read=*/false, /*write=*/true));
  std::optional<absl::MutexLock> al;
  if (append) al.emplace(&append_mu_);
  if (append) {
    struct stat st;
    if (fstat(fd->get(), &st) != 0) return HostErrno();
    *offset = static_cast<uint64_t>(st.st_size);
  }
  if (src.empty()) return size_t{0};
  if (*offset >= kMaxFileSize) return kEFBIG;
  size_t len = static_cast<size_t>(
      std::min<uint64_t>(src.size(), kMaxFileSize - *offset));
  ssize_t n;
  do {
    n = pwrite(fd->get(), src.data(), len, static_cast<off_t>(*offset));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return HostErrno();
  size_t done = std::min(static_cast<size_t>(n), len);
  if (any_pages_.load(std::memory_order_acquire)) {
    UpdateCachedPages(src.first(done), *offset);
  }
  TRY_VOID(FinishWrite(*fd, *offset + done, sync_flags));
  return done;
}

KResult<void> GoferRegularFile::FinishWrite(HostFd& fd, uint64_t end,
                                            uint32_t sync_flags) {
  NoteWrite(end);
  if ((sync_flags & O_SYNC) == O_SYNC) {
    if (fsync(fd.get()) != 0) return HostErrno();
  } else if (sync_flags & O_DSYNC) {
    if (fdatasync(fd.get()) != 0) return HostErrno();
  }
  return OkResult();
}

KResult<size_t> GoferRegularFile::ReadToGuest(vfs::GuestIo& dst,
                                              uint64_t offset) {
  if (dst.size() == 0 || offset >= kMaxFileSize) return size_t{0};
  platform::MemoryFile& mf = dst.memory_file();
  if (const std::string* data = CachedData()) {
    // As Linux's filemap_read: nothing at the end of file (not even a
    // fault), else a copy that stops where the buffer does.
    if (offset >= data->size()) return size_t{0};
    const size_t want = std::min<uint64_t>(dst.size(), data->size() - offset);
    const uint8_t* src =
        reinterpret_cast<const uint8_t*>(data->data()) + offset;
    bool fault = false;
    KResult<size_t> r =
        dst.Walk(want, [&](uint64_t moff, size_t at, size_t k) -> size_t {
          uint8_t* p = mf.Internal(moff, k);
          if (p == nullptr) {
            fault = true;
            return 0;
          }
          memcpy(p, src + at, k);
          return k;
        });
    if (!r.ok()) return r.error();
    if (*r == 0 && fault) return kEFAULT;
    return *r;
  }
  if (any_dirty_.load(std::memory_order_acquire)) {
    (void)WriteBack(0, ~uint64_t{0});
  }
  TRY(std::shared_ptr<HostFd> fd, GetFd(/*read=*/true, /*write=*/false));
  const size_t want = static_cast<size_t>(
      std::min<uint64_t>(dst.size(), kMaxFileSize - offset));
  int err = 0;  // the host's errno, if a pread failed
  // Reads [from, to) of the buffer from the file (the walk covers [0, to)
  // and passes over what lies before `from`). Runs under the
  // MemoryManager's reader locks (GuestIo::Walk): the pages stay the
  // guest's until it returns. A short pread is the end of file and stops
  // the walk. Returns the bytes of [0, to) in place.
  auto read_range = [&](size_t from, size_t to) -> KResult<size_t> {
    return dst.Walk(to, [&](uint64_t moff, size_t at, size_t k) -> size_t {
      if (at + k <= from) return k;
      const size_t skip = at < from ? from - at : 0;
      uint8_t* p = mf.Internal(moff + skip, k - skip);
      if (p == nullptr) {
        err = EFAULT;
        return skip;
      }
      ssize_t n;
      do {
        n = pread(fd->get(), p, k - skip,
                  static_cast<off_t>(offset + at + skip));
      } while (n < 0 && errno == EINTR);
      if (n < 0) {
        // EFAULT here: the host could not back the memory file's page.
        err = errno;
        return skip;
      }
      return skip + std::min(static_cast<size_t>(n), k - skip);
    });
  };
  // A long read: the guest side copies the tail from the host file while
  // this thread preads the head (platform/guest_copy.h); 5/8 here balances
  // the two (the guest side starts later and reads through a pipe).
  size_t head = want;
  platform::GuestCopier* copier = nullptr;
  if (want >= platform::kGuestCopyMinBytes) {
    head = (want / 8 * 5) & ~(kPage - 1);
    copier = dst.StartGuestCopy(fd->get(), offset + head, head, want - head);
    if (copier == nullptr) head = want;
  }
  KResult<size_t> r = read_range(0, head);
  if (copier != nullptr) {
    const size_t got = copier->Finish();
    if (r.ok() && *r == head) {
      // The rest from the file: what the guest side did not copy (it was
      // asleep, a guest thread took the pipe's bytes), and what it was not
      // given (more than the pipe holds). At the end of the file this
      // costs one pread that returns 0.
      if (got == want - head) return want;
      KResult<size_t> rest = read_range(head + got, want);
      if (!rest.ok()) return head + got;
      return *rest;
    }
  }
  if (!r.ok()) {
    // Nothing was accessible. Linux copies nothing at the end of file, so
    // a read there is 0 even into a bad buffer.
    uint8_t probe;
    ssize_t n;
    do {
      n = pread(fd->get(), &probe, 1, static_cast<off_t>(offset));
    } while (n < 0 && errno == EINTR);
    if (n == 0) return size_t{0};
    return r.error();
  }
  if (*r == 0 && err != 0) return Errno(err);
  return *r;
}

KResult<size_t> GoferRegularFile::WriteFromGuest(vfs::GuestIo& src,
                                                 uint64_t* offset, bool append,
                                                 uint32_t sync_flags) {
  if (gfs().read_only()) return kEROFS;
  TRY(std::shared_ptr<HostFd> fd, GetFd(/*read=*/false, /*write=*/true));
  std::optional<absl::MutexLock> al;
  if (append) {
    al.emplace(&append_mu_);
    struct stat st;
    if (fstat(fd->get(), &st) != 0) return HostErrno();
    *offset = static_cast<uint64_t>(st.st_size);
  }
  if (src.size() == 0) return size_t{0};
  if (*offset >= kMaxFileSize) return kEFBIG;
  platform::MemoryFile& mf = src.memory_file();
  const uint64_t start = *offset;
  const size_t want =
      static_cast<size_t>(std::min<uint64_t>(src.size(), kMaxFileSize - start));
  const bool update_cache = any_pages_.load(std::memory_order_acquire);
  int err = 0;
  // Under the MemoryManager's reader locks (see ReadToGuest); cache_mu_
  // may be taken inside them (the documented order).
  KResult<size_t> r =
      src.Walk(want, [&](uint64_t moff, size_t at, size_t k) -> size_t {
        const uint8_t* p = mf.Internal(moff, k);
        if (p == nullptr) {
          err = EFAULT;
          return 0;
        }
        ssize_t n;
        do {
          n = pwrite(fd->get(), p, k, static_cast<off_t>(start + at));
        } while (n < 0 && errno == EINTR);
        if (n < 0) {
          err = errno;
          return 0;
        }
        const size_t got = std::min(static_cast<size_t>(n), k);
        if (update_cache) UpdateCachedPagesFrom(mf, moff, got, start + at);
        return got;
      });
  if (!r.ok()) return r.error();
  if (*r == 0) {
    if (err != 0) return Errno(err);
    return size_t{0};
  }
  TRY_VOID(FinishWrite(*fd, start + *r, sync_flags));
  return *r;
}

KResult<int64_t> GoferRegularFile::SeekDataOrHole(int64_t offset, int whence) {
  TRY(std::shared_ptr<HostFd> fd, GetFd(/*read=*/true, /*write=*/false));
  // The shared FD's own offset is never used for I/O (pread/pwrite).
  off_t r = lseek(fd->get(), offset, whence);
  if (r < 0) return HostErrno();
  return static_cast<int64_t>(r);
}

KResult<void> GoferRegularFile::Fsync(bool data_only) {
  TRY_VOID(WriteBack(0, ~uint64_t{0}));
  std::shared_ptr<HostFd> fd = AnyCachedFd();
  if (fd == nullptr) {
    wire::Empty e;
    return gfs().Call(wire::FsyncReq{handle()}, &e);
  }
  if ((data_only ? fdatasync(fd->get()) : fsync(fd->get())) != 0) {
    return HostErrno();
  }
  return OkResult();
}

KResult<void> GoferRegularFile::Truncate(uint64_t size) {
  if (size > kMaxFileSize) return kEFBIG;
  if (gfs().read_only()) return kEROFS;
  // Dirty pages below the new end must reach the host first.
  TRY_VOID(WriteBack(0, size));
  const uint64_t old_size = Attrs().size;
  FdCache& cache = gfs().fd_cache();
  std::shared_ptr<HostFd> fd = cache.Get(slots_[O_RDWR]);
  if (fd == nullptr) fd = cache.Get(slots_[O_WRONLY]);
  if (fd == nullptr) {
    TRY_VOID(GoferInode::Truncate(size));
  } else {
    if (ftruncate(fd->get(), static_cast<off_t>(size)) != 0) {
      return HostErrno();
    }
    absl::MutexLock l(&mu_);
    attrs_.size = size;
    MarkStaleLocked();
  }
  TruncateCache(old_size, size);
  return OkResult();
}

KResult<void> GoferRegularFile::Allocate(uint32_t mode, uint64_t offset,
                                         uint64_t len) {
  if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE)) return kEOPNOTSUPP;
  if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE)) {
    return kEOPNOTSUPP;
  }
  if (offset > kMaxFileSize || len > kMaxFileSize - offset) return kEFBIG;
  if (gfs().read_only()) return kEROFS;
  // Stores through mappings first, so a punch is not undone by them.
  TRY_VOID(WriteBack(0, ~uint64_t{0}));
  TRY(std::shared_ptr<HostFd> fd, GetFd(/*read=*/false, /*write=*/true));
  if (fallocate(fd->get(), static_cast<int>(mode), static_cast<off_t>(offset),
                static_cast<off_t>(len)) != 0) {
    return HostErrno();
  }
  if (mode & FALLOC_FL_PUNCH_HOLE) {
    if (any_pages_.load(std::memory_order_acquire)) {
      static const uint8_t kZeros[kPage] = {};
      for (uint64_t pos = offset; pos < offset + len;) {
        size_t n = static_cast<size_t>(std::min(kPage, offset + len - pos));
        UpdateCachedPages(absl::MakeConstSpan(kZeros, n), pos);
        pos += n;
      }
    }
    MarkStale();
  } else if (mode & FALLOC_FL_KEEP_SIZE) {
    MarkStale();
  } else {
    NoteWrite(offset + len);
  }
  return OkResult();
}

KResult<void> GoferRegularFile::PunchHole(uint64_t offset, uint64_t length) {
  return Allocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
}

// ---- GoferFileDescription ----

KResult<int64_t> GoferFileDescription::Seek(int64_t offset, int whence) {
  absl::MutexLock l(&offset_mu_);
  if (whence == SEEK_DATA || whence == SEEK_HOLE) {
    TRY(int64_t pos, file_->SeekDataOrHole(offset, whence));
    offset_ = pos;
    return pos;
  }
  int64_t size = 0;
  if (whence == SEEK_END) {
    TRY(uint64_t s, file_->HostSize());
    size = static_cast<int64_t>(s);
  }
  return SeekLocked(offset, whence, size);
}

std::shared_ptr<mm::Mappable> GoferFileDescription::GetMappable() {
  if (file_->gfs().options().memory_file == nullptr) return nullptr;
  return file_;
}

KResult<void> GoferFileDescription::Sync(bool data_only) {
  return file_->Fsync(data_only);
}

}  // namespace sandbox::fs::gofer
