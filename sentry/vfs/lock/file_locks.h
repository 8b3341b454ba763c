// FileLocks: the advisory locks of one file (Linux's file_lock_context):
// POSIX record locks (fcntl F_SETLK/F_SETLKW), open-file-description locks
// (F_OFD_SETLK/F_OFD_SETLKW) and flock(2) locks.
//
// Owners are opaque identities compared by address, as Linux compares
// fl_owner:
//  - POSIX locks belong to the FD table of the locking process (Linux's
//    files_struct), and are dropped when that table closes ANY descriptor
//    of the file (ReleasePosix) or goes away;
//  - OFD and flock locks belong to the open file description and are
//    dropped when it is closed for the last time (ReleaseDescription).
// POSIX and OFD locks share one byte-range space and conflict with each
// other (when their owners differ); flock locks are a separate whole-file
// space. A lock never conflicts with one of its own owner: a POSIX/OFD
// request replaces the owner's locks in its range (splitting and merging
// ranges), a flock request converts the description's lock (not
// atomically: the old lock is dropped before waiting, as Linux does).
//
// Blocking requests sleep on a WaitQueue that every unlock notifies, and
// stop when the caller's interrupt fd fires (ERESTARTSYS). F_SETLKW
// requests of POSIX owners detect deadlock cycles among POSIX owners across
// all files (EDEADLK), as Linux's posix_locks_deadlock does.
//
// Lock order: FileLocks::mu_ -> the global blocked-owners mutex (leaf).
#ifndef SENTRY_VFS_LOCK_FILE_LOCKS_H_
#define SENTRY_VFS_LOCK_FILE_LOCKS_H_

#include <stdint.h>

#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/vfs/lock/wait_queue.h"

namespace sandbox::vfs::lock {

// OFFSET_MAX: the end of a lock that runs to the end of the file.
inline constexpr int64_t kOffsetMax = INT64_MAX;

enum class LockType { kRead, kWrite, kUnlock };

// Who asks for or holds a POSIX/OFD lock.
struct Owner {
  const void* id = nullptr;  // FD table (POSIX) or description (OFD)
  int32_t pid = 0;           // TGID of the locker, reported by F_GETLK
  bool ofd = false;          // F_GETLK reports l_pid -1 for OFD locks
};

// One byte-range lock: bytes [start, end], end inclusive (kOffsetMax: to
// the end of the file, however it grows).
struct RangeLock {
  Owner owner;
  LockType type = LockType::kRead;
  int64_t start = 0;
  int64_t end = kOffsetMax;
};

class FileLocks {
 public:
  FileLocks() = default;
  FileLocks(const FileLocks&) = delete;
  FileLocks& operator=(const FileLocks&) = delete;

  // F_SETLK/F_SETLKW/F_OFD_SETLK/F_OFD_SETLKW with a decoded range
  // (0 <= start <= end). kUnlock removes the owner's locks in the range.
  // A conflict gives EAGAIN unless `wait`; then the caller sleeps until the
  // conflict goes (ERESTARTSYS when `interrupt_fd` fires, EDEADLK when a
  // POSIX owner would wait on itself through a chain of waiters).
  KResult<void> SetRange(const Owner& owner, LockType type, int64_t start,
                         int64_t end, bool wait, int interrupt_fd)
      ABSL_LOCKS_EXCLUDED(mu_);

  // F_GETLK/F_OFD_GETLK: the first lock of another owner that conflicts
  // with a `type` lock on [start, end], or nullopt.
  std::optional<RangeLock> TestRange(const Owner& owner, LockType type,
                                     int64_t start, int64_t end)
      ABSL_LOCKS_EXCLUDED(mu_);

  // flock(2) for description `desc`: kRead (LOCK_SH), kWrite (LOCK_EX) or
  // kUnlock (LOCK_UN). EAGAIN on conflict unless `wait`, ERESTARTSYS on
  // interrupt.
  KResult<void> Flock(const void* desc, LockType type, bool wait,
                      int interrupt_fd) ABSL_LOCKS_EXCLUDED(mu_);

  // Drops every POSIX (non-OFD) lock of the FD table `owner_id`.
  void ReleasePosix(const void* owner_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Drops the OFD and flock locks of description `desc` (its last close).
  void ReleaseDescription(const void* desc) ABSL_LOCKS_EXCLUDED(mu_);

  // For tests and /proc/locks: the byte-range locks, sorted by start.
  std::vector<RangeLock> RangeLocks() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct FlockLock {
    const void* desc;
    LockType type;
  };

  // The first conflicting range lock, or null.
  const RangeLock* ConflictLocked(const Owner& owner, LockType type,
                                  int64_t start, int64_t end) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Replaces the owner's locks in [start, end] by `type` (kUnlock: none),
  // merging with the owner's adjacent locks of the same type.
  void ApplyLocked(const Owner& owner, LockType type, int64_t start,
                   int64_t end) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  // Sorted by start; ranges of one owner never overlap.
  std::vector<RangeLock> ranges_ ABSL_GUARDED_BY(mu_);
  std::vector<FlockLock> flocks_ ABSL_GUARDED_BY(mu_);
  // Blocked requests of both kinds; notified on every unlock/downgrade.
  WaitQueue waiters_ ABSL_GUARDED_BY(mu_);
};

// Whether the POSIX owner `owner_id` sleeps in a blocking SetRange (tests).
bool OwnerIsBlocked(const void* owner_id);

}  // namespace sandbox::vfs::lock

#endif  // SENTRY_VFS_LOCK_FILE_LOCKS_H_
