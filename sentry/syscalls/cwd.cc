// The task's root and working directory: chdir(2), fchdir(2), getcwd(2),
// chroot(2). They live in the task's FsContext (shared by CLONE_FS).
#include <fcntl.h>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"
#include "sentry/vfs/operations.h"

namespace sandbox::syscalls {
namespace {

// chdir(2).
SyscallResult Chdir(Task& t, UserCString path) {
  TRY(std::string p, CopyInPath(t, path));
  TRY(vfs::ResolveBase base, BaseAt(t, AT_FDCWD, p));
  TRY(vfs::VirtualDentry vd, vfs::ChdirTarget(base, p));
  t.fs().SetCwd(std::move(vd));
  return uint64_t{0};
}

// fchdir(2): any description with a location, O_PATH included.
SyscallResult Fchdir(Task& t, Fd fd) {
  TRY(vfs::FileRef f, GetFileRaw(t, fd.fd));
  vfs::VfsFile* vf = AsVfsFile(f);
  if (vf == nullptr) return kENOTDIR;
  TRY(vfs::VirtualDentry vd, vfs::FchdirTarget(t.creds(), *vf));
  t.fs().SetCwd(std::move(vd));
  return uint64_t{0};
}

// getcwd(2): the length including the NUL; ERANGE if `size` is too small,
// ENOENT if the directory was removed.
SyscallResult Getcwd(Task& t, UserAddr buf, uint64_t size) {
  vfs::VirtualDentry root = t.fs().Root();
  if (!root.ok()) return kENOENT;
  TRY(std::string cwd, vfs::GetCwd(root, t.fs().Cwd()));
  if (size < cwd.size() + 1) return kERANGE;
  TRY_VOID(t.CopyOutFull(buf.addr, cwd.c_str(), cwd.size() + 1));
  return uint64_t{cwd.size() + 1};
}

// chroot(2): EPERM without CAP_SYS_CHROOT. The cwd is left alone, as Linux
// does (it may end up outside the root: getcwd then says "(unreachable)").
SyscallResult Chroot(Task& t, UserCString path) {
  TRY(std::string p, CopyInPath(t, path));
  TRY(vfs::ResolveBase base, BaseAt(t, AT_FDCWD, p));
  TRY(vfs::VirtualDentry vd, vfs::ChrootTarget(base, p));
  t.fs().SetRoot(std::move(vd));
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Chdir);
SANDBOX_SYSCALL_HANDLER(Fchdir);
SANDBOX_SYSCALL_HANDLER(Getcwd);
SANDBOX_SYSCALL_HANDLER(Chroot);

}  // namespace sandbox::syscalls
