#include "sentry/vfs/fd_table.h"

#include <algorithm>
#include <utility>

#include "sentry/vfs/lock/file_locks.h"

namespace sandbox::vfs {
namespace {

// Closing any descriptor of a file drops the POSIX locks that the closing
// table (the lock owner) holds on it, as Linux's filp_close does. Called
// with mu_ held: FileLocks::mu_ nests inside FdTable::mu_.
void DropPosixLocks(const FdTable* table, const FileRef& f) {
  if (f == nullptr) return;
  if (lock::FileLocks* l = f->locks()) l->ReleasePosix(table);
}

}  // namespace

FdTable::~FdTable() {
  absl::MutexLock l(&mu_);
  for (const Entry& e : entries_) DropPosixLocks(this, e.file);
}

std::shared_ptr<FdTable> FdTable::Fork() const {
  auto copy = std::make_shared<FdTable>();
  absl::MutexLock l(&mu_);
  absl::MutexLock l2(&copy->mu_);
  copy->entries_ = entries_;
  copy->first_free_hint_ = first_free_hint_;
  return copy;
}

KResult<void> FdTable::CheckFree(uint64_t limit) const {
  limit = std::min(limit, kNrOpen);
  absl::MutexLock l(&mu_);
  size_t fd = first_free_hint_;
  while (fd < entries_.size() && entries_[fd].file != nullptr) ++fd;
  if (fd >= limit) return kEMFILE;
  return OkResult();
}

KResult<int> FdTable::Install(FileRef file, int min_fd, bool cloexec,
                              uint64_t limit) {
  if (min_fd < 0) return kEINVAL;
  limit = std::min(limit, kNrOpen);
  if (static_cast<uint64_t>(min_fd) >= limit) return kEINVAL;
  absl::MutexLock l(&mu_);
  size_t fd = std::max(min_fd, first_free_hint_);
  while (fd < entries_.size() && entries_[fd].file != nullptr) ++fd;
  if (fd >= limit) return kEMFILE;
  if (fd >= entries_.size()) entries_.resize(fd + 1);
  entries_[fd] = Entry{std::move(file), cloexec};
  if (min_fd <= first_free_hint_) first_free_hint_ = fd + 1;
  return static_cast<int>(fd);
}

KResult<FileRef> FdTable::InstallAt(int fd, FileRef file, bool cloexec,
                                    uint64_t limit) {
  limit = std::min(limit, kNrOpen);
  if (fd < 0 || static_cast<uint64_t>(fd) >= limit) return kEBADF;
  absl::MutexLock l(&mu_);
  if (static_cast<size_t>(fd) >= entries_.size()) entries_.resize(fd + 1);
  FileRef old = std::move(entries_[fd].file);
  DropPosixLocks(this, old);
  entries_[fd] = Entry{std::move(file), cloexec};
  if (fd == first_free_hint_) first_free_hint_ = fd + 1;
  return old;
}

FileRef FdTable::Get(int fd) const {
  absl::MutexLock l(&mu_);
  if (fd < 0 || static_cast<size_t>(fd) >= entries_.size()) return nullptr;
  return entries_[fd].file;
}

KResult<FileRef> FdTable::Get(int fd, bool* cloexec) const {
  absl::MutexLock l(&mu_);
  if (fd < 0 || static_cast<size_t>(fd) >= entries_.size() ||
      entries_[fd].file == nullptr) {
    return kEBADF;
  }
  if (cloexec != nullptr) *cloexec = entries_[fd].cloexec;
  return entries_[fd].file;
}

KResult<void> FdTable::SetCloexec(int fd, bool cloexec) {
  absl::MutexLock l(&mu_);
  if (fd < 0 || static_cast<size_t>(fd) >= entries_.size() ||
      entries_[fd].file == nullptr) {
    return kEBADF;
  }
  entries_[fd].cloexec = cloexec;
  return OkResult();
}

KResult<FileRef> FdTable::Remove(int fd) {
  absl::MutexLock l(&mu_);
  if (fd < 0 || static_cast<size_t>(fd) >= entries_.size() ||
      entries_[fd].file == nullptr) {
    return kEBADF;
  }
  FileRef old = std::move(entries_[fd].file);
  DropPosixLocks(this, old);
  entries_[fd] = Entry{};
  first_free_hint_ = std::min(first_free_hint_, fd);
  return old;
}

std::vector<FileRef> FdTable::RemoveRange(uint32_t first, uint32_t last) {
  std::vector<FileRef> removed;
  absl::MutexLock l(&mu_);
  size_t end = std::min<size_t>(entries_.size(), size_t{last} + 1);
  for (size_t fd = first; fd < end; ++fd) {
    if (entries_[fd].file != nullptr) {
      DropPosixLocks(this, entries_[fd].file);
      removed.push_back(std::move(entries_[fd].file));
      entries_[fd] = Entry{};
      first_free_hint_ = std::min<int>(first_free_hint_, fd);
    }
  }
  return removed;
}

void FdTable::SetCloexecRange(uint32_t first, uint32_t last) {
  absl::MutexLock l(&mu_);
  size_t end = std::min<size_t>(entries_.size(), size_t{last} + 1);
  for (size_t fd = first; fd < end; ++fd) {
    if (entries_[fd].file != nullptr) entries_[fd].cloexec = true;
  }
}

std::vector<FileRef> FdTable::RemoveCloexec() {
  std::vector<FileRef> removed;
  absl::MutexLock l(&mu_);
  for (size_t fd = 0; fd < entries_.size(); ++fd) {
    if (entries_[fd].file != nullptr && entries_[fd].cloexec) {
      DropPosixLocks(this, entries_[fd].file);
      removed.push_back(std::move(entries_[fd].file));
      entries_[fd] = Entry{};
      first_free_hint_ = std::min<int>(first_free_hint_, fd);
    }
  }
  return removed;
}

std::vector<FileRef> FdTable::RemoveAll() {
  std::vector<FileRef> removed;
  absl::MutexLock l(&mu_);
  for (Entry& e : entries_) {
    DropPosixLocks(this, e.file);
    if (e.file != nullptr) removed.push_back(std::move(e.file));
  }
  entries_.clear();
  first_free_hint_ = 0;
  return removed;
}

size_t FdTable::Count() const {
  absl::MutexLock l(&mu_);
  return std::count_if(entries_.begin(), entries_.end(),
                       [](const Entry& e) { return e.file != nullptr; });
}

}  // namespace sandbox::vfs
