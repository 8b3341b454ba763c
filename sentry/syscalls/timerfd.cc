// timerfd_create(2), timerfd_settime(2), timerfd_gettime(2): files in
// sentry/fs/timerfd, checks in Linux's order (fs/timerfd.c): create takes
// only TFD_CLOEXEC and TFD_NONBLOCK and the five timerfd clocks (EINVAL),
// the _ALARM clocks need CAP_WAKE_ALARM (EPERM); settime copies the new
// value in first (EFAULT), then rejects unknown flags and invalid
// timespecs (EINVAL), then a descriptor that is not open (EBADF) or not a
// timerfd (EINVAL), then an _ALARM timer without CAP_WAKE_ALARM (EPERM);
// the old value is written after the timer is set.
#include "sentry/fs/timerfd/timerfd.h"

#include <fcntl.h>
#include <sys/timerfd.h>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/itimerspec.h"
#include "sentry/syscalls/vfs_util.h"

namespace sandbox::syscalls {
namespace {

using fs::timerfd::TimerFd;

static_assert(TFD_CLOEXEC == O_CLOEXEC && TFD_NONBLOCK == O_NONBLOCK);
static_assert(TFD_TIMER_ABSTIME == fs::timerfd::kTfdTimerAbstime);
static_assert(TFD_TIMER_CANCEL_ON_SET == fs::timerfd::kTfdTimerCancelOnSet);

bool MayWakeAlarm(Task& t) {
  return t.creds().HasCapability(kernel::kCapWakeAlarm);
}

// timerfd_fget: EBADF, or EINVAL for another kind of file.
KResult<std::shared_ptr<TimerFd>> GetTimerFd(Task& t, int32_t fd) {
  TRY(vfs::FileRef f, GetFile(t, fd));
  auto tf = std::dynamic_pointer_cast<TimerFd>(f);
  if (tf == nullptr) return kEINVAL;
  return tf;
}

// timerfd_create(2).
SyscallResult TimerfdCreate(Task& t, int32_t clock, Flags flags_arg) {
  const int32_t flags = static_cast<int32_t>(flags_arg.v);
  if ((flags & ~(TFD_CLOEXEC | TFD_NONBLOCK)) ||
      !fs::timerfd::ValidClock(clock)) {
    return kEINVAL;
  }
  if (fs::timerfd::IsAlarmClock(clock) && !MayWakeAlarm(t)) return kEPERM;
  auto f = TimerFd::Create(t.kernel().timer_service(), clock,
                           O_RDWR | (flags & TFD_NONBLOCK));
  TRY(int fd, t.fd_table().Install(std::move(f), 0, flags & TFD_CLOEXEC,
                                   NofileLimit(t)));
  return static_cast<uint64_t>(fd);
}

// timerfd_settime(2).
SyscallResult TimerfdSettime(Task& t, Fd fd, Flags flags_arg,
                             UserPtr<Itimerspec> new_value,
                             UserPtr<Itimerspec> old_value) {
  const int32_t flags = static_cast<int32_t>(flags_arg.v);
  TRY(Itimerspec v, new_value.CopyIn(t));
  if ((flags & ~(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET)) ||
      !ValidTimespec(v.value) || !ValidTimespec(v.interval)) {
    return kEINVAL;
  }
  TRY(std::shared_ptr<TimerFd> tf, GetTimerFd(t, fd.fd));
  if (fs::timerfd::IsAlarmClock(tf->clock()) && !MayWakeAlarm(t)) {
    return kEPERM;
  }
  TimerFd::Spec old =
      tf->SetTime(flags, {TimespecNs(v.value), TimespecNs(v.interval)});
  if (!old_value.null()) TRY_VOID(old_value.CopyOut(t, ToItimerspec(old)));
  return uint64_t{0};
}

// timerfd_gettime(2).
SyscallResult TimerfdGettime(Task& t, Fd fd, UserPtr<Itimerspec> value) {
  TRY(std::shared_ptr<TimerFd> tf, GetTimerFd(t, fd.fd));
  TRY_VOID(value.CopyOut(t, ToItimerspec(tf->GetTime())));
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(TimerfdCreate);
SANDBOX_SYSCALL_HANDLER(TimerfdSettime);
SANDBOX_SYSCALL_HANDLER(TimerfdGettime);

}  // namespace sandbox::syscalls
