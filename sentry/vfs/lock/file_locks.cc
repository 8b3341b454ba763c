#include "sentry/vfs/lock/file_locks.h"

#include <algorithm>
#include <utility>

namespace sandbox::vfs::lock {
namespace {

// Linux's MAX_DEADLK_ITERATIONS: how far the deadlock detector follows the
// chain of blocked owners.
constexpr int kMaxDeadlockIterations = 10;

// Blocked POSIX (non-OFD) requests of every file, for deadlock detection
// (Linux's blocked_hash): which owner waits for which holder. Several
// threads of one process may wait at once, hence a list.
struct BlockedEntry {
  const void* waiter;
  const void* holder;
  const void* token;  // identifies one sleeping request
};

absl::Mutex blocked_mu(absl::kConstInit);
std::vector<BlockedEntry>& Blocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(blocked_mu) {
  static auto* v = new std::vector<BlockedEntry>();
  return *v;
}

// posix_locks_deadlock: following "holder waits for ..." from `holder`
// reaches `caller`.
bool WouldDeadlock(const void* caller, const void* holder) {
  absl::MutexLock l(&blocked_mu);
  const std::vector<BlockedEntry>& b = Blocked();
  const void* h = holder;
  for (int i = 0; i <= kMaxDeadlockIterations; ++i) {
    auto it = std::find_if(b.begin(), b.end(), [h](const BlockedEntry& e) {
      return e.waiter == h;
    });
    if (it == b.end()) return false;
    h = it->holder;
    if (h == caller) return true;
  }
  return false;
}

void AddBlocked(const void* waiter, const void* holder, const void* token) {
  absl::MutexLock l(&blocked_mu);
  Blocked().push_back({waiter, holder, token});
}

void RemoveBlocked(const void* token) {
  absl::MutexLock l(&blocked_mu);
  std::vector<BlockedEntry>& b = Blocked();
  b.erase(std::remove_if(
              b.begin(), b.end(),
              [token](const BlockedEntry& e) { return e.token == token; }),
          b.end());
}

bool Overlap(int64_t s1, int64_t e1, int64_t s2, int64_t e2) {
  return s1 <= e2 && s2 <= e1;
}

bool TypesConflict(LockType a, LockType b) {
  return a == LockType::kWrite || b == LockType::kWrite;
}

}  // namespace

const RangeLock* FileLocks::ConflictLocked(const Owner& owner, LockType type,
                                           int64_t start, int64_t end) const {
  for (const RangeLock& l : ranges_) {
    if (l.owner.id == owner.id) continue;
    if (!Overlap(l.start, l.end, start, end)) continue;
    if (TypesConflict(l.type, type)) return &l;
  }
  return nullptr;
}

void FileLocks::ApplyLocked(const Owner& owner, LockType type, int64_t start,
                            int64_t end) {
  std::vector<RangeLock> kept;
  kept.reserve(ranges_.size() + 2);
  int64_t new_start = start, new_end = end;
  for (RangeLock& l : ranges_) {
    if (l.owner.id != owner.id) {
      kept.push_back(std::move(l));
      continue;
    }
    bool adjacent = (l.end != kOffsetMax && l.end + 1 == start) ||
                    (end != kOffsetMax && end + 1 == l.start);
    bool overlap = Overlap(l.start, l.end, start, end);
    if (type != LockType::kUnlock && l.type == type && (overlap || adjacent)) {
      // Same type: absorbed into the new lock.
      new_start = std::min(new_start, l.start);
      new_end = std::max(new_end, l.end);
      continue;
    }
    if (!overlap) {
      kept.push_back(std::move(l));
      continue;
    }
    // Another type (or an unlock) over part of it: keep what lies outside.
    if (l.start < start) {
      RangeLock left = l;
      left.end = start - 1;
      kept.push_back(left);
    }
    if (l.end > end) {
      RangeLock right = l;
      right.start = end + 1;
      kept.push_back(right);
    }
  }
  if (type != LockType::kUnlock) {
    kept.push_back(RangeLock{owner, type, new_start, new_end});
  }
  std::stable_sort(
      kept.begin(), kept.end(),
      [](const RangeLock& a, const RangeLock& b) { return a.start < b.start; });
  ranges_ = std::move(kept);
}

KResult<void> FileLocks::SetRange(const Owner& owner, LockType type,
                                  int64_t start, int64_t end, bool wait,
                                  int interrupt_fd) {
  absl::MutexLock l(&mu_);
  bool interrupted = false;
  for (;;) {
    const RangeLock* c = type == LockType::kUnlock
                             ? nullptr
                             : ConflictLocked(owner, type, start, end);
    if (c == nullptr) {
      ApplyLocked(owner, type, start, end);
      // An unlock or a downgrade may let a sleeper through.
      waiters_.NotifyAll();
      return OkResult();
    }
    if (!wait) return kEAGAIN;
    if (interrupted) return kERestartSys;
    const void* holder = c->owner.id;
    if (owner.ofd) {
      interrupted = waiters_.Wait(mu_, interrupt_fd);
      continue;
    }
    if (WouldDeadlock(owner.id, holder)) return kEDEADLK;
    int token;
    AddBlocked(owner.id, holder, &token);
    interrupted = waiters_.Wait(mu_, interrupt_fd);
    RemoveBlocked(&token);
  }
}

std::optional<RangeLock> FileLocks::TestRange(const Owner& owner, LockType type,
                                              int64_t start, int64_t end) {
  absl::MutexLock l(&mu_);
  const RangeLock* c = ConflictLocked(owner, type, start, end);
  if (c == nullptr) return std::nullopt;
  return *c;
}

KResult<void> FileLocks::Flock(const void* desc, LockType type, bool wait,
                               int interrupt_fd) {
  absl::MutexLock l(&mu_);
  for (auto it = flocks_.begin(); it != flocks_.end(); ++it) {
    if (it->desc != desc) continue;
    if (it->type == type) return OkResult();
    // Conversion or unlock: the old lock goes first (not atomic).
    flocks_.erase(it);
    waiters_.NotifyAll();
    break;
  }
  if (type == LockType::kUnlock) return OkResult();
  bool interrupted = false;
  for (;;) {
    bool conflict =
        std::any_of(flocks_.begin(), flocks_.end(), [&](const FlockLock& f) {
          return f.desc != desc && TypesConflict(f.type, type);
        });
    if (!conflict) {
      flocks_.push_back({desc, type});
      return OkResult();
    }
    if (!wait) return kEAGAIN;
    if (interrupted) return kERestartSys;
    interrupted = waiters_.Wait(mu_, interrupt_fd);
  }
}

void FileLocks::ReleasePosix(const void* owner_id) {
  absl::MutexLock l(&mu_);
  auto end = std::remove_if(ranges_.begin(), ranges_.end(),
                            [owner_id](const RangeLock& r) {
                              return r.owner.id == owner_id && !r.owner.ofd;
                            });
  if (end == ranges_.end()) return;
  ranges_.erase(end, ranges_.end());
  waiters_.NotifyAll();
}

void FileLocks::ReleaseDescription(const void* desc) {
  absl::MutexLock l(&mu_);
  size_t before = ranges_.size() + flocks_.size();
  ranges_.erase(std::remove_if(ranges_.begin(), ranges_.end(),
                               [desc](const RangeLock& r) {
                                 return r.owner.id == desc && r.owner.ofd;
                               }),
                ranges_.end());
  flocks_.erase(
      std::remove_if(flocks_.begin(), flocks_.end(),
                     [desc](const FlockLock& f) { return f.desc == desc; }),
      flocks_.end());
  if (ranges_.size() + flocks_.size() != before) waiters_.NotifyAll();
}

bool OwnerIsBlocked(const void* owner_id) {
  absl::MutexLock l(&blocked_mu);
  const std::vector<BlockedEntry>& b = Blocked();
  return std::any_of(b.begin(), b.end(), [owner_id](const BlockedEntry& e) {
    return e.waiter == owner_id;
  });
}

std::vector<RangeLock> FileLocks::RangeLocks() const {
  absl::MutexLock l(&mu_);
  return ranges_;
}

}  // namespace sandbox::vfs::lock
