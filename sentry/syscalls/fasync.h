// fcntl(2)'s O_ASYNC commands (Linux's fs/fcntl.c f_setown/f_getown,
// F_SETSIG, fasync), called from fcntl's switch: who gets SIGIO, and the
// registration on a file's wait queue that sends it.
//
// A description with O_ASYNC and an owner gets, whenever its wait queue
// reports it readable, at end of file or in error (and, for a write-only
// description, writable), SIGIO to the owner (a thread, a process or a
// process group) without details, or the F_SETSIG signal with si_code
// POLL_IN/POLL_OUT/POLL_ERR/POLL_PRI/POLL_HUP, si_band and si_fd, as
// send_sigio does. Files that cannot be polled keep the flag without
// effect (no f_op->fasync).
#ifndef SENTRY_SYSCALLS_FASYNC_H_
#define SENTRY_SYSCALLS_FASYNC_H_

#include <stdint.h>

#include "sentry/syscalls/args.h"
#include "sentry/vfs/fd_table.h"

namespace sandbox::syscalls {

// Whether fcntl `cmd` is one of these (F_SETOWN, F_GETOWN, F_SETOWN_EX,
// F_GETOWN_EX, F_SETSIG, F_GETSIG).
bool IsFcntlAsync(int32_t cmd);
SyscallResult FcntlAsync(Task& t, vfs::FileDescription& f, int32_t cmd,
                         uint64_t arg);

// setfl's ->fasync: O_ASYNC on `f` (reached through descriptor `fd`) was
// turned on or off.
void SetAsync(Task& t, vfs::FileDescription& f, int fd, bool on);

}  // namespace sandbox::syscalls

#endif  // SENTRY_SYSCALLS_FASYNC_H_
