// poll(2) and ppoll(2): fs/select.c's do_sys_poll over the files'
// readiness (FileDescription::Readiness, sentry/vfs/waiter.h).
//
// As Linux: nfds above RLIMIT_NOFILE is EINVAL; the pollfd array is read
// whole first (EFAULT) and every revents is written back, even after an
// interrupt; a negative fd is skipped (revents 0); a closed fd or an O_PATH
// description gives POLLNVAL; POLLERR and POLLHUP are always reported.
// An interrupted poll returns ERESTART_RESTARTBLOCK: a handler makes it
// EINTR, otherwise restart_syscall(2) resumes it with the same deadline
// (do_restart_poll). ppoll returns ERESTARTNOHAND (restarted with its
// arguments, whose timeout was updated), swaps the signal mask for the
// call (restored after the handler when interrupted, as sigsuspend) and
// writes the time left back to its timespec.
#include <poll.h>

#include <vector>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/readiness.h"
#include "sentry/syscalls/vfs_util.h"

namespace sandbox::syscalls {
namespace {

static_assert(sizeof(pollfd) == 8);

// do_sys_poll: returns the number of ready entries or ERESTARTNOHAND.
SyscallResult DoSysPoll(Task& t, uint64_t ufds, uint64_t nfds,
                        int64_t deadline) {
  if (nfds > NofileLimit(t)) return kEINVAL;
  std::vector<pollfd> fds(nfds);
  if (nfds > 0) {
    TRY_VOID(t.CopyInFull(ufds, fds.data(), nfds * sizeof(pollfd)));
  }
  // Entries with a negative fd take no part (revents 0).
  std::vector<PolledFile> files;
  std::vector<size_t> index;  // files[i] is fds[index[i]]
  files.reserve(nfds);
  index.reserve(nfds);
  for (size_t i = 0; i < nfds; ++i) {
    fds[i].revents = 0;
    if (fds[i].fd < 0) continue;
    PolledFile p;
    vfs::FileRef f = t.fd_table().Get(fds[i].fd);
    if (f != nullptr && !(f->status_flags() & O_PATH)) p.file = std::move(f);
    p.mask = static_cast<uint16_t>(fds[i].events) | POLLERR | POLLHUP;
    files.push_back(std::move(p));
    index.push_back(i);
  }
  KResult<int> n = PollFiles(t, absl::MakeSpan(files), deadline,
                             /*nval_ready=*/true);
  for (size_t i = 0; i < files.size(); ++i) {
    fds[index[i]].revents = static_cast<short>(files[i].revents);
  }
  // Every revents goes back, whatever the result: the array is written
  // back whole in one copy (Linux stores each revents alone; the fd and
  // events fields are written with the values read, so only a guest that
  // changes them during the call could tell).
  if (nfds > 0) {
    TRY_VOID(t.CopyOutFull(ufds, fds.data(), nfds * sizeof(pollfd)));
  }
  if (!n.ok()) return n.error();
  return static_cast<uint64_t>(*n);
}

// do_restart_poll's continuation: the same call to the same deadline.
SyscallResult PollRestartable(Task& t, uint64_t ufds, uint64_t nfds,
                              int64_t deadline) {
  SyscallResult r = DoSysPoll(t, ufds, nfds, deadline);
  if (!r.ok() && r.error().number() == kERESTARTNOHAND) {
    t.signals().restart_fn = [ufds, nfds, deadline](Task& t) {
      return PollRestartable(t, ufds, nfds, deadline);
    };
    return kERestartRestartBlock;
  }
  return r;
}

// poll(2): timeout in milliseconds, negative for none.
SyscallResult Poll(Task& t, UserAddr ufds, uint32_t nfds, int32_t timeout_ms) {
  int64_t deadline = kNoDeadline;
  if (timeout_ms >= 0) {
    TRY(deadline,
        DeadlineAfter(timeout_ms / 1000, int64_t{timeout_ms % 1000} * 1000000));
  }
  return PollRestartable(t, ufds.addr, nfds, deadline);
}

// ppoll(2).
SyscallResult Ppoll(Task& t, UserAddr ufds, uint32_t nfds,
                    UserPtr<abi::Timespec> tsp, UserAddr sigmask,
                    uint64_t sigsetsize) {
  int64_t deadline = kNoDeadline;
  if (!tsp.null()) {
    TRY(abi::Timespec ts, tsp.CopyIn(t));
    TRY(deadline, DeadlineAfter(ts.tv_sec, ts.tv_nsec));
  }
  TRY_VOID(SetUserSigmask(t, sigmask.addr, sigsetsize));
  SyscallResult r = DoSysPoll(t, ufds.addr, nfds, deadline);
  // poll_select_finish.
  RestoreSigmaskUnless(t, r, kERESTARTNOHAND);
  if (!tsp.null() && deadline != 0) {
    abi::Timespec left =
        deadline == kNoDeadline ? abi::Timespec{0, 0} : TimeLeft(deadline);
    if (deadline != kNoDeadline && !tsp.CopyOut(t, left).ok() && !r.ok() &&
        r.error().number() == kERESTARTNOHAND) {
      // The timeout could not be updated, so the call cannot restart.
      return kEINTR;
    }
  }
  return r;
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Poll);
SANDBOX_SYSCALL_HANDLER(Ppoll);

}  // namespace sandbox::syscalls
