#include "sentry/vfs/xattr_ops.h"

#include <sys/stat.h>
#include <sys/xattr.h>

#include "sentry/vfs/permissions.h"

namespace sandbox::vfs {
namespace {

constexpr int kCapSysAdmin = kernel::kCapSysAdmin;

enum class Namespace { kUser, kTrusted, kOther };

Namespace NamespaceOf(std::string_view name) {
  if (name.starts_with("user.")) return Namespace::kUser;
  if (name.starts_with("trusted.")) return Namespace::kTrusted;
  return Namespace::kOther;
}

KResult<void> CheckName(std::string_view name) {
  if (name.empty() || name.size() > kXattrNameMax) return kERANGE;
  return OkResult();
}

// xattr_permission for `may` (kMayRead or kMayWrite).
KResult<void> CheckAccess(const kernel::Credentials& creds, Inode& inode,
                          std::string_view name, int may) {
  switch (NamespaceOf(name)) {
    case Namespace::kTrusted:
      if (!creds.HasCapability(kCapSysAdmin)) return kEPERM;
      return OkResult();
    case Namespace::kOther:
      return kEOPNOTSUPP;
    case Namespace::kUser:
      break;
  }
  InodeAttrs a = inode.Attrs();
  if (!S_ISREG(a.mode) && !S_ISDIR(a.mode)) {
    return (may & kMayWrite) ? kEPERM : kENODATA;
  }
  if (S_ISDIR(a.mode) && (a.mode & S_ISVTX) && (may & kMayWrite) &&
      !IsOwnerOrCapable(creds, a.uid)) {
    return kEPERM;
  }
  return CheckPermission(creds, may, a.mode, a.uid, a.gid);
}

KResult<VirtualDentry> ResolveXattr(const ResolveBase& base,
                                    std::string_view path, bool follow) {
  ResolveOptions opts;
  opts.follow_final = follow;
  return Resolve(base, path, opts);
}

}  // namespace

KResult<std::string> GetXattr(const kernel::Credentials& creds,
                              const VirtualDentry& vd, std::string_view name) {
  TRY_VOID(CheckName(name));
  Inode& inode = vd.dentry->inode();
  TRY_VOID(CheckAccess(creds, inode, name, kMayRead));
  return inode.GetXattr(std::string(name));
}

KResult<void> SetXattr(const kernel::Credentials& creds,
                       const VirtualDentry& vd, std::string_view name,
                       std::string_view value, int flags) {
  if (flags & ~(XATTR_CREATE | XATTR_REPLACE)) return kEINVAL;
  TRY_VOID(CheckName(name));
  if (value.size() > kXattrSizeMax) return kE2BIG;
  if (vd.mount->read_only()) return kEROFS;
  Inode& inode = vd.dentry->inode();
  TRY_VOID(CheckAccess(creds, inode, name, kMayWrite));
  TRY_VOID(inode.SetXattr(std::string(name), value, flags));
  inode.TouchCTime();
  return OkResult();
}

KResult<std::vector<std::string>> ListXattr(const kernel::Credentials& creds,
                                            const VirtualDentry& vd) {
  TRY(std::vector<std::string> names, vd.dentry->inode().ListXattr());
  if (!creds.HasCapability(kCapSysAdmin)) {
    std::erase_if(names, [](const std::string& n) {
      return NamespaceOf(n) == Namespace::kTrusted;
    });
  }
  return names;
}

KResult<void> RemoveXattr(const kernel::Credentials& creds,
                          const VirtualDentry& vd, std::string_view name) {
  TRY_VOID(CheckName(name));
  if (vd.mount->read_only()) return kEROFS;
  Inode& inode = vd.dentry->inode();
  TRY_VOID(CheckAccess(creds, inode, name, kMayWrite));
  TRY_VOID(inode.RemoveXattr(std::string(name)));
  inode.TouchCTime();
  return OkResult();
}

KResult<std::string> GetXattrAt(const ResolveBase& base, std::string_view path,
                                bool follow, std::string_view name) {
  TRY(VirtualDentry vd, ResolveXattr(base, path, follow));
  return GetXattr(base.creds, vd, name);
}

KResult<void> SetXattrAt(const ResolveBase& base, std::string_view path,
                         bool follow, std::string_view name,
                         std::string_view value, int flags) {
  TRY(VirtualDentry vd, ResolveXattr(base, path, follow));
  return SetXattr(base.creds, vd, name, value, flags);
}

KResult<std::vector<std::string>> ListXattrAt(const ResolveBase& base,
                                              std::string_view path,
                                              bool follow) {
  TRY(VirtualDentry vd, ResolveXattr(base, path, follow));
  return ListXattr(base.creds, vd);
}

KResult<void> RemoveXattrAt(const ResolveBase& base, std::string_view path,
                            bool follow, std::string_view name) {
  TRY(VirtualDentry vd, ResolveXattr(base, path, follow));
  return RemoveXattr(base.creds, vd, name);
}

}  // namespace sandbox::vfs
