#include "sentry/fs/dev/memdev.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "platform/memory_file.h"

namespace sandbox::fs::dev {

KResult<void> FillRandom(absl::Span<uint8_t> dst) {
  size_t done = 0;
  while (done < dst.size()) {
    ssize_t n = getrandom(dst.data() + done, dst.size() - done, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(errno);
    }
    done += static_cast<size_t>(n);
  }
  return OkResult();
}

KResult<size_t> MemDevFile::Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) {
  return PRead(ctx, dst, 0);
}

KResult<size_t> MemDevFile::PRead(vfs::IoContext&, absl::Span<uint8_t> dst,
                                  int64_t) {
  switch (kind_) {
    case MemDevice::kNull:
      return size_t{0};
    case MemDevice::kZero:
    case MemDevice::kFull:
      memset(dst.data(), 0, dst.size());
      return dst.size();
    case MemDevice::kRandom:
    case MemDevice::kURandom:
      TRY_VOID(FillRandom(dst));
      return dst.size();
  }
  return kEINVAL;
}

KResult<size_t> MemDevFile::Write(vfs::IoContext& ctx,
                                  absl::Span<const uint8_t> src) {
  return PWrite(ctx, src, 0);
}

KResult<size_t> MemDevFile::PWrite(vfs::IoContext&,
                                   absl::Span<const uint8_t> src, int64_t) {
  if (kind_ == MemDevice::kFull) return kENOSPC;
  return src.size();
}

KResult<size_t> MemDevFile::ReadDirect(vfs::IoContext&, vfs::GuestIo& dst,
                                       int64_t) {
  if (kind_ == MemDevice::kNull) return size_t{0};  // read_null
  if (kind_ != MemDevice::kZero && kind_ != MemDevice::kFull) return kEINVAL;
  platform::MemoryFile& mf = dst.memory_file();
  return dst.Walk(dst.size(), [&mf](uint64_t off, size_t, size_t k) {
    return mf.Zero(off, k) ? k : size_t{0};
  });
}

KResult<size_t> MemDevFile::WriteDirect(vfs::IoContext&, vfs::GuestIo& src,
                                        int64_t) {
  switch (kind_) {
    case MemDevice::kNull:
    case MemDevice::kZero:
      return src.size();
    case MemDevice::kFull:
      return kENOSPC;
    default:
      return kEINVAL;
  }
}

KResult<int64_t> MemDevFile::Seek(int64_t, int) { return int64_t{0}; }

}  // namespace sandbox::fs::dev
