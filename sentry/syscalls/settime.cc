// Setting and steering the clocks: clock_settime, settimeofday, adjtimex,
// clock_adjtime. The sandbox's wall clock is the host's, which the guest
// may not change: it has no CAP_SYS_TIME over the host clock whatever its
// capabilities inside (as gVisor), so every change that Linux would make is
// EPERM, after the checks Linux makes before its capability check (EINVAL
// for a clock that cannot be set or an invalid time, EFAULT). adjtimex's
// read-only queries succeed and report an unsynchronized clock (no NTP
// state is shared with the host): TIME_ERROR, STA_UNSYNC, the maximum
// error and Linux's defaults for the rest.
#include <sys/timex.h>
#include <time.h>

#include "sentry/abi/linux.h"
#include "sentry/abi/syscalls.h"
#include "sentry/kernel/timers.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {
namespace {

static_assert(sizeof(struct timex) == 208, "struct __kernel_timex");

constexpr int64_t kNsPerSec = 1000000000;
// include/linux/time64.h: KTIME_SEC_MAX - TIME_UPTIME_SEC_MAX.
constexpr int64_t kTimeSettodSecMax = 9223372036LL - 946080000LL;

// timespec64_valid_settod().
bool ValidSettod(int64_t sec, int64_t nsec) {
  return sec >= 0 && nsec >= 0 && nsec < kNsPerSec && sec <= kTimeSettodSecMax;
}

// do_sys_settimeofday64() for the guest: the time (if any) must be valid;
// then security_settime64 wants CAP_SYS_TIME over the host clock: EPERM.
SyscallResult SetTimeOfDay(const abi::Timespec* ts) {
  if (ts != nullptr && !ValidSettod(ts->tv_sec, ts->tv_nsec)) return kEINVAL;
  return kEPERM;
}

// The clock ids posix_clocks[] holds (kernel/time/posix-timers.c); 10 is a
// hole. The CPU clocks and dynamic clocks are the negative ids.
bool KnownClock(int32_t id) {
  return id >= CLOCK_REALTIME && id <= CLOCK_TAI && id != 10;
}

// A dynamic (file descriptor) clock: none exist here, so every id of one is
// EINVAL (get_clock_desc's answer for a descriptor that is not a clock).
bool IsFdClock(int32_t id) { return id < 0 && (id & 7) == 3; }

// clock_settime(2): only CLOCK_REALTIME and the CPU clocks have a
// clock_set (the others are EINVAL before the time is read). A CPU clock
// that names a task is EPERM (posix_cpu_clock_set), else EINVAL.
SyscallResult ClockSettime(Task& t, int32_t clock, UserPtr<abi::Timespec> tp) {
  if (clock >= 0 && clock != CLOCK_REALTIME) return kEINVAL;
  TRY(abi::Timespec ts, tp.CopyIn(t));
  if (IsFdClock(clock)) return kEINVAL;
  if (clock == CLOCK_REALTIME) return SetTimeOfDay(&ts);
  TRY(kernel::CpuClockRef c, kernel::ResolveCpuClock(t, clock, false));
  (void)c;
  return kEPERM;
}

// settimeofday(2): tv_usec outside [0, 10^6] is EINVAL before the
// conversion (10^6 itself fails the settod check).
SyscallResult Settimeofday(Task& t, UserPtr<abi::Timeval> tv,
                           UserPtr<abi::Timezone> tz) {
  abi::Timespec ts{};
  if (!tv.null()) {
    TRY(abi::Timeval v, tv.CopyIn(t));
    if (v.tv_usec > 1000000 || v.tv_usec < 0) return kEINVAL;
    ts = {v.tv_sec, v.tv_usec * 1000};
  }
  if (!tz.null()) TRY_VOID(tz.CopyIn(t));
  return SetTimeOfDay(tv.null() ? nullptr : &ts);
}

// timekeeping_validate_timex() as far as the guest gets, then the
// read-only query. Kernel mode bits (the user ADJ_OFFSET_SINGLESHOT is
// ADJ_ADJTIME | 1): ADJ_ADJTIME 0x8000, _SINGLESHOT 0x0001, _READONLY
// 0x2000.
constexpr uint32_t kAdjAdjtime = 0x8000;
constexpr uint32_t kAdjSingleshot = 0x0001;
constexpr uint32_t kAdjReadonly = 0x2000;

KResult<int> DoAdjtimex(struct timex* tx) {
  const uint32_t modes = tx->modes;
  if (modes & kAdjAdjtime) {
    // adjtime(3)'s mode must not be mixed with others; only its read-only
    // form is allowed without CAP_SYS_TIME.
    if (!(modes & kAdjSingleshot)) return kEINVAL;
    if (!(modes & kAdjReadonly)) return kEPERM;
  } else if (modes != 0) {
    return kEPERM;
  }
  // The state of a clock that NTP does not discipline (ntp_clear()'s
  // values; tick = USEC_PER_SEC / USER_HZ).
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  const long kNtpPhaseLimit = 16000000;  // usec (NTP_PHASE_LIMIT)
  struct timex out = {};
  out.modes = tx->modes;
  out.offset = 0;
  out.freq = 0;
  out.maxerror = kNtpPhaseLimit;
  out.esterror = kNtpPhaseLimit;
  out.status = STA_UNSYNC;
  out.constant = 2;
  out.precision = 1;
  out.tolerance = 500L << 16;  // MAXFREQ_SCALED / PPM_SCALE
  out.time.tv_sec = now.tv_sec;
  out.time.tv_usec = now.tv_nsec / 1000;
  out.tick = 10000;
  out.tai = 0;
  *tx = out;
  return TIME_ERROR;  // is_error_status(): STA_UNSYNC
}

// adjtimex(2): the struct is copied in whole (EFAULT), and back out even
// when the call fails.
SyscallResult Adjtimex(Task& t, UserPtr<struct timex> txp) {
  TRY(struct timex tx, txp.CopyIn(t));
  KResult<int> r = DoAdjtimex(&tx);
  TRY_VOID(txp.CopyOut(t, tx));
  if (!r.ok()) return r.error();
  return static_cast<uint64_t>(*r);
}

// clock_adjtime(2): CLOCK_REALTIME is adjtimex; the other known clocks have
// no clock_adj (EOPNOTSUPP, as have the CPU clocks, whose ids are not
// checked); the struct is written back only on success.
SyscallResult ClockAdjtime(Task& t, int32_t clock, UserPtr<struct timex> txp) {
  TRY(struct timex tx, txp.CopyIn(t));
  if (IsFdClock(clock)) return kEINVAL;
  if (clock >= 0 && !KnownClock(clock)) return kEINVAL;
  if (clock != CLOCK_REALTIME) return kEOPNOTSUPP;
  TRY(int r, DoAdjtimex(&tx));
  TRY_VOID(txp.CopyOut(t, tx));
  return static_cast<uint64_t>(r);
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(ClockSettime);
SANDBOX_SYSCALL_HANDLER(Settimeofday);
SANDBOX_SYSCALL_HANDLER(Adjtimex);
SANDBOX_SYSCALL_HANDLER(ClockAdjtime);

}  // namespace sandbox::syscalls
