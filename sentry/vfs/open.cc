// OpenAt: Linux's path_openat/do_open/may_open.
#include <fcntl.h>
#include <sys/stat.h>

#include "sentry/vfs/operations.h"
#include "sentry/vfs/permissions.h"

namespace sandbox::vfs {
namespace {

// MAY_* bits an open with `flags` needs (ACC_MODE, plus write for O_TRUNC).
int AccessMask(uint32_t flags) {
  int may = 0;
  switch (flags & O_ACCMODE) {
    case O_RDONLY:
      may = kMayRead;
      break;
    case O_WRONLY:
      may = kMayWrite;
      break;
    default:
      may = kMayRead | kMayWrite;
      break;  // O_RDWR and 3
  }
  if (flags & O_TRUNC) may |= kMayWrite;
  return may;
}

KResult<std::shared_ptr<VfsFile>> OpenChecked(const ResolveBase& base,
                                              const VirtualDentry& vd,
                                              uint32_t flags, bool created);

// may_open + the open itself, for an existing inode or one just created.
KResult<std::shared_ptr<VfsFile>> OpenResolved(const ResolveBase& base,
                                               const VirtualDentry& vd,
                                               uint32_t flags, bool created) {
  Inode& inode = vd.dentry->inode();
  if (flags & O_PATH) return std::make_shared<PathFile>(vd, flags);
  int may = AccessMask(flags);
  switch (inode.type()) {
    case S_IFLNK:
      return kELOOP;
    case S_IFDIR:
      if (may & kMayWrite) return kEISDIR;
      break;
    case S_IFBLK:
    case S_IFCHR:
      if (vd.mount->flags() & kMountNoDev) return kEACCES;
      break;
    case S_IFIFO:
    case S_IFSOCK:
      flags &= ~O_TRUNC;
      break;
    default:
      break;
  }
  if (!created) {
    TRY_VOID(CheckPermission(base.creds, may, inode));
    if ((flags & O_NOATIME) &&
        !IsOwnerOrCapable(base.creds, inode.Attrs().uid)) {
      return kEPERM;
    }
  }
  bool regular_or_dir = inode.IsRegular() || inode.IsDir();
  if ((may & kMayWrite) && regular_or_dir && vd.mount->read_only()) {
    return kEROFS;
  }
  // do_dentry_open: a regular file opened for writing counts as a writer
  // (ETXTBSY while it runs), before O_TRUNC is applied.
  const bool writer = (may & kMayWrite) && inode.IsRegular();
  if (writer) TRY_VOID(inode.GetWriteAccess());
  KResult<std::shared_ptr<VfsFile>> file =
      OpenChecked(base, vd, flags, created);
  if (!writer) return file;
  if (!file.ok()) {
    inode.PutWriteAccess();
    return file;
  }
  (*file)->HoldWriteAccess();
  return file;
}

// OpenResolved after the checks: O_TRUNC and the open itself.
KResult<std::shared_ptr<VfsFile>> OpenChecked(const ResolveBase& base,
                                              const VirtualDentry& vd,
                                              uint32_t flags, bool created) {
  Inode& inode = vd.dentry->inode();
  if ((flags & O_TRUNC) && inode.IsRegular() && !created) {
    SetAttrRequest req;
    abi::Timespec now = Now();
    req.mask =
        SetAttrRequest::kSize | SetAttrRequest::kMtime | SetAttrRequest::kCtime;
    req.size = 0;
    req.mtime = req.ctime = now;
    uint32_t mode = inode.mode() & 07777;
    uint32_t kept = ModeAfterWrite(base.creds, mode);
    if (kept != mode) {
      req.mask |= SetAttrRequest::kMode;
      req.mode = kept;
    }
    TRY_VOID(inode.SetAttr(req));
  }
  if (inode.IsDir()) return std::make_shared<DirectoryFile>(vd, flags);
  return inode.Open(vd, flags);
}

// O_TMPFILE: an unnamed regular file in the directory `path`.
KResult<std::shared_ptr<VfsFile>> OpenTmpfile(const ResolveBase& base,
                                              std::string_view path,
                                              uint32_t flags, uint32_t mode,
                                              uint32_t umask,
                                              uint64_t resolve) {
  if (flags & O_CREAT) return kEINVAL;
  if (!(AccessMask(flags) & kMayWrite) || (flags & O_PATH)) return kEINVAL;
  ResolveOptions opts;
  opts.must_be_dir = true;
  opts.resolve = resolve;
  TRY(VirtualDentry dir, Resolve(base, path, opts));
  Inode& di = dir.dentry->inode();
  TRY_VOID(CheckPermission(base.creds, kMayWrite | kMayExec, di));
  if (dir.mount->read_only()) return kEROFS;
  NewInodeAttrs attrs =
      InitOwner(base.creds, di.Attrs(), S_IFREG | (mode & 07777 & ~umask));
  TRY(std::shared_ptr<Inode> inode, di.CreateTmpfile(attrs));
  if (!(flags & O_EXCL)) inode->set_linkable(true);
  VirtualDentry vd{dir.mount, Dentry::NewAnonymous(dir.dentry, inode)};
  return inode->Open(vd, flags & ~O_TMPFILE);
}

}  // namespace

KResult<std::shared_ptr<VfsFile>> OpenAt(const ResolveBase& base,
                                         std::string_view path, uint32_t flags,
                                         uint32_t mode, uint32_t umask,
                                         uint64_t resolve) {
  if ((flags & O_TMPFILE) == O_TMPFILE) {
    return OpenTmpfile(base, path, flags, mode, umask, resolve);
  }
  if (flags & O_PATH) {
    flags &= O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  }
  if ((flags & O_CREAT) && (flags & O_DIRECTORY)) return kEINVAL;
  if (!(flags & O_CREAT)) {
    // Resolve is Start + WalkParent + ResolveLast, with its fast path.
    ResolveOptions opts;
    opts.follow_final = !(flags & O_NOFOLLOW);
    opts.must_be_dir = flags & O_DIRECTORY;
    opts.resolve = resolve;
    TRY(VirtualDentry vd, Resolve(base, path, opts));
    return OpenResolved(base, vd, flags, /*created=*/false);
  }
  PathWalker w(base, resolve);
  TRY_VOID(w.Start(path, /*allow_empty=*/false));
  TRY_VOID(w.WalkParent());

  // O_CREAT: look the last component up under the directory's lock so that
  // "exists" and "create" are one step; follow a final symlink (unless
  // O_EXCL or O_NOFOLLOW) and retry in its target's directory.
  for (;;) {
    if (w.last_type() == LastType::kBind) {
      // A final magic link (do_open on LAST_BIND): its target exists.
      if (flags & O_EXCL) return kEEXIST;
      const VirtualDentry& vd = w.dir();
      if (vd.dentry->inode().IsDir()) return kEISDIR;
      return OpenResolved(base, vd, flags, /*created=*/false);
    }
    if (w.last_type() != LastType::kNormal || w.trailing_slash()) {
      return kEISDIR;
    }
    const VirtualDentry& dir = w.dir();
    std::shared_ptr<Dentry> child;
    bool created = false;
    {
      absl::MutexLock l(&dir.dentry->fs().tree_mu());
      if (dir.dentry->dead()) return kENOENT;
      if (w.last().size() > kNameMax) return kENAMETOOLONG;
      KResult<std::shared_ptr<Dentry>> found =
          dir.dentry->LookupChild(w.last());
      if (found.ok()) {
        if (flags & O_EXCL) return kEEXIST;
        child = std::move(found).value();
      } else if (found.error() != kENOENT) {
        return found.error();
      } else {
        if (dir.mount->read_only()) return kEROFS;
        TRY_VOID(CheckPermission(base.creds, kMayWrite | kMayExec,
                                 dir.dentry->inode()));
        NewInodeAttrs attrs = InitOwner(base.creds, dir.dentry->inode().Attrs(),
                                        S_IFREG | (mode & 07777 & ~umask));
        TRY_VOID(dir.dentry->inode().CreateChild(w.last(), attrs, {}));
        TRY(child, dir.dentry->LookupChild(w.last()));
        created = true;
      }
    }
    if (child->inode().IsSymlink() && !(flags & O_NOFOLLOW)) {
      TRY_VOID(w.FollowLastSymlink({dir.mount, child}));
      continue;
    }
    TRY(VirtualDentry vd, w.FollowMounts({dir.mount, std::move(child)}));
    if (!created && vd.dentry->inode().IsDir()) return kEISDIR;
    return OpenResolved(base, vd, flags, created);
  }
}

}  // namespace sandbox::vfs
