// Attributes: access(2), faccessat(2), faccessat2(2), chmod(2), fchmod(2),
// fchmodat(2), fchmodat2(2), chown(2), fchown(2), lchown(2), fchownat(2),
// utime(2), utimes(2), futimesat(2), utimensat(2), truncate(2),
// ftruncate(2), fallocate(2).
#include <fcntl.h>
#include <unistd.h>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"
#include "sentry/vfs/operations.h"

namespace sandbox::syscalls {
namespace {

constexpr uint32_t kSIallugo = 07777;
constexpr int64_t kUtimeNow = (1l << 30) - 1;
constexpr int64_t kUtimeOmit = (1l << 30) - 2;

// access_override_creds: the real ids as fs ids; a non-root real uid loses
// every capability, a root one gets its permitted set.
kernel::Credentials AccessCreds(const kernel::Credentials& c) {
  kernel::Credentials a = c;
  a.fsuid = c.ruid;
  a.fsgid = c.rgid;
  a.cap_effective = c.ruid == 0 ? c.cap_permitted : 0;
  return a;
}

KResult<uint64_t> DoAccess(Task& t, int32_t dirfd, UserCString path,
                           uint32_t mode, int flags) {
  if (mode & ~uint32_t{R_OK | W_OK | X_OK}) return kEINVAL;
  if (flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) {
    return kEINVAL;
  }
  kernel::Credentials creds =
      (flags & AT_EACCESS) ? t.creds() : AccessCreds(t.creds());
  TRY(std::string p, CopyInPath(t, path));
  TRY(vfs::ResolveBase base, BaseAt(t, dirfd, p, creds, flags & AT_EMPTY_PATH));
  TRY_VOID(vfs::AccessAt(base, p, static_cast<int>(mode), flags));
  return uint64_t{0};
}

// access(2).
SyscallResult Access(Task& t, UserCString path, uint32_t mode) {
  return DoAccess(t, AT_FDCWD, path, mode, 0);
}

// faccessat(2) (no flags argument in the kernel).
SyscallResult Faccessat(Task& t, Fd dirfd, UserCString path, uint32_t mode) {
  return DoAccess(t, dirfd.fd, path, mode, 0);
}

// faccessat2(2).
SyscallResult Faccessat2(Task& t, Fd dirfd, UserCString path, uint32_t mode,
                         Flags flags) {
  return DoAccess(t, dirfd.fd, path, mode,
                  static_cast<int>(flags.v & 0xffffffff));
}

// The VfsFile behind an fdget descriptor (EBADF for O_PATH).
KResult<vfs::VfsFile*> FileForAttr(Task& t, int32_t fd, vfs::FileRef* hold) {
  TRY(*hold, GetFile(t, fd));
  vfs::VfsFile* vf = AsVfsFile(*hold);
  // Host stdio: its attributes belong to the host, which the guest may
  // not change.
  if (vf == nullptr) return kEPERM;
  return vf;
}

KResult<uint64_t> DoChmod(Task& t, int32_t dirfd, UserCString path,
                          uint32_t mode, int flags) {
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return kEINVAL;
  TRY(std::string p, CopyInPath(t, path));
  TRY(vfs::ResolveBase base, BaseAt(t, dirfd, p, flags & AT_EMPTY_PATH));
  TRY_VOID(vfs::ChmodAt(base, p, mode & kSIallugo, flags));
  return uint64_t{0};
}

// chmod(2).
SyscallResult Chmod(Task& t, UserCString path, uint32_t mode) {
  return DoChmod(t, AT_FDCWD, path, mode, 0);
}

// fchmodat(2).
SyscallResult Fchmodat(Task& t, Fd dirfd, UserCString path, uint32_t mode) {
  return DoChmod(t, dirfd.fd, path, mode, 0);
}

// fchmodat2(2).
SyscallResult Fchmodat2(Task& t, Fd dirfd, UserCString path, uint32_t mode,
                        Flags flags) {
  return DoChmod(t, dirfd.fd, path, mode,
                 static_cast<int>(flags.v & 0xffffffff));
}

// fchmod(2).
SyscallResult Fchmod(Task& t, Fd fd, uint32_t mode) {
  vfs::FileRef hold;
  TRY(vfs::VfsFile * vf, FileForAttr(t, fd.fd, &hold));
  TRY_VOID(vfs::Chmod(t.creds(), vf->vd(), mode & kSIallugo));
  return uint64_t{0};
}

KResult<uint64_t> DoChown(Task& t, int32_t dirfd, UserCString path,
                          uint32_t uid, uint32_t gid, int flags) {
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return kEINVAL;
  TRY(std::string p, CopyInPath(t, path));
  TRY(vfs::ResolveBase base, BaseAt(t, dirfd, p, flags & AT_EMPTY_PATH));
  TRY_VOID(vfs::ChownAt(base, p, uid, gid, flags));
  return uint64_t{0};
}

// chown(2).
SyscallResult Chown(Task& t, UserCString path, uint32_t uid, uint32_t gid) {
  return DoChown(t, AT_FDCWD, path, uid, gid, 0);
}

// lchown(2).
SyscallResult Lchown(Task& t, UserCString path, uint32_t uid, uint32_t gid) {
  return DoChown(t, AT_FDCWD, path, uid, gid, AT_SYMLINK_NOFOLLOW);
}

// fchownat(2).
SyscallResult Fchownat(Task& t, Fd dirfd, UserCString path, uint32_t uid,
                       uint32_t gid, Flags flags) {
  return DoChown(t, dirfd.fd, path, uid, gid,
                 static_cast<int>(flags.v & 0xffffffff));
}

// fchown(2).
SyscallResult Fchown(Task& t, Fd fd, uint32_t uid, uint32_t gid) {
  vfs::FileRef hold;
  TRY(vfs::VfsFile * vf, FileForAttr(t, fd.fd, &hold));
  TRY_VOID(vfs::Chown(t.creds(), vf->vd(), uid, gid));
  return uint64_t{0};
}

bool NsecValid(int64_t ns) {
  return ns == kUtimeNow || ns == kUtimeOmit || (ns >= 0 && ns < 1000000000);
}

// do_utimes: `times` null means both "now". A null path with a dirfd is
// futimens (no flags allowed).
KResult<uint64_t> DoUtimes(Task& t, int32_t dirfd, uint64_t path_addr,
                           const abi::Timespec* times, int flags) {
  if (times != nullptr &&
      (!NsecValid(times[0].tv_nsec) || !NsecValid(times[1].tv_nsec))) {
    return kEINVAL;
  }
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return kEINVAL;
  if (path_addr == 0 && dirfd != AT_FDCWD) {
    if (flags != 0) return kEINVAL;
    vfs::FileRef hold;
    TRY(vfs::VfsFile * vf, FileForAttr(t, dirfd, &hold));
    TRY_VOID(vfs::Utimens(t.creds(), vf->vd(), times));
    return uint64_t{0};
  }
  TRY(std::string p, CopyInPath(t, UserCString{path_addr}));
  TRY(vfs::ResolveBase base, BaseAt(t, dirfd, p, flags & AT_EMPTY_PATH));
  TRY_VOID(vfs::UtimensAt(base, p, times, flags));
  return uint64_t{0};
}

// utimensat(2).
SyscallResult Utimensat(Task& t, Fd dirfd, UserAddr path, UserAddr times,
                        Flags flags) {
  abi::Timespec ts[2];
  if (!times.null()) TRY_VOID(t.CopyInFull(times.addr, ts, sizeof(ts)));
  return DoUtimes(t, dirfd.fd, path.addr, times.null() ? nullptr : ts,
                  static_cast<int>(flags.v & 0xffffffff));
}

// futimesat(2) and utimes(2): struct timeval[2], microseconds checked.
KResult<uint64_t> DoTimeval(Task& t, int32_t dirfd, uint64_t path,
                            UserAddr times) {
  if (times.null()) return DoUtimes(t, dirfd, path, nullptr, 0);
  abi::Timeval tv[2];
  TRY_VOID(t.CopyInFull(times.addr, tv, sizeof(tv)));
  abi::Timespec ts[2];
  for (int i = 0; i < 2; ++i) {
    if (tv[i].tv_usec < 0 || tv[i].tv_usec >= 1000000) return kEINVAL;
    ts[i].tv_sec = tv[i].tv_sec;
    ts[i].tv_nsec = tv[i].tv_usec * 1000;
  }
  return DoUtimes(t, dirfd, path, ts, 0);
}

// futimesat(2).
SyscallResult Futimesat(Task& t, Fd dirfd, UserAddr path, UserAddr times) {
  return DoTimeval(t, dirfd.fd, path.addr, times);
}

// utimes(2).
SyscallResult Utimes(Task& t, UserCString path, UserAddr times) {
  if (path.addr == 0) return kEFAULT;
  return DoTimeval(t, AT_FDCWD, path.addr, times);
}

// utime(2): struct utimbuf {actime, modtime} in seconds.
SyscallResult Utime(Task& t, UserCString path, UserAddr times) {
  if (path.addr == 0) return kEFAULT;
  if (times.null()) return DoUtimes(t, AT_FDCWD, path.addr, nullptr, 0);
  int64_t buf[2];
  TRY_VOID(t.CopyInFull(times.addr, buf, sizeof(buf)));
  abi::Timespec ts[2];
  ts[0].tv_sec = buf[0];
  ts[0].tv_nsec = 0;
  ts[1].tv_sec = buf[1];
  ts[1].tv_nsec = 0;
  return DoUtimes(t, AT_FDCWD, path.addr, ts, 0);
}

// truncate(2).
SyscallResult Truncate(Task& t, UserCString path, int64_t length) {
  if (length < 0) return kEINVAL;
  TRY(std::string p, CopyInPath(t, path));
  TRY(vfs::ResolveBase base, BaseAt(t, AT_FDCWD, p));
  TRY_VOID(vfs::TruncateAt(base, p, length));
  return uint64_t{0};
}

// ftruncate(2): EINVAL for anything but a regular file open for writing.
SyscallResult Ftruncate(Task& t, Fd fd, int64_t length) {
  if (length < 0) return kEINVAL;
  TRY(vfs::FileRef f, GetFile(t, fd.fd));
  vfs::VfsFile* vf = AsVfsFile(f);
  if (vf == nullptr) return kEINVAL;
  TRY_VOID(vfs::Ftruncate(t.creds(), *vf, length));
  return uint64_t{0};
}

// fallocate(2).
SyscallResult Fallocate(Task& t, Fd fd, int32_t mode, int64_t offset,
                        int64_t len) {
  TRY(vfs::FileRef f, GetFile(t, fd.fd));
  vfs::VfsFile* vf = AsVfsFile(f);
  if (vf == nullptr) {
    if (offset < 0 || len <= 0) return kEINVAL;
    if (!f->writable()) return kEBADF;
    return f->MayBlock() ? kESPIPE : kENODEV;
  }
  TRY_VOID(vfs::Fallocate(*vf, mode, offset, len));
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Access);
SANDBOX_SYSCALL_HANDLER(Faccessat);
SANDBOX_SYSCALL_HANDLER(Faccessat2);
SANDBOX_SYSCALL_HANDLER(Chmod);
SANDBOX_SYSCALL_HANDLER(Fchmod);
SANDBOX_SYSCALL_HANDLER(Fchmodat);
SANDBOX_SYSCALL_HANDLER(Fchmodat2);
SANDBOX_SYSCALL_HANDLER(Chown);
SANDBOX_SYSCALL_HANDLER(Fchown);
SANDBOX_SYSCALL_HANDLER(Lchown);
SANDBOX_SYSCALL_HANDLER(Fchownat);
SANDBOX_SYSCALL_HANDLER(Utime);
SANDBOX_SYSCALL_HANDLER(Utimes);
SANDBOX_SYSCALL_HANDLER(Futimesat);
SANDBOX_SYSCALL_HANDLER(Utimensat);
SANDBOX_SYSCALL_HANDLER(Truncate);
SANDBOX_SYSCALL_HANDLER(Ftruncate);
SANDBOX_SYSCALL_HANDLER(Fallocate);

}  // namespace sandbox::syscalls
