// epoll_create(2), epoll_create1(2), epoll_ctl(2), epoll_wait(2),
// epoll_pwait(2), epoll_pwait2(2): sentry/fs/epoll, in fs/eventpoll.c's
// order of checks.
//
// epoll_ctl: the event is read first for ops other than DEL (EFAULT);
// EBADF for either fd (O_PATH counts as bad: fdget); EPERM for a target
// without f_op->poll (regular files and directories, /dev/null...); EINVAL
// for the epoll itself as target, a non-epoll epfd, EPOLLEXCLUSIVE with
// MOD, or with an epoll target or other bits than IN, OUT, ERR, HUP,
// WAKEUP, ET; then the op: ADD (EEXIST, ELOOP), MOD (ENOENT, EINVAL on an
// exclusive item), DEL (ENOENT); an unknown op is EINVAL. POLLERR and
// POLLHUP are always added to the mask.
//
// epoll_wait: EINVAL unless 0 < maxevents <= INT_MAX / 12, EFAULT when the
// array is outside the user address range, EBADF, EINVAL for a non-epoll
// fd; then waits (timeout in ms, < 0 forever). A signal gives EINTR
// (never restarted); events beat it. epoll_pwait swaps the signal mask for
// the call (restored after the handler when EINTR, as sigsuspend);
// epoll_pwait2 takes a timespec (NULL: forever, EINVAL if invalid).
#include "sentry/fs/epoll/epoll.h"

#include <limits.h>
#include <sys/epoll.h>

#include <algorithm>
#include <vector>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/task.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/readiness.h"
#include "sentry/syscalls/vfs_util.h"

namespace sandbox::syscalls {
namespace {

using fs::epoll::EpollFile;

// struct epoll_event is packed on x86-64.
struct __attribute__((packed)) EpollEvent {
  uint32_t events;
  uint64_t data;
};
static_assert(sizeof(EpollEvent) == 12);

static_assert(EPOLLEXCLUSIVE == fs::epoll::kEpollExclusive &&
              EPOLLWAKEUP == fs::epoll::kEpollWakeup &&
              EPOLLONESHOT == fs::epoll::kEpollOneshot &&
              EPOLLET == static_cast<uint32_t>(fs::epoll::kEpollEt));

// EPOLLEXCLUSIVE_OK_BITS.
constexpr uint32_t kExclusiveOkBits = EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP |
                                      EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE;
// The top of the user address range (TASK_SIZE_MAX): access_ok's bound.
constexpr uint64_t kTaskSize = 0x7ffffffff000;
constexpr int kMaxEvents = INT_MAX / sizeof(EpollEvent);  // EP_MAX_EVENTS

SyscallResult NewEpoll(Task& t, uint32_t flags) {
  auto f = std::make_shared<EpollFile>(O_RDWR);
  TRY(int fd, t.fd_table().Install(std::move(f), 0, flags & EPOLL_CLOEXEC,
                                   NofileLimit(t)));
  return static_cast<uint64_t>(fd);
}

// epoll_create1(2).
SyscallResult EpollCreate1(Task& t, int32_t flags) {
  if (flags & ~EPOLL_CLOEXEC) return kEINVAL;
  return NewEpoll(t, flags);
}

// epoll_create(2): size is only checked.
SyscallResult EpollCreate(Task& t, int32_t size) {
  if (size <= 0) return kEINVAL;
  return NewEpoll(t, 0);
}

// epoll_ctl(2).
SyscallResult EpollCtl(Task& t, Fd epfd, int32_t op, Fd fd,
                       UserPtr<EpollEvent> uevent) {
  EpollEvent ev{0, 0};
  const bool has_event = op != EPOLL_CTL_DEL;
  if (has_event) {
    TRY(ev, uevent.CopyIn(t));
  }
  TRY(vfs::FileRef ef, GetFile(t, epfd.fd));
  TRY(vfs::FileRef tf, GetFile(t, fd.fd));
  if (!tf->CanPoll()) return kEPERM;
  auto* ep = dynamic_cast<EpollFile*>(ef.get());
  if (ef == tf || ep == nullptr) return kEINVAL;
  if (has_event && (ev.events & EPOLLEXCLUSIVE)) {
    if (op == EPOLL_CTL_MOD) return kEINVAL;
    if (op == EPOLL_CTL_ADD && (dynamic_cast<EpollFile*>(tf.get()) != nullptr ||
                                (ev.events & ~kExclusiveOkBits))) {
      return kEINVAL;
    }
  }
  const uint32_t events = ev.events | EPOLLERR | EPOLLHUP;
  switch (op) {
    case EPOLL_CTL_ADD:
      TRY_VOID(ep->Add(tf, fd.fd, events, ev.data));
      break;
    case EPOLL_CTL_MOD:
      TRY_VOID(ep->Modify(tf, fd.fd, events, ev.data));
      break;
    case EPOLL_CTL_DEL:
      TRY_VOID(ep->Delete(tf, fd.fd));
      break;
    default:
      return kEINVAL;
  }
  return uint64_t{0};
}

// do_epoll_wait.
SyscallResult DoEpollWait(Task& t, int32_t epfd, uint64_t events,
                          int32_t maxevents, int64_t deadline) {
  if (maxevents <= 0 || maxevents > kMaxEvents) return kEINVAL;
  const uint64_t len = uint64_t(maxevents) * sizeof(EpollEvent);
  if (events > kTaskSize || len > kTaskSize - events) return kEFAULT;
  TRY(vfs::FileRef f, GetFile(t, epfd));
  auto* ep = dynamic_cast<EpollFile*>(f.get());
  if (ep == nullptr) return kEINVAL;
  // The ready events are copied out in one go; if that faults, one by one
  // up to the fault: the events not delivered stay ready (ep_send_events),
  // EFAULT if none could be.
  auto deliver = [&t, events](absl::Span<const fs::epoll::Event> evs) {
    std::vector<EpollEvent> out;
    out.reserve(evs.size());
    for (const auto& e : evs) out.push_back(EpollEvent{e.events, e.data});
    if (t.CopyOutFull(events, out.data(), out.size() * sizeof(EpollEvent))
            .ok()) {
      return out.size();
    }
    size_t done = 0;
    while (done < out.size() &&
           t.CopyOutFull(events + done * sizeof(EpollEvent), &out[done],
                         sizeof(EpollEvent))
               .ok()) {
      ++done;
    }
    return done;
  };
  KResult<size_t> r =
      ep->Wait(maxevents, deadline, t.io_context().interrupt_fd, deliver);
  if (!r.ok() && r.error().number() == EINTR &&
      !kernel::HasSignalOutside(t, t.signal_mask())) {
    // Woken by an interrupt that is not a signal (no signal_pending in
    // Linux terms): the run loop handles it and the call starts again.
    return kERestartNoHand;
  }
  TRY(size_t n, std::move(r));
  return static_cast<uint64_t>(n);
}

// The code for which epoll_pwait keeps the saved mask for the signal step.
int Interrupted(const SyscallResult& r) {
  return !r.ok() && r.error().number() == kERESTARTNOHAND ? kERESTARTNOHAND
                                                          : EINTR;
}

KResult<int64_t> MsDeadline(int32_t timeout_ms) {
  if (timeout_ms < 0) return kNoDeadline;
  return DeadlineAfter(timeout_ms / 1000, int64_t{timeout_ms % 1000} * 1000000);
}

// epoll_wait(2).
SyscallResult EpollWait(Task& t, Fd epfd, UserAddr events, int32_t maxevents,
                        int32_t timeout) {
  TRY(int64_t deadline, MsDeadline(timeout));
  return DoEpollWait(t, epfd.fd, events.addr, maxevents, deadline);
}

// epoll_pwait(2).
SyscallResult EpollPwait(Task& t, Fd epfd, UserAddr events, int32_t maxevents,
                         int32_t timeout, UserAddr sigmask,
                         uint64_t sigsetsize) {
  TRY(int64_t deadline, MsDeadline(timeout));
  TRY_VOID(SetUserSigmask(t, sigmask.addr, sigsetsize));
  SyscallResult r = DoEpollWait(t, epfd.fd, events.addr, maxevents, deadline);
  RestoreSigmaskUnless(t, r, Interrupted(r));
  return r;
}

// epoll_pwait2(2).
SyscallResult EpollPwait2(Task& t, Fd epfd, UserAddr events, int32_t maxevents,
                          UserPtr<abi::Timespec> timeout, UserAddr sigmask,
                          uint64_t sigsetsize) {
  int64_t deadline = kNoDeadline;
  if (!timeout.null()) {
    TRY(abi::Timespec ts, timeout.CopyIn(t));
    TRY(deadline, DeadlineAfter(ts.tv_sec, ts.tv_nsec));
  }
  TRY_VOID(SetUserSigmask(t, sigmask.addr, sigsetsize));
  SyscallResult r = DoEpollWait(t, epfd.fd, events.addr, maxevents, deadline);
  RestoreSigmaskUnless(t, r, Interrupted(r));
  return r;
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(EpollCreate);
SANDBOX_SYSCALL_HANDLER(EpollCreate1);
SANDBOX_SYSCALL_HANDLER(EpollCtl);
SANDBOX_SYSCALL_HANDLER(EpollWait);
SANDBOX_SYSCALL_HANDLER(EpollPwait);
SANDBOX_SYSCALL_HANDLER(EpollPwait2);

}  // namespace sandbox::syscalls
