// FileDescription: an open file description (Linux struct file).
//
// One FileDescription may be shared by many FD table entries (dup, fork)
// and many FD tables; it is shared through std::shared_ptr, and the last
// reference closes it. Implementations (host files now; tmpfs, pipes,
// sockets later) override the operations they support; the defaults return
// the errno Linux gives for a file without that operation.
//
// Thread-safety: status flags are atomic; implementations are thread-safe.
#ifndef SENTRY_VFS_FILE_DESCRIPTION_H_
#define SENTRY_VFS_FILE_DESCRIPTION_H_

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "sentry/abi/fcntl.h"
#include "sentry/abi/linux.h"
#include "sentry/base/result.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::vfs::lock {
class FileLocks;
}  // namespace sandbox::vfs::lock

namespace sandbox::kernel {
struct Credentials;
}  // namespace sandbox::kernel

namespace sandbox::platform {
class GuestCopier;
class MemoryFile;
}  // namespace sandbox::platform

namespace sandbox::mm {
class Mappable;
}  // namespace sandbox::mm

namespace sandbox::vfs {

struct VirtualDentry;  // mount.h

// Guest memory as file operations see it (ioctl arguments). Implemented by
// the task over its MemoryManager, and by fakes in tests.
class UserMemory {
 public:
  virtual ~UserMemory() = default;
  // Copy exactly n bytes or fail with EFAULT.
  virtual KResult<void> CopyInFull(uint64_t addr, void* dst, size_t n) = 0;
  virtual KResult<void> CopyOutFull(uint64_t addr, const void* src,
                                    size_t n) = 0;
};

// A guest buffer (one or more segments, as readv's iovecs) that a read
// copies into, or a write copies from, directly in the memory file: a file
// whose data lives there (tmpfs) copies between its pages and the guest's
// pages with no bounce buffer. Implemented over a MemoryManager
// (mm::GuestSegments) and by fakes in tests.
class GuestIo {
 public:
  virtual ~GuestIo() = default;
  // Total bytes of the buffer.
  virtual size_t size() const = 0;
  // The memory file that the offsets given to Walk's fn refer to.
  virtual platform::MemoryFile& memory_file() = 0;
  // Calls fn(memory_file_offset, at, k) for the successive pieces of the
  // first n bytes of the buffer (at = offset in the buffer), each a run of
  // memory-file bytes the guest may access in this direction (a read's
  // buffer is written). fn returns how many of the k bytes it handled;
  // fewer stops the walk. Returns the bytes handled; a piece the guest may
  // not access ends the walk, with EFAULT if nothing was handled before it
  // (a fn that handles 0 bytes at once gives 0). fn runs under the
  // MemoryManager's locks (mm/memory_manager.h: WalkGuest): it may lock an
  // Inode's mu_ and use the MemoryFile, nothing else.
  virtual KResult<size_t> Walk(
      size_t n, absl::FunctionRef<size_t(uint64_t, size_t, size_t)> fn) = 0;
  // A read's destination may hand [at, at + n) of itself to the platform's
  // guest side, which copies it from host file `fd` at `file_offset` while
  // the caller copies the rest (platform/guest_copy.h). Returns the copier
  // with the copy started (the caller then calls Finish and copies what it
  // reports as not copied), or null: the caller copies everything itself.
  // Only for one guest range mapped writable in the guest's address space.
  virtual platform::GuestCopier* StartGuestCopy(int fd, uint64_t file_offset,
                                                size_t at, size_t n) {
    (void)fd, (void)file_offset, (void)at, (void)n;
    return nullptr;
  }
};

// What a file operation may need from the calling task.
struct IoContext {
  // Readable (POLLIN) when the task must stop blocking: a signal, a kill
  // or a stop. -1 if the caller cannot be interrupted (tests).
  int interrupt_fd = -1;
  // Guest memory of the caller, for ioctl arguments. May be null.
  UserMemory* user = nullptr;
  // The caller's credentials (writes clear set-id bits unless the caller
  // has CAP_FSETID). Null: a caller with every capability (tests).
  const kernel::Credentials* creds = nullptr;
  // preadv2/pwritev2 RWF_* flags of this call (RWF_APPEND, RWF_NOAPPEND
  // change where a write goes); 0 for the other calls.
  uint32_t rw_flags = 0;
};

class FileDescription {
 public:
  // `flags` are the open(2) flags: the access mode and status flags.
  explicit FileDescription(uint32_t flags) : flags_(flags & kKeptFlags) {}
  virtual ~FileDescription() = default;
  FileDescription(const FileDescription&) = delete;
  FileDescription& operator=(const FileDescription&) = delete;

  // The access mode and status flags (fcntl F_GETFL).
  uint32_t status_flags() const {
    return flags_.load(std::memory_order_relaxed);
  }
  // Replaces the flags fcntl(F_SETFL) may change (O_APPEND, O_ASYNC,
  // O_DIRECT, O_NOATIME, O_NONBLOCK); the others are kept.
  void SetStatusFlags(uint32_t flags);
  bool readable() const;
  bool writable() const;
  bool nonblocking() const { return status_flags() & O_NONBLOCK; }
  // Whether a write through `ctx` goes to the end of the file: pwritev2's
  // RWF_APPEND forces it, RWF_NOAPPEND cancels O_APPEND, else O_APPEND.
  bool Appends(const IoContext& ctx) const {
    constexpr uint32_t kRwfAppend = 0x10, kRwfNoappend = 0x20;
    if (ctx.rw_flags & kRwfAppend) return true;
    if (ctx.rw_flags & kRwfNoappend) return false;
    return status_flags() & O_APPEND;
  }

  // read(2)/write(2) at the description's offset. Blocking implementations
  // wait interruptibly on ctx.interrupt_fd and return ERESTARTSYS when it
  // fires; with O_NONBLOCK they return EAGAIN instead of waiting.
  virtual KResult<size_t> Read(IoContext& ctx, absl::Span<uint8_t> dst);
  virtual KResult<size_t> Write(IoContext& ctx, absl::Span<const uint8_t> src);
  // pread64(2)/pwrite64(2): ESPIPE unless the file is seekable.
  virtual KResult<size_t> PRead(IoContext& ctx, absl::Span<uint8_t> dst,
                                int64_t offset);
  virtual KResult<size_t> PWrite(IoContext& ctx, absl::Span<const uint8_t> src,
                                 int64_t offset);
  // Direct I/O: whether ReadDirect/WriteDirect work with guest memory in
  // `mf` (the file's data lives in that memory file). The syscall layer
  // then uses them instead of Read/Write with a bounce buffer.
  virtual bool CanDirectIo(const platform::MemoryFile& mf) const {
    return false;
  }
  // read/pread (offset < 0: at the description's offset, which advances)
  // straight into `dst`, with Read's and PRead's errors; short only at the
  // end of file or where `dst` stops being accessible (EFAULT if nothing
  // was read, unless the file had nothing to read: 0). Only called if
  // CanDirectIo; the defaults are EINVAL.
  virtual KResult<size_t> ReadDirect(IoContext& ctx, GuestIo& dst,
                                     int64_t offset);
  // write/pwrite (offset < 0: at the description's offset) straight from
  // `src`, with Write's and PWrite's errors.
  virtual KResult<size_t> WriteDirect(IoContext& ctx, GuestIo& src,
                                      int64_t offset);
  // lseek(2).
  virtual KResult<int64_t> Seek(int64_t offset, int whence);
  virtual KResult<abi::Stat> Stat();
  // ioctl(2) after the generic commands (FIOCLEX, FIONCLEX) are handled.
  virtual KResult<uint64_t> Ioctl(IoContext& ctx, uint32_t cmd, uint64_t arg);
  // fsync(2)/fdatasync(2): EINVAL for a file without an fsync operation
  // (pipes, sockets, terminals), as Linux gives.
  virtual KResult<void> Sync(bool data_only);
  // Whether read/write may block (pipes, terminals, sockets).
  virtual bool MayBlock() const { return false; }
  // The advisory locks (fcntl, flock) of the file's inode, or null if the
  // file has none (ENOLCK). The FD table drops POSIX locks through it.
  virtual lock::FileLocks* locks() { return nullptr; }
  // What mmap(2) maps for this file (its page cache), or null if the file
  // cannot be mapped (ENODEV).
  virtual std::shared_ptr<mm::Mappable> GetMappable() { return nullptr; }
  // fcntl F_GET_SEALS / F_ADD_SEALS (memfd sealing), after the syscall's
  // checks (F_ADD_SEALS: writable description, known bits). EINVAL for a
  // file that cannot be sealed (Linux: neither shmem nor hugetlbfs).
  virtual KResult<uint32_t> GetSeals() { return kEINVAL; }
  virtual KResult<void> AddSeals(uint32_t seals) {
    (void)seals;
    return kEINVAL;
  }
  // Called by open(2) after the description is made and before it is
  // installed: a FIFO waits here, interruptibly, for its peer (fifo_open).
  virtual KResult<void> WaitOpen(IoContext& ctx) { return OkResult(); }

  // ---- Readiness (poll, select, epoll; sentry/vfs/waiter.h). ----
  // f_op->poll: the events of `mask` ready now (callers add POLLERR and
  // POLLHUP to the mask when they want them). The default is a file
  // without ->poll, always readable and writable (DEFAULT_POLLMASK):
  // regular files and directories of every file system, /dev/null...
  virtual uint32_t Readiness(uint32_t mask) { return kDefaultPollMask & mask; }
  // poll_wait: registers `e` on the queue that notifies changes of this
  // file's readiness, for the events of `mask`. The default registers
  // nowhere (the readiness never changes).
  virtual void EventRegister(WaitEntry* e, uint32_t mask) {
    (void)e;
    (void)mask;
  }
  virtual void EventUnregister(WaitEntry* e) { e->Unregister(); }
  // file_can_poll: whether the file has f_op->poll. epoll_ctl refuses the
  // others with EPERM (poll and select use the default mask).
  virtual bool CanPoll() const { return false; }
  // A host fd whose host readiness is this file's (the sandbox's stdio):
  // no Notify comes for it, so waits poll it on the host. -1 otherwise.
  virtual int HostPollFd() const { return -1; }
  // show_fdinfo: lines /proc/PID/fdinfo/N shows after pos, flags, mnt_id
  // and ino ("eventfd-count: ...\n"). Empty by default.
  virtual std::string FdInfo() { return {}; }
  // An anonymous inode's name ("[eventfd]", "[eventpoll]"): readlink of
  // /proc/PID/fd/N shows "anon_inode:" and it. Empty for other files.
  virtual std::string_view AnonInodeName() const { return {}; }
  // The file's place in a mount (Linux's f_path): a file opened by path
  // has its dentry; a pipe(2) end or a socket has its anonymous inode on
  // the internal pipefs or sockfs mount. /proc/PID/fd/N's magic link
  // jumps there (stat through it reaches the inode). Null for a file with
  // no location (the sandbox's host stdio, anonymous-inode files).
  virtual const VirtualDentry* location() const { return nullptr; }

  // ---- O_ASYNC (Linux's f_owner and fasync list). ----
  // fcntl F_SETOWN/F_SETOWN_EX/F_SETSIG: who gets the SIGIO (or the
  // F_SETSIG signal) when the description becomes ready while O_ASYNC is
  // set. type is F_OWNER_TID (0), F_OWNER_PID (1) or F_OWNER_PGRP (2); id 0
  // is nobody.
  struct AsyncOwner {
    int type = 1;
    int32_t id = 0;
    int sig = 0;  // 0: SIGIO without details
  };
  AsyncOwner async_owner() const ABSL_LOCKS_EXCLUDED(async_mu_) {
    absl::MutexLock l(&async_mu_);
    return owner_;
  }
  void set_async_owner(const AsyncOwner& o) ABSL_LOCKS_EXCLUDED(async_mu_) {
    absl::MutexLock l(&async_mu_);
    owner_ = o;
  }
  // The registration on this file's wait queue that sends the signal
  // (made by fcntl when O_ASYNC is turned on, dropped when it is turned
  // off or the description goes). Replaces any earlier one (unregistered
  // first); null removes it.
  void SetAsyncEntry(std::unique_ptr<WaitEntry> e)
      ABSL_LOCKS_EXCLUDED(async_mu_);
  bool HasAsyncEntry() const ABSL_LOCKS_EXCLUDED(async_mu_) {
    absl::MutexLock l(&async_mu_);
    return async_entry_ != nullptr;
  }

 private:
  // abi::kOLargefile: open(2) sets it on 64-bit, and F_GETFL reports it.
  static constexpr uint32_t kKeptFlags =
      O_ACCMODE | O_APPEND | O_ASYNC | O_DIRECT | O_NOATIME | O_NONBLOCK |
      O_DSYNC | O_SYNC | O_PATH | abi::kOLargefile;
  std::atomic<uint32_t> flags_;
  // Lock order: async_mu_ is a leaf (the entry is unregistered outside it).
  mutable absl::Mutex async_mu_;
  AsyncOwner owner_ ABSL_GUARDED_BY(async_mu_);
  std::unique_ptr<WaitEntry> async_entry_ ABSL_GUARDED_BY(async_mu_);
};

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_FILE_DESCRIPTION_H_
