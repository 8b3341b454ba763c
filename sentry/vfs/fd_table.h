// FdTable: a task's file descriptor table (Linux struct files_struct).
//
// Maps small integers to FileDescriptions plus the per-descriptor
// close-on-exec flag. Shared by threads (CLONE_FILES) through
// std::shared_ptr; Fork copies it. New descriptors take the lowest free
// number at or above a minimum, below the caller's RLIMIT_NOFILE.
//
// Descriptions are never released under mu_: operations that drop a
// reference return it, so the caller's destructor (which may block on the
// host) runs after the lock is released.
//
// Lock order: FdTable::mu_ -> lock::FileLocks::mu_ (closing a descriptor
// drops the table's POSIX locks on the file under mu_).
#ifndef SENTRY_VFS_FD_TABLE_H_
#define SENTRY_VFS_FD_TABLE_H_

#include <stdint.h>

#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/vfs/file_description.h"

namespace sandbox::vfs {

using FileRef = std::shared_ptr<FileDescription>;

class FdTable {
 public:
  // The largest number of descriptors any table may hold (fs.nr_open).
  static constexpr uint64_t kNrOpen = 1 << 20;

  FdTable() = default;
  // Drops this table's POSIX locks on the files it still holds.
  ~FdTable();
  FdTable(const FdTable&) = delete;
  FdTable& operator=(const FdTable&) = delete;

  // A copy with the same descriptions (fork without CLONE_FILES).
  std::shared_ptr<FdTable> Fork() const;

  // Installs `file` at the lowest free descriptor >= min_fd that is below
  // `limit` (RLIMIT_NOFILE): EMFILE if none, EINVAL if min_fd >= limit.
  KResult<int> Install(FileRef file, int min_fd, bool cloexec, uint64_t limit);

  // EMFILE unless some descriptor below `limit` is free: what open(2)
  // checks before its walk (Linux reserves the descriptor first), so that a
  // full table neither reports ENOENT nor creates a file. Install still
  // decides (another thread may take the slot meanwhile).
  KResult<void> CheckFree(uint64_t limit) const;

  // dup2/dup3: installs `file` at `fd`, replacing what was there. EBADF if
  // fd is negative or >= limit. Returns the replaced description (or null).
  KResult<FileRef> InstallAt(int fd, FileRef file, bool cloexec,
                             uint64_t limit);

  // The description at `fd`, or null.
  FileRef Get(int fd) const;
  // The description and its close-on-exec flag; EBADF if none.
  KResult<FileRef> Get(int fd, bool* cloexec) const;

  KResult<void> SetCloexec(int fd, bool cloexec);

  // close(2): removes `fd` (EBADF if empty) and returns its description.
  KResult<FileRef> Remove(int fd);

  // close_range(2): removes every descriptor in [first, last]; returns them.
  std::vector<FileRef> RemoveRange(uint32_t first, uint32_t last);
  // close_range(CLOSE_RANGE_CLOEXEC): marks [first, last] close-on-exec.
  void SetCloexecRange(uint32_t first, uint32_t last);

  // On execve: removes every close-on-exec descriptor; returns them.
  std::vector<FileRef> RemoveCloexec();

  // Removes everything (task exit); returns the descriptions.
  std::vector<FileRef> RemoveAll();

  // Number of open descriptors.
  size_t Count() const;

  // Linux's fdtable max_fds (select(2) cuts its nfds to it): the table's
  // capacity, 64 until a descriptor >= 64 was used, then 128 * 2^k
  // (alloc_fdtable's growth), never shrinking.
  int MaxFds() const {
    absl::MutexLock l(&mu_);
    size_t used = entries_.size();  // highest descriptor ever used + 1
    if (used <= 64) return 64;
    size_t units = 1;
    while (units * 128 < used) units <<= 1;
    return static_cast<int>(units * 128);
  }

 private:
  struct Entry {
    FileRef file;
    bool cloexec = false;
  };

  mutable absl::Mutex mu_;
  // Index = descriptor number; trailing empty entries may exist.
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  // No descriptor below this one is free (a search hint).
  int first_free_hint_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_FD_TABLE_H_
