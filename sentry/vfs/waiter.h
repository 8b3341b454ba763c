// Readiness and wake-ups for open files: Linux's wait_queue_head_t as
// f_op->poll uses it (poll_wait + wake_up_poll), gVisor's waiter.Queue.
//
// A file whose readiness can change owns a `WaitQueue` and calls
// `Notify(events)` after its state changed (data in: POLLIN, room: POLLOUT,
// last writer gone: POLLHUP...). Whoever waits registers a `WaitEntry`
// with the events it cares about (FileDescription::EventRegister); Notify
// runs the callback of every entry whose mask meets the events. The file's
// `Readiness(mask)` (f_op->poll without the table) says what is ready now.
// The pattern of every waiter is Linux's:
//
//   register entry; loop { if (file.Readiness(mask)) break; sleep; }
//   unregister entry;
//
// Registering before the check loses no wake-up: a change after the check
// runs the callback, which makes the sleep return at once.
//
// `ThreadWaiter` is the entry of a sleeping Sentry thread: its callback
// writes the thread's wake-up eventfd (one per host thread, the one the
// owner-locked vfs::lock::WaitQueue uses too), and `Sleep` polls that
// eventfd together with the task's interrupt fd (vfs::IoContext::
// interrupt_fd, readable while a signal or a kill is pending: Task::
// Interrupt) and any host fds of host-backed files, until a deadline on
// CLOCK_MONOTONIC. Wake-ups may be spurious: callers re-check.
//
// Lifetime: a registration holds the queue's state by shared pointer, so
// `WaitEntry::Unregister` is safe after the queue's owner is gone (epoll
// keeps entries on files it only holds weakly). An entry must be
// unregistered before it is destroyed (its destructor does it).
//
// Lock order (state lock = the lock of the file's condition, e.g.
// Pipe::mu_, EventFd::mu_, Epoll::mu_):
//   state lock -> WaitQueue state mu -> callbacks' locks
//   (Epoll::ready_mu_ -> the epoll's own WaitQueue mu -> ... for nested
//   epolls, acyclic because epoll refuses loops with ELOOP).
// Callbacks run with the queue's mu held: they must not block, must not
// take a state lock, and must not register or unregister on the same queue.
#ifndef SENTRY_VFS_WAITER_H_
#define SENTRY_VFS_WAITER_H_

#include <poll.h>
#include <stdint.h>
#include <string.h>

#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "sentry/base/errno.h"
#include "sentry/base/result.h"

namespace sandbox::vfs {

// Event bits: Linux's POLL* / EPOLL* values (equal on x86-64).
inline constexpr uint32_t kPollIn = 0x001;
inline constexpr uint32_t kPollPri = 0x002;
inline constexpr uint32_t kPollOut = 0x004;
inline constexpr uint32_t kPollErr = 0x008;
inline constexpr uint32_t kPollHup = 0x010;
inline constexpr uint32_t kPollNval = 0x020;
inline constexpr uint32_t kPollRdNorm = 0x040;
inline constexpr uint32_t kPollRdBand = 0x080;
inline constexpr uint32_t kPollWrNorm = 0x100;
inline constexpr uint32_t kPollWrBand = 0x200;
inline constexpr uint32_t kPollMsg = 0x400;
inline constexpr uint32_t kPollRdHup = 0x2000;
// DEFAULT_POLLMASK: what a file without f_op->poll reports (regular files,
// directories, /dev/null...): always readable and writable.
inline constexpr uint32_t kDefaultPollMask =
    kPollIn | kPollOut | kPollRdNorm | kPollWrNorm;
// Every event a Notify may carry.
inline constexpr uint32_t kAllEvents = 0xffffffff;

class WaitQueue;

// A registration on at most one WaitQueue at a time.
class WaitEntry {
 public:
  WaitEntry() = default;
  virtual ~WaitEntry();
  WaitEntry(const WaitEntry&) = delete;
  WaitEntry& operator=(const WaitEntry&) = delete;

  // Called by WaitQueue::Notify with `events` (the notified events; the
  // entry's mask meets them) and the queue's mu held (see the lock order).
  virtual void Callback(uint32_t events) = 0;

  // Leaves the queue it is on (no-op if none). After it returns, Callback
  // does not run again for that queue. Not concurrently with Register of
  // the same entry (the entry's owner serializes them).
  void Unregister();
  bool registered() const { return state_ != nullptr; }

 private:
  friend class WaitQueue;
  struct QueueState;
  std::shared_ptr<QueueState> state_;  // the entry's owner only
  uint32_t mask_ = 0;                  // under the queue's mu
};

class WaitQueue {
 public:
  WaitQueue();
  ~WaitQueue();
  WaitQueue(const WaitQueue&) = delete;
  WaitQueue& operator=(const WaitQueue&) = delete;

  // Adds `e` (which must not be registered anywhere) for `mask` (POLLERR
  // and POLLHUP are not implied: callers add them).
  void Register(WaitEntry* e, uint32_t mask);
  // Same as e->Unregister() when `e` is on this queue.
  void Unregister(WaitEntry* e) { e->Unregister(); }
  // Runs the callbacks of the entries whose mask meets `events`.
  void Notify(uint32_t events);
  // Whether any entry is registered (tests).
  bool HasWaiters() const;

 private:
  std::shared_ptr<WaitEntry::QueueState> state_;
};

// Why ThreadWaiter::Sleep returned.
enum class WakeReason {
  kNotified,     // a callback ran, or a host fd became ready
  kInterrupted,  // the interrupt fd is readable (signal, kill)
  kTimedOut,     // the deadline passed
};

// Monotonic clock in nanoseconds (the clock of deadlines).
int64_t MonotonicNowNs();

// The entry of the calling host thread. Create, register on queues, check,
// Sleep, and destroy on the same thread.
class ThreadWaiter final : public WaitEntry {
 public:
  ThreadWaiter();
  ~ThreadWaiter() override;

  void Callback(uint32_t events) override;

  // Sleeps until a callback of this waiter runs (even before the call: the
  // wake-up is kept), `interrupt_fd` (-1: none) is readable, one of
  // `host_fds` has one of its events, or CLOCK_MONOTONIC reaches
  // `deadline_ns` (< 0: never). The interrupt wins over the others.
  WakeReason Sleep(int interrupt_fd, int64_t deadline_ns,
                   absl::Span<const pollfd> host_fds = {});

 private:
  const int efd_;  // the thread's wake-up eventfd
};

// The calling host thread's wake-up eventfd (created on first use, closed
// at thread exit; non-blocking): what vfs::lock::WaitQueue sleeps on too.
int ThreadWakeFd();
// Consumes pending wake-ups of `fd` (a ThreadWakeFd).
void DrainWakeFd(int fd);
// Makes ThreadWakeFd `fd` readable.
void SignalWakeFd(int fd);

// The blocking read of an event file (eventfd, timerfd, signalfd), the
// pattern above with Linux's wait_event_interruptible: waits on `queue` for
// `events` until `attempt()` succeeds (it takes whatever locks it needs).
// EAGAIN if it fails at once and `nonblock`; ERESTARTSYS when the task is
// interrupted first (one more attempt is made then, so a value that came
// with the signal is not lost).
template <typename F>
KResult<void> WaitUntil(WaitQueue& queue, uint32_t events, bool nonblock,
                        int interrupt_fd, F attempt) {
  if (attempt()) return OkResult();
  if (nonblock) return kEAGAIN;
  ThreadWaiter w;
  queue.Register(&w, events);
  for (;;) {
    if (attempt()) return OkResult();
    if (w.Sleep(interrupt_fd, -1) == WakeReason::kInterrupted) {
      if (attempt()) return OkResult();
      return kERestartSys;
    }
  }
}

// The read(2) of an 8-byte counter file (eventfd, timerfd): EINVAL for a
// buffer shorter than 8 bytes; else WaitUntil (POLLIN) until `take(&v)`
// yields a value, which goes to the buffer's first 8 bytes.
template <typename F>
KResult<size_t> ReadCounter(WaitQueue& queue, bool nonblock, int interrupt_fd,
                            absl::Span<uint8_t> dst, F take) {
  if (dst.size() < sizeof(uint64_t)) return kEINVAL;
  uint64_t v = 0;
  TRY_VOID(WaitUntil(queue, kPollIn, nonblock, interrupt_fd,
                     [&] { return take(&v); }));
  memcpy(dst.data(), &v, sizeof(v));
  return sizeof(v);
}

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_WAITER_H_
