// A stub process, one guest address space: Stub (its requests to the
// syscall thread through the request page and the reply pipe, its pool of
// guest threads, the guest filter's visibility, its death) and
// SystrapAddressSpace, which maps and unmaps the memory file through it.
// Locking: Stub::req_mu_ (one request at a time, until its reply is read),
// threads_mu_ (the thread table, never held across a call to the stub),
// slots_mu_ and filter_mu_ (leaves); see systrap_internal.h for the order.
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <memory>
#include <utility>

#include "platform/systrap/seccomp_filters.h"
#include "platform/systrap/systrap.h"
#include "platform/systrap/systrap_internal.h"

namespace sandbox::platform::systrap_internal {

Stub::~Stub() {
  Kill();
  absl::MutexLock l(&threads_mu_);
  for (auto& t : threads_) {
    plat_->memory_file().Free(t->mem_off, plat_->region_size() - kPage);
  }
  plat_->memory_file().Free(shared_off_, 2 * kPage);
  close(reply_fd_);
  {
    absl::MutexLock l(&assist_mu_);
    if (counted_pipe_) plat_->data_pipes.fetch_sub(1);
  }
  if (data_rfd_ >= 0) close(data_rfd_);
  if (data_wfd_ >= 0) close(data_wfd_);
  close(pidfd_);
}

void Stub::Kill() {
  if (reaped_.exchange(true)) return;
  plat_->Unwatch(id_, pidfd_);
  syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
  siginfo_t info;
  while (waitid(static_cast<idtype_t>(3 /*P_PIDFD*/), pidfd_, &info, WEXITED) !=
             0 &&
         errno == EINTR) {
  }
  MarkDead();
}

void Stub::MarkDead() {
  dead_.store(true);
  MemoryFile& mf = plat_->memory_file();
  if (uint8_t* res = mf.Internal(shared_off_ + kPage, kPage)) {
    // Ends a Call's spin on the reply hint (its read then sees the pipe's
    // end of file, or dead()).
    Store(reinterpret_cast<uint32_t*>(res + STUB_RES_SEQ_OFF), kResultDead);
  }
  absl::MutexLock l(&slots_mu_);
  for (uint32_t* w : slot_words_) {
    Store(w, STUB_SLOT_DEAD);
    FutexWake(w, INT32_MAX);
  }
}

absl::StatusOr<uint32_t> Stub::ReadPacket(absl::Time deadline, int first_byte,
                                          bool poll_first) {
  uint8_t buf[STUB_REPLY_MAX_LEN];  // a whole packet: its length is the value
  for (bool wait = poll_first;; wait = true) {
    if (wait) {
      if (dead()) return absl::UnavailableError("stub process died");
      if (absl::Now() > deadline) {
        Kill();
        return absl::DeadlineExceededError(
            "stub syscall thread did not answer; stub killed");
      }
      pollfd pfd = {reply_fd_, POLLIN, 0};
      if (poll(&pfd, 1, 2) == 0) {
        // The syscall thread's "asleep" flag is guest-writable: repair a
        // lost wake-up every 2 ms.
        auto* req = reinterpret_cast<stub_request*>(
            plat_->memory_file().Internal(shared_off_, kPage));
        FutexWake(&req->seq);
        continue;
      }
    }
    ssize_t n = read(reply_fd_, buf, sizeof(buf));
    if (n > 0) {
      if (first_byte >= 0 && buf[0] != first_byte) {
        Kill();
        return absl::InternalError("stub reply out of sequence; stub killed");
      }
      return static_cast<uint32_t>(n) - STUB_REPLY_LEN(0);
    }
    if (n == 0) {
      // Every write end is closed: the stub process is gone.
      Kill();
      return absl::UnavailableError("stub process died");
    }
    if (errno != EINTR && errno != EAGAIN) {
      int e = errno;
      Kill();
      return ErrnoStatus(e, "read stub reply");
    }
  }
}

absl::Status Stub::ReadThread0Locked() {
  if (thread0_read_) return absl::OkStatus();
  const absl::Time deadline = absl::Now() + kStubReplyDeadline;
  // The request page's first byte is 0 or the first request's seq: no
  // request can be pending yet (req_mu_), but it is not checked.
  auto lo = ReadPacket(deadline, -1);
  if (!lo.ok()) return lo.status();
  auto hi = ReadPacket(deadline, -1);
  if (!hi.ok()) return hi.status();
  int64_t v = *lo | (static_cast<int64_t>(*hi) << STUB_REPLY_BITS);
  if (v & (int64_t{1} << (2 * STUB_REPLY_BITS - 1))) {
    v -= int64_t{1} << (2 * STUB_REPLY_BITS);
  }
  thread0_read_ = true;
  if (!OwnsThread(v)) {
    Kill();
    return absl::InternalError(
        absl::StrFormat("stub could not make its first thread (%d)", v));
  }
  thread0_tid_ = static_cast<pid_t>(v);
  return absl::OkStatus();
}

absl::StatusOr<pid_t> Stub::Thread0Tid() {
  absl::MutexLock l(&req_mu_);
  if (dead()) return absl::UnavailableError("stub process died");
  if (auto s = ReadThread0Locked(); !s.ok()) return s;
  return thread0_tid_;
}

absl::StatusOr<int64_t> Stub::Call(long sysno, uint64_t a0, uint64_t a1,
                                   uint64_t a2, uint64_t a3, uint64_t a4,
                                   uint64_t a5, uint64_t ss_sp,
                                   uint64_t ss_size) {
  struct Count {
    SystrapPlatform* plat;
    uint64_t t0;
    ~Count() { plat->stats().stub_calls.Add(__rdtsc() - t0); }
  } count{plat_, __rdtsc()};
  absl::MutexLock l(&req_mu_);
  if (dead()) return absl::UnavailableError("stub process died");
  // Thread 0's reply precedes every request's.
  if (auto s = ReadThread0Locked(); !s.ok()) return s;
  MemoryFile& mf = plat_->memory_file();
  auto* req = reinterpret_cast<stub_request*>(mf.Internal(shared_off_, kPage));
  auto* res =
      reinterpret_cast<stub_result*>(mf.Internal(shared_off_ + kPage, kPage));
  req->sysno = sysno;
  req->args[0] = a0;
  req->args[1] = a1;
  req->args[2] = a2;
  req->args[3] = a3;
  req->args[4] = a4;
  req->args[5] = a5;
  if (ss_sp != 0) {
    // Only thread clones set these; until thread 0 (made by the stub at
    // start) has read its own, nothing else may overwrite them. Clones come
    // after it started (AcquireThread hands out thread 0 first).
    req->ss_sp = ss_sp;
    req->ss_flags = 0;
    req->ss_size = ss_size;
  }
  uint32_t seq = ++req_seq_;
  if (seq == 0 || seq == kResultDead) seq = req_seq_ = 1;
  const int cpu = sched_getcpu();
  req->sentry_cpu = static_cast<uint32_t>(cpu);
  Store(&req->seq, seq);
  // `waiting` is guest-writable: a lost wake-up is repaired by the timed
  // wait in ReadPacket, which wakes the syscall thread again.
  if (Load(&res->waiting)) {
    // Wake it on this CPU, as guest threads are when they sleep: a wake-up
    // across vCPUs costs ~100 us in this VM, on one vCPU a few us. (The
    // syscall thread is the thread-group leader: tid == pid.)
    if (plat_->opts().pin && cpu >= 0 && syscall_cpu_ != cpu) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      if (sched_setaffinity(pid_, sizeof(set), &set) == 0) syscall_cpu_ = cpu;
    }
    FutexWake(&req->seq);
  }
  // res->seq is only a hint that the reply is written (a guest can forge
  // it: then the read below just waits); spinning on it avoids sleeping in
  // poll on the page-fault path. Not when the syscall thread is bound to
  // this CPU: it cannot run while we spin.
  if (plat_->MaySpin() && syscall_cpu_ != cpu) {
    uint64_t end = __rdtsc() + plat_->spin_ticks();
    while (Load(&res->seq) != seq && __rdtsc() < end) _mm_pause();
  }
  // Without the hint the reply is most likely not there yet (certainly not
  // when the syscall thread shares this CPU): poll before reading.
  const bool poll_first = Load(&res->seq) != seq;
  // A guest can stop the syscall thread from answering (it can withhold
  // the CPU, forge "asleep"); past the deadline the stub is killed, so the
  // caller never waits unboundedly with mm locks held.
  const absl::Time deadline = absl::Now() + kStubReplyDeadline;
  const int first_byte = static_cast<int>(seq & 0xff);
  auto lo = ReadPacket(deadline, first_byte, poll_first);
  if (!lo.ok()) return lo.status();
  if (sysno == SYS_clone) {
    auto hi = ReadPacket(deadline, first_byte);
    if (!hi.ok()) return hi.status();
    int64_t v = *lo | (static_cast<int64_t>(*hi) << STUB_REPLY_BITS);
    if (v & (int64_t{1} << (2 * STUB_REPLY_BITS - 1))) {
      v -= int64_t{1} << (2 * STUB_REPLY_BITS);
    }
    return v;
  }
  if (*lo == 0) return sysno == SYS_mmap ? static_cast<int64_t>(a0) : 0;
  return static_cast<int64_t>(*lo) - (int64_t{1} << STUB_REPLY_BITS);
}

void Stub::AdoptThread0(uint64_t mem_off) {
  absl::MutexLock l(&threads_mu_);
  idle_.push_back(RegisterThread(mem_off));
}

absl::StatusOr<StubThread*> Stub::AcquireThread() {
  StubThread* t = nullptr;
  {
    absl::MutexLock l(&threads_mu_);
    if (!idle_.empty()) {
      t = idle_.back();
      idle_.pop_back();
    }
  }
  if (t == nullptr) return NewThread();
  if (!t->started) {
    // Thread 0, cloned by the stub itself at start; now owned by this
    // caller alone. On failure the stub is dead (or killed), so the thread
    // need not go back to idle_.
    auto tid = Thread0Tid();
    if (!tid.ok()) return tid.status();
    t->tid = *tid;
    absl::Status started = WaitStarted(t);
    HideGuestFilter();  // thread 0 has installed it (or the stub is dead)
    if (!started.ok()) return started;
  }
  return t;
}

StubThread* Stub::RegisterThread(uint64_t mem_off) {
  auto t = std::make_unique<StubThread>();
  t->stub = this;
  t->index = threads_.size();
  t->mem_off = mem_off;
  t->slot = reinterpret_cast<stub_slot*>(plat_->memory_file().Internal(
      mem_off + plat_->slot_off() - kPage, STUB_SLOT_HEADER));
  // Register before the stub can run it, so MarkDead reaches its slot.
  StubThread* raw = t.get();
  threads_.push_back(std::move(t));
  absl::MutexLock l(&slots_mu_);
  slot_words_.push_back(&raw->slot->state);
  return raw;
}

absl::Status Stub::WaitStarted(StubThread* t) {
  Store(&t->slot->sentry_waiting, 1);
  const absl::Time deadline = absl::Now() + kStubReplyDeadline;
  for (;;) {
    uint32_t v = Load(&t->slot->state);
    if (v == STUB_SLOT_SENTRY) break;
    if (dead()) return absl::UnavailableError("stub process died");
    if (absl::Now() > deadline) {
      Kill();
      return absl::DeadlineExceededError(
          "stub thread did not start; stub killed");
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    Futex(&t->slot->state, FUTEX_WAIT, v, &ts);
  }
  Store(&t->slot->sentry_waiting, 0);
  if (t->slot->event != STUB_EV_READY) {
    Kill();
    return absl::InternalError("stub thread misbehaved at start");
  }
  t->started = true;
  return absl::OkStatus();
}

void Stub::ReleaseThread(StubThread* t) {
  absl::MutexLock l(&threads_mu_);
  idle_.push_back(t);
}

absl::StatusOr<StubThread*> Stub::NewThread() {
  const uint64_t region = plat_->region_size();
  StubThread* t;
  {
    absl::MutexLock l(&threads_mu_);
    if (threads_.size() >= STUB_MAX_THREADS) {
      return absl::ResourceExhaustedError("too many threads in one stub");
    }
    auto off = plat_->memory_file().Allocate(region - kPage);
    if (!off.ok()) return off.status();
    // The index is reserved; the thread is ours until we return it. On
    // failure the region stays with the thread record (never handed out)
    // and is freed with the stub.
    t = RegisterThread(*off);
  }
  uintptr_t addr = plat_->base() + STUB_THREADS_OFF +
                   static_cast<uint64_t>(t->index) * region;
  auto r = Call(SYS_mmap, addr + kPage, region - kPage, PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_FIXED, plat_->memory_file().fd(), t->mem_off);
  if (!r.ok()) return r.status();
  if (*r != static_cast<int64_t>(addr + kPage)) {
    return absl::InternalError(
        absl::StrFormat("stub mmap of thread region: %d", *r));
  }
  uint64_t alt = addr + plat_->altstack_off();
  // The new thread reads the guest filter from the request page until it
  // reports READY (or the stub is killed).
  ShowGuestFilter();
  struct Hide {
    Stub* stub;
    ~Hide() { stub->HideGuestFilter(); }
  } hide{this};
  auto tid = Call(SYS_clone, kStubThreadCloneFlags, addr + region - 64, 0, 0, 0,
                  0, alt, region - plat_->altstack_off());
  if (!tid.ok()) return tid.status();
  if (*tid <= 0) {
    return absl::InternalError(
        absl::StrFormat("stub clone of a thread: %d", *tid));
  }
  if (!OwnsThread(*tid)) {
    Kill();
    return absl::InternalError("stub reported a foreign thread id");
  }
  t->tid = static_cast<pid_t>(*tid);
  if (auto s = WaitStarted(t); !s.ok()) return s;
  return t;
}

void Stub::ShowGuestFilter() {
  absl::MutexLock l(&filter_mu_);
  if (filter_users_++ == 0) plat_->WriteGuestFilter(shared_off_, true);
}

void Stub::HideGuestFilter() {
  absl::MutexLock l(&filter_mu_);
  if (filter_users_ > 0 && --filter_users_ == 0) {
    plat_->WriteGuestFilter(shared_off_, false);
  }
}

SystrapAddressSpace::~SystrapAddressSpace() { stub_->Kill(); }

absl::Status SystrapAddressSpace::CheckRange(uintptr_t addr,
                                             size_t length) const {
  if (addr % kPage != 0 || length % kPage != 0 || length == 0 ||
      addr < plat_->MinUserAddress() || addr > plat_->MaxUserAddress() ||
      length > plat_->MaxUserAddress() - addr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("bad range [%#x, +%#x)", addr, length));
  }
  return absl::OkStatus();
}

absl::Status SystrapAddressSpace::Map(uintptr_t addr, uint64_t offset,
                                      size_t length, int prot, int extra) {
  if (auto s = CheckRange(addr, length); !s.ok()) return s;
  if (offset % kPage != 0 || (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC))) {
    return absl::InvalidArgumentError("bad offset or protection");
  }
  auto r =
      stub_->Call(SYS_mmap, addr, length, prot, MAP_SHARED | MAP_FIXED | extra,
                  plat_->memory_file().fd(), offset);
  if (!r.ok()) return r.status();
  if (*r != static_cast<int64_t>(addr)) {
    // The mapping may now differ from what the Sentry believes (a protection
    // downgrade for copy-on-write that did not happen): the stub cannot be
    // trusted to hold only what the mm granted, so it goes.
    stub_->Kill();
    return *r < 0 ? ErrnoStatus(static_cast<int>(-*r), "stub mmap")
                  : absl::InternalError("stub mmap returned a wrong address");
  }
  return absl::OkStatus();
}

absl::Status SystrapAddressSpace::Unmap(uintptr_t addr, size_t length) {
  if (auto s = CheckRange(addr, length); !s.ok()) return s;
  auto r = stub_->Call(SYS_munmap, addr, length);
  if (!r.ok()) return r.status();
  if (*r != 0) {
    // Callers free the pages after an Unmap: they must never stay reachable.
    stub_->Kill();
    return ErrnoStatus(static_cast<int>(-*r), "stub munmap");
  }
  return absl::OkStatus();
}

}  // namespace sandbox::platform::systrap_internal

namespace sandbox::platform {

pid_t SystrapStubPid(AddressSpace& as) {
  auto* s = dynamic_cast<systrap_internal::SystrapAddressSpace*>(&as);
  return s == nullptr ? -1 : s->stub()->pid();
}

}  // namespace sandbox::platform
