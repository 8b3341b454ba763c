#include "sentry/fs/pipe/pipe.h"

#include <fcntl.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace sandbox::fs::pipe {
namespace {

abi::Timespec Now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return {ts.tv_sec, ts.tv_nsec};
}

// The most one splice to or from a file moves through the Sentry's bounce
// buffer (a short count beyond, as splice allows).
constexpr uint64_t kMaxSpliceChunk = 1 << 20;

// round_pipe_size: 0 when too large.
uint64_t RoundPipeSize(uint64_t size) {
  if (size > (uint64_t{1} << 31)) return 0;
  if (size < kPageSize) return kPageSize;
  uint64_t p = 1;
  while (p < size) p <<= 1;
  return p;
}

}  // namespace

Pipe::Pipe() {
  abi::Timespec now = Now();
  absl::MutexLock l(&mu_);
  atime_ = mtime_ = now;
}

void Pipe::AddReader() {
  absl::MutexLock l(&mu_);
  ++readers_;
  ++r_counter_;
  open_waiters_.NotifyAll();
  poll_queue_.Notify(vfs::kAllEvents);
}

void Pipe::AddWriter() {
  absl::MutexLock l(&mu_);
  ++writers_;
  ++w_counter_;
  open_waiters_.NotifyAll();
  poll_queue_.Notify(vfs::kAllEvents);
}

void Pipe::RemoveReader() {
  absl::MutexLock l(&mu_);
  if (--readers_ == 0) {
    write_waiters_.NotifyAll();
    poll_queue_.Notify(vfs::kPollErr | vfs::kPollOut | vfs::kPollWrNorm);
  }
}

void Pipe::RemoveWriter() {
  absl::MutexLock l(&mu_);
  if (--writers_ == 0) {
    read_waiters_.NotifyAll();
    poll_queue_.Notify(vfs::kPollHup | vfs::kPollIn | vfs::kPollRdNorm);
  }
}

KResult<Pipe::OpenWait> Pipe::OpenFifoEnd(uint32_t flags) {
  absl::MutexLock l(&mu_);
  OpenWait w;
  switch (flags & O_ACCMODE) {
    case O_RDONLY:
      ++readers_;
      ++r_counter_;
      open_waiters_.NotifyAll();
      poll_queue_.Notify(vfs::kAllEvents);
      // POSIX: O_NONBLOCK opens for reading even with no writer around;
      // such a reader sees no POLLHUP until a writer came (f_version).
      if (writers_ == 0 && !(flags & O_NONBLOCK)) {
        w.kind = OpenWait::kWriter;
        w.counter = w_counter_;
      } else if (writers_ == 0) {
        w.poll_version = w_counter_;
      }
      return w;
    case O_WRONLY:
      if ((flags & O_NONBLOCK) && readers_ == 0) return kENXIO;
      ++writers_;
      ++w_counter_;
      open_waiters_.NotifyAll();
      poll_queue_.Notify(vfs::kAllEvents);
      if (readers_ == 0) {
        w.kind = OpenWait::kReader;
        w.counter = r_counter_;
      }
      return w;
    case O_RDWR:
      // Never blocks: the opener can talk to itself.
      ++readers_;
      ++writers_;
      ++r_counter_;
      ++w_counter_;
      open_waiters_.NotifyAll();
      poll_queue_.Notify(vfs::kAllEvents);
      return w;
    default:
      return kEINVAL;
  }
}

KResult<void> Pipe::WaitForPartner(const OpenWait& w, int interrupt_fd) {
  if (w.kind == OpenWait::kNone) return OkResult();
  absl::MutexLock l(&mu_);
  const uint64_t& counter =
      w.kind == OpenWait::kWriter ? w_counter_ : r_counter_;
  bool interrupted = false;
  while (counter == w.counter) {
    if (interrupted) return kERestartSys;
    interrupted = open_waiters_.Wait(mu_, interrupt_fd);
  }
  return OkResult();
}

void Pipe::DataInLocked() {
  mtime_ = Now();
  read_waiters_.NotifyAll();
  poll_queue_.Notify(vfs::kPollIn | vfs::kPollRdNorm);
}

void Pipe::DataOutLocked() {
  atime_ = Now();
  write_waiters_.NotifyAll();
  poll_queue_.Notify(vfs::kPollOut | vfs::kPollWrNorm);
}

uint32_t Pipe::Readiness(bool reader, bool writer, uint64_t poll_version,
                         uint32_t mask) const {
  absl::MutexLock l(&mu_);
  uint32_t r = 0;
  if (reader) {
    if (!bufs_.empty()) r |= vfs::kPollIn | vfs::kPollRdNorm;
    if (writers_ == 0 && poll_version != w_counter_) r |= vfs::kPollHup;
  }
  if (writer) {
    if (!FullLocked()) r |= vfs::kPollOut | vfs::kPollWrNorm;
    // Linux reports POLLERR for FIFOs too (unlike most Unices).
    if (readers_ == 0) r |= vfs::kPollErr;
  }
  return r & mask;
}

size_t Pipe::AppendLocked(absl::Span<const uint8_t> src, bool packet,
                          bool ignore_capacity) {
  size_t done = 0;
  size_t chars = src.size() & (kPageSize - 1);
  if (chars != 0 && !bufs_.empty()) {
    Buffer& b = bufs_.back();
    if (b.can_merge && b.offset + b.len + chars <= kPageSize) {
      memcpy(b.page.get() + b.offset + b.len, src.data(), chars);
      b.len += chars;
      done = chars;
    }
  }
  while (done < src.size() && (ignore_capacity || !FullLocked())) {
    size_t n = std::min(kPageSize, src.size() - done);
    Buffer b;
    b.page.reset(new uint8_t[kPageSize]);
    memcpy(b.page.get(), src.data() + done, n);
    b.len = n;
    b.packet = packet;
    b.can_merge = !packet;
    bufs_.push_back(std::move(b));
    done += n;
  }
  return done;
}

size_t Pipe::TakeLocked(absl::Span<uint8_t> dst, bool consume) {
  size_t done = 0;
  for (size_t i = 0; i < bufs_.size() && done < dst.size();) {
    Buffer& b = bufs_[i];
    size_t n = std::min<size_t>(b.len, dst.size() - done);
    memcpy(dst.data() + done, b.page.get() + b.offset, n);
    done += n;
    bool packet = b.packet;
    if (consume) {
      b.offset += n;
      b.len -= n;
      if (packet) b.len = 0;  // The rest of a packet is discarded.
      if (b.len == 0) {
        bufs_.pop_front();
      } else {
        ++i;
      }
    } else {
      ++i;
    }
    if (packet) break;
  }
  return done;
}

void Pipe::PushFrontLocked(absl::Span<const uint8_t> src) {
  size_t end = src.size();
  while (end > 0) {
    size_t n = std::min(kPageSize, end);
    Buffer b;
    b.page.reset(new uint8_t[kPageSize]);
    memcpy(b.page.get(), src.data() + end - n, n);
    b.len = n;
    bufs_.push_front(std::move(b));
    end -= n;
  }
}

KResult<size_t> Pipe::Read(int interrupt_fd, absl::Span<uint8_t> dst,
                           bool nonblock) {
  if (dst.empty()) return size_t{0};
  absl::MutexLock l(&mu_);
  bool interrupted = false;
  for (;;) {
    if (!bufs_.empty()) {
      size_t n = TakeLocked(dst, /*consume=*/true);
      DataOutLocked();
      return n;
    }
    if (writers_ == 0) return size_t{0};  // EOF
    if (nonblock) return kEAGAIN;
    if (interrupted) return kERestartSys;
    interrupted = read_waiters_.Wait(mu_, interrupt_fd);
  }
}

KResult<size_t> Pipe::Write(int interrupt_fd, absl::Span<const uint8_t> src,
                            bool nonblock, bool packet) {
  // A null write succeeds, even without readers.
  if (src.empty()) return size_t{0};
  absl::MutexLock l(&mu_);
  if (readers_ == 0) return kEPIPE;
  size_t done = 0;
  bool interrupted = false;
  for (;;) {
    if (readers_ == 0) {
      if (done == 0) return kEPIPE;
      break;
    }
    // A write of at most PIPE_BUF needs one free buffer (or room in the
    // last one) and goes in whole, so it is atomic.
    size_t n = AppendLocked(src.subspan(done), packet, false);
    if (n > 0) {
      done += n;
      DataInLocked();
    }
    if (done == src.size()) break;
    if (nonblock) {
      if (done == 0) return kEAGAIN;
      break;
    }
    if (interrupted) {
      if (done == 0) return kERestartSys;
      break;
    }
    interrupted = write_waiters_.Wait(mu_, interrupt_fd);
  }
  return done;
}

uint64_t Pipe::Queued() const {
  absl::MutexLock l(&mu_);
  uint64_t n = 0;
  for (const Buffer& b : bufs_) n += b.len;
  return n;
}

uint64_t Pipe::Capacity() const {
  absl::MutexLock l(&mu_);
  return uint64_t{slots_} * kPageSize;
}

KResult<uint64_t> Pipe::SetCapacity(uint32_t arg, bool privileged) {
  uint64_t size = RoundPipeSize(arg);
  uint64_t slots = size / kPageSize;
  if (slots == 0) return kEINVAL;
  absl::MutexLock l(&mu_);
  if (slots > slots_ && size > kPipeMaxSize && !privileged) return kEPERM;
  if (slots < bufs_.size()) return kEBUSY;
  slots_ = static_cast<uint32_t>(slots);
  write_waiters_.NotifyAll();
  poll_queue_.Notify(vfs::kPollOut | vfs::kPollWrNorm);
  return slots * kPageSize;
}

KResult<void> Pipe::WaitReadableLocked(bool nonblock, int interrupt_fd) {
  bool interrupted = false;
  while (bufs_.empty()) {
    if (writers_ == 0) return OkResult();
    if (nonblock) return kEAGAIN;
    if (interrupted) return kERestartSys;
    interrupted = read_waiters_.Wait(mu_, interrupt_fd);
  }
  return OkResult();
}

KResult<void> Pipe::WaitWritableLocked(bool nonblock, int interrupt_fd) {
  bool interrupted = false;
  for (;;) {
    if (readers_ == 0) return kEPIPE;
    if (!FullLocked()) return OkResult();
    if (nonblock) return kEAGAIN;
    if (interrupted) return kERestartSys;
    interrupted = write_waiters_.Wait(mu_, interrupt_fd);
  }
}

namespace {

// pipe_double_lock: both pipes' mutexes, lower address first.
class DoubleLock {
 public:
  DoubleLock(absl::Mutex& a, absl::Mutex& b) ABSL_NO_THREAD_SAFETY_ANALYSIS
      : first_(&a < &b ? a : b),
        second_(&a < &b ? b : a) {
    first_.Lock();
    second_.Lock();
  }
  ~DoubleLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    second_.Unlock();
    first_.Unlock();
  }

 private:
  absl::Mutex& first_;
  absl::Mutex& second_;
};

}  // namespace

KResult<size_t> Pipe::Splice(Pipe& in, Pipe& out, size_t len, bool nonblock,
                             int interrupt_fd) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  for (;;) {
    {
      absl::MutexLock l(&in.mu_);
      TRY_VOID(in.WaitReadableLocked(nonblock, interrupt_fd));
    }
    {
      absl::MutexLock l(&out.mu_);
      TRY_VOID(out.WaitWritableLocked(nonblock, interrupt_fd));
    }
    DoubleLock l(in.mu_, out.mu_);
    size_t done = 0;
    while (len > 0) {
      if (out.readers_ == 0) {
        if (done == 0) return kEPIPE;
        break;
      }
      if (in.bufs_.empty() && in.writers_ == 0) break;
      if (in.bufs_.empty() || out.FullLocked()) break;
      Buffer& ib = in.bufs_.front();
      if (len >= ib.len) {
        // The whole buffer moves; nothing may merge into it any more.
        Buffer ob = std::move(ib);
        in.bufs_.pop_front();
        ob.can_merge = false;
        len -= ob.len;
        done += ob.len;
        out.bufs_.push_back(std::move(ob));
      } else {
        Buffer ob;
        ob.page.reset(new uint8_t[kPageSize]);
        memcpy(ob.page.get(), ib.page.get() + ib.offset, len);
        ob.len = len;
        ob.packet = ib.packet;
        ib.offset += len;
        ib.len -= len;
        done += len;
        len = 0;
        out.bufs_.push_back(std::move(ob));
      }
    }
    if (done > 0) {
      in.DataOutLocked();
      out.DataInLocked();
      return done;
    }
    if (in.bufs_.empty() && in.writers_ == 0) return size_t{0};
    if (nonblock) return kEAGAIN;
    // Raced with another reader or writer: wait again.
  }
}

KResult<size_t> Pipe::Tee(Pipe& in, Pipe& out, size_t len, bool nonblock,
                          int interrupt_fd) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  {
    absl::MutexLock l(&in.mu_);
    TRY_VOID(in.WaitReadableLocked(nonblock, interrupt_fd));
  }
  {
    absl::MutexLock l(&out.mu_);
    TRY_VOID(out.WaitWritableLocked(nonblock, interrupt_fd));
  }
  DoubleLock l(in.mu_, out.mu_);
  size_t done = 0;
  for (size_t i = 0; len > 0; ++i) {
    if (out.readers_ == 0) {
      if (done == 0) return kEPIPE;
      break;
    }
    if (i >= in.bufs_.size() || out.FullLocked()) break;
    const Buffer& ib = in.bufs_[i];
    Buffer ob;
    ob.page.reset(new uint8_t[kPageSize]);
    size_t n = std::min<size_t>(ib.len, len);
    memcpy(ob.page.get(), ib.page.get() + ib.offset, n);
    ob.len = n;
    ob.packet = ib.packet;
    out.bufs_.push_back(std::move(ob));
    len -= n;
    done += n;
  }
  if (done > 0) out.DataInLocked();
  return done;
}

KResult<size_t> Pipe::SpliceToFile(int interrupt_fd, size_t len, bool nonblock,
                                   bool atomic, WriteFn write) {
  absl::MutexLock l(&mu_);
  TRY_VOID(WaitReadableLocked(nonblock, interrupt_fd));
  if (bufs_.empty()) return size_t{0};  // EOF
  std::vector<uint8_t> tmp(
      std::min<uint64_t>({len, uint64_t{slots_} * kPageSize, kMaxSpliceChunk}));
  if (atomic) {
    size_t n = TakeLocked(absl::MakeSpan(tmp), /*consume=*/false);
    TRY(size_t written, write(absl::MakeConstSpan(tmp.data(), n)));
    std::vector<uint8_t> discard(written);
    TakeLocked(absl::MakeSpan(discard), /*consume=*/true);
    if (written > 0) DataOutLocked();
    return written;
  }
  size_t n = TakeLocked(absl::MakeSpan(tmp), /*consume=*/true);
  mu_.Unlock();
  KResult<size_t> r = write(absl::MakeConstSpan(tmp.data(), n));
  mu_.Lock();
  size_t written = r.ok() ? std::min(r.value(), n) : 0;
  if (written < n) {
    PushFrontLocked(absl::MakeConstSpan(tmp.data() + written, n - written));
  }
  if (written > 0) DataOutLocked();
  return r;
}

KResult<size_t> Pipe::SpliceFromFile(int interrupt_fd, size_t len,
                                     bool nonblock, bool atomic, ReadFn read) {
  absl::MutexLock l(&mu_);
  TRY_VOID(WaitWritableLocked(nonblock, interrupt_fd));
  uint64_t room =
      uint64_t{slots_ - static_cast<uint32_t>(bufs_.size())} * kPageSize;
  std::vector<uint8_t> tmp(std::min<uint64_t>({len, room, kMaxSpliceChunk}));
  KResult<size_t> r = size_t{0};
  if (atomic) {
    r = read(absl::MakeSpan(tmp));
  } else {
    mu_.Unlock();
    r = read(absl::MakeSpan(tmp));
    mu_.Lock();
  }
  if (!r.ok() || r.value() == 0) return r;
  size_t n = std::min(r.value(), tmp.size());
  // Whole pages each: buffers do not merge with earlier writes, as the
  // page-cache pages Linux splices would not. Queued even if others filled
  // the pipe meanwhile (only possible when not atomic).
  if (readers_ == 0) return kEPIPE;
  for (size_t done = 0; done < n;) {
    size_t c = std::min(kPageSize, n - done);
    Buffer b;
    b.page.reset(new uint8_t[kPageSize]);
    memcpy(b.page.get(), tmp.data() + done, c);
    b.len = c;
    bufs_.push_back(std::move(b));
    done += c;
  }
  DataInLocked();
  return n;
}

abi::Timespec Pipe::atime() const {
  absl::MutexLock l(&mu_);
  return atime_;
}

abi::Timespec Pipe::mtime() const {
  absl::MutexLock l(&mu_);
  return mtime_;
}

uint32_t Pipe::readers() const {
  absl::MutexLock l(&mu_);
  return readers_;
}

uint32_t Pipe::writers() const {
  absl::MutexLock l(&mu_);
  return writers_;
}

}  // namespace sandbox::fs::pipe
