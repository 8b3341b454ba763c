#include "sentry/fs/epoll/epoll.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_format.h"
#include "sentry/fs/anon/anon_inode.h"

namespace sandbox::fs::epoll {

absl::Mutex& NestMutex() {
  static absl::Mutex* mu = new absl::Mutex;
  return *mu;
}

EpollFile::EpollFile(uint32_t flags) : vfs::FileDescription(flags) {}

EpollFile::~EpollFile() {
  {
    absl::MutexLock l(&NestMutex());
    for (EpollFile* p : parents_) p->children_.erase(this);
    for (EpollFile* c : children_) c->parents_.erase(this);
  }
  std::map<Key, std::unique_ptr<Item>> items;
  {
    absl::MutexLock l(&mu_);
    items.swap(items_);
    absl::MutexLock r(&ready_mu_);
    ready_.clear();
  }
  items.clear();  // each unregisters from its file's queue
}

void EpollFile::Item::Callback(uint32_t events) { ep->ItemReady(this, events); }

void EpollFile::ItemReady(Item* item, uint32_t events) {
  {
    absl::MutexLock l(&ready_mu_);
    // ep_poll_callback: a disabled one-shot item, or events it does not
    // want, change nothing.
    if ((item->events & ~kPrivateBits) == 0) return;
    if ((events & item->events) == 0) return;
    if (item->on_ready) return;
    ready_.push_back(item);
    item->on_ready = true;
  }
  queue_.Notify(vfs::kPollIn | vfs::kPollRdNorm);
}

void EpollFile::QueueReadyLocked(Item* item) {
  if (item->on_ready) return;
  ready_.push_back(item);
  item->on_ready = true;
}

void EpollFile::RemoveLocked(
    std::map<Key, std::unique_ptr<Item>>::iterator it) {
  Item* item = it->second.get();
  item->Unregister();
  if (item->host) --host_items_;
  {
    absl::MutexLock r(&ready_mu_);
    auto pos = std::find(ready_.begin(), ready_.end(), item);
    if (pos != ready_.end()) ready_.erase(pos);
  }
  items_.erase(it);
}

void EpollFile::PurgeLocked() {
  for (auto it = items_.begin(); it != items_.end();) {
    auto next = std::next(it);
    if (it->second->file.expired()) RemoveLocked(it);
    it = next;
  }
}

int EpollFile::DepthBelow(const EpollFile* target, int depth) {
  int result = 0;
  for (EpollFile* c : children_) {
    if (c == target || depth > kMaxNests) {
      return kMaxNests + 1;
    }
    result = std::max(result, c->DepthBelow(target, depth + 1) + 1);
    if (result > kMaxNests) return result;
  }
  return result;
}

int EpollFile::DepthAbove(int depth) {
  int result = 0;
  if (depth > kMaxNests) return depth;
  for (EpollFile* p : parents_) {
    result = std::max(result, p->DepthAbove(depth + 1) + 1);
  }
  return result;
}

KResult<void> EpollFile::Add(const vfs::FileRef& file, int fd, uint32_t events,
                             uint64_t data) {
  auto* nested = dynamic_cast<EpollFile*>(file.get());
  std::optional<absl::MutexLock> nest;
  if (nested != nullptr) {
    nest.emplace(&NestMutex());
    // ep_loop_check: no path back to this epoll, and at most
    // EPOLL_MAX_NESTS epolls above the new leaf.
    int below = nested->DepthBelow(this, 0);
    if (below > kMaxNests) return kELOOP;
    if (below + 1 + DepthAbove(0) > kMaxNests) return kELOOP;
  }
  absl::MutexLock l(&mu_);
  PurgeLocked();
  Key key{file.get(), fd};
  if (items_.count(key)) return kEEXIST;
  auto item = std::make_unique<Item>();
  Item* it = item.get();
  it->ep = this;
  it->key = key;
  it->file = file;
  it->fd = fd;
  it->host = file->HostPollFd() >= 0;
  {
    absl::MutexLock r(&ready_mu_);
    it->events = events;
    it->data = data;
  }
  items_.emplace(key, std::move(item));
  if (it->host) ++host_items_;
  file->EventRegister(it, events & ~kPrivateBits);
  if (nested != nullptr) {
    children_.insert(nested);
    nested->parents_.insert(this);
  }
  // ep_insert: already ready goes on the ready list at once.
  if (file->Readiness(events & ~kPrivateBits) != 0) {
    {
      absl::MutexLock r(&ready_mu_);
      QueueReadyLocked(it);
    }
    queue_.Notify(vfs::kPollIn | vfs::kPollRdNorm);
  }
  return OkResult();
}

KResult<void> EpollFile::Modify(const vfs::FileRef& file, int fd,
                                uint32_t events, uint64_t data) {
  absl::MutexLock l(&mu_);
  PurgeLocked();
  auto found = items_.find(Key{file.get(), fd});
  if (found == items_.end()) return kENOENT;
  Item* it = found->second.get();
  {
    absl::MutexLock r(&ready_mu_);
    if (it->events & kEpollExclusive) return kEINVAL;
    it->events = events;
    it->data = data;
  }
  // ep_modify: the new mask counts for wake-ups, and a file ready for it
  // goes on the ready list.
  file->EventRegister(it, events & ~kPrivateBits);
  if (file->Readiness(events & ~kPrivateBits) != 0) {
    {
      absl::MutexLock r(&ready_mu_);
      QueueReadyLocked(it);
    }
    queue_.Notify(vfs::kPollIn | vfs::kPollRdNorm);
  }
  return OkResult();
}

KResult<void> EpollFile::Delete(const vfs::FileRef& file, int fd) {
  auto* nested = dynamic_cast<EpollFile*>(file.get());
  std::optional<absl::MutexLock> nest;
  if (nested != nullptr) nest.emplace(&NestMutex());
  absl::MutexLock l(&mu_);
  PurgeLocked();
  auto found = items_.find(Key{file.get(), fd});
  if (found == items_.end()) return kENOENT;
  RemoveLocked(found);
  if (nested != nullptr) {
    if (auto c = children_.find(nested); c != children_.end()) {
      children_.erase(c);
    }
    if (auto p = nested->parents_.find(this); p != nested->parents_.end()) {
      nested->parents_.erase(p);
    }
  }
  return OkResult();
}

KResult<size_t> EpollFile::Collect(size_t max, Deliver deliver) {
  std::vector<vfs::FileRef> keep;  // released after the locks
  size_t delivered = 0;
  bool ready_left = false;
  std::vector<Event> batch;
  {
    absl::MutexLock l(&mu_);
    std::deque<Item*> tx;
    {
      absl::MutexLock r(&ready_mu_);
      tx.swap(ready_);
      for (Item* i : tx) i->on_ready = false;
    }
    if (host_items_ > 0) {
      for (auto& [key, item] : items_) {
        if (item->host &&
            std::find(tx.begin(), tx.end(), item.get()) == tx.end()) {
          tx.push_back(item.get());
        }
      }
    }
    std::vector<Key> expired;
    std::vector<Item*> picked;
    std::vector<uint32_t> picked_events;
    size_t i = 0;
    for (; i < tx.size() && batch.size() < max; ++i) {
      Item* it = tx[i];
      vfs::FileRef f = it->file.lock();
      if (f == nullptr) {
        expired.push_back(it->key);
        continue;
      }
      keep.push_back(f);
      uint32_t ev;
      uint64_t data;
      {
        absl::MutexLock r(&ready_mu_);
        ev = it->events;
        data = it->data;
      }
      if ((ev & ~kPrivateBits) == 0) continue;  // disabled one-shot
      const uint32_t revents = f->Readiness(ev & ~kPrivateBits) & ev;
      if (revents == 0) continue;  // off the list until the next callback
      batch.push_back(Event{revents, data});
      picked.push_back(it);
      picked_events.push_back(ev);
    }
    if (!batch.empty()) delivered = std::min(deliver(batch), batch.size());
    {
      absl::MutexLock r(&ready_mu_);
      for (size_t k = 0; k < delivered; ++k) {
        Item* it = picked[k];
        if (picked_events[k] & kEpollOneshot) {
          it->events &= kPrivateBits;
        } else if (!(picked_events[k] & kEpollEt)) {
          QueueReadyLocked(it);  // level-triggered: reported again
        }
      }
      // Not looked at, or not delivered: still ready, at the front.
      for (size_t j = tx.size(); j-- > i;) {
        Item* it = tx[j];
        if (!it->on_ready && !it->host) {
          ready_.push_front(it);
          it->on_ready = true;
        }
      }
      for (size_t k = picked.size(); k-- > delivered;) {
        Item* it = picked[k];
        if (!it->on_ready) {
          ready_.push_front(it);
          it->on_ready = true;
        }
      }
      ready_left = !ready_.empty();
    }
    for (const Key& k : expired) {
      auto found = items_.find(k);
      if (found != items_.end()) RemoveLocked(found);
    }
  }
  // ep_done_scan: other waiters see what is still ready.
  if (ready_left) queue_.Notify(vfs::kPollIn | vfs::kPollRdNorm);
  if (!batch.empty() && delivered == 0) return kEFAULT;
  return delivered;
}

KResult<size_t> EpollFile::Wait(size_t max, int64_t deadline, int interrupt_fd,
                                Deliver deliver) {
  vfs::ThreadWaiter w;
  bool registered = false;
  bool timed_out = false;
  for (;;) {
    TRY(size_t n, Collect(max, deliver));
    if (n > 0 || deadline == 0 || timed_out) return n;
    if (!registered) {
      // Register, then collect again: nothing is lost in between.
      queue_.Register(&w, vfs::kPollIn);
      registered = true;
      continue;
    }
    std::vector<pollfd> host = HostFds();
    vfs::WakeReason r = w.Sleep(interrupt_fd, deadline, host);
    if (r == vfs::WakeReason::kInterrupted) {
      TRY(n, Collect(max, deliver));
      if (n > 0) return n;
      return kEINTR;
    }
    if (r == vfs::WakeReason::kTimedOut) timed_out = true;
  }
}

std::vector<pollfd> EpollFile::HostFds() {
  std::vector<pollfd> fds;
  std::vector<vfs::FileRef> keep;
  absl::MutexLock l(&mu_);
  if (host_items_ == 0) return fds;
  for (auto& [key, item] : items_) {
    if (!item->host) continue;
    vfs::FileRef f = item->file.lock();
    if (f == nullptr) continue;
    uint32_t ev;
    {
      absl::MutexLock r(&ready_mu_);
      ev = item->events & ~kPrivateBits;
    }
    if (ev != 0) fds.push_back({f->HostPollFd(), static_cast<short>(ev), 0});
    keep.push_back(std::move(f));
  }
  return fds;
}

bool EpollFile::HasEventsLocked(std::vector<vfs::FileRef>& keep) {
  std::vector<Item*> candidates;
  {
    absl::MutexLock r(&ready_mu_);
    candidates.assign(ready_.begin(), ready_.end());
  }
  if (host_items_ > 0) {
    for (auto& [key, item] : items_) {
      if (item->host) candidates.push_back(item.get());
    }
  }
  for (Item* it : candidates) {
    vfs::FileRef f = it->file.lock();
    if (f == nullptr) continue;
    uint32_t ev;
    {
      absl::MutexLock r(&ready_mu_);
      ev = it->events & ~kPrivateBits;
    }
    bool ready = ev != 0 && f->Readiness(ev) != 0;
    // `f` may be the last reference: it is released after mu_.
    keep.push_back(std::move(f));
    if (ready) return true;
  }
  return false;
}

uint32_t EpollFile::Readiness(uint32_t mask) {
  std::vector<vfs::FileRef> keep;  // released after mu_
  absl::MutexLock l(&mu_);
  if (HasEventsLocked(keep)) return (vfs::kPollIn | vfs::kPollRdNorm) & mask;
  return 0;
}

KResult<abi::Stat> EpollFile::Stat() { return anon::AnonInodeStat(); }

std::string EpollFile::FdInfo() {
  std::vector<vfs::FileRef> keep;
  std::string out;
  absl::MutexLock l(&mu_);
  for (auto& [key, item] : items_) {
    vfs::FileRef f = item->file.lock();
    if (f == nullptr) continue;
    uint32_t ev;
    uint64_t data;
    {
      absl::MutexLock r(&ready_mu_);
      ev = item->events;
      data = item->data;
    }
    KResult<int64_t> pos = f->Seek(0, SEEK_CUR);
    KResult<abi::Stat> st = f->Stat();
    out += absl::StrFormat(
        "tfd: %8d events: %8x data: %16x  pos:%d ino:%x sdev:%x\n", item->fd,
        ev, data, pos.ok() ? *pos : 0, st.ok() ? st->st_ino : 0,
        st.ok() ? st->st_dev : 0);
    keep.push_back(std::move(f));
  }
  return out;
}

size_t EpollFile::ItemCount() {
  absl::MutexLock l(&mu_);
  PurgeLocked();
  return items_.size();
}

}  // namespace sandbox::fs::epoll
