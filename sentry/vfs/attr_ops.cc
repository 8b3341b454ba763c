// Attribute operations: stat, access, statfs, readlink, chmod, chown,
// truncate, utimens (Linux's vfs_getattr, do_faccessat, setattr_prepare).
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sentry/vfs/operations.h"
#include "sentry/vfs/permissions.h"

namespace sandbox::vfs {
namespace {

constexpr int64_t kUtimeNow = (1l << 30) - 1;
constexpr int64_t kUtimeOmit = (1l << 30) - 2;

KResult<VirtualDentry> ResolveAt(const ResolveBase& base, std::string_view path,
                                 int flags) {
  ResolveOptions opts;
  opts.follow_final = !(flags & AT_SYMLINK_NOFOLLOW);
  opts.allow_empty = flags & AT_EMPTY_PATH;
  return Resolve(base, path, opts);
}

KResult<void> CheckWritable(const VirtualDentry& vd) {
  if (vd.mount->read_only()) return kEROFS;
  return OkResult();
}

}  // namespace

KResult<abi::Stat> StatAt(const ResolveBase& base, std::string_view path,
                          int flags) {
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT)) {
    return kEINVAL;
  }
  TRY(VirtualDentry vd, ResolveAt(base, path, flags));
  return vd.dentry->inode().Stat();
}

KResult<void> AccessAt(const ResolveBase& base, std::string_view path, int mode,
                       int flags) {
  if (mode & ~(R_OK | W_OK | X_OK)) return kEINVAL;
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EACCESS | AT_EMPTY_PATH)) {
    return kEINVAL;
  }
  TRY(VirtualDentry vd, ResolveAt(base, path, flags));
  if (mode == F_OK) return OkResult();
  Inode& inode = vd.dentry->inode();
  if ((mode & W_OK) && vd.mount->read_only() &&
      (inode.IsRegular() || inode.IsDir() || inode.IsSymlink())) {
    return kEROFS;
  }
  int may = ((mode & R_OK) ? kMayRead : 0) | ((mode & W_OK) ? kMayWrite : 0) |
            ((mode & X_OK) ? kMayExec : 0);
  return CheckPermission(base.creds, may, inode);
}

KResult<FsStats> StatFsAt(const ResolveBase& base, std::string_view path) {
  TRY(VirtualDentry vd, Resolve(base, path, ResolveOptions{}));
  FsStats st = vd.mount->fs().StatFs();
  st.flags = vd.mount->flags();
  return st;
}

KResult<std::string> ReadlinkAt(const ResolveBase& base,
                                std::string_view path) {
  ResolveOptions opts;
  opts.follow_final = false;
  opts.allow_empty = true;
  TRY(VirtualDentry vd, Resolve(base, path, opts));
  Inode& inode = vd.dentry->inode();
  if (!inode.IsSymlink()) return path.empty() ? kENOENT : kEINVAL;
  TRY(std::string target, inode.Readlink());
  inode.TouchATime();
  return target;
}

KResult<void> Chmod(const kernel::Credentials& creds, const VirtualDentry& vd,
                    uint32_t mode) {
  TRY_VOID(CheckWritable(vd));
  Inode& inode = vd.dentry->inode();
  TRY(uint32_t bits, ChmodMode(creds, inode.Attrs(), mode));
  SetAttrRequest req;
  req.mask = SetAttrRequest::kMode | SetAttrRequest::kCtime;
  req.mode = bits;
  req.ctime = Now();
  return inode.SetAttr(req);
}

KResult<void> ChmodAt(const ResolveBase& base, std::string_view path,
                      uint32_t mode, int flags) {
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return kEINVAL;
  TRY(VirtualDentry vd, ResolveAt(base, path, flags));
  if (vd.dentry->inode().IsSymlink()) return kEOPNOTSUPP;
  return Chmod(base.creds, vd, mode);
}

KResult<void> Chown(const kernel::Credentials& creds, const VirtualDentry& vd,
                    uint32_t uid, uint32_t gid) {
  TRY_VOID(CheckWritable(vd));
  Inode& inode = vd.dentry->inode();
  SetAttrRequest req;
  TRY_VOID(PrepareChown(creds, inode.Attrs(), uid, gid, &req));
  req.mask |= SetAttrRequest::kCtime;
  req.ctime = Now();
  return inode.SetAttr(req);
}

KResult<void> ChownAt(const ResolveBase& base, std::string_view path,
                      uint32_t uid, uint32_t gid, int flags) {
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return kEINVAL;
  TRY(VirtualDentry vd, ResolveAt(base, path, flags));
  return Chown(base.creds, vd, uid, gid);
}

namespace {

// do_truncate after the caller's checks: size, times, set-id bits.
KResult<void> DoTruncate(const kernel::Credentials& creds, Inode& inode,
                         int64_t length) {
  SetAttrRequest req;
  req.mask =
      SetAttrRequest::kSize | SetAttrRequest::kMtime | SetAttrRequest::kCtime;
  req.size = static_cast<uint64_t>(length);
  req.mtime = req.ctime = Now();
  uint32_t mode = inode.mode() & 07777;
  uint32_t kept = ModeAfterWrite(creds, mode);
  if (kept != mode) {
    req.mask |= SetAttrRequest::kMode;
    req.mode = kept;
  }
  return inode.SetAttr(req);
}

}  // namespace

KResult<void> TruncateAt(const ResolveBase& base, std::string_view path,
                         int64_t length) {
  if (length < 0) return kEINVAL;
  TRY(VirtualDentry vd, Resolve(base, path, ResolveOptions{}));
  Inode& inode = vd.dentry->inode();
  if (inode.IsDir()) return kEISDIR;
  if (!inode.IsRegular()) return kEINVAL;
  TRY_VOID(CheckWritable(vd));
  TRY_VOID(CheckPermission(base.creds, kMayWrite, inode));
  // vfs_truncate: ETXTBSY for a running executable.
  TRY_VOID(inode.GetWriteAccess());
  KResult<void> r = DoTruncate(base.creds, inode, length);
  inode.PutWriteAccess();
  return r;
}

KResult<void> Ftruncate(const kernel::Credentials& creds, VfsFile& file,
                        int64_t length) {
  if (length < 0) return kEINVAL;
  Inode& inode = file.inode();
  if (!inode.IsRegular() || !file.writable()) return kEINVAL;
  return DoTruncate(creds, inode, length);
}

KResult<void> Fallocate(VfsFile& file, int mode, int64_t offset, int64_t len) {
  constexpr int kKnown = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE |
                         FALLOC_FL_NO_HIDE_STALE | FALLOC_FL_COLLAPSE_RANGE |
                         FALLOC_FL_ZERO_RANGE | FALLOC_FL_INSERT_RANGE |
                         FALLOC_FL_UNSHARE_RANGE;
  if (offset < 0 || len <= 0) return kEINVAL;
  if (mode & ~kKnown) return kEOPNOTSUPP;
  if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE)) {
    return kEOPNOTSUPP;
  }
  if (!file.writable()) return kEBADF;
  Inode& inode = file.inode();
  if (inode.IsDir()) return kEISDIR;
  if (inode.type() == S_IFIFO) return kESPIPE;
  if (!inode.IsRegular()) return kENODEV;
  int64_t end;
  if (__builtin_add_overflow(offset, len, &end)) return kEFBIG;
  TRY_VOID(inode.Allocate(static_cast<uint32_t>(mode),
                          static_cast<uint64_t>(offset),
                          static_cast<uint64_t>(len)));
  return OkResult();
}

KResult<void> Utimens(const kernel::Credentials& creds, const VirtualDentry& vd,
                      const abi::Timespec* times) {
  abi::Timespec ts[2];
  if (times != nullptr) {
    for (int i = 0; i < 2; ++i) {
      int64_t ns = times[i].tv_nsec;
      if (ns != kUtimeNow && ns != kUtimeOmit && (ns < 0 || ns >= 1000000000)) {
        return kEINVAL;
      }
      ts[i] = times[i];
    }
    if (ts[0].tv_nsec == kUtimeOmit && ts[1].tv_nsec == kUtimeOmit) {
      return OkResult();
    }
  } else {
    ts[0].tv_nsec = ts[1].tv_nsec = kUtimeNow;
  }
  TRY_VOID(CheckWritable(vd));
  Inode& inode = vd.dentry->inode();
  InodeAttrs a = inode.Attrs();
  bool explicit_time =
      ts[0].tv_nsec != kUtimeNow && ts[0].tv_nsec != kUtimeOmit;
  explicit_time |= ts[1].tv_nsec != kUtimeNow && ts[1].tv_nsec != kUtimeOmit;
  if (!IsOwnerOrCapable(creds, a.uid)) {
    // Explicit times need ownership; "now" also allows any writer.
    if (explicit_time) return kEPERM;
    if (!CheckPermission(creds, kMayWrite, a.mode, a.uid, a.gid).ok()) {
      return kEACCES;
    }
  }
  abi::Timespec now = Now();
  SetAttrRequest req;
  req.mask = SetAttrRequest::kCtime;
  req.ctime = now;
  if (ts[0].tv_nsec != kUtimeOmit) {
    req.mask |= SetAttrRequest::kAtime;
    req.atime = ts[0].tv_nsec == kUtimeNow ? now : ts[0];
  }
  if (ts[1].tv_nsec != kUtimeOmit) {
    req.mask |= SetAttrRequest::kMtime;
    req.mtime = ts[1].tv_nsec == kUtimeNow ? now : ts[1];
  }
  return inode.SetAttr(req);
}

KResult<void> UtimensAt(const ResolveBase& base, std::string_view path,
                        const abi::Timespec* times, int flags) {
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return kEINVAL;
  TRY(VirtualDentry vd, ResolveAt(base, path, flags));
  return Utimens(base.creds, vd, times);
}

}  // namespace sandbox::vfs
