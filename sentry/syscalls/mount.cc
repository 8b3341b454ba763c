// mount(2), umount2(2) (Linux fs/namespace.c: path_mount, path_umount).
//
// What a root process in a container uses: new instances of the file
// system types the kernel has registered (vfs/filesystem_type.h: tmpfs,
// proc, sysfs, devpts; each parses its own options); bind mounts (MS_BIND,
// MS_REC) of directories and files; MS_REMOUNT (per-mount flags;
// MS_REMOUNT|MS_BIND for a read-only bind); propagation types (recorded: there
// is one mount namespace); MS_MOVE; umount2 with MNT_FORCE, MNT_DETACH,
// MNT_EXPIRE and UMOUNT_NOFOLLOW. The sandbox's set-up mounts are locked
// (vfs::kLockMounted: Linux's MNT_LOCKED in a less privileged mount namespace):
// umount and MS_MOVE of them EINVAL, a plain bind of what they cover EINVAL,
// remounts that clear their flags EPERM. The mount tree and its locking are
// vfs::Mount's (sentry/vfs/mount.h).
#include "sentry/vfs/mount.h"

#include <sys/mount.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/kernel/kernel.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"
#include "sentry/vfs/filesystem_type.h"
#include "sentry/vfs/path_walk.h"

namespace sandbox::syscalls {
namespace {

constexpr uint64_t kMsMgcMsk = 0xffff0000;
constexpr uint64_t kMsMgcVal = 0xc0ed0000;
constexpr uint64_t kMsNoUser = 1u << 31;
constexpr uint64_t kMsPropagation =
    MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE;
using abi::kPageSize;

// Resolves `path` from the task's cwd and root. Only the result holds a
// reference to its mount (umount counts the caller's references).
KResult<vfs::VirtualDentry> ResolvePath(Task& t, UserCString addr,
                                        bool follow) {
  TRY(std::string path, CopyInPath(t, addr));
  TRY(vfs::ResolveBase base, BaseAt(t, AT_FDCWD, path));
  vfs::ResolveOptions opts;
  opts.follow_final = follow;
  return vfs::Resolve(base, path, opts);
}

// copy_mount_string: a NUL-terminated string of at most a page (EFAULT).
KResult<std::string> CopyMountString(Task& t, uint64_t addr) {
  KResult<std::string> s = t.CopyInString(addr, kPageSize);
  if (!s.ok() && s.error() == kENAMETOOLONG) return kEINVAL;
  return s;
}

// copy_mount_options: up to a page of data, as much as is readable (EFAULT
// only when not even the first byte is), cut at the first NUL.
KResult<std::string> CopyMountData(Task& t, uint64_t addr) {
  if (addr == 0) return std::string();
  std::string buf(kPageSize, '\0');
  TRY(size_t n, t.CopyIn(addr, buf.data(), buf.size()));
  if (n == 0) return kEFAULT;
  buf.resize(n);
  buf[std::min(n, kPageSize - 1)] = '\0';
  buf.resize(strnlen(buf.data(), buf.size()));
  return buf;
}

// mount(2)'s MS_* flags as per-mount flags (path_mount): relatime unless
// MS_NOATIME or MS_STRICTATIME.
uint32_t MountFlags(uint64_t flags) {
  uint32_t m = 0;
  if (flags & MS_RDONLY) m |= vfs::kMountReadOnly;
  if (flags & MS_NOSUID) m |= vfs::kMountNoSuid;
  if (flags & MS_NODEV) m |= vfs::kMountNoDev;
  if (flags & MS_NOEXEC) m |= vfs::kMountNoExec;
  if (flags & MS_NODIRATIME) m |= vfs::kMountNoDiratime;
  if (flags & MS_STRICTATIME) {
    m |= vfs::kMountStrictAtime;
  } else if (flags & MS_NOATIME) {
    m |= vfs::kMountNoAtime;
  }
  return m;
}

// A new instance of the type named `type` (do_new_mount): ENODEV for a
// type the kernel's registry does not have or mount(2) cannot make
// (vfs/filesystem_type.h; /proc/filesystems lists them all).
KResult<void> NewMount(Task& t, const vfs::VirtualDentry& point,
                       const std::string& type, const std::string& source,
                       const std::string& data, uint32_t mnt_flags) {
  const vfs::FilesystemType* fstype =
      t.kernel().filesystem_types().Lookup(type);
  if (fstype == nullptr || !fstype->user_mountable()) return kENODEV;
  TRY(vfs::NewFilesystem n,
      fstype->GetFilesystem({.memory_file = t.mm().memory_file()}, source,
                            data));
  if (n.read_only) mnt_flags |= vfs::kMountReadOnly;
  std::shared_ptr<vfs::Dentry> root = n.fs->root();
  std::shared_ptr<vfs::Mount> m = vfs::Mount::Create(
      std::move(n.fs), std::move(root), mnt_flags,
      source.empty() ? type : source, std::move(n.shown_options));
  return vfs::Mount::Graft(point, std::move(m));
}

// MS_REMOUNT's options (do_remount -> reconfigure_super): checked, and
// applied where the file system can, by its type; a file system of no
// registered type takes the generic options only.
KResult<bool> Reconfigure(Task& t, vfs::Filesystem& fs,
                          const std::string& data) {
  const vfs::FilesystemType* fstype =
      t.kernel().filesystem_types().Lookup(fs.type_name());
  if (fstype == nullptr) return vfs::ParseGenericOptions(data);
  return fstype->Reconfigure({.memory_file = t.mm().memory_file()}, fs, data);
}

// mount(2).
SyscallResult Mount(Task& t, UserCString source_addr, UserCString target_addr,
                    UserCString type_addr, uint64_t flags, UserAddr data_addr) {
  // do_mount: the strings and the data first (EFAULT), then the target
  // (ENOENT, ENOTDIR...), then the privilege check.
  std::string type, source;
  if (type_addr.addr != 0) {
    TRY(type, CopyMountString(t, type_addr.addr));
  }
  if (source_addr.addr != 0) {
    TRY(source, CopyMountString(t, source_addr.addr));
  }
  TRY(std::string data, CopyMountData(t, data_addr.addr));
  TRY(vfs::VirtualDentry point, ResolvePath(t, target_addr, true));
  if ((flags & kMsMgcMsk) == kMsMgcVal) flags &= ~kMsMgcMsk;
  if (flags & kMsNoUser) return kEINVAL;
  if (!t.creds().HasCapability(kernel::kCapSysAdmin)) return kEPERM;

  uint32_t mnt_flags = MountFlags(flags);
  const bool at_root = point.dentry == point.mount->root();
  if ((flags & MS_REMOUNT) && (flags & (MS_NOATIME | MS_NODIRATIME |
                                        MS_RELATIME | MS_STRICTATIME)) == 0) {
    // path_mount: a remount keeps the atime mode unless given.
    mnt_flags = (mnt_flags & ~vfs::kMountAtimeMask) |
                (point.mount->flags() & vfs::kMountAtimeMask);
  }
  if ((flags & (MS_REMOUNT | MS_BIND)) == (MS_REMOUNT | MS_BIND)) {
    // do_reconfigure_mnt: the per-mount flags only.
    if (!at_root) return kEINVAL;
    if (!point.mount->CanChangeLockedFlags(mnt_flags)) return kEPERM;
    uint32_t old = point.mount->flags();
    point.mount->set_flags((old & ~vfs::kMountSettable) | mnt_flags);
    return uint64_t{0};
  }
  if (flags & MS_REMOUNT) {
    // do_remount: the options are checked as for a new mount of the type;
    // the atime mode is kept unless given.
    if (!at_root) return kEINVAL;
    if (!point.mount->CanChangeLockedFlags(mnt_flags)) return kEPERM;
    TRY(bool read_only, Reconfigure(t, point.mount->fs(), data));
    if (read_only) mnt_flags |= vfs::kMountReadOnly;
    uint32_t old = point.mount->flags();
    point.mount->set_flags((old & ~vfs::kMountSettable) | mnt_flags);
    return uint64_t{0};
  }
  if (flags & MS_BIND) {
    if (source.empty()) return kEINVAL;
    TRY(vfs::VirtualDentry from, ResolvePath(t, source_addr, true));
    TRY(std::shared_ptr<vfs::Mount> copy,
        vfs::Mount::CloneTree(from, flags & MS_REC));
    TRY_VOID(vfs::Mount::Graft(point, std::move(copy)));
    return uint64_t{0};
  }
  if (flags & kMsPropagation) {
    // do_change_type: exactly one type, nothing else but MS_REC/MS_SILENT.
    if (!at_root) return kEINVAL;
    uint64_t type_bits = flags & ~uint64_t{MS_REC | MS_SILENT};
    vfs::Propagation p;
    switch (type_bits) {
      case MS_SHARED:
        p = vfs::Propagation::kShared;
        break;
      case MS_PRIVATE:
        p = vfs::Propagation::kPrivate;
        break;
      case MS_SLAVE:
        p = vfs::Propagation::kSlave;
        break;
      case MS_UNBINDABLE:
        p = vfs::Propagation::kUnbindable;
        break;
      default:
        return kEINVAL;
    }
    point.mount->SetPropagation(p, flags & MS_REC);
    return uint64_t{0};
  }
  if (flags & MS_MOVE) {
    if (source.empty()) return kEINVAL;
    TRY(vfs::VirtualDentry from, ResolvePath(t, source_addr, true));
    TRY_VOID(vfs::Mount::Move(from, point));
    return uint64_t{0};
  }
  if (type_addr.addr == 0) return kEINVAL;
  TRY_VOID(NewMount(t, point, type, source, data, mnt_flags));
  return uint64_t{0};
}

// umount2(2).
SyscallResult Umount2(Task& t, UserCString target_addr, int32_t flags) {
  constexpr int32_t kKnown =
      MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW;
  if (flags & ~kKnown) return kEINVAL;
  if (!t.creds().HasCapability(kernel::kCapSysAdmin)) return kEPERM;
  TRY(vfs::VirtualDentry vd,
      ResolvePath(t, target_addr, !(flags & UMOUNT_NOFOLLOW)));
  // can_umount: the path must be a mount's root, and not a locked mount
  // (the sandbox's own: what it covers stays covered).
  if (vd.dentry != vd.mount->root()) return kEINVAL;
  if (vd.mount->locked()) return kEINVAL;
  // The namespace root (no parent) is the root of every task here.
  if (!vd.mount->MountPoint().ok()) {
    return (flags & MNT_EXPIRE) ? kEINVAL : kEBUSY;
  }
  vd.dentry.reset();  // only vd.mount stays: one caller reference
  if (flags & MNT_EXPIRE) {
    if (flags & (MNT_FORCE | MNT_DETACH)) return kEINVAL;
    if (!vd.mount->Unused(1)) return kEBUSY;
    if (!vd.mount->TestAndSetExpiryMark()) return kEAGAIN;
  }
  if (flags & MNT_DETACH) {
    // Lazy: gone from the tree now; open files and cwds inside keep it.
    // Locked mounts below stay connected to the detached tree.
    vd.mount->DetachTree(/*keep_locked=*/true);
    return uint64_t{0};
  }
  // MNT_FORCE: no file system here has an umount_begin to abort pending
  // requests, so it is a plain umount (still EBUSY when busy), as Linux for
  // such file systems.
  TRY_VOID(vd.mount->Umount(1));
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Mount);
SANDBOX_SYSCALL_HANDLER(Umount2);

}  // namespace sandbox::syscalls
