// Pipe: the buffer shared by the two ends of a pipe(2) pipe or by every
// opener of a FIFO (Linux's pipe_inode_info, fs/pipe.c and fs/splice.c).
//
// Data sits in a ring of at most slots() page-sized buffers (16 by default,
// F_SETPIPE_SZ changes it). As in Linux:
//  - a write first appends its sub-page remainder to the last buffer when
//    that buffer can take it, then fills whole new pages; so a write of at
//    most PIPE_BUF (4096) bytes either goes in whole or waits (EAGAIN with
//    O_NONBLOCK): writes up to PIPE_BUF are atomic. Larger writes may be
//    split between other writers' data and return a partial count when
//    O_NONBLOCK, a signal or the last reader's close stops them;
//  - in packet mode (O_DIRECT writer), each write of up to a page is one
//    buffer that one read returns alone (excess bytes of a short read are
//    discarded), and no later write merges into it;
//  - a read takes what is there (at least one byte) and never waits once it
//    has some; it returns 0 (EOF) when empty without writers;
//  - a write without readers fails with EPIPE (the syscall raises SIGPIPE).
//
// Blocking operations sleep on WaitQueues and end with ERESTARTSYS when the
// caller's interrupt fd fires, unless they already moved data (then the
// partial count).
//
// Locking: mu_ protects everything; splice/tee between two pipes lock both
// in address order (Linux's pipe_double_lock). Splicing to or from a file
// calls the file's read/write with mu_ held when the file never blocks
// (MayBlock() false: tmpfs), which keeps the transfer atomic with respect
// to other readers and writers of the pipe.
// Lock order: Pipe::mu_ (lower address first)
//               file locks of a spliced file (Inode::mu_, ...)
#ifndef SENTRY_FS_PIPE_PIPE_H_
#define SENTRY_FS_PIPE_PIPE_H_

#include <stdint.h>

#include <deque>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "sentry/abi/linux.h"
#include "sentry/base/result.h"
#include "sentry/vfs/lock/file_locks.h"
#include "sentry/vfs/lock/wait_queue.h"
#include "sentry/vfs/waiter.h"

namespace sandbox::fs::pipe {

using abi::kPageSize;
inline constexpr size_t kPipeBuf = 4096;       // PIPE_BUF
inline constexpr uint32_t kDefaultSlots = 16;  // PIPE_DEF_BUFFERS
// /proc/sys/fs/pipe-max-size: the largest F_SETPIPE_SZ without
// CAP_SYS_RESOURCE.
inline constexpr uint64_t kPipeMaxSize = 1 << 20;

class Pipe {
 public:
  Pipe();
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

  // ---- Ends (open/close of a reader or writer). ----
  void AddReader() ABSL_LOCKS_EXCLUDED(mu_);
  void AddWriter() ABSL_LOCKS_EXCLUDED(mu_);
  // The last reader's close wakes writers (EPIPE); the last writer's close
  // wakes readers (EOF).
  void RemoveReader() ABSL_LOCKS_EXCLUDED(mu_);
  void RemoveWriter() ABSL_LOCKS_EXCLUDED(mu_);

  // ---- FIFO open (fifo_open). ----
  // What an opener must wait for after being counted: a writer (O_RDONLY
  // without O_NONBLOCK and no writer), a reader (O_WRONLY and no reader),
  // or nothing.
  struct OpenWait {
    enum Kind { kNone, kWriter, kReader } kind = kNone;
    uint64_t counter = 0;  // the partner counter when the opener came
    // pipe_poll's f_version: the writer counter of an O_RDONLY|O_NONBLOCK
    // FIFO opener that found no writer (POLLHUP is suppressed until a
    // writer has come); 0 otherwise.
    uint64_t poll_version = 0;
  };
  // Counts the opener of a FIFO with open(2) `flags`: ENXIO for
  // O_WRONLY|O_NONBLOCK without readers, EINVAL for access mode 3.
  KResult<OpenWait> OpenFifoEnd(uint32_t flags) ABSL_LOCKS_EXCLUDED(mu_);
  // Sleeps until a partner of the awaited kind has opened since the
  // opener came (even if it has gone again), as wait_for_partner does.
  KResult<void> WaitForPartner(const OpenWait& w, int interrupt_fd)
      ABSL_LOCKS_EXCLUDED(mu_);

  // ---- I/O. ----
  KResult<size_t> Read(int interrupt_fd, absl::Span<uint8_t> dst, bool nonblock)
      ABSL_LOCKS_EXCLUDED(mu_);
  KResult<size_t> Write(int interrupt_fd, absl::Span<const uint8_t> src,
                        bool nonblock, bool packet) ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Readiness (pipe_poll). ----
  // For an end that reads and/or writes: POLLIN|POLLRDNORM with data,
  // POLLHUP (reader) without writers unless no writer came since
  // `poll_version` (OpenWait::poll_version), POLLOUT|POLLWRNORM (writer)
  // with a free buffer, POLLERR (writer) without readers. Masked by `mask`.
  uint32_t Readiness(bool reader, bool writer, uint64_t poll_version,
                     uint32_t mask) const ABSL_LOCKS_EXCLUDED(mu_);
  // Registers on the queue notified whenever that may change.
  void EventRegister(vfs::WaitEntry* e, uint32_t mask) {
    poll_queue_.Register(e, mask);
  }

  // FIONREAD: bytes queued.
  uint64_t Queued() const ABSL_LOCKS_EXCLUDED(mu_);
  // F_GETPIPE_SZ: capacity in bytes (slots * page size).
  uint64_t Capacity() const ABSL_LOCKS_EXCLUDED(mu_);
  // F_SETPIPE_SZ with its unsigned int argument: rounds up to a power of
  // two number of pages (at least one); EINVAL above 2^31, EPERM to grow
  // above kPipeMaxSize without `privileged` (CAP_SYS_RESOURCE), EBUSY if
  // the data held needs more buffers. Returns the new capacity.
  KResult<uint64_t> SetCapacity(uint32_t arg, bool privileged)
      ABSL_LOCKS_EXCLUDED(mu_);

  // ---- splice/tee (fs/splice.c). ----
  // Moves up to `len` bytes from `in` to `out` (distinct pipes): waits for
  // data in `in` (0 at EOF) and for room in `out` unless `nonblock`
  // (EAGAIN); EPIPE without readers on `out`.
  static KResult<size_t> Splice(Pipe& in, Pipe& out, size_t len, bool nonblock,
                                int interrupt_fd);
  // Copies up to `len` bytes from `in` to `out` without consuming them.
  static KResult<size_t> Tee(Pipe& in, Pipe& out, size_t len, bool nonblock,
                             int interrupt_fd);
  // Writes up to `len` queued bytes through `write` and consumes what it
  // took. Waits for data unless `nonblock`; 0 at EOF. `atomic`: call
  // `write` with mu_ held (it must not block); otherwise the bytes are taken
  // out first and what `write` did not take is put back at the front.
  using WriteFn = absl::FunctionRef<KResult<size_t>(absl::Span<const uint8_t>)>;
  KResult<size_t> SpliceToFile(int interrupt_fd, size_t len, bool nonblock,
                               bool atomic, WriteFn write)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Fills up to `len` bytes (at most the free room) through `read` and
  // queues them. Waits for room unless `nonblock`; EPIPE without readers.
  // `atomic` as above; otherwise the bytes read are queued even if other
  // writers filled the pipe meanwhile.
  using ReadFn = absl::FunctionRef<KResult<size_t>(absl::Span<uint8_t>)>;
  KResult<size_t> SpliceFromFile(int interrupt_fd, size_t len, bool nonblock,
                                 bool atomic, ReadFn read)
      ABSL_LOCKS_EXCLUDED(mu_);

  // ---- Attributes of a pipe(2) pipe's inode (pipefs). ----
  // The last read (atime) and write (mtime, ctime).
  abi::Timespec atime() const ABSL_LOCKS_EXCLUDED(mu_);
  abi::Timespec mtime() const ABSL_LOCKS_EXCLUDED(mu_);
  // (Advisory locks are the inode's: the pipefs inode of a pipe(2) pipe,
  // the FIFO's own inode; see pipe_file.h.)

  // For tests.
  uint32_t readers() const ABSL_LOCKS_EXCLUDED(mu_);
  uint32_t writers() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Buffer {
    std::unique_ptr<uint8_t[]> page;  // kPageSize bytes
    uint32_t offset = 0;
    uint32_t len = 0;
    bool packet = false;     // PIPE_BUF_FLAG_PACKET
    bool can_merge = false;  // PIPE_BUF_FLAG_CAN_MERGE
  };

  bool FullLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return bufs_.size() >= slots_;
  }
  // Appends src as new buffers (and merges its remainder into the last
  // buffer first if possible), at most while there are free slots unless
  // `ignore_capacity`. Returns the bytes queued.
  size_t AppendLocked(absl::Span<const uint8_t> src, bool packet,
                      bool ignore_capacity) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Copies up to dst.size() bytes out (a packet ends the copy), consuming
  // them if `consume`. Returns the bytes copied.
  size_t TakeLocked(absl::Span<uint8_t> dst, bool consume)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Puts bytes back in front of the queue (SpliceToFile's unwritten rest).
  void PushFrontLocked(absl::Span<const uint8_t> src)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits for data (ipipe_prep): Ok when there is data or no writer;
  // EAGAIN / ERESTARTSYS.
  KResult<void> WaitReadableLocked(bool nonblock, int interrupt_fd)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits for room (opipe_prep / wait_for_space): EPIPE without readers.
  KResult<void> WaitWritableLocked(bool nonblock, int interrupt_fd)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Wake-ups after data moved in or out.
  void DataInLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DataOutLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::deque<Buffer> bufs_ ABSL_GUARDED_BY(mu_);
  uint32_t slots_ ABSL_GUARDED_BY(mu_) = kDefaultSlots;
  uint32_t readers_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t writers_ ABSL_GUARDED_BY(mu_) = 0;
  // Opens so far of each kind (FIFO opens wait for them to move).
  uint64_t r_counter_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t w_counter_ ABSL_GUARDED_BY(mu_) = 0;
  abi::Timespec atime_ ABSL_GUARDED_BY(mu_);
  abi::Timespec mtime_ ABSL_GUARDED_BY(mu_);
  // Readers waiting for data, writers waiting for room, FIFO openers
  // waiting for a partner.
  vfs::lock::WaitQueue read_waiters_ ABSL_GUARDED_BY(mu_);
  vfs::lock::WaitQueue write_waiters_ ABSL_GUARDED_BY(mu_);
  vfs::lock::WaitQueue open_waiters_ ABSL_GUARDED_BY(mu_);
  // Readiness waiters (poll, epoll): notified under mu_ (lock order
  // Pipe::mu_ -> the queue's own lock), with the events that changed.
  vfs::WaitQueue poll_queue_;
};

}  // namespace sandbox::fs::pipe

#endif  // SENTRY_FS_PIPE_PIPE_H_
