// futex(2): wait, wake, requeue and wake-op; the queues live in
// kernel::FutexManager. No PI futexes (LOCK_PI, UNLOCK_PI, TRYLOCK_PI,
// WAIT_REQUEUE_PI, CMP_REQUEUE_PI, LOCK_PI2): ENOSYS.
#include <linux/futex.h>
#include <time.h>

#include <optional>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sentry/abi/syscalls.h"
#include "sentry/kernel/kernel.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {
namespace {

KResult<absl::Duration> ToDuration(const abi::Timespec& ts) {
  if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) {
    return kEINVAL;
  }
  return absl::Seconds(ts.tv_sec) + absl::Nanoseconds(ts.tv_nsec);
}

// An absolute deadline on `clock` converted to absl::Time (which follows
// CLOCK_REALTIME).
absl::Time FromClock(int clock, absl::Duration abs) {
  timespec now;
  clock_gettime(clock, &now);
  absl::Duration left =
      abs - (absl::Seconds(now.tv_sec) + absl::Nanoseconds(now.tv_nsec));
  return absl::Now() + left;
}

// A timed wait that a signal interrupted: as Linux's futex_wait, it
// returns ERESTART_RESTARTBLOCK, so a handler makes it EINTR (whatever
// SA_RESTART says) and anything else (a stop, a signal without a handler)
// resumes it through restart_syscall(2) (futex_wait_restart) to the same
// absolute deadline, not a fresh timeout.
Errno TimedWaitRestartBlock(Task& t, uint64_t addr, bool shared, uint32_t val,
                            uint32_t bitset, absl::Time deadline) {
  t.signals().restart_fn = [addr, shared, val, bitset,
                            deadline](Task& t) -> KResult<uint64_t> {
    KResult<void> r =
        t.kernel().futexes().Wait(t, addr, shared, val, bitset, deadline);
    if (r.ok()) return uint64_t{0};
    if (r.error() == kERestartSys) {
      return TimedWaitRestartBlock(t, addr, shared, val, bitset, deadline);
    }
    return r.error();
  };
  return kERestartRestartBlock;
}

// futex(2).
SyscallResult Futex(Task& t, UserAddr uaddr, int32_t op, uint32_t val,
                    UserAddr utime, UserAddr uaddr2, uint32_t val3) {
  const int cmd = op & FUTEX_CMD_MASK;
  const bool realtime = op & FUTEX_CLOCK_REALTIME;
  // Without FUTEX_PRIVATE_FLAG the word is keyed by the memory it lives in
  // (FutexManager::KeyFor), so other processes mapping it meet it.
  const bool shared = !(op & FUTEX_PRIVATE_FLAG);
  // REQUEUE, CMP_REQUEUE and WAKE_OP take a count where the timeout goes.
  const int val2 = static_cast<int32_t>(static_cast<uint32_t>(utime.addr));
  kernel::FutexManager& f = t.kernel().futexes();
  switch (cmd) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET: {
      // sys_futex reads the timeout before do_futex checks the clock.
      std::optional<absl::Time> deadline;
      if (!utime.null()) {
        TRY(abi::Timespec ts, t.CopyInObj<abi::Timespec>(utime.addr));
        TRY(absl::Duration d, ToDuration(ts));
        deadline =
            cmd == FUTEX_WAIT
                ? absl::Now() + d
                : FromClock(realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC, d);
      }
      if (realtime && cmd == FUTEX_WAIT) return kENOSYS;
      uint32_t bitset = cmd == FUTEX_WAIT ? FUTEX_BITSET_MATCH_ANY : val3;
      KResult<void> r = f.Wait(t, uaddr.addr, shared, val, bitset, deadline);
      if (r.ok()) return uint64_t{0};
      // Without a timeout, ERESTARTSYS: SA_RESTART restarts the wait.
      if (r.error() == kERestartSys && deadline.has_value()) {
        return TimedWaitRestartBlock(t, uaddr.addr, shared, val, bitset,
                                     *deadline);
      }
      return r.error();
    }
    default:
      break;
  }
  // Only the waits take FUTEX_CLOCK_REALTIME (and the PI ones, absent).
  if (realtime) return kENOSYS;
  switch (cmd) {
    case FUTEX_WAKE:
    case FUTEX_WAKE_BITSET: {
      uint32_t bitset = cmd == FUTEX_WAKE ? FUTEX_BITSET_MATCH_ANY : val3;
      return f.Wake(t, uaddr.addr, shared, bitset, static_cast<int32_t>(val));
    }
    case FUTEX_REQUEUE:
      return f.Requeue(t, uaddr.addr, uaddr2.addr, shared,
                       static_cast<int32_t>(val), val2, std::nullopt);
    case FUTEX_CMP_REQUEUE:
      return f.Requeue(t, uaddr.addr, uaddr2.addr, shared,
                       static_cast<int32_t>(val), val2, val3);
    case FUTEX_WAKE_OP:
      return f.WakeOp(t, uaddr.addr, uaddr2.addr, shared,
                      static_cast<int32_t>(val), val2, val3);
    default:
      return kENOSYS;
  }
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Futex);

}  // namespace sandbox::syscalls
