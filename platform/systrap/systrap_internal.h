// Internal to platform/systrap: the classes the platform's files share.
// SystrapPlatform (platform.cc) owns the stub region, the source stub and
// the service thread; a Stub is one stub process, the guest address space
// (address_space.cc, with SystrapAddressSpace); a SystrapContext is one guest
// thread's way into a stub (context.cc); guest-side copies through a stub's
// data pipe are in guest_copy.cc; the host feature probe in probe.cc.
//
// Locking (the mutexes are declared below):
// - `Stub::req_mu_`: one request to the syscall thread at a time, held until
//   its reply packets are read (so replies come in order); up to the 5 s
//   deadline.
// - `Stub::threads_mu_`: the thread table and the idle list only; never held
//   across a call to the stub (`Call`, `WaitStarted`, `Thread0Tid`). A thread
//   being made or started belongs to its maker and is in neither the idle
//   list nor a Context; threads change hands only through the idle list.
// - `Stub::slots_mu_` (leaf): the futex words `MarkDead` wakes.
// - `Stub::filter_mu_` (leaf): the count of guest threads starting, which
//   decides whether the guest filter is in the request page.
// - `Stub::assist_mu_`: one guest-side copy per stub, from Start to Finish
//   (TryLock: a second copy of the same address space is not made, the
//   Sentry copies itself); nothing else is taken under it.
// - `SystrapPlatform::source_mu_`: one stub creation at a time;
//   `SystrapPlatform::watch_mu_`: the watched stubs.
// - Order: `threads_mu_`, `req_mu_` before `slots_mu_`; a Stub's locks before
//   the platform's `watch_mu_` (`Kill` unwatches).
#ifndef PLATFORM_SYSTRAP_SYSTRAP_INTERNAL_H_
#define PLATFORM_SYSTRAP_SYSTRAP_INTERNAL_H_

#include <linux/filter.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "platform/guest_copy.h"
#include "platform/host_fds.h"
#include "platform/long_work.h"
#include "platform/systrap/cpuid.h"
#include "platform/systrap/stub_abi.h"
#include "platform/systrap/systrap.h"
#include "platform/timed_stat.h"

namespace sandbox::platform::systrap_internal {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMinUserAddress = 0x10000;
constexpr uint32_t kResultDead = 0xffffffffu;
// How long the Sentry waits for a stub's syscall thread to answer a request
// or a new stub thread to start before it kills the stub. Generous: a
// loaded 2-CPU machine can delay a runnable thread by tens of milliseconds.
constexpr absl::Duration kStubReplyDeadline = absl::Seconds(5);

inline absl::Status ErrnoStatus(int e, const char* what) {
  return absl::Status(absl::ErrnoToStatusCode(e),
                      absl::StrFormat("%s: %s", what, strerror(e)));
}

inline long Futex(uint32_t* addr, int op, uint32_t val,
                  const struct timespec* ts = nullptr) {
  return syscall(SYS_futex, addr, op, val, ts, nullptr, 0);
}
inline void FutexWake(uint32_t* addr, int n = 1) { Futex(addr, FUTEX_WAKE, n); }

inline uint32_t Load(const uint32_t* p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}
inline void Store(uint32_t* p, uint32_t v) {
  __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

// TSC ticks per nanosecond, for bounded spinning (probe.cc).
double TscPerNs();

class SystrapPlatform;
class Stub;

// One guest thread of a stub process, with its slot. `stub`, `index`,
// `mem_off` and `slot` are fixed at registration; the other fields belong to
// whoever holds the thread: the Context it was handed to, or the caller of
// Stub::AcquireThread that is making or starting it. Threads change hands
// only through Stub::idle_ (under threads_mu_).
struct StubThread {
  Stub* stub = nullptr;
  int index = 0;
  pid_t tid = 0;
  uint64_t mem_off = 0;       // memory-file offset of the mapped region part
  stub_slot* slot = nullptr;  // the Sentry's view of the slot
  const void* fp_owner = nullptr;  // Context whose FP state the thread holds
  int pinned_cpu = -1;             // CPU the thread is bound to, -1 = any
  bool started = false;            // its READY handoff was seen
  uint32_t assist_seq = 0;         // last guest-side copy queued in its slot
};

// A stub process: one guest address space.
class Stub {
 public:
  // `data_rfd`/`data_wfd`: the Sentry's ends of the stub's data pipe, or
  // -1 (no guest-side copies).
  Stub(SystrapPlatform* plat, pid_t pid, int pidfd, int reply_fd, int data_rfd,
       int data_wfd, uint64_t shared_off, uint64_t id)
      : plat_(plat),
        pid_(pid),
        pidfd_(pidfd),
        reply_fd_(reply_fd),
        data_rfd_(data_rfd),
        data_wfd_(data_wfd),
        shared_off_(shared_off),
        id_(id) {}
  ~Stub();

  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_; }
  // The budget's share for this stub's FDs (given back after they close).
  void AdoptHostFds(HostFdHold hold) { host_fds_ = std::move(hold); }
  uint64_t id() const { return id_; }
  bool dead() const { return dead_.load(); }
  // Whether `tid` (read from guest-writable shared memory) names a thread of
  // this stub process. Anything else must never reach sched_setaffinity or
  // tgkill: it could name a Sentry thread or another stub's.
  // (The syscall thread, tid == pid, is not a guest thread.)
  bool OwnsThread(int64_t tid) const {
    return tid > 0 && tid <= INT32_MAX && tid != pid_ &&
           syscall(SYS_tgkill, pid_, static_cast<pid_t>(tid), 0) == 0;
  }

  // Runs one syscall (mmap, munmap, mprotect or clone) in the stub's syscall
  // thread and returns its result as read from the reply pipe: for mmap,
  // munmap and mprotect only success or the errno is transmitted, and
  // success is reported as the requested address (mmap) or 0.
  absl::StatusOr<int64_t> Call(long sysno, uint64_t a0 = 0, uint64_t a1 = 0,
                               uint64_t a2 = 0, uint64_t a3 = 0,
                               uint64_t a4 = 0, uint64_t a5 = 0,
                               uint64_t ss_sp = 0, uint64_t ss_size = 0)
      ABSL_LOCKS_EXCLUDED(req_mu_);

  // Records the thread the stub clones at start (region at `mem_off`).
  void AdoptThread0(uint64_t mem_off) ABSL_LOCKS_EXCLUDED(threads_mu_);
  // Hands out an idle thread, starting or making one if needed. Never holds
  // threads_mu_ while it waits for the stub.
  absl::StatusOr<StubThread*> AcquireThread() ABSL_LOCKS_EXCLUDED(threads_mu_);
  void ReleaseThread(StubThread* t) ABSL_LOCKS_EXCLUDED(threads_mu_);

  // Called once the process is known to be gone: wakes every waiter.
  void MarkDead() ABSL_LOCKS_EXCLUDED(threads_mu_);

  // Guest-side copies (platform/guest_copy.h) through the data pipe, one at
  // a time per stub: held from a copy's Start to its Finish.
  absl::Mutex& assist_mu() ABSL_LOCK_RETURNED(assist_mu_) { return assist_mu_; }
  // Splices up to `len` bytes of `fd` at `offset` into the (empty) data
  // pipe; returns the bytes queued, 0 on any failure.
  size_t QueueLocked(int fd, uint64_t offset, size_t len)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(assist_mu_);
  // Empties the data pipe (what a copy left behind).
  void DrainLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(assist_mu_);
  // No more guest-side copies for this stub (one was not reported in time:
  // a late read by its stub thread then finds the pipe empty).
  void StopCopiesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(assist_mu_);
  // Kills the process and reaps it.
  void Kill();

  // The guest filter in the request page (stub_abi.h): shown while a guest
  // thread is being started (thread 0: from the stub's creation, counted
  // in filter_users_'s initial 1), zeroed when none is.
  void ShowGuestFilter() ABSL_LOCKS_EXCLUDED(filter_mu_);
  void HideGuestFilter() ABSL_LOCKS_EXCLUDED(filter_mu_);

 private:
  absl::StatusOr<StubThread*> NewThread() ABSL_LOCKS_EXCLUDED(threads_mu_);
  StubThread* RegisterThread(uint64_t mem_off)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(threads_mu_);
  // Waits for a new thread's READY handoff (at most kStubReplyDeadline).
  absl::Status WaitStarted(StubThread* t) ABSL_LOCKS_EXCLUDED(threads_mu_);
  // Thread 0's tid, which the syscall thread replies (two packets) before
  // its first request.
  absl::StatusOr<pid_t> Thread0Tid() ABSL_LOCKS_EXCLUDED(req_mu_);
  absl::Status ReadThread0Locked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(req_mu_);
  // Reads one reply packet and returns its 12-bit value. `first_byte` (>= 0)
  // is what the packet's first byte must be. `poll_first`: the packet is
  // not expected yet, wait before the first read. Any failure kills the
  // stub.
  absl::StatusOr<uint32_t> ReadPacket(absl::Time deadline, int first_byte,
                                      bool poll_first = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(req_mu_);

  SystrapPlatform* const plat_;
  // Declared first so that it is destroyed last: after ~Stub closed the FDs.
  HostFdHold host_fds_;
  const pid_t pid_;
  const int pidfd_;
  // Read end of the reply pipe (non-blocking, packet mode). The stub's
  // syscall thread holds the only write end; the guest cannot write to it.
  const int reply_fd_;
  // The data pipe (non-blocking): the stub holds a read end at data_fd; the
  // Sentry splices into data_wfd_ and drains leftovers through data_rfd_.
  // Only the Sentry writes to it, so it holds nothing but bytes of this
  // stub's own requests.
  const int data_rfd_;
  const int data_wfd_;
  const uint64_t shared_off_;
  const uint64_t id_;
  std::atomic<bool> dead_{false};
  std::atomic<bool> reaped_{false};

  absl::Mutex assist_mu_;
  // The data pipe's capacity once set (F_SETPIPE_SZ, counted in the
  // platform's data_pipes), 0 before, -1 if it could not be or copies were
  // stopped (then no guest-side copies).
  long pipe_cap_ ABSL_GUARDED_BY(assist_mu_) = 0;
  bool counted_pipe_ ABSL_GUARDED_BY(assist_mu_) = false;

  // Serialises requests: one request (and its reply packets) at a time, so
  // replies arrive in request order.
  absl::Mutex req_mu_ ABSL_ACQUIRED_BEFORE(slots_mu_);
  uint32_t req_seq_ ABSL_GUARDED_BY(req_mu_) = 0;
  bool thread0_read_ ABSL_GUARDED_BY(req_mu_) = false;
  pid_t thread0_tid_ ABSL_GUARDED_BY(req_mu_) = 0;
  // CPU the syscall thread is bound to, -1 = any.
  int syscall_cpu_ ABSL_GUARDED_BY(req_mu_) = -1;

  // Guest threads being started, which read the guest filter from the
  // request page (its own fields: no other request touches them).
  absl::Mutex filter_mu_;
  int filter_users_ ABSL_GUARDED_BY(filter_mu_) = 1;

  // Guards the thread table only. Invariant: never held across a call to
  // the stub (Call, WaitStarted, Thread0Tid), which can block for up to
  // kStubReplyDeadline; a thread being made or started is owned by its
  // maker and is in neither idle_ nor a Context.
  absl::Mutex threads_mu_ ABSL_ACQUIRED_BEFORE(slots_mu_);
  std::vector<std::unique_ptr<StubThread>> threads_
      ABSL_GUARDED_BY(threads_mu_);
  // The futex words MarkDead must reach (a leaf lock: MarkDead runs from
  // anywhere, including under threads_mu_).
  absl::Mutex slots_mu_;
  std::vector<uint32_t*> slot_words_ ABSL_GUARDED_BY(slots_mu_);
  std::vector<StubThread*> idle_ ABSL_GUARDED_BY(threads_mu_);
};

class SystrapAddressSpace final : public AddressSpace {
 public:
  SystrapAddressSpace(SystrapPlatform* plat, std::shared_ptr<Stub> stub)
      : plat_(plat), stub_(std::move(stub)) {}
  ~SystrapAddressSpace() override;

  absl::Status MapFile(uintptr_t addr, uint64_t offset, size_t length,
                       int prot) override {
    return Map(addr, offset, length, prot, 0);
  }
  absl::Status MapFilePopulate(uintptr_t addr, uint64_t offset, size_t length,
                               int prot) override {
    return Map(addr, offset, length, prot, MAP_POPULATE);
  }
  absl::Status Unmap(uintptr_t addr, size_t length) override;

  const std::shared_ptr<Stub>& stub() const { return stub_; }

 private:
  // The stub's mmap(MAP_SHARED | MAP_FIXED | extra) of the memory file
  // (extra: 0 or MAP_POPULATE, the two forms its seccomp filter allows).
  absl::Status Map(uintptr_t addr, uint64_t offset, size_t length, int prot,
                   int extra);
  absl::Status CheckRange(uintptr_t addr, size_t length) const;
  SystrapPlatform* const plat_;
  const std::shared_ptr<Stub> stub_;
};

class SystrapContext final : public Context, public GuestCopier {
 public:
  explicit SystrapContext(SystrapPlatform* plat) : plat_(plat) {}
  ~SystrapContext() override {
    // The thread-locals point into this Context and its slot (a Context is
    // destroyed on the thread that ran it).
    if (internal::guest_copier == this) {
      internal::guest_copier = nullptr;
      internal::long_work_flag = nullptr;
    }
    Unbind();
  }

  SwitchResult Switch(AddressSpace& as, CpuState& state) override;
  absl::Status Prepare(AddressSpace& as) override;
  void Interrupt() override;
  void ClearInterrupt() override { interrupt_.store(false); }
  void SyncFp(CpuState& state) override;

  // GuestCopier: the stub thread serving this Context copies, from its
  // spin in handoff() (stub.c: assist).
  // Start returns holding stub_->assist_mu() when it queued anything;
  // Finish releases it (hence no thread-safety analysis).
  size_t Start(int fd, uint64_t offset, uintptr_t addr,
               size_t len) override ABSL_NO_THREAD_SAFETY_ANALYSIS;
  size_t Finish() override ABSL_NO_THREAD_SAFETY_ANALYSIS;

 private:
  void Unbind();
  // Waits for the stub to hand the slot back. False if the stub died.
  // `cpu` is the CPU this thread handed off from.
  bool WaitForStub(StubThread* t, bool spin, int cpu);
  SwitchResult Dead();

  SystrapPlatform* const plat_;
  std::shared_ptr<Stub> stub_;  // the stub `thread_` belongs to
  StubThread* thread_ = nullptr;
  // Bytes the guest-side copy in flight queued (0: none; then this Context
  // holds stub_->assist_mu()).
  size_t assist_queued_ = 0;
  std::atomic<bool> interrupt_{false};
  // Pins the stub thread to `cpu` (-1: unpins) if it is not already.
  void Pin(StubThread* t, int cpu);

  // (pid << 32 | tid) of the stub thread running this context, or 0.
  std::atomic<uint64_t> running_{0};
  // The state word of the slot that Switch waits on while running_ != 0.
  std::atomic<uint32_t*> running_word_{nullptr};
  // Spin back-off: after a spin that timed out, the next `backoff_left_`
  // switches sleep at once; the length doubles per failure (capped) and
  // resets after a successful spin.
  uint32_t backoff_left_ = 0;
  uint32_t backoff_len_ = 1;

 public:
  // Round-trip statistics (TSC ticks), see SystrapTimings.
  static constexpr int kHistBuckets = 128;
  enum Phase { kToStub, kGuest, kToSentry, kSentry, kPhases };
  struct Ticks {
    uint64_t n = 0, to_stub = 0, guest = 0, to_sentry = 0, sentry = 0;
    // Waits for the stub: spins begun, spins that saw the event, spins
    // skipped because the stub last ran on this CPU, futex sleeps.
    uint64_t handoffs = 0, spins = 0, spin_hits = 0, same_cpu = 0, sleeps = 0;
    uint64_t stub_sleeps = 0;
    uint32_t hist[kPhases][kHistBuckets] = {};
  };
  Ticks TakeTicks() {
    Ticks t = ticks_;
    ticks_ = Ticks();
    return t;
  }
  // Histogram bucket of a duration: 25 ns steps below 1 us, then 250 ns.
  static int Bucket(uint64_t ticks) {
    static const double per_ns = TscPerNs();
    uint64_t ns = static_cast<uint64_t>(ticks / per_ns);
    uint64_t b = ns < 1000 ? ns / 25 : 40 + (ns - 1000) / 250;
    return static_cast<int>(std::min<uint64_t>(b, kHistBuckets - 1));
  }
  static double BucketMidNs(int b) {
    return b < 40 ? b * 25 + 12.5 : 1000 + (b - 40) * 250 + 125;
  }

 private:
  void Record(Phase p, uint64_t ticks) { ticks_.hist[p][Bucket(ticks)]++; }
  Ticks ticks_;
  uint64_t last_back_ = 0;  // TSC when the last event was seen
  // The stub's sleep counter at the last event, and whose slot it was.
  const stub_slot* last_slot_ = nullptr;
  uint32_t last_stub_sleeps_ = 0;
};

class SystrapPlatform final : public Platform {
 public:
  SystrapPlatform(std::unique_ptr<MemoryFile> mf, const SystrapOptions& opts)
      : mf_(std::move(mf)), opts_(opts), features_(ProbeSystrapFeatures()) {}
  ~SystrapPlatform() override;

  absl::Status Init();

  absl::StatusOr<std::unique_ptr<AddressSpace>> NewAddressSpace() override;
  absl::StatusOr<std::unique_ptr<Context>> NewContext() override {
    return std::unique_ptr<Context>(new SystrapContext(this));
  }
  uintptr_t MinUserAddress() const override { return kMinUserAddress; }
  uintptr_t MaxUserAddress() const override { return base_; }
  size_t FpStateSize() const override { return features_.xsave_size; }
  void Cpuid(uint32_t leaf, uint32_t subleaf, uint32_t out[4]) const override {
    CpuidRegs r = cpuid_.Query(leaf, subleaf);
    out[0] = r.eax;
    out[1] = r.ebx;
    out[2] = r.ecx;
    out[3] = r.edx;
  }
  MemoryFile& memory_file() override { return *mf_; }

  const SystrapOptions& opts() const { return opts_; }
  const SystrapFeatures& features() const { return features_; }
  uintptr_t base() const { return base_; }
  uint64_t region_size() const { return region_size_; }
  uint64_t slot_off() const { return slot_off_; }
  uint64_t altstack_off() const { return altstack_off_; }
  uint64_t spin_ticks() const { return spin_ticks_; }
  // The next CPU this process may run on after `cpu` (cyclically), or -1.
  int OtherCpu(int cpu) const {
    for (size_t i = 0; i < cpus_.size(); ++i) {
      if (cpus_[i] == cpu) return cpus_[(i + 1) % cpus_.size()];
    }
    return cpus_.empty() ? -1 : cpus_[0];
  }
  // Stub-side spin while the Sentry serves an event, in `pause`
  // iterations (measured at start-up).
  uint32_t stub_spin_iters() const { return stub_spin_iters_; }
  // The same bound while the Sentry is busy for the stub (long work).
  uint32_t stub_busy_spin_iters() const { return stub_busy_spin_iters_; }

  // Number of Switch calls in progress; spinning is allowed only while
  // twice that fits in the CPUs (one CPU for the guest, one for the spinner).
  std::atomic<int> active_switches{0};
  // Stubs whose data pipe was enlarged for guest-side copies (at most
  // kMaxDataPipes; Stub::QueueLocked).
  std::atomic<int> data_pipes{0};

  // Where the time went (StatsSummary; relaxed counters).
  struct Stats {
    TimedStat stub_calls;  // Stub::Call, in TSC ticks
    std::atomic<uint64_t> copies{0}, copies_full{0}, copies_withdrawn{0};
  };
  Stats& stats() { return stats_; }
  std::string StatsSummary() const override;
  bool MaySpin() const {
    return opts_.spin && features_.cpus > 1 &&
           2 * active_switches.load(std::memory_order_relaxed) <=
               features_.cpus;
  }

  void Unwatch(uint64_t id, int pidfd);
  // Writes the guest filter into the request page at `shared_off` (`show`),
  // or zeroes it there.
  void WriteGuestFilter(uint64_t shared_off, bool show);

 private:
  // Receives the reply pipe's read end the source sent for a new stub
  // (non-blocking, close-on-exec), or -1.
  int RecvReplyFd() ABSL_EXCLUSIVE_LOCKS_REQUIRED(source_mu_);
  // Closes every FD an SCM_RIGHTS message `m` delivered.
  static void CloseReceivedFds(msghdr& m);
  // Receives (and closes the FDs of) every message queued on the source
  // socket.
  void DrainSourceSocket() ABSL_EXCLUSIVE_LOCKS_REQUIRED(source_mu_);
  absl::Status MapStubRegion();
  void ServiceThread(std::promise<absl::Status>* started);
  absl::Status StartSource();
  void WatchLoop();

  std::unique_ptr<MemoryFile> mf_;
  Stats stats_;
  const SystrapOptions opts_;
  const SystrapFeatures features_;
  CpuidTable cpuid_;
  uint64_t spin_ticks_ = 0;
  uint32_t stub_spin_iters_ = 0;
  uint32_t stub_busy_spin_iters_ = 0;
  std::vector<int> cpus_;  // CPUs this process may run on, at Init
  // The guest filter (seccomp_filters.h), which stubs read from their
  // request page while a guest thread starts (WriteGuestFilter). Set at Init.
  std::vector<sock_filter> guest_filter_;

  uintptr_t base_ = 0;  // stub base S
  uint64_t region_size_ = 0, slot_off_ = 0, altstack_off_ = 0;
  stub_source_ctl* ctl_ = nullptr;

  std::thread service_;
  int epfd_ = -1;
  int stop_fd_ = -1;
  // Our end of the socket the source stub sends reply pipes through, and
  // the source's end (closed here once the source is forked).
  int source_sock_ = -1;
  int source_sock_peer_ = -1;
  pid_t source_pid_ = -1;
  int source_pidfd_ = -1;

  absl::Mutex source_mu_;  // one stub creation at a time
  uint32_t source_seq_ ABSL_GUARDED_BY(source_mu_) = 0;

  absl::Mutex watch_mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(watch_mu_) = 1;
  absl::flat_hash_map<uint64_t, std::weak_ptr<Stub>> watched_
      ABSL_GUARDED_BY(watch_mu_);
  bool source_dead_ ABSL_GUARDED_BY(watch_mu_) = false;

  friend class Stub;
};

}  // namespace sandbox::platform::systrap_internal

#endif  // PLATFORM_SYSTRAP_SYSTRAP_INTERNAL_H_
