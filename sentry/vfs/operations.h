// Path-based file operations: what the file syscalls call.
//
// Each function implements the VFS half of one syscall family: it walks the
// path (path_walk.h), takes the file system's tree_mu exclusively for name
// changes, makes every check Linux makes in Linux's order, and calls the
// Inode operation. The syscall layer only decodes arguments, copies the
// path in (EFAULT, ENAMETOOLONG at PATH_MAX), builds the ResolveBase from
// the task (root and cwd from its FsContext, the dirfd's VfsFile::vd(), its
// Credentials) and copies results out.
//
//   vfs::ResolveBase base{creds, fs_ctx.Root(), start};
//   TRY(auto file, vfs::OpenAt(base, path, flags, mode, fs_ctx.umask()));
//   TRY(int fd, fd_table.Install(file, 0, flags & O_CLOEXEC, nofile));
//
// A dirfd that is not a VfsFile (a pipe, a host file) with a relative path
// is ENOTDIR; with an absolute path it is ignored, as Linux does.
#ifndef SENTRY_VFS_OPERATIONS_H_
#define SENTRY_VFS_OPERATIONS_H_

#include <stdint.h>

#include <memory>
#include <string>
#include <string_view>

#include "sentry/abi/linux.h"
#include "sentry/base/result.h"
#include "sentry/vfs/filesystem.h"
#include "sentry/vfs/path_walk.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::vfs {

// open(2), openat(2), creat(2), openat2(2) (`resolve` = RESOLVE_*). `umask`
// is the task's. O_TMPFILE creates an unnamed file in the directory `path`
// (EINVAL without write access or with O_CREAT; EOPNOTSUPP if the file
// system cannot); without O_EXCL linkat(AT_EMPTY_PATH) may name it later.
KResult<std::shared_ptr<VfsFile>> OpenAt(const ResolveBase& base,
                                         std::string_view path, uint32_t flags,
                                         uint32_t mode, uint32_t umask,
                                         uint64_t resolve = 0);

// mkdir(2)/mkdirat(2).
KResult<void> MkdirAt(const ResolveBase& base, std::string_view path,
                      uint32_t mode, uint32_t umask);
// mknod(2)/mknodat(2): regular files, FIFOs, sockets; character and block
// devices with CAP_MKNOD.
KResult<void> MknodAt(const ResolveBase& base, std::string_view path,
                      uint32_t mode, uint64_t dev, uint32_t umask);
// symlink(2)/symlinkat(2): creates `path` pointing to `target`.
KResult<void> SymlinkAt(const ResolveBase& base, std::string_view target,
                        std::string_view path);
// link(2)/linkat(2); `flags`: AT_SYMLINK_FOLLOW, AT_EMPTY_PATH.
KResult<void> LinkAt(const ResolveBase& old_base, std::string_view old_path,
                     const ResolveBase& new_base, std::string_view new_path,
                     int flags);
// unlink(2), rmdir(2), unlinkat(2) (`flags`: AT_REMOVEDIR).
KResult<void> UnlinkAt(const ResolveBase& base, std::string_view path,
                       int flags);
// rename(2)/renameat(2)/renameat2(2) (`flags`: RENAME_NOREPLACE,
// RENAME_EXCHANGE, RENAME_WHITEOUT: the old name becomes a 0:0 character
// device, as tmpfs does for overlayfs).
KResult<void> RenameAt(const ResolveBase& old_base, std::string_view old_path,
                       const ResolveBase& new_base, std::string_view new_path,
                       uint32_t flags);

// readlink(2)/readlinkat(2): the whole target (the syscall truncates it to
// the buffer). An empty path reads the dirfd itself (ENOENT if that is not a
// symlink).
KResult<std::string> ReadlinkAt(const ResolveBase& base, std::string_view path);
// stat/lstat/newfstatat (`flags`: AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH,
// AT_NO_AUTOMOUNT).
KResult<abi::Stat> StatAt(const ResolveBase& base, std::string_view path,
                          int flags);
// access/faccessat/faccessat2. `base.creds` are the credentials to check
// with: the syscall passes the real uid/gid (and the capabilities that
// implies) unless AT_EACCESS. `flags`: AT_SYMLINK_NOFOLLOW, AT_EACCESS,
// AT_EMPTY_PATH (AT_EACCESS is the caller's business).
KResult<void> AccessAt(const ResolveBase& base, std::string_view path, int mode,
                       int flags);
// statfs(2).
KResult<FsStats> StatFsAt(const ResolveBase& base, std::string_view path);

// chmod/fchmodat(2) (`flags`: AT_SYMLINK_NOFOLLOW gives EOPNOTSUPP on a
// symlink, as fchmodat2 does; AT_EMPTY_PATH).
KResult<void> ChmodAt(const ResolveBase& base, std::string_view path,
                      uint32_t mode, int flags);
// chown/lchown/fchownat (`flags`: AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH).
// uid/gid of (uint32_t)-1 leave that id unchanged.
KResult<void> ChownAt(const ResolveBase& base, std::string_view path,
                      uint32_t uid, uint32_t gid, int flags);
// truncate(2).
KResult<void> TruncateAt(const ResolveBase& base, std::string_view path,
                         int64_t length);
// utimensat(2) (`times` null = both now; UTIME_NOW/UTIME_OMIT in tv_nsec;
// `flags`: AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH).
KResult<void> UtimensAt(const ResolveBase& base, std::string_view path,
                        const abi::Timespec* times, int flags);

// The same on a location the caller already has (fchmod, fchown, futimens
// on a file's vd()).
KResult<void> Chmod(const kernel::Credentials& creds, const VirtualDentry& vd,
                    uint32_t mode);
KResult<void> Chown(const kernel::Credentials& creds, const VirtualDentry& vd,
                    uint32_t uid, uint32_t gid);
KResult<void> Utimens(const kernel::Credentials& creds, const VirtualDentry& vd,
                      const abi::Timespec* times);
// ftruncate(2): EINVAL unless `file` is a regular file open for writing.
KResult<void> Ftruncate(const kernel::Credentials& creds, VfsFile& file,
                        int64_t length);

// fallocate(2): EBADF unless open for writing, EINVAL for offset < 0 or
// len <= 0, EFBIG past the maximum file size, EISDIR/ENODEV/ESPIPE for
// directories/other files/FIFOs, EOPNOTSUPP for modes the file system does
// not support (tmpfs: 0, KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE).
KResult<void> Fallocate(VfsFile& file, int mode, int64_t offset, int64_t len);

// chdir(2) / chroot(2) targets: a searchable directory (chroot also needs
// CAP_SYS_CHROOT: EPERM). The caller installs the result in its FsContext.
KResult<VirtualDentry> ChdirTarget(const ResolveBase& base,
                                   std::string_view path);
KResult<VirtualDentry> ChrootTarget(const ResolveBase& base,
                                    std::string_view path);
// fchdir(2): the file's location, if a searchable directory.
KResult<VirtualDentry> FchdirTarget(const kernel::Credentials& creds,
                                    const VfsFile& file);
// getcwd(2): the path of `cwd` as seen from `root`; ENOENT if cwd was
// removed; "(unreachable)" prefixed when cwd is outside root, as Linux.
KResult<std::string> GetCwd(const VirtualDentry& root,
                            const VirtualDentry& cwd);
// d_path: the path of `vd` as seen from `root`, as /proc/PID/fd/N and
// /proc/PID/maps name files: its file system's DName if it has one
// ("pipe:[N]"); GetCwd's path; for a removed file its last
// path with " (deleted)" appended; for a file of an internal mount
// (Mount::CreateInternal: memfds) its path inside that mount, "/memfd:x
// (deleted)".
std::string DPath(const VirtualDentry& root, const VirtualDentry& vd);

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_OPERATIONS_H_
