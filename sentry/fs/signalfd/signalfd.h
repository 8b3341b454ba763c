// signalfd: reading pending signals from a file (Linux's fs/signalfd.c).
//
// The file holds only a signal mask (never SIGKILL or SIGSTOP). Everything
// else is the READER's: read(2), poll and epoll look at the pending
// signals of the calling task and its process (Linux's `current`), so a
// signalfd inherited across fork reads the child's own signals, and two
// processes sharing one read their own.
//
// read(2): the buffer holds n = size / 128 records (n == 0: EINVAL). Each
// record is a struct signalfd_siginfo filled from a dequeued siginfo as
// signalfd_copyinfo does, by siginfo_layout's class (kill, timer, poll,
// fault, child, rt/sigqueue, SIGSYS): unused fields are 0. The first
// record waits (EAGAIN under O_NONBLOCK; ERESTARTSYS when a signal outside
// the mask interrupts), the others are taken only if already pending. The
// dequeue is the one rt_sigtimedwait uses (kernel::DequeueSignalIn: the
// thread's queue first, then the process's, with ITIMER_REAL/POSIX timer
// re-arming), whether or not the signals are blocked; as on Linux, a
// signal that is not blocked may be delivered before a reader takes it.
//
// Readiness: POLLIN while a signal of the mask is pending for the caller.
// Wake-ups come from the caller's process's signalfd queue
// (ThreadGroup::signalfd_queue, Linux's sighand->signalfd_wqh), notified
// whenever a signal is queued and when a signalfd's mask changes. As on
// Linux, an epoll registration stays on the queue of the process that made
// it. fdinfo: "sigmask:\t%016x" (the mask as given, less SIGKILL/SIGSTOP).
//
// Locking: the mask is an atomic (Linux updates it under siglock; readers
// only need one consistent 64-bit value). Reads and readiness take the
// reader's signal_mu() through kernel::DequeueSignalIn/HasSignalOutside.
#ifndef SENTRY_FS_SIGNALFD_SIGNALFD_H_
#define SENTRY_FS_SIGNALFD_SIGNALFD_H_

#include <signal.h>
#include <stdint.h>
#include <sys/signalfd.h>

#include <atomic>
#include <string>

#include "sentry/kernel/signal_queue.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::fs::signalfd {

static_assert(sizeof(signalfd_siginfo) == 128);

// signalfd_copyinfo: the record for `info`.
signalfd_siginfo ToSignalfdSiginfo(const siginfo_t& info);

class SignalFd final : public vfs::FileDescription {
 public:
  // `mask`: the signals to read (SIGKILL and SIGSTOP are dropped);
  // `flags` the open flags (O_RDWR, maybe O_NONBLOCK).
  SignalFd(kernel::SigSet mask, uint32_t flags);

  // signalfd4 on an existing signalfd. Wakes the caller's process's
  // signalfd waiters (the caller is a task thread).
  void SetMask(kernel::SigSet mask);
  kernel::SigSet mask() const { return mask_.load(std::memory_order_acquire); }

  KResult<size_t> Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) override;
  KResult<int64_t> Seek(int64_t, int) override { return int64_t{0}; }
  KResult<abi::Stat> Stat() override;
  bool MayBlock() const override { return true; }
  // For the calling task (0 outside a task thread).
  uint32_t Readiness(uint32_t mask) override;
  // On the calling task's process's signalfd queue (none outside a task
  // thread).
  void EventRegister(vfs::WaitEntry* e, uint32_t mask) override;
  bool CanPoll() const override { return true; }
  std::string FdInfo() override;
  std::string_view AnonInodeName() const override { return "[signalfd]"; }

 private:
  std::atomic<kernel::SigSet> mask_;
};

}  // namespace sandbox::fs::signalfd

#endif  // SENTRY_FS_SIGNALFD_SIGNALFD_H_
