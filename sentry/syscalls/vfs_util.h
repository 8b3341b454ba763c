// Helpers shared by the VFS-backed file syscall families (open.cc, stat.cc,
// namei.cc, attr.cc, cwd.cc, getdents.cc, xattr.cc, statfs.cc, sync.cc,
// sendfile.cc): path copy-in, the ResolveBase of a *at() call, and file
// lookups with Linux's fdget/fdget_raw distinction (O_PATH descriptions
// only serve the "raw" users: fstat, fchdir, *at() dirfds, close, some
// fcntl commands).
#ifndef SENTRY_SYSCALLS_VFS_UTIL_H_
#define SENTRY_SYSCALLS_VFS_UTIL_H_

#include <stdint.h>

#include <memory>
#include <string>
#include <string_view>

#include "sentry/abi/linux.h"
#include "sentry/base/result.h"
#include "sentry/kernel/task.h"
#include "sentry/syscalls/args.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/path_walk.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::syscalls {

// The path argument (getname): EFAULT, ENAMETOOLONG at PATH_MAX. An empty
// path is returned as is (the walk decides: ENOENT or AT_EMPTY_PATH).
KResult<std::string> CopyInPath(Task& t, UserCString path);

// The same into a caller's buffer, without allocating (stat, open): the
// result points into `buf`.
struct PathBuf {
  char data[abi::kPathMax];
};
KResult<std::string_view> CopyInPath(Task& t, UserCString path, PathBuf& buf);

// Where a *at() walk by `t` starts: the root and, for a relative path,
// dirfd's location or the cwd (EBADF, ENOTDIR as vfs::AtStart). `creds`
// are the credentials to check with (access(2) passes the real ids). An
// empty path is ENOENT before dirfd is looked at, unless `empty_ok`
// (AT_EMPTY_PATH, readlinkat). ENOENT if the task has no file system (unit
// tests without one).
KResult<vfs::ResolveBase> BaseAt(Task& t, int32_t dirfd, std::string_view path,
                                 const kernel::Credentials& creds,
                                 bool empty_ok = false);
inline KResult<vfs::ResolveBase> BaseAt(Task& t, int32_t dirfd,
                                        std::string_view path,
                                        bool empty_ok = false) {
  return BaseAt(t, dirfd, path, t.creds(), empty_ok);
}

// fdget_raw: any open description (EBADF if none).
KResult<vfs::FileRef> GetFileRaw(Task& t, int32_t fd);
// fdget: EBADF also for an O_PATH description.
KResult<vfs::FileRef> GetFile(Task& t, int32_t fd);
// The description as a VfsFile, or null when it was not opened through the
// VFS (host stdio, and pipes until they have inodes).
vfs::VfsFile* AsVfsFile(const vfs::FileRef& f);

// RLIMIT_NOFILE's soft limit (the descriptor ceiling).
uint64_t NofileLimit(Task& t);

}  // namespace sandbox::syscalls

#endif  // SENTRY_SYSCALLS_VFS_UTIL_H_
