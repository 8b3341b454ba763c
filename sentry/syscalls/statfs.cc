// statfs(2), fstatfs(2): the file system's FsStats and the mount's flags.
#include <fcntl.h>
#include <sys/vfs.h>

#include <cstring>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/operations.h"

namespace sandbox::syscalls {
namespace {

// ST_* (linux/statfs.h).
constexpr uint64_t kStRdonly = 0x1, kStNosuid = 0x2, kStNodev = 0x4,
                   kStNoexec = 0x8, kStValid = 0x20, kStNoatime = 0x400,
                   kStNodiratime = 0x800, kStRelatime = 0x1000;

// calculate_f_flags: ST_VALID and the mount's flags (flags_by_mnt); a
// mount that is neither noatime nor strictatime is relatime.
uint64_t StatfsFlags(uint32_t mnt) {
  uint64_t f = kStValid;
  if (mnt & vfs::kMountReadOnly) f |= kStRdonly;
  if (mnt & vfs::kMountNoSuid) f |= kStNosuid;
  if (mnt & vfs::kMountNoDev) f |= kStNodev;
  if (mnt & vfs::kMountNoExec) f |= kStNoexec;
  if (mnt & vfs::kMountNoAtime) f |= kStNoatime;
  if (mnt & vfs::kMountNoDiratime) f |= kStNodiratime;
  if (!(mnt & (vfs::kMountNoAtime | vfs::kMountStrictAtime))) f |= kStRelatime;
  return f;
}

// glibc's struct statfs is the kernel's x86-64 layout.
static_assert(sizeof(struct statfs) == 120);

// The struct for a location: f_flags from the mount's flags (s.flags),
// f_fsid the device number, f_frsize f_bsize unless the file system gave
// one (statfs_by_dentry).
struct statfs ToStatfs(const vfs::FsStats& s, uint64_t dev) {
  struct statfs out;
  memset(&out, 0, sizeof(out));
  out.f_type = static_cast<__fsword_t>(s.type);
  out.f_bsize = static_cast<__fsword_t>(s.block_size);
  out.f_blocks = s.blocks;
  out.f_bfree = s.blocks_free;
  out.f_bavail = s.blocks_avail;
  out.f_files = s.files;
  out.f_ffree = s.files_free;
  out.f_fsid.__val[0] = static_cast<int>(dev & 0xffffffff);
  out.f_fsid.__val[1] = static_cast<int>(dev >> 32);
  out.f_namelen = static_cast<__fsword_t>(s.name_max);
  out.f_frsize =
      static_cast<__fsword_t>(s.frsize != 0 ? s.frsize : s.block_size);
  out.f_flags = static_cast<__fsword_t>(StatfsFlags(s.flags));
  return out;
}

// statfs(2).
SyscallResult Statfs(Task& t, UserCString path, UserAddr buf) {
  TRY(std::string p, CopyInPath(t, path));
  TRY(vfs::ResolveBase base, BaseAt(t, AT_FDCWD, p));
  TRY(vfs::VirtualDentry vd, vfs::Resolve(base, p, vfs::ResolveOptions{}));
  vfs::FsStats st = vd.mount->fs().StatFs();
  st.flags = vd.mount->flags();
  struct statfs out = ToStatfs(st, vd.mount->fs().dev());
  TRY_VOID(t.CopyOutFull(buf.addr, &out, sizeof(out)));
  return uint64_t{0};
}

// fstatfs(2): O_PATH descriptions too. Host stdio belongs to no file
// system of the sandbox: ENOSYS, as Linux gives for a super block
// without statfs.
SyscallResult Fstatfs(Task& t, Fd fd, UserAddr buf) {
  TRY(vfs::FileRef f, GetFileRaw(t, fd.fd));
  vfs::VfsFile* vf = AsVfsFile(f);
  if (vf == nullptr) return kENOSYS;
  const vfs::VirtualDentry& vd = vf->vd();
  vfs::FsStats st = vd.mount->fs().StatFs();
  st.flags = vd.mount->flags();
  struct statfs out = ToStatfs(st, vd.mount->fs().dev());
  TRY_VOID(t.CopyOutFull(buf.addr, &out, sizeof(out)));
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Statfs);
SANDBOX_SYSCALL_HANDLER(Fstatfs);

}  // namespace sandbox::syscalls
