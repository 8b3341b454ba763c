// fcntl(2) commands of the file-lock family, called from fcntl's switch.
#ifndef SENTRY_SYSCALLS_LOCK_H_
#define SENTRY_SYSCALLS_LOCK_H_

#include <stdint.h>

#include "sentry/syscalls/args.h"
#include "sentry/vfs/file_description.h"

namespace sandbox::syscalls {

// F_GETLK, F_SETLK, F_SETLKW (POSIX record locks, owned by the caller's FD
// table) and F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW (owned by `f`). `arg`
// points to a struct flock.
SyscallResult FcntlLock(Task& t, vfs::FileDescription& f, int32_t cmd,
                        uint64_t arg);

}  // namespace sandbox::syscalls

#endif  // SENTRY_SYSCALLS_LOCK_H_
