// Where a *at() syscall's walk starts (Linux path_init): the dirfd's
// location, or the cwd for AT_FDCWD; absolute paths ignore dirfd entirely
// (even an invalid one).
#ifndef SENTRY_VFS_AT_START_H_
#define SENTRY_VFS_AT_START_H_

#include <string_view>

#include "sentry/base/result.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/fs_context.h"
#include "sentry/vfs/mount.h"

namespace sandbox::vfs {

// EBADF if dirfd is neither AT_FDCWD nor open. A dirfd whose description
// was not opened through the VFS (a pipe, socket or host file) has no
// location: ENOTDIR. (For fstatat/fchownat... with AT_EMPTY_PATH and an
// empty path the syscall acts on the description itself before calling
// this.) Whether a relative walk may start there (a directory) is checked
// by PathWalker::Start.
KResult<VirtualDentry> AtStart(const FdTable& fds, const FsContext& fs,
                               int dirfd, std::string_view path);

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_AT_START_H_
