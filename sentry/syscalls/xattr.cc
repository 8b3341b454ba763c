// Extended attributes: getxattr(2), lgetxattr(2), fgetxattr(2),
// setxattr(2), lsetxattr(2), fsetxattr(2), listxattr(2), llistxattr(2),
// flistxattr(2), removexattr(2), lremovexattr(2), fremovexattr(2).
// Namespace and permission rules are in vfs/xattr_ops.h; here: copying
// names and values, sizes (ERANGE, E2BIG) and flag checks.
#include <fcntl.h>
#include <sys/xattr.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"
#include "sentry/vfs/xattr_ops.h"

namespace sandbox::syscalls {
namespace {

// A location: a path (followed or not) or an fd (fdget: O_PATH is EBADF).
struct Target {
  bool is_fd = false;  // the f* variants
  int32_t fd = -1;
  uint64_t path = 0;
  bool follow = true;
};

// strncpy_from_user(XATTR_NAME_MAX + 1): ERANGE if empty or too long.
KResult<std::string> CopyInName(Task& t, UserCString name) {
  KResult<std::string> n = name.CopyIn(t, vfs::kXattrNameMax + 1);
  if (!n.ok()) {
    return n.error() == kENAMETOOLONG ? kERANGE : n.error();
  }
  if (n->empty()) return kERANGE;
  return n;
}

// The resolved location of `tg`, for the fd variants its vd().
KResult<vfs::VirtualDentry> Locate(Task& t, const Target& tg,
                                   std::string* path) {
  if (tg.is_fd) {
    TRY(vfs::FileRef f, GetFile(t, tg.fd));
    vfs::VfsFile* vf = AsVfsFile(f);
    // Host stdio has no xattrs the guest may see.
    if (vf == nullptr) return kEOPNOTSUPP;
    return vf->vd();
  }
  TRY(*path, CopyInPath(t, UserCString{tg.path}));
  TRY(vfs::ResolveBase base, BaseAt(t, AT_FDCWD, *path));
  vfs::ResolveOptions opts;
  opts.follow_final = tg.follow;
  return vfs::Resolve(base, *path, opts);
}

KResult<uint64_t> DoGet(Task& t, const Target& tg, UserCString name,
                        UserAddr value, uint64_t size) {
  std::string path;
  TRY(vfs::VirtualDentry vd, Locate(t, tg, &path));
  TRY(std::string n, CopyInName(t, name));
  TRY(std::string v, vfs::GetXattr(t.creds(), vd, n));
  if (size == 0) return uint64_t{v.size()};
  if (v.size() > std::min<uint64_t>(size, vfs::kXattrSizeMax)) return kERANGE;
  TRY_VOID(t.CopyOutFull(value.addr, v.data(), v.size()));
  return uint64_t{v.size()};
}

KResult<uint64_t> DoSet(Task& t, const Target& tg, UserCString name,
                        UserAddr value, uint64_t size, int32_t flags) {
  if (flags & ~(XATTR_CREATE | XATTR_REPLACE)) return kEINVAL;
  TRY(std::string n, CopyInName(t, name));
  if (size > vfs::kXattrSizeMax) return kE2BIG;
  std::string v(size, '\0');
  TRY_VOID(t.CopyInFull(value.addr, v.data(), size));
  std::string path;
  TRY(vfs::VirtualDentry vd, Locate(t, tg, &path));
  TRY_VOID(vfs::SetXattr(t.creds(), vd, n, v, flags));
  return uint64_t{0};
}

KResult<uint64_t> DoList(Task& t, const Target& tg, UserAddr list,
                         uint64_t size) {
  std::string path;
  TRY(vfs::VirtualDentry vd, Locate(t, tg, &path));
  TRY(std::vector<std::string> names, vfs::ListXattr(t.creds(), vd));
  std::string out;
  for (const std::string& n : names) {
    out.append(n);
    out.push_back('\0');
  }
  if (size == 0) return uint64_t{out.size()};
  if (out.size() > size) return kERANGE;
  TRY_VOID(t.CopyOutFull(list.addr, out.data(), out.size()));
  return uint64_t{out.size()};
}

KResult<uint64_t> DoRemove(Task& t, const Target& tg, UserCString name) {
  TRY(std::string n, CopyInName(t, name));
  std::string path;
  TRY(vfs::VirtualDentry vd, Locate(t, tg, &path));
  TRY_VOID(vfs::RemoveXattr(t.creds(), vd, n));
  return uint64_t{0};
}

Target PathTarget(UserCString p, bool follow) {
  return Target{false, -1, p.addr, follow};
}
Target FdTarget(Fd fd) { return Target{true, fd.fd, 0, true}; }

SyscallResult Getxattr(Task& t, UserCString path, UserCString name,
                       UserAddr value, uint64_t size) {
  return DoGet(t, PathTarget(path, true), name, value, size);
}
SyscallResult Lgetxattr(Task& t, UserCString path, UserCString name,
                        UserAddr value, uint64_t size) {
  return DoGet(t, PathTarget(path, false), name, value, size);
}
SyscallResult Fgetxattr(Task& t, Fd fd, UserCString name, UserAddr value,
                        uint64_t size) {
  return DoGet(t, FdTarget(fd), name, value, size);
}
SyscallResult Setxattr(Task& t, UserCString path, UserCString name,
                       UserAddr value, uint64_t size, int32_t flags) {
  return DoSet(t, PathTarget(path, true), name, value, size, flags);
}
SyscallResult Lsetxattr(Task& t, UserCString path, UserCString name,
                        UserAddr value, uint64_t size, int32_t flags) {
  return DoSet(t, PathTarget(path, false), name, value, size, flags);
}
SyscallResult Fsetxattr(Task& t, Fd fd, UserCString name, UserAddr value,
                        uint64_t size, int32_t flags) {
  return DoSet(t, FdTarget(fd), name, value, size, flags);
}
SyscallResult Listxattr(Task& t, UserCString path, UserAddr list,
                        uint64_t size) {
  return DoList(t, PathTarget(path, true), list, size);
}
SyscallResult Llistxattr(Task& t, UserCString path, UserAddr list,
                         uint64_t size) {
  return DoList(t, PathTarget(path, false), list, size);
}
SyscallResult Flistxattr(Task& t, Fd fd, UserAddr list, uint64_t size) {
  return DoList(t, FdTarget(fd), list, size);
}
SyscallResult Removexattr(Task& t, UserCString path, UserCString name) {
  return DoRemove(t, PathTarget(path, true), name);
}
SyscallResult Lremovexattr(Task& t, UserCString path, UserCString name) {
  return DoRemove(t, PathTarget(path, false), name);
}
SyscallResult Fremovexattr(Task& t, Fd fd, UserCString name) {
  return DoRemove(t, FdTarget(fd), name);
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Getxattr);
SANDBOX_SYSCALL_HANDLER(Lgetxattr);
SANDBOX_SYSCALL_HANDLER(Fgetxattr);
SANDBOX_SYSCALL_HANDLER(Setxattr);
SANDBOX_SYSCALL_HANDLER(Lsetxattr);
SANDBOX_SYSCALL_HANDLER(Fsetxattr);
SANDBOX_SYSCALL_HANDLER(Listxattr);
SANDBOX_SYSCALL_HANDLER(Llistxattr);
SANDBOX_SYSCALL_HANDLER(Flistxattr);
SANDBOX_SYSCALL_HANDLER(Removexattr);
SANDBOX_SYSCALL_HANDLER(Lremovexattr);
SANDBOX_SYSCALL_HANDLER(Fremovexattr);

}  // namespace sandbox::syscalls
