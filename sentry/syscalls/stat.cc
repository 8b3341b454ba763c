// stat(2), lstat(2), fstat(2), newfstatat(2), statx(2).
#include <fcntl.h>
#include <linux/stat.h>
#include <sys/sysmacros.h>

#include <cstring>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"
#include "sentry/vfs/operations.h"

namespace sandbox::syscalls {
namespace {

constexpr int kStatFlags =
    AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT;

// fstat of any description, O_PATH included (fdget_raw).
KResult<abi::Stat> StatFile(Task& t, int32_t fd) {
  TRY(vfs::FileRef f, GetFileRaw(t, fd));
  return f->Stat();
}

// vfs_fstatat: a path, or with AT_EMPTY_PATH and "" the dirfd itself
// (which need not have been opened through the VFS).
KResult<abi::Stat> StatPath(Task& t, int32_t dirfd, uint64_t path_addr,
                            int flags) {
  if (flags & ~kStatFlags) return kEINVAL;
  PathBuf pbuf;
  std::string_view p;
  // Since Linux 6.11 a NULL path with AT_EMPTY_PATH means "".
  if (!(path_addr == 0 && (flags & AT_EMPTY_PATH))) {
    TRY(p, CopyInPath(t, UserCString{path_addr}, pbuf));
  }
  if (p.empty() && (flags & AT_EMPTY_PATH) && dirfd != AT_FDCWD) {
    return StatFile(t, dirfd);
  }
  TRY(vfs::ResolveBase base, BaseAt(t, dirfd, p, flags & AT_EMPTY_PATH));
  return vfs::StatAt(base, p, flags);
}

// stat(2).
SyscallResult Stat(Task& t, UserCString path, UserPtr<abi::Stat> buf) {
  TRY(abi::Stat st, StatPath(t, AT_FDCWD, path.addr, 0));
  TRY_VOID(buf.CopyOut(t, st));
  return uint64_t{0};
}

// lstat(2).
SyscallResult Lstat(Task& t, UserCString path, UserPtr<abi::Stat> buf) {
  TRY(abi::Stat st, StatPath(t, AT_FDCWD, path.addr, AT_SYMLINK_NOFOLLOW));
  TRY_VOID(buf.CopyOut(t, st));
  return uint64_t{0};
}

// fstat(2).
SyscallResult Fstat(Task& t, Fd fd, UserPtr<abi::Stat> buf) {
  TRY(abi::Stat st, StatFile(t, fd.fd));
  TRY_VOID(buf.CopyOut(t, st));
  return uint64_t{0};
}

// newfstatat(2).
SyscallResult Newfstatat(Task& t, Fd dirfd, UserCString path,
                         UserPtr<abi::Stat> buf, Flags flags) {
  TRY(abi::Stat st,
      StatPath(t, dirfd.fd, path.addr, static_cast<int>(flags.v & 0xffffffff)));
  TRY_VOID(buf.CopyOut(t, st));
  return uint64_t{0};
}

struct statx ToStatx(const abi::Stat& st, uint64_t mnt_id) {
  struct statx x;
  memset(&x, 0, sizeof(x));
  // tmpfs fills every basic field whatever the mask asked (the mask is a
  // hint), and the mount ID.
  x.stx_mask = STATX_BASIC_STATS | STATX_MNT_ID;
  x.stx_blksize = static_cast<uint32_t>(st.st_blksize);
  x.stx_nlink = static_cast<uint32_t>(st.st_nlink);
  x.stx_uid = st.st_uid;
  x.stx_gid = st.st_gid;
  x.stx_mode = static_cast<uint16_t>(st.st_mode);
  x.stx_ino = st.st_ino;
  x.stx_size = static_cast<uint64_t>(st.st_size);
  x.stx_blocks = static_cast<uint64_t>(st.st_blocks);
  auto ts = [](const abi::Timespec& t) {
    struct statx_timestamp s = {};
    s.tv_sec = t.tv_sec;
    s.tv_nsec = static_cast<uint32_t>(t.tv_nsec);
    return s;
  };
  x.stx_atime = ts(st.st_atim);
  x.stx_mtime = ts(st.st_mtim);
  x.stx_ctime = ts(st.st_ctim);
  x.stx_rdev_major = major(st.st_rdev);
  x.stx_rdev_minor = minor(st.st_rdev);
  x.stx_dev_major = major(st.st_dev);
  x.stx_dev_minor = minor(st.st_dev);
  x.stx_mnt_id = mnt_id;
  return x;
}

// statx(2). `mask` is a hint: every basic field is returned and reported.
SyscallResult Statx(Task& t, Fd dirfd, UserCString path, Flags flags,
                    uint32_t mask, UserAddr buf) {
  int f = static_cast<int>(flags.v & 0xffffffff);
  if (f & ~(kStatFlags | AT_STATX_SYNC_TYPE)) return kEINVAL;
  if ((f & AT_STATX_SYNC_TYPE) == AT_STATX_SYNC_TYPE) return kEINVAL;
  if (mask & STATX__RESERVED) return kEINVAL;
  PathBuf pbuf;
  std::string_view p;
  if (!(path.addr == 0 && (f & AT_EMPTY_PATH))) {
    TRY(p, CopyInPath(t, path, pbuf));
  }
  abi::Stat st;
  uint64_t mnt_id = 0;
  if (p.empty() && (f & AT_EMPTY_PATH) && dirfd.fd != AT_FDCWD) {
    TRY(vfs::FileRef file, GetFileRaw(t, dirfd.fd));
    TRY(st, file->Stat());
    if (vfs::VfsFile* vf = AsVfsFile(file)) mnt_id = vf->vd().mount->id();
  } else {
    TRY(vfs::ResolveBase base, BaseAt(t, dirfd.fd, p, f & AT_EMPTY_PATH));
    vfs::ResolveOptions opts;
    opts.follow_final = !(f & AT_SYMLINK_NOFOLLOW);
    opts.allow_empty = f & AT_EMPTY_PATH;
    TRY(vfs::VirtualDentry vd, vfs::Resolve(base, p, opts));
    st = vd.dentry->inode().Stat();
    mnt_id = vd.mount->id();
  }
  struct statx x = ToStatx(st, mnt_id);
  TRY_VOID(t.CopyOutFull(buf.addr, &x, sizeof(x)));
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Stat);
SANDBOX_SYSCALL_HANDLER(Lstat);
SANDBOX_SYSCALL_HANDLER(Fstat);
SANDBOX_SYSCALL_HANDLER(Newfstatat);
SANDBOX_SYSCALL_HANDLER(Statx);

}  // namespace sandbox::syscalls
