// Copy-up (Linux's fs/overlayfs/copy_up.c): the parent chain first, then
// the file: a regular file's data and size, its mode (set-id bits
// included), owner, atime/mtime and xattrs (not the overlay's own), into a
// new upper file that gets its name only once complete, so no lookup ever
// sees a partial copy (Linux builds it in the work directory and renames it
// in). The copy keeps the lower file's st_ino (recorded as its origin).
//
// Data is read through the lower file system's own file (for the Gofer, a
// pread on the host FD it was donated: the data never crosses the Gofer
// socket) and written to the upper tmpfs; all-zero blocks stay holes.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <vector>

#include "sentry/fs/overlay/internal.h"
#include "sentry/fs/overlay/overlay.h"

namespace sandbox::fs::overlay {
namespace {

constexpr size_t kCopyChunk = 64 * 1024;

bool AllZero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

}  // namespace

KResult<void> OverlayFilesystem::CopyUp(OverlayInode& n, uint64_t data_limit) {
  if (n.upper()) return OkResult();
  absl::ReaderMutexLock l(&tree_mu());
  return CopyUpLocked(n, data_limit);
}

KResult<void> OverlayFilesystem::CopyUpLocked(OverlayInode& n,
                                              uint64_t data_limit) {
  if (n.upper()) return OkResult();
  auto [parent, name] = n.Name();
  if (parent) TRY_VOID(CopyUpLocked(*parent, kCopyAllData));
  absl::MutexLock l(&copy_mu_);
  if (n.upper()) return OkResult();
  // The name may have changed meanwhile (another link of a hard-link group
  // looked up): copy up at the name whose parent is now copied up.
  auto [parent2, name2] = n.Name();
  if (parent2 != parent) {
    if (parent2 && !parent2->upper()) return kEAGAIN;
    parent = std::move(parent2);
  }
  name = std::move(name2);
  return CopyUpOneLocked(n, data_limit);
}

KResult<void> OverlayFilesystem::CopyData(
    const std::shared_ptr<vfs::Dentry>& lower, const vfs::VirtualDentry& upper,
    uint64_t size) {
  if (size == 0) return OkResult();
  TRY(std::shared_ptr<vfs::VfsFile> lf,
      lower->inode().Open({lower_mount_, lower}, O_RDONLY));
  TRY(std::shared_ptr<vfs::VfsFile> uf,
      upper.dentry->inode().Open(upper, O_WRONLY));
  vfs::IoContext ctx;
  std::vector<uint8_t> buf(kCopyChunk);
  uint64_t off = 0;
  while (off < size) {
    size_t want =
        static_cast<size_t>(std::min<uint64_t>(kCopyChunk, size - off));
    TRY(size_t n, lf->PRead(ctx, absl::MakeSpan(buf.data(), want),
                            static_cast<int64_t>(off)));
    if (n == 0) break;  // the lower file shrank: the size is set after
    if (!AllZero(buf.data(), n)) {
      size_t done = 0;
      while (done < n) {
        TRY(size_t w,
            uf->PWrite(ctx, absl::MakeConstSpan(buf.data() + done, n - done),
                       static_cast<int64_t>(off + done)));
        if (w == 0) return kENOSPC;
        done += w;
      }
    }
    off += n;
  }
  return OkResult();
}

KResult<void> OverlayFilesystem::CopyUpOneLocked(OverlayInode& n,
                                                 uint64_t data_limit) {
  std::shared_ptr<vfs::Dentry> lower = n.lower();
  if (!lower) return kEIO;  // every file without an upper has a lower
  auto [parent, name] = n.Name();
  vfs::Inode& li = lower->inode();
  abi::Stat st = li.Stat();
  vfs::NewInodeAttrs attrs{.mode = st.st_mode,
                           .uid = st.st_uid,
                           .gid = st.st_gid,
                           .rdev = st.st_rdev};
  std::string target;
  if (li.IsSymlink()) {
    TRY(target, li.Readlink());
  }
  std::vector<std::pair<std::string, std::string>> xattrs;
  if (KResult<std::vector<std::string>> names = li.ListXattr(); names.ok()) {
    for (const std::string& x : *names) {
      if (IsPrivateXattr(x)) continue;
      KResult<std::string> v = li.GetXattr(x);
      if (v.ok()) xattrs.emplace_back(x, std::move(v).value());
    }
  }
  std::shared_ptr<vfs::Dentry> pup = parent ? parent->upper() : nullptr;
  if (parent && !pup) return kEIO;  // CopyUpLocked copied the parent
  // An unnamed file (its name was removed while it stayed open) becomes an
  // unnamed upper file under the upper root.
  std::shared_ptr<vfs::Dentry> holder = pup ? pup : upper_mount_->root();

  // ovl_set_timestamps: linking the copy into the upper parent must not
  // change the parent's times (they are the lower directory's).
  abi::Stat pst{};
  if (pup) pst = pup->inode().Stat();
  std::shared_ptr<vfs::Inode> ui;
  std::shared_ptr<vfs::Dentry> ud;
  auto apply_xattrs = [&](vfs::Inode& inode) -> KResult<void> {
    for (const auto& [x, v] : xattrs) TRY_VOID(inode.SetXattr(x, v, 0));
    return OkResult();
  };
  if (li.IsRegular() || !pup) {
    if (!li.IsRegular()) return kENOENT;  // unnamed non-regular: nothing
    TRY(ui, holder->inode().CreateTmpfile(attrs));
    std::shared_ptr<vfs::Dentry> anon = vfs::Dentry::NewAnonymous(holder, ui);
    uint64_t size =
        std::min<uint64_t>(static_cast<uint64_t>(st.st_size), data_limit);
    TRY_VOID(CopyData(lower, {upper_mount_, anon}, size));
    vfs::SetAttrRequest req;
    req.mask = vfs::SetAttrRequest::kSize;
    req.size = size;
    TRY_VOID(ui->SetAttr(req));
    TRY_VOID(apply_xattrs(*ui));
    if (!pup) {
      ud = std::move(anon);
    } else {
      absl::MutexLock l(&upper_fs_->tree_mu());
      pup->fs().tree_mu().AssertHeld();
      TRY_VOID(pup->inode().LinkChild(name, ui));
      RecordOrigin(ui->ino(), n.ino());
      TRY(ud, pup->LookupChild(name));
      n.SetUpper(ud);
    }
  } else {
    absl::MutexLock l(&upper_fs_->tree_mu());
    pup->fs().tree_mu().AssertHeld();
    TRY(ui, pup->inode().CreateChild(name, attrs, target));
    TRY_VOID(apply_xattrs(*ui));
    RecordOrigin(ui->ino(), n.ino());
    TRY(ud, pup->LookupChild(name));
    n.SetUpper(ud);
  }
  if (!pup) n.SetUpper(ud);
  // Mode (set-id bits: creation may not keep them), owner, times last: the
  // writes and the link changed mtime/ctime.
  vfs::SetAttrRequest req;
  req.mask = vfs::SetAttrRequest::kMode | vfs::SetAttrRequest::kUid |
             vfs::SetAttrRequest::kGid | vfs::SetAttrRequest::kAtime |
             vfs::SetAttrRequest::kMtime;
  req.mode = st.st_mode & 07777;
  req.uid = st.st_uid;
  req.gid = st.st_gid;
  req.atime = st.st_atim;
  req.mtime = st.st_mtim;
  TRY_VOID(ui->SetAttr(req));
  if (pup) {
    vfs::SetAttrRequest preq;
    preq.mask = vfs::SetAttrRequest::kAtime | vfs::SetAttrRequest::kMtime;
    preq.atime = pst.st_atim;
    preq.mtime = pst.st_mtim;
    TRY_VOID(pup->inode().SetAttr(preq));
  }
  if (li.IsRegular() && st.st_nlink > 1) {
    // Keep the hard-link group together (Linux's index=on).
    absl::MutexLock l(&ident_mu_);
    index_[n.ino()] = IndexEntry{ud, st.st_nlink - 1};
  }
  copy_ups_.fetch_add(1, std::memory_order_relaxed);
  n.SyncAttrs();
  return OkResult();
}

}  // namespace sandbox::fs::overlay
