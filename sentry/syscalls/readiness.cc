#include "sentry/syscalls/readiness.h"

#include <memory>
#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::syscalls {

KResult<int64_t> DeadlineAfter(int64_t sec, int64_t nsec) {
  if (sec < 0 || nsec < 0 || nsec >= 1000000000) return kEINVAL;
  if (sec == 0 && nsec == 0) return int64_t{0};
  // Far enough to be forever, near enough not to overflow.
  constexpr int64_t kMaxSec = (INT64_MAX / 4) / 1000000000;
  if (sec > kMaxSec) return kNoDeadline;
  return vfs::MonotonicNowNs() + sec * 1000000000 + nsec;
}

abi::Timespec TimeLeft(int64_t deadline) {
  int64_t left = deadline - vfs::MonotonicNowNs();
  if (left < 0) left = 0;
  return {left / 1000000000, left % 1000000000};
}

KResult<void> SetUserSigmask(Task& t, uint64_t mask, uint64_t sigsetsize) {
  if (mask == 0) return OkResult();
  if (sigsetsize != abi::kSigsetSize) return kEINVAL;
  TRY(uint64_t m, UserPtr<uint64_t>{mask}.CopyIn(t));
  t.signals().saved_mask = t.signal_mask();
  kernel::SetSignalMask(t, m);
  return OkResult();
}

void RestoreSigmaskUnless(Task& t, const SyscallResult& result,
                          int interrupted_code) {
  std::optional<kernel::SigSet>& saved = t.signals().saved_mask;
  if (!saved.has_value()) return;
  if (!result.ok() && result.error().number() == interrupted_code) return;
  kernel::SigSet m = *saved;
  saved.reset();
  kernel::SetSignalMask(t, m);
}

namespace {

int Scan(absl::Span<PolledFile> files, bool nval_ready) {
  int count = 0;
  for (PolledFile& p : files) {
    if (p.file == nullptr) {
      p.revents = nval_ready ? vfs::kPollNval : 0;
    } else {
      p.revents = p.file->Readiness(p.mask) & p.mask;
    }
    if (p.revents != 0) ++count;
  }
  return count;
}

}  // namespace

KResult<int> PollFiles(Task& t, absl::Span<PolledFile> files, int64_t deadline,
                       bool nval_ready) {
  int count = Scan(files, nval_ready);
  if (count > 0 || deadline == 0) return count;
  // Register, then scan again: a change after that scan runs a callback,
  // which ends the sleep (no lost wake-up).
  std::unique_ptr<vfs::ThreadWaiter[]> waiters(
      new vfs::ThreadWaiter[files.empty() ? 1 : files.size()]);
  absl::InlinedVector<pollfd, 4> host;
  for (size_t i = 0; i < files.size(); ++i) {
    const PolledFile& p = files[i];
    if (p.file == nullptr) continue;
    p.file->EventRegister(&waiters[i], p.mask);
    if (int fd = p.file->HostPollFd(); fd >= 0) {
      host.push_back({fd, static_cast<short>(p.mask & 0xffff), 0});
    }
  }
  const int interrupt_fd = t.io_context().interrupt_fd;
  bool timed_out = false;
  for (;;) {
    count = Scan(files, nval_ready);
    if (count > 0 || timed_out) break;
    vfs::WakeReason r = waiters[0].Sleep(interrupt_fd, deadline, host);
    if (r == vfs::WakeReason::kInterrupted) {
      count = Scan(files, nval_ready);
      if (count > 0) break;
      count = -1;
      break;
    }
    if (r == vfs::WakeReason::kTimedOut) timed_out = true;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].file != nullptr) files[i].file->EventUnregister(&waiters[i]);
  }
  if (count < 0) return kERestartNoHand;
  return count;
}

}  // namespace sandbox::syscalls
