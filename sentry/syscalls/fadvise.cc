// posix_fadvise: fadvise64(2). Advice only: the Sentry's page caches
// (tmpfs, the Gofer file system's) do not read ahead or drop on request, so
// a valid call does nothing and succeeds, as Linux does for a file system
// without a backing device (generic_fadvise on noop_backing_dev_info).
#include <fcntl.h>
#include <sys/stat.h>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"

namespace sandbox::syscalls {
namespace {

// fadvise64(2): EBADF (O_PATH too), ESPIPE for a pipe or FIFO, EINVAL for a
// negative length or unknown advice (checked in Linux's order).
SyscallResult Fadvise64(Task& t, Fd fd, int64_t offset, int64_t len,
                        int32_t advice) {
  (void)offset;
  TRY(vfs::FileRef f, GetFile(t, fd.fd));
  KResult<abi::Stat> st = f->Stat();
  if (st.ok() && S_ISFIFO(st->st_mode)) return kESPIPE;
  if (len < 0) return kEINVAL;
  switch (advice) {
    case POSIX_FADV_NORMAL:
    case POSIX_FADV_RANDOM:
    case POSIX_FADV_SEQUENTIAL:
    case POSIX_FADV_WILLNEED:
    case POSIX_FADV_DONTNEED:
    case POSIX_FADV_NOREUSE:
      return uint64_t{0};
    default:
      return kEINVAL;
  }
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Fadvise64);

}  // namespace sandbox::syscalls
