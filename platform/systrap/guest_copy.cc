// Guest-side copies (platform/guest_copy.h): the Sentry splices part of a
// long read into a stub's data pipe (Stub::QueueLocked) and the stub thread
// serving the Context reads it into the guest's buffer from its spin
// (SystrapContext::Start/Finish; stub.c: assist).
// Locking: Stub::assist_mu_, one copy per stub from Start to Finish (TryLock:
// a second copy of the same address space is not made, the Sentry copies
// itself); nothing else is taken under it.
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>

#include "platform/systrap/systrap_internal.h"

namespace sandbox::platform::systrap_internal {

// Capacity of a stub's data pipe: the most a guest-side copy queues (the
// default pipe-max-size, which an unprivileged process may set).
constexpr int kDataPipeBytes = 1 << 20;
// At most this many stubs hold such a pipe at once: its capacity counts
// against the Sentry user's pipe-user-pages-soft (64 MiB, host-wide for
// that uid), past which every new pipe of the uid gets two pages.
constexpr int kMaxDataPipes = 16;
// A guest-side copy not reported within this is withdrawn, and the stub
// makes no more (a guest thread can forge the slot words Finish waits on,
// so it can hold its Sentry thread this long once per stub). Generous: the
// first copy into a buffer the guest never touched takes a host page fault
// per page in the stub (~2.5 ms for 1 MiB in a VM with shadow paging).
constexpr uint64_t kGuestCopyDeadlineNs = 100000000;

size_t Stub::QueueLocked(int fd, uint64_t offset, size_t len) {
  if (data_wfd_ < 0 || dead()) return 0;
  if (pipe_cap_ == 0) {
    // Lazily, for stubs that stream, and for a bounded number of them (see
    // kMaxDataPipes); a pipe that stays small just means no copies.
    pipe_cap_ = -1;
    if (plat_->data_pipes.fetch_add(1) < kMaxDataPipes) {
      counted_pipe_ = true;
      const int cap = fcntl(data_wfd_, F_SETPIPE_SZ, kDataPipeBytes);
      if (cap >= kDataPipeBytes) pipe_cap_ = cap;
    } else {
      plat_->data_pipes.fetch_sub(1);
    }
  }
  if (pipe_cap_ < 0) return 0;
  len = std::min<size_t>(len, static_cast<size_t>(pipe_cap_));
  loff_t off = static_cast<loff_t>(offset);
  ssize_t n;
  do {
    n = splice(fd, &off, data_wfd_, nullptr, len, SPLICE_F_NONBLOCK);
  } while (n < 0 && errno == EINTR);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

void Stub::StopCopiesLocked() {
  DrainLocked();
  pipe_cap_ = -1;
}

void Stub::DrainLocked() {
  static thread_local char scratch[64 * 1024];
  for (;;) {
    ssize_t n = read(data_rfd_, scratch, sizeof(scratch));
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    return;  // empty (EAGAIN) or broken
  }
}

size_t SystrapContext::Start(int fd, uint64_t offset, uintptr_t addr,
                             size_t len) {
  StubThread* t = thread_;
  if (t == nullptr || assist_queued_ != 0 || len == 0) return 0;
  Stub* st = stub_.get();
  stub_slot* s = t->slot;
  if (st->dead() || !plat_->MaySpin()) return 0;
  // Only a stub thread spinning on another CPU can take it (hints from
  // guest-writable memory: a lie can hold this thread once per stub, up to
  // kGuestCopyDeadlineNs, see Finish).
  if (Load(&s->stub_waiting) != 0) return 0;
  const int cpu = sched_getcpu();
  if (cpu < 0 || Load(&s->stub_cpu) == static_cast<uint32_t>(cpu)) return 0;
  if (!st->assist_mu().TryLock()) return 0;
  const size_t queued = st->QueueLocked(fd, offset, len);
  if (queued == 0) {
    st->assist_mu().Unlock();
    return 0;
  }
  Store(&s->sentry_busy, 1);  // keep it spinning through the copy
  s->assist_addr = addr;
  s->assist_len = queued;
  Store(&s->assist_seq, ++t->assist_seq);
  plat_->stats().copies.fetch_add(1, std::memory_order_relaxed);
  assist_queued_ = queued;
  return queued;
}

size_t SystrapContext::Finish() {
  if (assist_queued_ == 0) return 0;
  StubThread* t = thread_;
  stub_slot* s = t->slot;
  Stub* st = stub_.get();
  const uint32_t seq = t->assist_seq;
  bool done = false;
  const uint64_t start = __rdtsc();
  const uint64_t yield_after = start + plat_->spin_ticks();
  const uint64_t deadline =
      start + static_cast<uint64_t>(kGuestCopyDeadlineNs * TscPerNs());
  for (;;) {
    if (Load(&s->assist_done) == seq) {
      done = true;
      break;
    }
    // A stub that announced its sleep (or died) without taking the copy
    // takes none until its next trap (stub.c: handoff), which needs this
    // request's reply: withdraw it. (It may have finished just before.)
    if (Load(&s->stub_waiting) != 0 || st->dead()) {
      done = Load(&s->assist_done) == seq;
      Store(&s->assist_done, seq);
      break;
    }
    const uint64_t now = __rdtsc();
    if (now > deadline) {
      // A stub preempted for that long, or a guest thread forging the
      // words above: withdraw, and make no more copies for this stub, so
      // that a late read of its thread finds the pipe empty. (That late
      // read writes this request's bytes into its own buffer before the
      // guest thread resumes, which is when the read returns to it.)
      Store(&s->assist_done, seq);
      st->StopCopiesLocked();
      break;
    }
    // Preempted mid-copy: let it run if it was moved here.
    if (now > yield_after) {
      sched_yield();
    } else {
      _mm_pause();
    }
  }
  // Guest-writable: read once. A forged count only concerns the guest's
  // own buffer, and what it leaves in the pipe only this stub's next copy.
  const uint64_t reported = __atomic_load_n(&s->assist_got, __ATOMIC_RELAXED);
  const uint64_t got = done ? std::min<uint64_t>(reported, assist_queued_) : 0;
  plat_->stats().copies_full.fetch_add(got == assist_queued_,
                                       std::memory_order_relaxed);
  plat_->stats().copies_withdrawn.fetch_add(!done, std::memory_order_relaxed);
  if (got < assist_queued_) st->DrainLocked();
  assist_queued_ = 0;
  st->assist_mu().Unlock();
  return static_cast<size_t>(got);
}

}  // namespace sandbox::platform::systrap_internal
