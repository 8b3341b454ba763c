// Name-changing operations: mkdir, mknod, symlink, link, unlink/rmdir,
// rename (Linux's filename_create, may_create, may_delete, vfs_rename).
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include "absl/functional/function_ref.h"
#include "sentry/vfs/operations.h"
#include "sentry/vfs/permissions.h"

namespace sandbox::vfs {
namespace {

// The caller resolves the last component and `make` creates it, holding
// tree_mu exclusively, after Linux's filename_create + may_create checks:
// EEXIST (also for "/", "." and ".."), ENOENT (removed directory, or a
// trailing slash on a non-directory), EXDEV (`same_mount` differs), EROFS,
// EACCES.
KResult<void> CreateAt(
    const ResolveBase& base, std::string_view path, bool is_dir,
    const VirtualDentry* same_mount,
    absl::FunctionRef<KResult<void>(Inode& dir, const std::string& name)>
        make) {
  PathWalker w(base, 0);
  TRY_VOID(w.Start(path, /*allow_empty=*/false));
  TRY_VOID(w.WalkParent());
  if (w.last_type() != LastType::kNormal) return kEEXIST;
  const VirtualDentry& dir = w.dir();
  absl::MutexLock l(&dir.dentry->fs().tree_mu());
  if (dir.dentry->dead()) return kENOENT;
  if (w.last().size() > kNameMax) return kENAMETOOLONG;
  KResult<std::shared_ptr<Dentry>> found = dir.dentry->LookupChild(w.last());
  if (found.ok()) return kEEXIST;
  if (found.error() != kENOENT) return found.error();
  if (w.trailing_slash() && !is_dir) return kENOENT;
  if (dir.mount->read_only()) return kEROFS;
  if (same_mount != nullptr && same_mount->mount != dir.mount) return kEXDEV;
  TRY_VOID(
      CheckPermission(base.creds, kMayWrite | kMayExec, dir.dentry->inode()));
  TRY_VOID(make(dir.dentry->inode(), w.last()));
  return OkResult();
}

// may_delete: `victim` is the entry to remove or replace in `dir`.
KResult<void> MayDelete(const kernel::Credentials& creds, Inode& dir,
                        Inode& victim, bool want_dir) {
  InodeAttrs d = dir.Attrs();
  TRY_VOID(CheckPermission(creds, kMayWrite | kMayExec, d.mode, d.uid, d.gid));
  TRY_VOID(CheckSticky(creds, d, victim.Attrs()));
  if (want_dir && !victim.IsDir()) return kENOTDIR;
  if (!want_dir && victim.IsDir()) return kEISDIR;
  return OkResult();
}

}  // namespace

KResult<void> MkdirAt(const ResolveBase& base, std::string_view path,
                      uint32_t mode, uint32_t umask) {
  return CreateAt(base, path, /*is_dir=*/true, nullptr,
                  [&](Inode& dir, const std::string& name) -> KResult<void> {
                    NewInodeAttrs a =
                        InitOwner(base.creds, dir.Attrs(),
                                  S_IFDIR | (mode & (0777 | S_ISVTX) & ~umask));
                    TRY_VOID(dir.CreateChild(name, a, {}));
                    return OkResult();
                  });
}

KResult<void> MknodAt(const ResolveBase& base, std::string_view path,
                      uint32_t mode, uint64_t dev, uint32_t umask) {
  uint32_t type = mode & S_IFMT;
  switch (type) {
    case 0:
      type = S_IFREG;
      break;
    case S_IFREG:
    case S_IFIFO:
    case S_IFSOCK:
    case S_IFCHR:
    case S_IFBLK:
      break;
    case S_IFDIR:
      return kEPERM;
    default:
      return kEINVAL;
  }
  return CreateAt(base, path, /*is_dir=*/false, nullptr,
                  [&](Inode& dir, const std::string& name) -> KResult<void> {
                    if ((type == S_IFCHR || type == S_IFBLK) &&
                        !base.creds.HasCapability(kCapMknod)) {
                      return kEPERM;
                    }
                    NewInodeAttrs a = InitOwner(base.creds, dir.Attrs(),
                                                type | (mode & 07777 & ~umask));
                    if (type == S_IFCHR || type == S_IFBLK) a.rdev = dev;
                    TRY_VOID(dir.CreateChild(name, a, {}));
                    return OkResult();
                  });
}

KResult<void> SymlinkAt(const ResolveBase& base, std::string_view target,
                        std::string_view path) {
  if (target.empty()) return kENOENT;
  if (target.size() >= kPathMax) return kENAMETOOLONG;
  if (target.find('\0') != std::string_view::npos) return kEINVAL;
  return CreateAt(base, path, /*is_dir=*/false, nullptr,
                  [&](Inode& dir, const std::string& name) -> KResult<void> {
                    NewInodeAttrs a =
                        InitOwner(base.creds, dir.Attrs(), S_IFLNK | 0777);
                    TRY_VOID(dir.CreateChild(name, a, target));
                    return OkResult();
                  });
}

KResult<void> LinkAt(const ResolveBase& old_base, std::string_view old_path,
                     const ResolveBase& new_base, std::string_view new_path,
                     int flags) {
  if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH)) return kEINVAL;
  if ((flags & AT_EMPTY_PATH) &&
      !old_base.creds.HasCapability(kernel::kCapDacReadSearch)) {
    return kENOENT;
  }
  ResolveOptions opts;
  opts.follow_final = flags & AT_SYMLINK_FOLLOW;
  opts.allow_empty = flags & AT_EMPTY_PATH;
  TRY(VirtualDentry old, Resolve(old_base, old_path, opts));
  return CreateAt(new_base, new_path, /*is_dir=*/false, &old,
                  [&](Inode& dir, const std::string& name) -> KResult<void> {
                    Inode& target = old.dentry->inode();
                    if (&target.fs() != &dir.fs()) return kEXDEV;
                    if (target.IsDir()) return kEPERM;
                    if (target.nlink() == 0 && !target.linkable())
                      return kENOENT;
                    TRY_VOID(dir.LinkChild(name, old.dentry->inode_ref()));
                    target.set_linkable(false);
                    return OkResult();
                  });
}

KResult<void> UnlinkAt(const ResolveBase& base, std::string_view path,
                       int flags) {
  if (flags & ~AT_REMOVEDIR) return kEINVAL;
  bool rmdir = flags & AT_REMOVEDIR;
  PathWalker w(base, 0);
  TRY_VOID(w.Start(path, /*allow_empty=*/false));
  TRY_VOID(w.WalkParent());
  switch (w.last_type()) {
    case LastType::kNormal:
      break;
    case LastType::kDotDot:
      return rmdir ? kENOTEMPTY : kEISDIR;
    case LastType::kDot:
      return rmdir ? kEINVAL : kEISDIR;
    case LastType::kRoot:
    case LastType::kBind:  // only after FollowLastSymlink, not here
      return rmdir ? kEBUSY : kEISDIR;
  }
  const VirtualDentry& dir = w.dir();
  if (dir.mount->read_only()) return kEROFS;
  absl::MutexLock l(&dir.dentry->fs().tree_mu());
  if (dir.dentry->dead()) return kENOENT;
  if (w.last().size() > kNameMax) return kENAMETOOLONG;
  TRY(std::shared_ptr<Dentry> child, dir.dentry->LookupChild(w.last()));
  Inode& victim = child->inode();
  if (!rmdir && w.trailing_slash()) return victim.IsDir() ? kEISDIR : kENOTDIR;
  TRY_VOID(MayDelete(base.creds, dir.dentry->inode(), victim, rmdir));
  if (child->mount_count() > 0) return kEBUSY;
  if (rmdir && !victim.IsEmptyDir()) return kENOTEMPTY;
  TRY_VOID(dir.dentry->inode().RemoveChild(w.last(), victim));
  dir.dentry->ChildRemoved(w.last());
  return OkResult();
}

KResult<void> RenameAt(const ResolveBase& old_base, std::string_view old_path,
                       const ResolveBase& new_base, std::string_view new_path,
                       uint32_t flags) {
  if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) {
    return kEINVAL;
  }
  if ((flags & RENAME_EXCHANGE) &&
      (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT))) {
    return kEINVAL;
  }
  bool exchange = flags & RENAME_EXCHANGE;
  bool whiteout = flags & RENAME_WHITEOUT;

  PathWalker ow(old_base, 0);
  TRY_VOID(ow.Start(old_path, /*allow_empty=*/false));
  TRY_VOID(ow.WalkParent());
  PathWalker nw(new_base, 0);
  TRY_VOID(nw.Start(new_path, /*allow_empty=*/false));
  TRY_VOID(nw.WalkParent());
  const VirtualDentry& odir = ow.dir();
  const VirtualDentry& ndir = nw.dir();
  if (odir.mount != ndir.mount) return kEXDEV;
  if (ow.last_type() != LastType::kNormal) return kEBUSY;
  if (nw.last_type() != LastType::kNormal) return kEBUSY;
  if (odir.mount->read_only()) return kEROFS;

  absl::MutexLock l(&odir.dentry->fs().tree_mu());
  // Same mount, so the same file system and lock (for the analysis).
  ndir.dentry->fs().tree_mu().AssertHeld();
  if (odir.dentry->dead() || ndir.dentry->dead()) return kENOENT;
  if (ow.last().size() > kNameMax || nw.last().size() > kNameMax) {
    return kENAMETOOLONG;
  }
  TRY(std::shared_ptr<Dentry> from, odir.dentry->LookupChild(ow.last()));
  KResult<std::shared_ptr<Dentry>> to_r = ndir.dentry->LookupChild(nw.last());
  if (!to_r.ok() && to_r.error() != kENOENT) return to_r.error();
  std::shared_ptr<Dentry> to = to_r.ok() ? std::move(to_r).value() : nullptr;
  from->fs().tree_mu().AssertHeld();
  if ((flags & RENAME_NOREPLACE) && to) return kEEXIST;
  if (exchange && !to) return kENOENT;
  bool from_dir = from->inode().IsDir();
  bool to_dir = to && to->inode().IsDir();
  if (!exchange) {
    if (!from_dir && (ow.trailing_slash() || nw.trailing_slash())) {
      return kENOTDIR;
    }
  } else {
    if (!from_dir && ow.trailing_slash()) return kENOTDIR;
    if (!to_dir && nw.trailing_slash()) return kENOTDIR;
  }
  // A directory cannot move below itself; a target cannot be an ancestor of
  // the source.
  if (from->IsAncestorOf(*ndir.dentry)) return kEINVAL;
  if (to) {
    to->fs().tree_mu().AssertHeld();
    if (to->IsAncestorOf(*odir.dentry)) return exchange ? kEINVAL : kENOTEMPTY;
  }

  // vfs_rename.
  if (to && &to->inode() == &from->inode()) return OkResult();
  Inode& odi = odir.dentry->inode();
  Inode& ndi = ndir.dentry->inode();
  TRY_VOID(MayDelete(old_base.creds, odi, from->inode(), from_dir));
  if (!to) {
    TRY_VOID(CheckPermission(old_base.creds, kMayWrite | kMayExec, ndi));
  } else {
    TRY_VOID(MayDelete(old_base.creds, ndi, to->inode(),
                       exchange ? to_dir : from_dir));
  }
  bool new_parent = odir.dentry != ndir.dentry;
  if (new_parent && from_dir) {
    TRY_VOID(CheckPermission(old_base.creds, kMayWrite, from->inode()));
  }
  if (new_parent && exchange && to_dir) {
    TRY_VOID(CheckPermission(old_base.creds, kMayWrite, to->inode()));
  }
  if (from->mount_count() > 0 || (to && to->mount_count() > 0)) return kEBUSY;
  if (to_dir && !exchange && !to->inode().IsEmptyDir()) return kENOTEMPTY;

  TRY_VOID(odi.RenameChild(ow.last(), ndi, nw.last(),
                           flags & ~uint32_t{RENAME_WHITEOUT}));
  if (exchange) {
    odir.dentry->ChildrenExchanged(ow.last(), *ndir.dentry, nw.last());
  } else {
    odir.dentry->ChildMoved(ow.last(), *ndir.dentry, nw.last());
  }
  if (whiteout) {
    // RENAME_WHITEOUT (overlayfs): the old name becomes a whiteout, a
    // character device 0:0 with mode 0 owned as a new inode would be
    // (shmem_whiteout). If it cannot be made, the rename is undone.
    NewInodeAttrs a = InitOwner(old_base.creds, odi.Attrs(), S_IFCHR);
    a.rdev = 0;
    KResult<std::shared_ptr<Inode>> w = odi.CreateChild(ow.last(), a, {});
    if (!w.ok()) {
      if (ndi.RenameChild(nw.last(), odi, ow.last(), 0).ok()) {
        ndir.dentry->ChildMoved(nw.last(), *odir.dentry, ow.last());
      }
      return w.error();
    }
  }
  return OkResult();
}

}  // namespace sandbox::vfs
