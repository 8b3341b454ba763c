// OverlayFile: an open regular file of the overlay over its real file
// (Linux's fs/overlayfs/file.c).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "platform/memory_file.h"
#include "sentry/fs/overlay/overlay.h"

namespace sandbox::fs::overlay {

OverlayFile::OverlayFile(vfs::VirtualDentry vd, uint32_t flags,
                         std::shared_ptr<vfs::VfsFile> real, bool real_is_upper)
    : vfs::VfsFile(std::move(vd), flags),
      opened_(real),
      current_(std::move(real)),
      current_is_upper_(real_is_upper) {}

KResult<std::shared_ptr<vfs::VfsFile>> OverlayFile::Current() {
  absl::MutexLock l(&real_mu_);
  if (!current_is_upper_) {
    // ovl_real_fdget: copied up since this file was opened: continue on
    // the upper file at the same offset.
    std::shared_ptr<vfs::Dentry> up = oinode().upper();
    if (up) {
      uint32_t flags = status_flags() & ~uint32_t{O_CREAT | O_EXCL | O_TRUNC};
      TRY(std::shared_ptr<vfs::VfsFile> f,
          up->inode().Open({oinode().ofs().upper_mount(), up}, flags));
      KResult<int64_t> off = current_->Seek(0, SEEK_CUR);
      if (off.ok()) TRY_VOID(f->Seek(*off, SEEK_SET));
      current_ = std::move(f);
      current_is_upper_ = true;
    }
  }
  // fcntl(F_SETFL) changes reach the real file (ovl_change_flags).
  current_->SetStatusFlags(status_flags());
  return current_;
}

KResult<size_t> OverlayFile::Read(vfs::IoContext& ctx,
                                  absl::Span<uint8_t> dst) {
  TRY(std::shared_ptr<vfs::VfsFile> f, Current());
  return f->Read(ctx, dst);
}

KResult<size_t> OverlayFile::PRead(vfs::IoContext& ctx, absl::Span<uint8_t> dst,
                                   int64_t offset) {
  TRY(std::shared_ptr<vfs::VfsFile> f, Current());
  return f->PRead(ctx, dst, offset);
}

namespace {

// The real file cannot do direct I/O with this memory file (a layer in
// another one; not the case in runsc): a bounce buffer, with the offset
// moved only by what reached the guest.
KResult<size_t> BounceRead(vfs::IoContext& ctx, vfs::VfsFile& f,
                           vfs::GuestIo& dst, int64_t offset) {
  const bool at_offset = offset < 0;
  if (at_offset) {
    TRY(offset, f.Seek(0, SEEK_CUR));
  }
  std::vector<uint8_t> buf(std::min<size_t>(dst.size(), 1 << 20));
  TRY(size_t n, f.PRead(ctx, absl::MakeSpan(buf), offset));
  platform::MemoryFile& mf = dst.memory_file();
  KResult<size_t> r =
      n == 0 ? KResult<size_t>(size_t{0})
             : dst.Walk(n, [&](uint64_t moff, size_t at, size_t k) -> size_t {
                 return mf.Write(moff, buf.data() + at, k) ? k : 0;
               });
  TRY(size_t done, std::move(r));
  if (at_offset) {
    TRY_VOID(f.Seek(offset + static_cast<int64_t>(done), SEEK_SET));
  }
  return done;
}

KResult<size_t> BounceWrite(vfs::IoContext& ctx, vfs::VfsFile& f,
                            vfs::GuestIo& src, int64_t offset) {
  std::vector<uint8_t> buf(std::min<size_t>(src.size(), 1 << 20));
  platform::MemoryFile& mf = src.memory_file();
  TRY(size_t got,
      src.Walk(buf.size(), [&](uint64_t moff, size_t at, size_t k) -> size_t {
        return mf.Read(moff, buf.data() + at, k) ? k : 0;
      }));
  if (got == 0) return kEFAULT;
  auto data = absl::MakeConstSpan(buf.data(), got);
  return offset < 0 ? f.Write(ctx, data) : f.PWrite(ctx, data, offset);
}

}  // namespace

KResult<size_t> OverlayFile::ReadDirect(vfs::IoContext& ctx, vfs::GuestIo& dst,
                                        int64_t offset) {
  TRY(std::shared_ptr<vfs::VfsFile> f, Current());
  if (!f->CanDirectIo(dst.memory_file())) {
    return BounceRead(ctx, *f, dst, offset);
  }
  return f->ReadDirect(ctx, dst, offset);
}

KResult<size_t> OverlayFile::WriteDirect(vfs::IoContext& ctx, vfs::GuestIo& src,
                                         int64_t offset) {
  if (!writable()) return kEBADF;
  if (src.size() == 0) return size_t{0};
  TRY_VOID(RemovePrivs(ctx));
  TRY(std::shared_ptr<vfs::VfsFile> f, Current());
  KResult<size_t> r = f->CanDirectIo(src.memory_file())
                          ? f->WriteDirect(ctx, src, offset)
                          : BounceWrite(ctx, *f, src, offset);
  oinode().SyncAttrs();
  return r;
}

KResult<size_t> OverlayFile::Write(vfs::IoContext& ctx,
                                   absl::Span<const uint8_t> src) {
  if (!writable()) return kEBADF;
  // Set-id bits go through the overlay inode (and so its mirror).
  if (!src.empty()) TRY_VOID(RemovePrivs(ctx));
  TRY(std::shared_ptr<vfs::VfsFile> f, Current());
  KResult<size_t> r = f->Write(ctx, src);
  oinode().SyncAttrs();
  return r;
}

KResult<size_t> OverlayFile::PWrite(vfs::IoContext& ctx,
                                    absl::Span<const uint8_t> src,
                                    int64_t offset) {
  if (!writable()) return kEBADF;
  if (!src.empty()) TRY_VOID(RemovePrivs(ctx));
  TRY(std::shared_ptr<vfs::VfsFile> f, Current());
  KResult<size_t> r = f->PWrite(ctx, src, offset);
  oinode().SyncAttrs();
  return r;
}

KResult<int64_t> OverlayFile::Seek(int64_t offset, int whence) {
  TRY(std::shared_ptr<vfs::VfsFile> f, Current());
  return f->Seek(offset, whence);
}

KResult<uint64_t> OverlayFile::Ioctl(vfs::IoContext& ctx, uint32_t cmd,
                                     uint64_t arg) {
  TRY(std::shared_ptr<vfs::VfsFile> f, Current());
  return f->Ioctl(ctx, cmd, arg);
}

KResult<abi::Stat> OverlayFile::Stat() { return oinode().Stat(); }

KResult<void> OverlayFile::Sync(bool data_only) {
  TRY(std::shared_ptr<vfs::VfsFile> f, Current());
  return f->Sync(data_only);
}

std::shared_ptr<mm::Mappable> OverlayFile::GetMappable() {
  return opened_->GetMappable();
}

KResult<uint32_t> OverlayFile::GetSeals() { return opened_->GetSeals(); }

KResult<void> OverlayFile::AddSeals(uint32_t seals) {
  return opened_->AddSeals(seals);
}

}  // namespace sandbox::fs::overlay
