// fcntl(2) commands of the pipe family, called from fcntl's switch.
#ifndef SENTRY_SYSCALLS_PIPE_H_
#define SENTRY_SYSCALLS_PIPE_H_

#include <stdint.h>

#include "sentry/syscalls/args.h"
#include "sentry/vfs/file_description.h"

namespace sandbox::syscalls {

// F_GETPIPE_SZ / F_SETPIPE_SZ on a pipe or FIFO (EBADF for other files).
SyscallResult FcntlPipe(Task& t, vfs::FileDescription& f, int32_t cmd,
                        uint64_t arg);

}  // namespace sandbox::syscalls

#endif  // SENTRY_SYSCALLS_PIPE_H_
