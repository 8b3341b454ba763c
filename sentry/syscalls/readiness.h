// What poll/ppoll (poll.cc), select/pselect6 (select.cc) and epoll_pwait
// (epoll.cc) share: deadlines (Linux's poll_select_set_timeout and
// poll_select_finish), the signal-mask swap of ppoll/pselect6/epoll_pwait
// (set_user_sigmask / restore_saved_sigmask_unless), and the do_poll loop
// over a set of files (fs/select.c).
#ifndef SENTRY_SYSCALLS_READINESS_H_
#define SENTRY_SYSCALLS_READINESS_H_

#include <stdint.h>

#include "absl/types/span.h"
#include "sentry/abi/linux.h"
#include "sentry/syscalls/args.h"
#include "sentry/vfs/fd_table.h"

namespace sandbox::syscalls {

// Deadlines are CLOCK_MONOTONIC nanoseconds; kNoDeadline waits forever.
inline constexpr int64_t kNoDeadline = -1;

// poll_select_set_timeout: the deadline `sec` seconds and `nsec`
// nanoseconds from now (saturating far in the future); EINVAL unless
// sec >= 0 and 0 <= nsec < 1e9. A zero timeout gives 0 (do not sleep).
KResult<int64_t> DeadlineAfter(int64_t sec, int64_t nsec);
// The time left until `deadline` (never negative), for the write-back.
abi::Timespec TimeLeft(int64_t deadline);

// set_user_sigmask: with a non-null `mask` (EINVAL unless sigsetsize is 8,
// EFAULT), saves the current mask in the task's saved_mask (sigsuspend's
// TIF_RESTORE_SIGMASK) and installs the new one.
KResult<void> SetUserSigmask(Task& t, uint64_t mask, uint64_t sigsetsize);
// restore_saved_sigmask_unless(interrupted): after the call, the saved
// mask comes back now, unless the call was interrupted (`result` is
// `interrupted_code`): then the signal step restores it after the handler
// ran (it is in the handler's frame), as sigsuspend.
void RestoreSigmaskUnless(Task& t, const SyscallResult& result,
                          int interrupted_code);

// One file of a poll or select call.
struct PolledFile {
  vfs::FileRef file;  // null: not a pollable descriptor (bad fd, O_PATH)
  uint32_t mask = 0;  // the events wanted, POLLERR/POLLHUP included
  uint32_t revents = 0;
};

// do_poll / do_select: scans the files (revents = Readiness(mask) & mask;
// a null file gives POLLNVAL if `nval_ready`, else nothing) until one is
// ready, the deadline passes (0: scan once) or the task is interrupted.
// Registers a waiter on every file before sleeping, and host fds of host
// files are polled on the host. Returns the number of files with
// revents != 0, or ERESTARTNOHAND when interrupted with none ready.
KResult<int> PollFiles(Task& t, absl::Span<PolledFile> files, int64_t deadline,
                       bool nval_ready);

}  // namespace sandbox::syscalls

#endif  // SENTRY_SYSCALLS_READINESS_H_
