// Overlay directories: lookup merging, creation over whiteouts, unlink and
// rmdir with whiteouts, rename, merged getdents (Linux's fs/overlayfs
// namei.c, dir.c, readdir.c).
//
// Locking: every operation here is called with the overlay's tree_mu held
// (shared: Lookup, IterDirents, IsEmptyDir; exclusive: the others) and
// takes one real file system's tree_mu at a time (upper before lower when
// both are needed in turn, never nested).
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <utility>

#include "sentry/fs/overlay/internal.h"
#include "sentry/fs/overlay/overlay.h"

namespace sandbox::fs::overlay {
namespace {

// getdents offsets of a merged directory: the lower pass (lower names, with
// what hides or replaces them in the upper layer) below kUpperPass, then the
// upper pass (names only the upper layer has) at kUpperPass + the upper
// cookie. Lower cookies at or past kLowerMapBit (ext4's hash cookies through
// the Gofer) are replaced by kLowerMapBit + an index.
constexpr int64_t kUpperPass = int64_t{1} << 62;
constexpr int64_t kLowerMapBit = int64_t{1} << 61;
// Entries read from a real directory per batch.
constexpr size_t kBatch = 512;

struct RealEntry {
  std::string name;
  uint64_t ino;
  uint8_t type;
  int64_t next;
};

vfs::NewInodeAttrs WhiteoutAttrs() {
  return vfs::NewInodeAttrs{.mode = S_IFCHR, .uid = 0, .gid = 0, .rdev = 0};
}

}  // namespace

KResult<OverlayInode::Found> OverlayInode::FindReal(std::string_view name) {
  Found f;
  std::shared_ptr<vfs::Dentry> up = upper();
  if (up) {
    vfs::Filesystem& ufs = up->fs();
    absl::ReaderMutexLock l(&ufs.tree_mu());
    up->fs().tree_mu().AssertReaderHeld();
    KResult<std::shared_ptr<vfs::Dentry>> r = up->LookupChild(name);
    if (r.ok()) {
      if (IsWhiteout((*r)->inode())) {
        f.whiteout = true;
      } else {
        f.upper = std::move(r).value();
      }
    } else if (r.error() != kENOENT) {
      return r.error();
    }
  }
  if (f.whiteout) return kENOENT;
  // An upper non-directory hides the lower name; an opaque upper directory
  // hides the lower directory's entries.
  if (f.upper && (!f.upper->inode().IsDir() || IsOpaque(f.upper->inode()))) {
    return f;
  }
  if (lower_) {
    vfs::Filesystem& lfs = lower_->fs();
    absl::ReaderMutexLock l(&lfs.tree_mu());
    lower_->fs().tree_mu().AssertReaderHeld();
    KResult<std::shared_ptr<vfs::Dentry>> r = lower_->LookupChild(name);
    if (r.ok()) {
      // Under an upper directory only a lower directory merges.
      if (!f.upper || (*r)->inode().IsDir()) f.lower = std::move(r).value();
    } else if (r.error() != kENOENT) {
      return r.error();
    }
  }
  if (!f.upper && !f.lower) return kENOENT;
  return f;
}

std::shared_ptr<OverlayInode> OverlayInode::Cached(std::string_view name) {
  absl::MutexLock l(&dir_mu_);
  auto it = children_.find(absl::string_view(name.data(), name.size()));
  return it == children_.end() ? nullptr : it->second;
}

void OverlayInode::Remember(std::string_view name,
                            std::shared_ptr<OverlayInode> n) {
  {
    absl::MutexLock l(&dir_mu_);
    if (!children_.emplace(std::string(name), std::move(n)).second) return;
  }
  ofs().NoteCached(std::static_pointer_cast<OverlayInode>(shared_from_this()),
                   std::string(name));
}

void OverlayInode::Forget(std::string_view name) {
  absl::MutexLock l(&dir_mu_);
  children_.erase(std::string(name));
}

void OverlayFilesystem::NoteCached(const std::shared_ptr<OverlayInode>& dir,
                                   std::string name) {
  absl::MutexLock l(&cache_mu_);
  cached_.emplace_back(dir, std::move(name));
  while (cached_.size() > max_cached_names_) {
    auto [weak, old] = std::move(cached_.front());
    cached_.pop_front();
    if (std::shared_ptr<OverlayInode> d = weak.lock()) d->Forget(old);
  }
}

KResult<std::shared_ptr<OverlayInode>> OverlayInode::LookupOverlay(
    std::string_view name) {
  auto self = std::static_pointer_cast<OverlayInode>(shared_from_this());
  if (std::shared_ptr<OverlayInode> n = Cached(name)) {
    n->SetName(self, std::string(name));
    return n;
  }
  TRY(Found f, FindReal(name));
  std::shared_ptr<OverlayInode> n =
      ofs().GetInode(std::move(f.upper), std::move(f.lower));
  n->SetName(self, std::string(name));
  Remember(name, n);
  return n;
}

KResult<std::shared_ptr<vfs::Inode>> OverlayInode::Lookup(
    std::string_view name) {
  TRY(std::shared_ptr<OverlayInode> n, LookupOverlay(name));
  return std::shared_ptr<vfs::Inode>(std::move(n));
}

bool OverlayInode::LowerPositive(std::string_view name) {
  if (!lower_) return false;
  vfs::Filesystem& lfs = lower_->fs();
  absl::ReaderMutexLock l(&lfs.tree_mu());
  return lower_->inode().Lookup(name).ok();
}

bool OverlayInode::RemoveWhiteoutLocked(std::string_view name) {
  std::shared_ptr<vfs::Dentry> up = upper();
  up->fs().tree_mu().AssertHeld();
  KResult<std::shared_ptr<vfs::Inode>> r = up->inode().Lookup(name);
  if (!r.ok() || !IsWhiteout(**r)) return false;
  if (!up->inode().RemoveChild(name, **r).ok()) return false;
  up->ChildRemoved(std::string(name));
  return true;
}

KResult<void> OverlayInode::MakeWhiteoutLocked(std::string_view name) {
  std::shared_ptr<vfs::Dentry> up = upper();
  up->fs().tree_mu().AssertHeld();
  TRY_VOID(up->inode().CreateChild(name, WhiteoutAttrs(), {}));
  return OkResult();
}

KResult<void> OverlayInode::ClearWhiteouts() {
  std::shared_ptr<vfs::Dentry> up = upper();
  if (!up) return OkResult();
  absl::MutexLock l(&up->fs().tree_mu());
  up->fs().tree_mu().AssertHeld();
  std::vector<std::string> names;
  bool other = false;
  TRY_VOID(up->inode().IterDirents(2, [&](const vfs::DirEntry& e) {
    names.emplace_back(e.name);
    return true;
  }));
  for (const std::string& name : names) {
    KResult<std::shared_ptr<vfs::Inode>> r = up->inode().Lookup(name);
    if (!r.ok()) continue;
    if (!IsWhiteout(**r)) {
      other = true;
      continue;
    }
    TRY_VOID(up->inode().RemoveChild(name, **r));
    up->ChildRemoved(name);
  }
  if (other) return kENOTEMPTY;
  return OkResult();
}

KResult<void> OverlayInode::EnsureUpperName(std::string_view name,
                                            OverlayInode& n) {
  std::shared_ptr<vfs::Dentry> up = upper();
  std::shared_ptr<vfs::Dentry> nu = n.upper();
  absl::MutexLock l(&up->fs().tree_mu());
  up->fs().tree_mu().AssertHeld();
  if (up->inode().Lookup(name).ok()) return OkResult();
  TRY_VOID(up->inode().LinkChild(name, nu->inode_ref()));
  OverlayFilesystem& o = ofs();
  absl::MutexLock il(&o.ident_mu_);
  auto it = o.index_.find(n.ino());
  if (it != o.index_.end() && it->second.lower_links_left > 0) {
    --it->second.lower_links_left;
  }
  return OkResult();
}

KResult<std::shared_ptr<vfs::Inode>> OverlayInode::CreateChild(
    std::string_view name, const vfs::NewInodeAttrs& attrs,
    std::string_view symlink_target) {
  // ovl_create_object: a whiteout cannot be made through the overlay.
  if ((attrs.mode & S_IFMT) == S_IFCHR && attrs.rdev == 0) return kEPERM;
  Forget(name);
  TRY_VOID(ofs().CopyUpLocked(*this, kCopyAllData));
  std::shared_ptr<vfs::Dentry> up = upper();
  std::shared_ptr<vfs::Dentry> created;
  {
    absl::MutexLock l(&up->fs().tree_mu());
    up->fs().tree_mu().AssertHeld();
    // ovl_create_over_whiteout: the new file replaces the whiteout; a new
    // directory there is opaque, so the lower directory stays hidden.
    bool was_whiteout = RemoveWhiteoutLocked(name);
    KResult<std::shared_ptr<vfs::Inode>> r =
        up->inode().CreateChild(name, attrs, symlink_target);
    if (!r.ok()) {
      if (was_whiteout) (void)MakeWhiteoutLocked(name);
      return r.error();
    }
    if ((attrs.mode & S_IFMT) == S_IFDIR && was_whiteout) {
      TRY_VOID((*r)->SetXattr(std::string(kOpaqueXattr), "y", 0));
    }
    TRY(created, up->LookupChild(name));
  }
  std::shared_ptr<OverlayInode> n = ofs().GetInode(std::move(created), nullptr);
  n->SetName(std::static_pointer_cast<OverlayInode>(shared_from_this()),
             std::string(name));
  SyncAttrs();
  return std::shared_ptr<vfs::Inode>(std::move(n));
}

KResult<std::shared_ptr<vfs::Inode>> OverlayInode::CreateTmpfile(
    const vfs::NewInodeAttrs& attrs) {
  TRY_VOID(ofs().CopyUp(*this, kCopyAllData));
  std::shared_ptr<vfs::Dentry> up = upper();
  TRY(std::shared_ptr<vfs::Inode> ui, up->inode().CreateTmpfile(attrs));
  std::shared_ptr<vfs::Dentry> ud = vfs::Dentry::NewAnonymous(up, ui);
  std::shared_ptr<OverlayInode> n = ofs().GetInode(std::move(ud), nullptr);
  return std::shared_ptr<vfs::Inode>(std::move(n));
}

KResult<void> OverlayInode::LinkChild(
    std::string_view name, const std::shared_ptr<vfs::Inode>& target) {
  auto& t = static_cast<OverlayInode&>(*target);
  Forget(name);
  // ovl_link: the source is copied up and linked in the upper layer.
  TRY_VOID(ofs().CopyUpLocked(t, kCopyAllData));
  TRY_VOID(ofs().CopyUpLocked(*this, kCopyAllData));
  std::shared_ptr<vfs::Dentry> up = upper();
  std::shared_ptr<vfs::Dentry> tu = t.upper();
  {
    absl::MutexLock l(&up->fs().tree_mu());
    up->fs().tree_mu().AssertHeld();
    bool was_whiteout = RemoveWhiteoutLocked(name);
    KResult<void> r = up->inode().LinkChild(name, tu->inode_ref());
    if (!r.ok()) {
      if (was_whiteout) (void)MakeWhiteoutLocked(name);
      return r.error();
    }
  }
  SyncAttrs();
  t.SyncAttrs();
  return OkResult();
}

KResult<void> OverlayInode::RemoveChild(std::string_view name,
                                        vfs::Inode& child) {
  auto& c = static_cast<OverlayInode&>(child);
  Forget(name);
  TRY_VOID(ofs().CopyUpLocked(*this, kCopyAllData));
  bool lower_positive = LowerPositive(name);
  // ovl_remove_and_whiteout / ovl_clear_empty: a merged directory that only
  // looks empty still holds whiteouts in its upper directory.
  if (c.IsDir() && c.merged()) TRY_VOID(c.ClearWhiteouts());
  std::shared_ptr<vfs::Dentry> up = upper();
  bool had_upper = false;
  {
    absl::MutexLock l(&up->fs().tree_mu());
    up->fs().tree_mu().AssertHeld();
    KResult<std::shared_ptr<vfs::Inode>> r = up->inode().Lookup(name);
    if (r.ok() && !IsWhiteout(**r)) {
      TRY_VOID(up->inode().RemoveChild(name, **r));
      up->ChildRemoved(std::string(name));
      had_upper = true;
    }
    if (lower_positive) TRY_VOID(MakeWhiteoutLocked(name));
  }
  if (!had_upper) {
    {
      absl::MutexLock l(&c.layer_mu_);
      if (!c.upper_) c.removed_ = true;
    }
    OverlayFilesystem& o = ofs();
    absl::MutexLock il(&o.ident_mu_);
    auto it = o.index_.find(c.ino());
    if (it != o.index_.end() && it->second.lower_links_left > 0) {
      --it->second.lower_links_left;
    }
  }
  auto [p, n] = c.Name();
  if (p.get() == this && n == name) c.SetName(nullptr, "");
  SyncAttrs();
  c.SyncAttrs();
  return OkResult();
}

KResult<void> OverlayInode::RenameChild(std::string_view old_name,
                                        vfs::Inode& new_dir,
                                        std::string_view new_name,
                                        uint32_t flags) {
  auto& nd = static_cast<OverlayInode&>(new_dir);
  bool exchange = flags & RENAME_EXCHANGE;
  TRY(std::shared_ptr<OverlayInode> from, LookupOverlay(old_name));
  KResult<std::shared_ptr<OverlayInode>> to_r = nd.LookupOverlay(new_name);
  if (!to_r.ok() && to_r.error() != kENOENT) return to_r.error();
  std::shared_ptr<OverlayInode> to =
      to_r.ok() ? std::move(to_r).value() : nullptr;
  Forget(old_name);
  nd.Forget(new_name);
  // ovl_can_move without redirect_dir: a directory with a lower layer
  // (merged or lower-only) cannot be renamed.
  if (from->IsDir() && from->lower()) return kEXDEV;
  if (exchange && to && to->IsDir() && to->lower()) return kEXDEV;
  OverlayFilesystem& o = ofs();
  TRY_VOID(o.CopyUpLocked(*this, kCopyAllData));
  TRY_VOID(o.CopyUpLocked(nd, kCopyAllData));
  TRY_VOID(o.CopyUpLocked(*from, kCopyAllData));
  TRY_VOID(EnsureUpperName(old_name, *from));
  if (exchange) {
    TRY_VOID(o.CopyUpLocked(*to, kCopyAllData));
    TRY_VOID(nd.EnsureUpperName(new_name, *to));
  }
  if (to && !exchange && to->IsDir() && to->merged()) {
    TRY_VOID(to->ClearWhiteouts());
  }
  bool old_lower_positive = !exchange && LowerPositive(old_name);
  bool to_had_upper = to && to->upper();
  std::shared_ptr<vfs::Dentry> up = upper();
  std::shared_ptr<vfs::Dentry> nup = nd.upper();
  {
    absl::MutexLock l(&up->fs().tree_mu());
    up->fs().tree_mu().AssertHeld();
    nup->fs().tree_mu().AssertHeld();
    TRY_VOID(up->inode().RenameChild(old_name, nup->inode(), new_name,
                                     exchange ? RENAME_EXCHANGE : 0));
    if (exchange) {
      up->ChildrenExchanged(std::string(old_name), *nup, std::string(new_name));
    } else {
      up->ChildMoved(std::string(old_name), *nup, std::string(new_name));
    }
    // RENAME_WHITEOUT semantics: the lower name stays hidden.
    if (old_lower_positive) TRY_VOID(MakeWhiteoutLocked(old_name));
    // A pure-upper directory moved into a merged directory is made opaque
    // (ovl_rename), so a lower directory of that name never merges in.
    if (from->IsDir() && nd.lower()) {
      TRY_VOID(
          from->upper()->inode().SetXattr(std::string(kOpaqueXattr), "y", 0));
    }
    if (exchange && to->IsDir() && lower()) {
      TRY_VOID(
          to->upper()->inode().SetXattr(std::string(kOpaqueXattr), "y", 0));
    }
  }
  from->SetName(std::static_pointer_cast<OverlayInode>(nd.shared_from_this()),
                std::string(new_name));
  if (to) {
    if (exchange) {
      to->SetName(std::static_pointer_cast<OverlayInode>(shared_from_this()),
                  std::string(old_name));
    } else {
      if (!to_had_upper) {
        absl::MutexLock l(&to->layer_mu_);
        to->removed_ = true;
      }
      auto [p, n] = to->Name();
      if (p.get() == &nd && n == new_name) to->SetName(nullptr, "");
      to->SyncAttrs();
    }
  }
  SyncAttrs();
  if (&nd != this) nd.SyncAttrs();
  from->SyncAttrs();
  return OkResult();
}

// --- getdents ---

int64_t OverlayInode::MapLowerCookie(int64_t cookie) {
  if (cookie < kLowerMapBit) return cookie;
  absl::MutexLock l(&dir_mu_);
  auto it = lower_cookie_index_.find(cookie);
  if (it != lower_cookie_index_.end()) return kLowerMapBit + it->second;
  int64_t idx = static_cast<int64_t>(lower_cookies_.size());
  lower_cookies_.push_back(cookie);
  lower_cookie_index_[cookie] = idx;
  return kLowerMapBit + idx;
}

int64_t OverlayInode::UnmapLowerCookie(int64_t offset) {
  if (offset < kLowerMapBit) return offset;
  absl::MutexLock l(&dir_mu_);
  uint64_t idx = static_cast<uint64_t>(offset - kLowerMapBit);
  if (idx >= lower_cookies_.size()) return INT64_MAX;  // not ours: the end
  return lower_cookies_[idx];
}

KResult<void> OverlayInode::IterDirents(int64_t offset, vfs::DirentSink sink) {
  std::shared_ptr<vfs::Dentry> up = upper();
  OverlayFilesystem& o = ofs();
  std::vector<RealEntry> batch;
  if (offset < kUpperPass && lower_) {
    // Lower pass: every lower name not whited out, shown as the upper
    // entry that replaces it if any (so a copy-up during the listing
    // neither hides nor repeats a name).
    int64_t cookie = UnmapLowerCookie(offset);
    for (;;) {
      batch.clear();
      {
        vfs::Filesystem& lfs = lower_->fs();
        absl::ReaderMutexLock l(&lfs.tree_mu());
        TRY_VOID(
            lower_->inode().IterDirents(cookie, [&](const vfs::DirEntry& e) {
              batch.push_back(
                  RealEntry{std::string(e.name), e.ino, e.type, e.next_offset});
              return batch.size() < kBatch;
            }));
      }
      if (batch.empty()) break;
      for (RealEntry& e : batch) {
        uint64_t ino = e.ino;
        uint8_t type = e.type;
        bool hidden = false;
        if (up) {
          absl::ReaderMutexLock l(&up->fs().tree_mu());
          KResult<std::shared_ptr<vfs::Inode>> r = up->inode().Lookup(e.name);
          if (r.ok()) {
            if (IsWhiteout(**r)) {
              hidden = true;
            } else {
              type = vfs::DirentType((*r)->type());
              ino = o.UpperIno((*r)->ino());
            }
          }
        }
        int64_t next = MapLowerCookie(e.next);
        if (!hidden && !sink(vfs::DirEntry{e.name, ino, type, next})) {
          return OkResult();
        }
        cookie = e.next;
      }
      if (batch.size() < kBatch) break;
    }
    offset = kUpperPass + 2;
  }
  if (!up) return OkResult();
  // Upper pass: names only the upper layer has (whiteouts never show).
  int64_t cookie = offset >= kUpperPass ? offset - kUpperPass : offset;
  struct UpperEntry {
    RealEntry e;
    bool whiteout;
  };
  std::vector<UpperEntry> ubatch;
  for (;;) {
    ubatch.clear();
    {
      absl::ReaderMutexLock l(&up->fs().tree_mu());
      TRY_VOID(up->inode().IterDirents(cookie, [&](const vfs::DirEntry& e) {
        bool whiteout = false;
        if (e.type == DT_CHR) {
          KResult<std::shared_ptr<vfs::Inode>> r = up->inode().Lookup(e.name);
          whiteout = r.ok() && IsWhiteout(**r);
        }
        ubatch.push_back(UpperEntry{
            RealEntry{std::string(e.name), e.ino, e.type, e.next_offset},
            whiteout});
        return ubatch.size() < kBatch;
      }));
    }
    if (ubatch.empty()) break;
    for (UpperEntry& u : ubatch) {
      bool shown = !u.whiteout && !LowerPositive(u.e.name);
      if (shown && !sink(vfs::DirEntry{u.e.name, o.UpperIno(u.e.ino), u.e.type,
                                       kUpperPass + u.e.next})) {
        return OkResult();
      }
      cookie = u.e.next;
    }
    if (ubatch.size() < kBatch) break;
  }
  return OkResult();
}

bool OverlayInode::IsEmptyDir() {
  bool empty = true;
  KResult<void> r = IterDirents(2, [&](const vfs::DirEntry&) {
    empty = false;
    return false;
  });
  return r.ok() && empty;
}

}  // namespace sandbox::fs::overlay
