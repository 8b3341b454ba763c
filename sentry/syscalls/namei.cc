// Name operations: mkdir(2), mkdirat(2), mknod(2), mknodat(2), rmdir(2),
// unlink(2), unlinkat(2), rename(2), renameat(2), renameat2(2), link(2),
// linkat(2), symlink(2), symlinkat(2), readlink(2), readlinkat(2).
#include <fcntl.h>
#include <stdio.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "sentry/abi/syscalls.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"
#include "sentry/vfs/operations.h"

namespace sandbox::syscalls {
namespace {

KResult<uint64_t> DoMkdir(Task& t, int32_t dirfd, UserCString path,
                          uint32_t mode) {
  TRY(std::string p, CopyInPath(t, path));
  TRY(vfs::ResolveBase base, BaseAt(t, dirfd, p));
  TRY_VOID(vfs::MkdirAt(base, p, mode, t.fs().umask()));
  return uint64_t{0};
}

// mkdir(2).
SyscallResult Mkdir(Task& t, UserCString path, uint32_t mode) {
  return DoMkdir(t, AT_FDCWD, path, mode);
}

// mkdirat(2).
SyscallResult Mkdirat(Task& t, Fd dirfd, UserCString path, uint32_t mode) {
  return DoMkdir(t, dirfd.fd, path, mode);
}

KResult<uint64_t> DoMknod(Task& t, int32_t dirfd, UserCString path,
                          uint32_t mode, uint32_t dev) {
  TRY(std::string p, CopyInPath(t, path));
  TRY(vfs::ResolveBase base, BaseAt(t, dirfd, p));
  TRY_VOID(vfs::MknodAt(base, p, mode, dev, t.fs().umask()));
  return uint64_t{0};
}

// mknod(2).
SyscallResult Mknod(Task& t, UserCString path, uint32_t mode, uint32_t dev) {
  return DoMknod(t, AT_FDCWD, path, mode, dev);
}

// mknodat(2).
SyscallResult Mknodat(Task& t, Fd dirfd, UserCString path, uint32_t mode,
                      uint32_t dev) {
  return DoMknod(t, dirfd.fd, path, mode, dev);
}

KResult<uint64_t> DoUnlink(Task& t, int32_t dirfd, UserCString path,
                           int flags) {
  if (flags & ~AT_REMOVEDIR) return kEINVAL;
  TRY(std::string p, CopyInPath(t, path));
  TRY(vfs::ResolveBase base, BaseAt(t, dirfd, p));
  TRY_VOID(vfs::UnlinkAt(base, p, flags));
  return uint64_t{0};
}

// rmdir(2).
SyscallResult Rmdir(Task& t, UserCString path) {
  return DoUnlink(t, AT_FDCWD, path, AT_REMOVEDIR);
}

// unlink(2).
SyscallResult Unlink(Task& t, UserCString path) {
  return DoUnlink(t, AT_FDCWD, path, 0);
}

// unlinkat(2).
SyscallResult Unlinkat(Task& t, Fd dirfd, UserCString path, Flags flags) {
  return DoUnlink(t, dirfd.fd, path, static_cast<int>(flags.v & 0xffffffff));
}

KResult<uint64_t> DoRename(Task& t, int32_t olddirfd, UserCString oldpath,
                           int32_t newdirfd, UserCString newpath,
                           uint32_t flags) {
  if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) {
    return kEINVAL;
  }
  if ((flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)) &&
      (flags & RENAME_EXCHANGE)) {
    return kEINVAL;
  }
  TRY(std::string op, CopyInPath(t, oldpath));
  TRY(std::string np, CopyInPath(t, newpath));
  TRY(vfs::ResolveBase obase, BaseAt(t, olddirfd, op));
  TRY(vfs::ResolveBase nbase, BaseAt(t, newdirfd, np));
  TRY_VOID(vfs::RenameAt(obase, op, nbase, np, flags));
  return uint64_t{0};
}

// rename(2).
SyscallResult Rename(Task& t, UserCString oldpath, UserCString newpath) {
  return DoRename(t, AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
}

// renameat(2).
SyscallResult Renameat(Task& t, Fd olddirfd, UserCString oldpath, Fd newdirfd,
                       UserCString newpath) {
  return DoRename(t, olddirfd.fd, oldpath, newdirfd.fd, newpath, 0);
}

// renameat2(2).
SyscallResult Renameat2(Task& t, Fd olddirfd, UserCString oldpath, Fd newdirfd,
                        UserCString newpath, Flags flags) {
  return DoRename(t, olddirfd.fd, oldpath, newdirfd.fd, newpath,
                  static_cast<uint32_t>(flags.v & 0xffffffff));
}

KResult<uint64_t> DoLink(Task& t, int32_t olddirfd, UserCString oldpath,
                         int32_t newdirfd, UserCString newpath, int flags) {
  if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH)) return kEINVAL;
  TRY(std::string op, CopyInPath(t, oldpath));
  TRY(std::string np, CopyInPath(t, newpath));
  TRY(vfs::ResolveBase obase, BaseAt(t, olddirfd, op, flags & AT_EMPTY_PATH));
  TRY(vfs::ResolveBase nbase, BaseAt(t, newdirfd, np));
  TRY_VOID(vfs::LinkAt(obase, op, nbase, np, flags));
  return uint64_t{0};
}

// link(2).
SyscallResult Link(Task& t, UserCString oldpath, UserCString newpath) {
  return DoLink(t, AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
}

// linkat(2).
SyscallResult Linkat(Task& t, Fd olddirfd, UserCString oldpath, Fd newdirfd,
                     UserCString newpath, Flags flags) {
  return DoLink(t, olddirfd.fd, oldpath, newdirfd.fd, newpath,
                static_cast<int>(flags.v & 0xffffffff));
}

KResult<uint64_t> DoSymlink(Task& t, UserCString target, int32_t newdirfd,
                            UserCString linkpath) {
  TRY(std::string tp, CopyInPath(t, target));
  TRY(std::string lp, CopyInPath(t, linkpath));
  TRY(vfs::ResolveBase base, BaseAt(t, newdirfd, lp));
  TRY_VOID(vfs::SymlinkAt(base, tp, lp));
  return uint64_t{0};
}

// symlink(2).
SyscallResult Symlink(Task& t, UserCString target, UserCString linkpath) {
  return DoSymlink(t, target, AT_FDCWD, linkpath);
}

// symlinkat(2).
SyscallResult Symlinkat(Task& t, UserCString target, Fd newdirfd,
                        UserCString linkpath) {
  return DoSymlink(t, target, newdirfd.fd, linkpath);
}

// Whether `path` names this process's /proc exe link. readlink answers it
// from the process itself when the walk finds no such link (no proc mounted
// there: Linux would say ENOENT), which keeps kernels without a /proc mount
// (the syscall unit tests) able to run static glibc programs.
bool IsOwnExeLink(Task& t, const std::string& path) {
  if (path == "/proc/self/exe" || path == "/proc/thread-self/exe") return true;
  constexpr std::string_view kProc = "/proc/";
  if (path.rfind(kProc, 0) != 0) return false;
  std::string_view rest = std::string_view(path).substr(kProc.size());
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos || rest.substr(slash) != "/exe") {
    return false;
  }
  int pid;
  return absl::SimpleAtoi(std::string(rest.substr(0, slash)), &pid) &&
         pid == t.thread_group().tgid();
}

KResult<uint64_t> DoReadlink(Task& t, int32_t dirfd, UserCString path,
                             UserAddr buf, int32_t bufsiz) {
  if (bufsiz <= 0) return kEINVAL;
  TRY(std::string p, CopyInPath(t, path));
  std::string target;
  KResult<vfs::ResolveBase> base = BaseAt(t, dirfd, p, /*empty_ok=*/true);
  KResult<std::string> r = base.ok() ? vfs::ReadlinkAt(*base, p)
                                     : KResult<std::string>(base.error());
  if (r.ok()) {
    target = std::move(r).value();
  } else if (r.error() == kENOENT && IsOwnExeLink(t, p)) {
    target = t.thread_group().exe_path();
  } else {
    return r.error();
  }
  size_t n = std::min<size_t>(target.size(), static_cast<size_t>(bufsiz));
  TRY_VOID(t.CopyOutFull(buf.addr, target.data(), n));
  return uint64_t{n};
}

// readlink(2).
SyscallResult Readlink(Task& t, UserCString path, UserAddr buf,
                       int32_t bufsiz) {
  return DoReadlink(t, AT_FDCWD, path, buf, bufsiz);
}

// readlinkat(2).
SyscallResult Readlinkat(Task& t, Fd dirfd, UserCString path, UserAddr buf,
                         int32_t bufsiz) {
  return DoReadlink(t, dirfd.fd, path, buf, bufsiz);
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Mkdir);
SANDBOX_SYSCALL_HANDLER(Mkdirat);
SANDBOX_SYSCALL_HANDLER(Mknod);
SANDBOX_SYSCALL_HANDLER(Mknodat);
SANDBOX_SYSCALL_HANDLER(Rmdir);
SANDBOX_SYSCALL_HANDLER(Unlink);
SANDBOX_SYSCALL_HANDLER(Unlinkat);
SANDBOX_SYSCALL_HANDLER(Rename);
SANDBOX_SYSCALL_HANDLER(Renameat);
SANDBOX_SYSCALL_HANDLER(Renameat2);
SANDBOX_SYSCALL_HANDLER(Link);
SANDBOX_SYSCALL_HANDLER(Linkat);
SANDBOX_SYSCALL_HANDLER(Symlink);
SANDBOX_SYSCALL_HANDLER(Symlinkat);
SANDBOX_SYSCALL_HANDLER(Readlink);
SANDBOX_SYSCALL_HANDLER(Readlinkat);

}  // namespace sandbox::syscalls
