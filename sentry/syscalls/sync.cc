// sync(2), syncfs(2), fsync(2), fdatasync(2), sync_file_range(2). The
// sandbox's file systems live in memory, so there is nothing to write
// back; the calls make Linux's checks and succeed.
#include <fcntl.h>
#include <sys/stat.h>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"

namespace sandbox::syscalls {
namespace {

// sync(2).
SyscallResult Sync(Task&) { return uint64_t{0}; }

// syncfs(2).
SyscallResult Syncfs(Task& t, Fd fd) {
  TRY(vfs::FileRef f, GetFile(t, fd.fd));
  return uint64_t{0};
}

// fsync(2).
SyscallResult Fsync(Task& t, Fd fd) {
  TRY(vfs::FileRef f, GetFile(t, fd.fd));
  TRY_VOID(f->Sync(/*data_only=*/false));
  return uint64_t{0};
}

// fdatasync(2).
SyscallResult Fdatasync(Task& t, Fd fd) {
  TRY(vfs::FileRef f, GetFile(t, fd.fd));
  TRY_VOID(f->Sync(/*data_only=*/true));
  return uint64_t{0};
}

// sync_file_range(2).
SyscallResult SyncFileRange(Task& t, Fd fd, int64_t offset, int64_t nbytes,
                            uint32_t flags) {
  constexpr uint32_t kValid = SYNC_FILE_RANGE_WAIT_BEFORE |
                              SYNC_FILE_RANGE_WRITE |
                              SYNC_FILE_RANGE_WAIT_AFTER;
  if (flags & ~kValid) return kEINVAL;
  uint64_t end = static_cast<uint64_t>(offset) + static_cast<uint64_t>(nbytes);
  if (offset < 0 || static_cast<int64_t>(end) < 0 ||
      end < static_cast<uint64_t>(offset)) {
    return kEINVAL;
  }
  TRY(vfs::FileRef f, GetFile(t, fd.fd));
  TRY(abi::Stat st, f->Stat());
  uint32_t type = st.st_mode & S_IFMT;
  if (type != S_IFREG && type != S_IFBLK && type != S_IFDIR &&
      type != S_IFLNK) {
    return kESPIPE;
  }
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Sync);
SANDBOX_SYSCALL_HANDLER(Syncfs);
SANDBOX_SYSCALL_HANDLER(Fsync);
SANDBOX_SYSCALL_HANDLER(Fdatasync);
SANDBOX_SYSCALL_HANDLER(SyncFileRange);

}  // namespace sandbox::syscalls
