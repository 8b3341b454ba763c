// epoll: an interest set of (open file description, fd) items and a ready
// list (Linux's fs/eventpoll.c).
//
// Each item registers a WaitEntry on its file's readiness queue (EventRegister)
// for its events plus POLLERR|POLLHUP. The entry's callback (ep_poll_callback)
// puts the item on the ready list and wakes the epoll's own queue
// (epoll_wait sleepers, and pollers or epolls watching this epoll). A
// collection (ep_send_events) re-polls each ready item's file: items with
// nothing ready drop off the list, the others are reported; a
// level-triggered item goes back on the list, an EPOLLET one does not (its
// next callback puts it back), an EPOLLONESHOT one is disabled until
// EPOLL_CTL_MOD.
//
// Items key on (description, fd) as Linux's (file, fd), and hold their
// description weakly: closing one fd of a description that another fd
// (dup, fork) still holds keeps the item, and the item goes away when the
// description itself is released (Linux's eventpoll_release), which here
// is noticed at the next use of the set (collection, epoll_ctl, fdinfo): it
// is then dropped, so a new description at the same fd can be added.
//
// Files with a host fd (the sandbox's stdio) send no notifications: their
// items are re-polled at each collection and epoll_wait polls their host
// fds while it sleeps, so they behave as level-triggered (EPOLLET on them
// reports every collection where they are ready).
//
// EPOLLEXCLUSIVE is validated as Linux does and then wakes every waiter
// (the man page allows waking "one or more").
//
// Lock order: EpollFile::mu_ (interest set; held while items' files are
// polled: their state locks, and nested epolls' mu_, outer before inner)
//   -> a file's WaitQueue lock (register, callbacks)
//     -> EpollFile::ready_mu_ (ready list, item masks)
//       -> the epoll's own WaitQueue lock (its waiters' callbacks).
// NestMutex() (Linux's epnested_mutex) guards the epoll-in-epoll graph and
// is taken before any mu_.
#ifndef SENTRY_FS_EPOLL_EPOLL_H_
#define SENTRY_FS_EPOLL_EPOLL_H_

#include <stdint.h>

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::fs::epoll {

inline constexpr uint32_t kEpollExclusive = 1u << 28;
inline constexpr uint32_t kEpollWakeup = 1u << 29;
inline constexpr uint32_t kEpollOneshot = 1u << 30;
inline constexpr uint32_t kEpollEt = 1u << 31;
// EP_PRIVATE_BITS: flags, not events.
inline constexpr uint32_t kPrivateBits =
    kEpollWakeup | kEpollOneshot | kEpollEt | kEpollExclusive;
// EPOLL_MAX_NESTS.
inline constexpr int kMaxNests = 4;

// One reported event (struct epoll_event's fields).
struct Event {
  uint32_t events;
  uint64_t data;
};

class EpollFile final : public vfs::FileDescription {
 public:
  explicit EpollFile(uint32_t flags);
  ~EpollFile() override;

  // EPOLL_CTL_ADD/MOD/DEL after the syscall's checks (EBADF, EPERM,
  // EINVAL for itself or a non-epoll, EPOLLEXCLUSIVE rules). `events`
  // already has POLLERR|POLLHUP. ADD: EEXIST if (file, fd) is there, ELOOP
  // for an epoll that would make a loop or nest too deep; MOD: ENOENT if
  // absent, EINVAL on an EPOLLEXCLUSIVE item; DEL: ENOENT.
  KResult<void> Add(const vfs::FileRef& file, int fd, uint32_t events,
                    uint64_t data) ABSL_LOCKS_EXCLUDED(mu_);
  KResult<void> Modify(const vfs::FileRef& file, int fd, uint32_t events,
                       uint64_t data) ABSL_LOCKS_EXCLUDED(mu_);
  KResult<void> Delete(const vfs::FileRef& file, int fd)
      ABSL_LOCKS_EXCLUDED(mu_);

  // ep_send_events: passes up to `max` ready events at once to `deliver`
  // (with mu_ held: it copies them to the guest), which returns how many
  // of them it delivered (a prefix; fewer on a fault). Only delivered
  // events count (one-shot items disabled, edge-triggered ones leave the
  // ready list); the others stay ready. Returns the number delivered, or
  // EFAULT if events were ready and none could be delivered.
  using Deliver = absl::FunctionRef<size_t(absl::Span<const Event>)>;
  KResult<size_t> Collect(size_t max, Deliver deliver) ABSL_LOCKS_EXCLUDED(mu_);
  // ep_poll: collects, waiting until some event is ready, `deadline`
  // (CLOCK_MONOTONIC ns; -1 never, 0 do not wait) or an interrupt of
  // `interrupt_fd` (EINTR: epoll_wait is never restarted). Events beat an
  // interrupt.
  KResult<size_t> Wait(size_t max, int64_t deadline, int interrupt_fd,
                       Deliver deliver);

  // The epoll file itself: POLLIN|POLLRDNORM when an event is ready.
  uint32_t Readiness(uint32_t mask) override ABSL_LOCKS_EXCLUDED(mu_);
  void EventRegister(vfs::WaitEntry* e, uint32_t mask) override {
    queue_.Register(e, mask);
  }
  bool CanPoll() const override { return true; }
  KResult<int64_t> Seek(int64_t, int) override { return int64_t{0}; }
  KResult<abi::Stat> Stat() override;
  // "tfd: ... events: ... data: ..." per item (ep_show_fdinfo).
  std::string FdInfo() override ABSL_LOCKS_EXCLUDED(mu_);
  std::string_view AnonInodeName() const override { return "[eventpoll]"; }

  size_t ItemCount() ABSL_LOCKS_EXCLUDED(mu_);  // tests

 private:
  using Key = std::pair<const vfs::FileDescription*, int>;
  struct Item final : vfs::WaitEntry {
    // Leaves the file's queue before the callback's vtable goes.
    ~Item() override { Unregister(); }
    void Callback(uint32_t events) override;
    EpollFile* ep = nullptr;
    Key key;
    std::weak_ptr<vfs::FileDescription> file;
    int fd = -1;
    bool host = false;      // HostPollFd() >= 0: re-polled every time
    uint32_t events = 0;    // guarded by ep->ready_mu_ (and set under mu_)
    uint64_t data = 0;      // guarded by ep->ready_mu_
    bool on_ready = false;  // guarded by ep->ready_mu_
  };

  void ItemReady(Item* item, uint32_t events) ABSL_LOCKS_EXCLUDED(ready_mu_);
  // Puts `item` on the ready list (no-op if there) and wakes waiters.
  void QueueReadyLocked(Item* item) ABSL_EXCLUSIVE_LOCKS_REQUIRED(ready_mu_);
  // Drops items whose description is gone.
  void PurgeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveLocked(std::map<Key, std::unique_ptr<Item>>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether some item has an event now (ep_read_events_proc).
  // The files it polled go to `keep` (released by the caller after mu_:
  // a last reference's release must not run under mu_).
  bool HasEventsLocked(std::vector<vfs::FileRef>& keep)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Host fds of host items, for the sleep.
  std::vector<pollfd> HostFds() ABSL_LOCKS_EXCLUDED(mu_);

  // ---- The epoll-in-epoll graph (under NestMutex()). ----
  // Longest chain of epolls below this one, or kMaxNests + 1 when `target`
  // is reachable (ep_loop_check_proc).
  int DepthBelow(const EpollFile* target, int depth);
  // Longest chain of epolls above this one (ep_get_upwards_depth_proc).
  int DepthAbove(int depth);
  std::multiset<EpollFile*> children_;  // epolls this one watches
  std::multiset<EpollFile*> parents_;   // epolls watching this one

  absl::Mutex mu_;
  std::map<Key, std::unique_ptr<Item>> items_ ABSL_GUARDED_BY(mu_);
  size_t host_items_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Mutex ready_mu_;
  std::deque<Item*> ready_ ABSL_GUARDED_BY(ready_mu_);
  // Waiters on this epoll (POLLIN): epoll_wait, poll, outer epolls.
  vfs::WaitQueue queue_;
};

// The guard of every epoll's children_/parents_ (epnested_mutex).
absl::Mutex& NestMutex();

}  // namespace sandbox::fs::epoll

#endif  // SENTRY_FS_EPOLL_EPOLL_H_
