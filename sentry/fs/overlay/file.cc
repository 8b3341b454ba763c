// OverlayFile: an open regular file of the overlay over its real file
// (Linux's fs/overlayfs/file.c).
#include <fcntl.h>
#include <unistd.h>

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
