// times(2) (Linux's kernel/sys.c). getrusage(2) is in process.cc; both
// read the accounting in sentry/kernel/cpu_clock.h.
#include "sentry/abi/syscalls.h"
#include "sentry/kernel/cpu_clock.h"
#include "sentry/kernel/kernel.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {
namespace {

struct Tms {
  int64_t utime, stime, cutime, cstime;
};

// Linux's jiffies start 5 minutes before wrapping 32 bits
// (INITIAL_JIFFIES), so times() counts from there, in USER_HZ ticks (at
// CONFIG_HZ=250 as kTickNs).
constexpr int64_t kHz = 1000000000 / kernel::kTickNs;
constexpr int64_t kInitialClockT =
    ((int64_t{1} << 32) - 300 * kHz) * kernel::kUserHz / kHz;

// times(2): the process's and its reaped children's CPU times; returns
// the clock ticks since boot (a null buffer is allowed).
SyscallResult Times(Task& t, UserPtr<Tms> buf) {
  if (!buf.null()) {
    kernel::ThreadGroup& tg = t.thread_group();
    kernel::CpuSample self, children;
    {
      absl::MutexLock l(&tg.signal_mu());
      self = kernel::SampleProcessLocked(tg, &t);
      children = tg.cpu_times().children;
    }
    TRY_VOID(buf.CopyOut(t, Tms{kernel::NsToClockT(self.user_ns),
                                kernel::NsToClockT(self.sys_ns),
                                kernel::NsToClockT(children.user_ns),
                                kernel::NsToClockT(children.sys_ns)}));
  }
  return static_cast<uint64_t>(kInitialClockT +
                               kernel::NsToClockT(t.kernel().UptimeNs()));
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Times);

}  // namespace sandbox::syscalls
