// RegularFileIo: the read/write family of a regular file's description,
// the same for every file system whose file has positional calls (tmpfs,
// gofer): read(2)/write(2) at the description's offset, pread/pwrite at a
// given one, and their direct-I/O forms into and out of guest memory.
// The file system's description derives from it and supplies the two
// write calls (`Derived::WriteFile`, `Derived::WriteFileFromGuest`), which
// are where file systems differ (the gofer passes O_SYNC/O_DSYNC on).
//
// The rules, Linux's: EBADF on a description not open for the direction;
// a negative pread/pwrite offset is EINVAL; an empty write writes nothing
// and drops no privileges; a write first drops S_ISUID/S_ISGID
// (file_remove_privs); O_APPEND appends even for pwrite.
//
// `File` has ReadAt(span, uint64_t) and ReadToGuest(GuestIo&, uint64_t).
//
// Thread-safety: as vfs::VfsFile (the offset under offset_mu_, taken by
// IoAtOffset); the file's own locks are its own.
#ifndef SENTRY_FS_FSUTIL_REGULAR_FILE_IO_H_
#define SENTRY_FS_FSUTIL_REGULAR_FILE_IO_H_

#include <stdint.h>

#include <memory>
#include <utility>

#include "absl/types/span.h"
#include "sentry/base/result.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::fs::fsutil {

template <typename Derived, typename File>
class RegularFileIo : public vfs::VfsFile {
 public:
  KResult<size_t> Read(vfs::IoContext&, absl::Span<uint8_t> dst) override {
    if (!readable()) return kEBADF;
    return IoAtOffset(-1,
                      [&](uint64_t& off) { return file_->ReadAt(dst, off); });
  }

  KResult<size_t> Write(vfs::IoContext& ctx,
                        absl::Span<const uint8_t> src) override {
    if (!writable()) return kEBADF;
    if (src.empty()) return size_t{0};
    TRY_VOID(RemovePrivs(ctx));
    return IoAtOffset(-1, [&](uint64_t& off) {
      return self().WriteFile(src, &off, Appends(ctx));
    });
  }

  KResult<size_t> PRead(vfs::IoContext&, absl::Span<uint8_t> dst,
                        int64_t offset) override {
    if (!readable()) return kEBADF;
    if (offset < 0) return kEINVAL;
    return file_->ReadAt(dst, static_cast<uint64_t>(offset));
  }

  KResult<size_t> PWrite(vfs::IoContext& ctx, absl::Span<const uint8_t> src,
                         int64_t offset) override {
    if (!writable()) return kEBADF;
    if (offset < 0) return kEINVAL;
    if (src.empty()) return size_t{0};
    TRY_VOID(RemovePrivs(ctx));
    // Linux appends even for pwrite on an O_APPEND description.
    uint64_t off = static_cast<uint64_t>(offset);
    return self().WriteFile(src, &off, Appends(ctx));
  }

  KResult<size_t> ReadDirect(vfs::IoContext&, vfs::GuestIo& dst,
                             int64_t offset) override {
    if (!readable()) return kEBADF;
    return IoAtOffset(
        offset, [&](uint64_t& off) { return file_->ReadToGuest(dst, off); });
  }

  KResult<size_t> WriteDirect(vfs::IoContext& ctx, vfs::GuestIo& src,
                              int64_t offset) override {
    if (!writable()) return kEBADF;
    if (src.size() == 0) return size_t{0};
    TRY_VOID(RemovePrivs(ctx));
    // pwrite too: Linux appends even then with O_APPEND.
    return IoAtOffset(offset, [&](uint64_t& off) {
      return self().WriteFileFromGuest(src, &off, Appends(ctx));
    });
  }

 protected:
  RegularFileIo(vfs::VirtualDentry vd, uint32_t flags,
                std::shared_ptr<File> file)
      : vfs::VfsFile(std::move(vd), flags), file_(std::move(file)) {}

  const std::shared_ptr<File> file_;

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace sandbox::fs::fsutil

#endif  // SENTRY_FS_FSUTIL_REGULAR_FILE_IO_H_
