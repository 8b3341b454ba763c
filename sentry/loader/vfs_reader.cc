#include "sentry/loader/vfs_reader.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

#include "sentry/vfs/permissions.h"

namespace sandbox::loader {

KResult<std::shared_ptr<vfs::VfsFile>> OpenExecutable(
    const vfs::ResolveBase& base, std::string_view path,
    const vfs::ResolveOptions& opts) {
  TRY(vfs::VirtualDentry vd, vfs::Resolve(base, path, opts));
  vfs::Inode& inode = vd.dentry->inode();
  // O_NOFOLLOW's ELOOP for a final symlink that was not followed.
  if (!opts.follow_final && inode.IsSymlink()) return kELOOP;
  if (!inode.IsRegular()) return kEACCES;
  if (vd.mount->flags() & vfs::kMountNoExec) return kEACCES;
  TRY_VOID(vfs::CheckPermission(base.creds, vfs::kMayExec, inode));
  return inode.Open(vd, O_RDONLY | O_LARGEFILE);
}

std::pair<uint64_t, uint64_t> VfsFileReader::Identity() {
  KResult<abi::Stat> st = file_->Stat();
  if (!st.ok()) return {0, 0};
  return {st->st_dev, st->st_ino};
}

std::shared_ptr<mm::Mappable> VfsFileReader::GetMappable() {
  return file_->GetMappable();
}

KResult<size_t> VfsFileReader::ReadAt(uint64_t offset, void* buf, size_t n) {
  vfs::IoContext ctx;
  auto* p = static_cast<uint8_t*>(buf);
  size_t done = 0;
  while (done < n) {
    if (offset + done > static_cast<uint64_t>(INT64_MAX)) break;
    KResult<size_t> r = file_->PRead(ctx, absl::MakeSpan(p + done, n - done),
                                     static_cast<int64_t>(offset + done));
    if (!r.ok()) {
      if (done > 0) break;
      return r.error();
    }
    if (*r == 0) break;
    done += *r;
  }
  return done;
}

KResult<uint64_t> VfsFileReader::Size() {
  TRY(abi::Stat st, file_->Stat());
  if (!S_ISREG(st.st_mode)) return kEACCES;
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace sandbox::loader
