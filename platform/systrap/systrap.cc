#include "platform/systrap/systrap.h"

#include <asm/prctl.h>
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/rseq.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "platform/guest_copy.h"
#include "platform/host_fds.h"
#include "platform/long_work.h"
#include "platform/systrap/cpuid.h"
#include "platform/systrap/seccomp_filters.h"
#include "platform/systrap/stub_abi.h"
#include "platform/timed_stat.h"

extern "C" const void* sandbox_stub_blob(uint64_t* len,
                                         uint64_t* source_main_off);

namespace sandbox::platform {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMinUserAddress = 0x10000;
// Bound on any spin count the stub reads from its (guest-writable) slot.
constexpr uint32_t kMaxStubSpin = 1u << 24;
constexpr uint32_t kResultDead = 0xffffffffu;
// Host FDs a stub costs the Sentry: its reply pipe's read end, its data
// pipe's two ends and its pidfd (HostFdBudget).
constexpr size_t kStubHostFds = 4;
// How long the Sentry waits for a stub's syscall thread to answer a request
// or a new stub thread to start before it kills the stub. Generous: a
// loaded 2-CPU machine can delay a runnable thread by tens of milliseconds.
constexpr absl::Duration kStubReplyDeadline = absl::Seconds(5);
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
constexpr uint64_t kXFeatureMaskXtileData = 1ull << 18;

static_assert(sizeof(stub_regs) == sizeof(user_regs_struct));
static_assert(sizeof(stub_slot) == STUB_SLOT_HEADER);
static_assert(offsetof(stub_params, code_start) == STUB_P_CODE_START);
static_assert(offsetof(stub_request, guest_filter) == STUB_REQ_FILTER_OFF);
static_assert(sizeof(stub_request) <= kPage);
static_assert(sizeof(stub_source_ctl) <= kPage);
static_assert(sizeof(stub_params) <= STUB_PARAMS_SIZE);
static_assert(sizeof(sock_filter) == sizeof(stub_sock_filter));

absl::Status ErrnoStatus(int e, const char* what) {
  return absl::Status(absl::ErrnoToStatusCode(e),
                      absl::StrFormat("%s: %s", what, strerror(e)));
}

long Futex(uint32_t* addr, int op, uint32_t val,
           const struct timespec* ts = nullptr) {
  return syscall(SYS_futex, addr, op, val, ts, nullptr, 0);
}
void FutexWake(uint32_t* addr, int n = 1) { Futex(addr, FUTEX_WAKE, n); }

uint32_t Load(const uint32_t* p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}
void Store(uint32_t* p, uint32_t v) {
  __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

// ---------------------------------------------------------------------------
// Host features.

bool ProbeInThread(bool (*fn)()) {
  bool ok = false;
  std::thread t([&] { ok = fn(); });
  t.join();
  return ok;
}

bool ProbeSud() {
  if (prctl(59, 1, 0, 0x7fffffffffffUL, 0) != 0) return false;
  return prctl(59, 0, 0, 0, 0) == 0;
}

bool ProbeCpuidFaulting() {
  if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) return false;
  syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);
  return true;
}

uint64_t Xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// TSC ticks per nanosecond, for bounded spinning.
double TscPerNs() {
  static const double v = [] {
    auto t0 = std::chrono::steady_clock::now();
    uint64_t c0 = __rdtsc();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto t1 = std::chrono::steady_clock::now();
    uint64_t c1 = __rdtsc();
    double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    return ns > 0 ? (c1 - c0) / ns : 1.0;
  }();
  return v;
}

}  // namespace

SystrapFeatures ProbeSystrapFeatures() {
  static const SystrapFeatures f = [] {
    SystrapFeatures f;
    f.syscall_user_dispatch = ProbeInThread(ProbeSud);
    f.cpuid_faulting = ProbeInThread(ProbeCpuidFaulting);
    f.fsgsbase = (getauxval(AT_HWCAP2) & 2) != 0;
    f.min_sigstksz = getauxval(51 /*AT_MINSIGSTKSZ*/);
    if (f.min_sigstksz == 0) f.min_sigstksz = MINSIGSTKSZ;
    uint32_t a, b, c, d;
    __cpuid_count(1, 0, a, b, c, d);
    bool osxsave = (c & (1u << 27)) != 0;
    if (osxsave) {
      f.xfeatures = Xgetbv0() & ~kXFeatureMaskXtileData;
      uint32_t size = 576;
      for (int i = 2; i < 63; ++i) {
        if (!(f.xfeatures & (1ull << i))) continue;
        __cpuid_count(0xd, i, a, b, c, d);
        if (a + b > size) size = a + b;
      }
      f.xsave_size = size;
    } else {
      f.xfeatures = 3;
      f.xsave_size = 512;
    }
    cpu_set_t set;
    f.cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    return f;
  }();
  return f;
}

std::string SeccompNeeds() {
  return "after creation, per operation: futex (WAIT/WAKE, shared, with "
         "timeouts); read and poll (a stub's reply pipe, non-blocking); "
         "recvmsg (MSG_DONTWAIT|MSG_CMSG_CLOEXEC, one fd: a new stub's reply "
         "pipe and data pipe ends from the source stub); "
         "fcntl(F_GETFL/F_SETFL O_NONBLOCK, F_SETPIPE_SZ); "
         "splice(SPLICE_F_NONBLOCK: a host file into a stub's data pipe); "
         "tgkill(stub pid, stub tid, SIGCHLD or 0); "
         "sched_setaffinity(stub tid); pidfd_open; pidfd_send_signal(SIGKILL);"
         " waitid(P_PIDFD, WEXITED); epoll_ctl; epoll_wait (service thread); "
         "write/close (eventfd, at destruction; reply pipes); "
         "fallocate(PUNCH_HOLE) "
         "(MemoryFile::Free); kill/wait4 (error path only). sched_getcpu and "
         "clock_gettime go through the vDSO/rseq. At creation only (before "
         "any filter): clone, mmap/mprotect/munmap, memfd_create, ftruncate,"
         " epoll_create1, eventfd2, socketpair(AF_UNIX, SOCK_SEQPACKET), "
         "prctl/arch_prctl probes, rseq.";
}

std::vector<HostSyscallNeed> SystrapSeccompSyscalls() {
  // int arguments: the kernel reads the low 32 bits only.
  constexpr uint64_t kInt = 0xffffffffu;
  return {
      {SYS_futex, {{1, kInt, FUTEX_WAIT}}, "wait on a slot or control word"},
      {SYS_futex, {{1, kInt, FUTEX_WAKE}}, "wake a stub or the source"},
      {SYS_read, {}, "a stub's reply pipe (non-blocking)"},
      {SYS_poll, {}, "wait for a stub's reply pipe"},
      {SYS_recvmsg,
       {{2, kInt, MSG_DONTWAIT | MSG_CMSG_CLOEXEC}},
       "a new stub's reply pipe from the source stub"},
      {SYS_fcntl, {{1, kInt, F_GETFL}}, "reply pipe flags"},
      {SYS_fcntl, {{1, kInt, F_SETFL}}, "reply pipe O_NONBLOCK"},
      {SYS_fcntl, {{1, kInt, F_SETPIPE_SZ}}, "data pipe capacity"},
      {SYS_splice,
       {{5, kInt, SPLICE_F_NONBLOCK}},
       "queue a guest-side copy in a stub's data pipe"},
      {SYS_tgkill, {{2, kInt, 0}}, "does a stub thread exist"},
      {SYS_tgkill, {{2, kInt, SIGCHLD}}, "interrupt a stub thread"},
      {SYS_sched_setaffinity, {}, "pin a stub thread to a CPU"},
      {SYS_getcpu, {}, "sched_getcpu without rseq"},
      {SYS_pidfd_open, {{1, kInt, 0}}, "a new stub's pidfd"},
      {SYS_pidfd_send_signal, {{1, kInt, SIGKILL}}, "kill a stub"},
      {SYS_waitid, {{0, kInt, 3 /*P_PIDFD*/}}, "reap a stub"},
      {SYS_epoll_ctl, {}, "watch stub pidfds"},
      {SYS_epoll_wait, {}, "service thread"},
      {SYS_write, {}, "stop eventfd; reply pipes"},
      {SYS_close, {}, "pidfds and reply pipes of dead stubs"},
      {SYS_fallocate,
       {{1, kInt, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE}},
       "MemoryFile::Free"},
      {SYS_munmap, {}, "stub region at destruction"},
      {SYS_kill, {{1, kInt, SIGKILL}}, "error path of a new stub"},
      {SYS_wait4, {}, "error path of a new stub"},
  };
}

namespace {

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

// ---------------------------------------------------------------------------
// Stub

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

// ---------------------------------------------------------------------------
// Address space

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

// ---------------------------------------------------------------------------
// Context

void SystrapContext::Unbind() {
  if (thread_ != nullptr) {
    // A later Context may live at this address: never let it skip its FP
    // load and inherit this one's registers.
    thread_->fp_owner = nullptr;
    stub_->ReleaseThread(thread_);
    thread_ = nullptr;
  }
  stub_.reset();
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

void SystrapContext::SyncFp(CpuState& state) {
  if (!state.fp_stale) return;
  state.fp_stale = false;
  // The image is in the slot of the thread that ran the last Switch: the
  // stub copied the one the kernel saved at the trap, or it is the one the
  // Sentry loaded. Guest-writable memory: the length is clamped and the
  // image is sanitised again before any load.
  if (thread_ == nullptr || thread_->fp_owner != this) return;
  const size_t xsize = plat_->FpStateSize();
  stub_slot* s = thread_->slot;
  uint32_t len = Load(&s->xsave_len);
  if (len > xsize) len = static_cast<uint32_t>(xsize);
  state.fp.resize(xsize);
  memcpy(state.fp.data(), s->xsave, len);
  if (len < xsize) memset(state.fp.data() + len, 0, xsize - len);
}

SwitchResult SystrapContext::Dead() {
  Unbind();
  SwitchResult r;
  r.reason = SwitchReason::kDead;
  return r;
}

void SystrapContext::Interrupt() {
  interrupt_.store(true);
  uint64_t r = running_.load();
  if (r != 0) {
    syscall(SYS_tgkill, static_cast<pid_t>(r >> 32),
            static_cast<pid_t>(r & 0xffffffff), SIGCHLD);
    // Let a sleeping Switch switch to its timed wait. (A stale pointer only
    // costs a spurious wake-up: the Sentry's mapping of the file stays.)
    if (uint32_t* w = running_word_.load()) FutexWake(w, INT32_MAX);
  }
}

void SystrapContext::Pin(StubThread* t, int cpu) {
  if (t->pinned_cpu == cpu) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu >= 0) {
    CPU_SET(cpu, &set);
  } else {
    for (int i = 0; i < CPU_SETSIZE; ++i) CPU_SET(i, &set);
  }
  if (sched_setaffinity(t->tid, sizeof(set), &set) == 0) t->pinned_cpu = cpu;
}

bool SystrapContext::WaitForStub(StubThread* t, bool spin, int cpu) {
  stub_slot* s = t->slot;
  // A stub thread that last trapped on this CPU cannot run while we spin
  // here (the value is guest-writable: a lie only costs the guest time).
  if (spin && cpu >= 0 && Load(&s->stub_cpu) == static_cast<uint32_t>(cpu)) {
    spin = false;
    ticks_.same_cpu++;
  }
  if (spin) {
    ticks_.spins++;
    uint64_t end = __rdtsc() + plat_->spin_ticks();
    bool done = false;
    while (!(done = Load(&s->state) == STUB_SLOT_SENTRY)) {
      if (__rdtsc() > end) break;
      _mm_pause();
    }
    if (done) {
      ticks_.spin_hits++;
      backoff_len_ = 1;
    } else {
      backoff_left_ = backoff_len_;
      if (backoff_len_ < 4096) backoff_len_ *= 2;
    }
  }
  // While an interrupt is pending the wait is timed: the signal is sent
  // again (cheap insurance) and a guest that still has not stopped after
  // interrupt_kill_ms (it blocked SIGCHLD through a forged rt_sigreturn
  // frame and never traps) is killed.
  uint64_t interrupt_deadline = 0;
  for (;;) {
    uint32_t v = Load(&s->state);
    if (v == STUB_SLOT_SENTRY) break;
    if (stub_->dead()) return false;
    Store(&s->sentry_waiting, 1);
    v = Load(&s->state);
    if (v == STUB_SLOT_SENTRY) break;
    if (stub_->dead()) return false;
    if (!interrupt_.load() || plat_->opts().interrupt_kill_ms <= 0) {
      ticks_.sleeps++;
      Futex(&s->state, FUTEX_WAIT, v);
      continue;
    }
    uint64_t now = __rdtsc();
    if (interrupt_deadline == 0) {
      interrupt_deadline =
          now + static_cast<uint64_t>(plat_->opts().interrupt_kill_ms * 1e6 *
                                      TscPerNs());
    } else if (now > interrupt_deadline) {
      stub_->Kill();
      return false;
    }
    struct timespec ts = {0, 50 * 1000 * 1000};
    Futex(&s->state, FUTEX_WAIT, v, &ts);
    if (interrupt_.load() && Load(&s->state) != STUB_SLOT_SENTRY) {
      syscall(SYS_tgkill, stub_->pid(), t->tid, SIGCHLD);
    }
  }
  Store(&s->sentry_waiting, 0);
  return true;
}

void SanitizeXsave(uint8_t* x, size_t size, uint64_t xfeatures) {
  if (size < 576) return;
  uint32_t mxcsr;
  memcpy(&mxcsr, x + 24, 4);
  mxcsr &= 0xffff;
  memcpy(x + 24, &mxcsr, 4);
  uint64_t bv;
  memcpy(&bv, x + STUB_XSAVE_HDR_OFF, 8);
  bv &= xfeatures;
  memcpy(x + STUB_XSAVE_HDR_OFF, &bv, 8);
  memset(x + STUB_XSAVE_HDR_OFF + 8, 0, 56);  // xcomp_bv, reserved
}

absl::Status SystrapContext::Prepare(AddressSpace& as) {
  auto& sas = static_cast<SystrapAddressSpace&>(as);
  if (stub_ == sas.stub() && thread_ != nullptr) return absl::OkStatus();
  Unbind();
  auto t = sas.stub()->AcquireThread();
  if (!t.ok()) return t.status();
  stub_ = sas.stub();
  thread_ = *t;
  return absl::OkStatus();
}

SwitchResult SystrapContext::Switch(AddressSpace& as, CpuState& state) {
  auto& sas = static_cast<SystrapAddressSpace&>(as);
  internal::long_work_flag = nullptr;
  internal::guest_copier = nullptr;
  if (interrupt_.exchange(false)) {
    SwitchResult r;
    r.reason = SwitchReason::kInterrupted;
    return r;
  }
  if (stub_ != sas.stub()) {
    SyncFp(state);  // the image is in the old thread's slot
    Unbind();
    auto t = sas.stub()->AcquireThread();
    if (!t.ok()) return Dead();
    stub_ = sas.stub();
    thread_ = *t;
  }
  if (stub_->dead()) return Dead();

  StubThread* t = thread_;
  stub_slot* s = t->slot;
  const size_t xsize = plat_->FpStateSize();
  const uint64_t xfeatures = plat_->features().xfeatures;

  bool load_fp = state.fp_changed || t->fp_owner != this;
  state.fp_changed = false;
  t->fp_owner = this;
  if (load_fp) {
    if (state.fp.size() == xsize) {
      memcpy(s->xsave, state.fp.data(), xsize);
      SanitizeXsave(s->xsave, xsize, xfeatures);
    } else {
      memset(s->xsave, 0, xsize);
      uint16_t fcw = 0x37f;
      uint32_t mxcsr = 0x1f80;
      memcpy(s->xsave, &fcw, 2);
      memcpy(s->xsave + 24, &mxcsr, 4);
    }
  }
  s->fp_load = load_fp ? STUB_FP_LOAD : STUB_FP_KEEP;

  plat_->active_switches.fetch_add(1);
  running_word_.store(&s->state);
  running_.store((static_cast<uint64_t>(stub_->pid()) << 32) |
                 static_cast<uint32_t>(t->tid));
  SwitchResult result;
  for (;;) {
    memcpy(&s->regs, &state.regs, sizeof(stub_regs));
    // `spin`: both sides spin for each other (a CPU is free and the
    // Sentry's own spins have not been failing: back-off).
    const bool may_spin = plat_->MaySpin();
    bool spin = false;
    if (backoff_left_ > 0) {
      --backoff_left_;
    } else {
      spin = may_spin;
    }
    // The request just served was long CPU-bound work (platform/long_work.h):
    // a guest streaming data, whose next request is likely long too. Its
    // stub spins through such work whenever a CPU is free; the back-off
    // (which is about the guest's time between requests) does not apply.
    const bool long_work = Load(&s->sentry_busy) != 0;
    const bool stub_spins = spin || (long_work && may_spin);
    // (A streaming guest's stub spins even during the back-off: with
    // `spin` 0 it would go to sleep before the Sentry marks the request as
    // long work, and every 1 MiB read would end in a futex wake-up.)
    s->spin = stub_spins ? plat_->stub_spin_iters() : 0;
    s->busy_spin = may_spin ? plat_->stub_busy_spin_iters() : 0;
    const int cpu = sched_getcpu();
    s->sentry_cpu = static_cast<uint32_t>(cpu);
    // When one side must sleep, keep both on one CPU: a futex wake-up
    // across CPUs costs tens of microseconds in a VM, on one CPU a couple.
    // While the stub spins, let the scheduler place it, except for a guest
    // streaming data: spinning through each long request only helps on
    // another CPU, and the scheduler tends to keep both on one (then the
    // stub sleeps and every reply is a futex wake-up).
    if (plat_->opts().pin) {
      int where = cpu;
      if (stub_spins) {
        where = (plat_->opts().spread || long_work) && cpu >= 0
                    ? plat_->OtherCpu(cpu)
                    : -1;
        if (where == cpu) where = -1;
      }
      Pin(t, where);
    }
    uint64_t handoff = __rdtsc();
    ticks_.handoffs++;
    Store(&s->sentry_busy, 0);
    Store(&s->state, STUB_SLOT_STUB);
    if (Load(&s->stub_waiting)) FutexWake(&s->state);
    if (!WaitForStub(t, stub_spins, cpu)) {
      result.reason = SwitchReason::kDead;
      break;
    }
    uint64_t back = __rdtsc();
    {
      const uint32_t ss = Load(&s->stub_sleeps);
      if (last_slot_ == s) ticks_.stub_sleeps += ss - last_stub_sleeps_;
      last_slot_ = s;
      last_stub_sleeps_ = ss;
    }
    {
      uint64_t resume = s->tsc_resume, trap = s->tsc_trap;
      if (handoff <= resume && resume <= trap && trap <= back) {
        if (last_back_ != 0 && last_back_ <= handoff) {
          ticks_.sentry += handoff - last_back_;
          Record(kSentry, handoff - last_back_);
        }
        ticks_.n++;
        ticks_.to_stub += resume - handoff;
        ticks_.guest += trap - resume;
        ticks_.to_sentry += back - trap;
        Record(kToStub, resume - handoff);
        Record(kGuest, trap - resume);
        Record(kToSentry, back - trap);
      }
      last_back_ = back;
    }
    // Everything below comes from memory the guest can write.
    uint32_t ev = Load(&s->event);
    memcpy(&state.regs, &s->regs, sizeof(stub_regs));
    state.regs.cs = 0x33;
    state.regs.ss = 0x2b;
    state.regs.ds = state.regs.es = state.regs.fs = state.regs.gs = 0;
    s->fp_load = STUB_FP_KEEP;
    if (ev == STUB_EV_CPUID) {
      uint32_t out[4];
      plat_->Cpuid(static_cast<uint32_t>(state.regs.rax),
                   static_cast<uint32_t>(state.regs.rcx), out);
      state.regs.rax = out[0];
      state.regs.rbx = out[1];
      state.regs.rcx = out[2];
      state.regs.rdx = out[3];
      state.regs.rip += 2;
      continue;
    }
    // The FPU image stays in the slot until the Sentry asks (SyncFp):
    // signal delivery, clone. Until the next Switch the stub waits, so the
    // slot holds it; a KEEP then resumes with it.
    state.fp_stale = true;
    if (ev == STUB_EV_INTERRUPT) {
      if (interrupt_.exchange(false)) {
        result.reason = SwitchReason::kInterrupted;
        break;
      }
      continue;  // a stale interrupt signal
    }
    if (ev == STUB_EV_SYSCALL) {
      result.reason = SwitchReason::kSyscall;
      break;
    }
    uint32_t signo = Load(&s->signo);
    if (ev == STUB_EV_FAULT &&
        (signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE ||
         signo == SIGILL || signo == SIGTRAP)) {
      result.reason = SwitchReason::kFault;
      result.signal.si_signo = signo;
      result.signal.si_code = s->fault_code;
      result.signal.si_addr = reinterpret_cast<void*>(s->fault_addr);
      if ((signo == SIGSEGV || signo == SIGBUS) && s->trapno == 14) {
        uint64_t err = s->fault_err;
        result.access.write = (err & 2) != 0;
        result.access.execute = (err & 16) != 0;
        result.access.read = !result.access.write && !result.access.execute;
      }
      break;
    }
    // Corrupted shared memory: the guest tampered with its slot.
    stub_->Kill();
    result.reason = SwitchReason::kDead;
    break;
  }
  running_.store(0);
  running_word_.store(nullptr);
  plat_->active_switches.fetch_sub(1);
  if (result.reason == SwitchReason::kDead) {
    Dead();
  } else {
    // Until the next Switch, HintLongWork() on this thread marks the slot
    // and guest-side copies go to its stub thread.
    internal::long_work_flag = &s->sentry_busy;
    internal::guest_copier = this;
  }
  return result;
}

// ---------------------------------------------------------------------------
// Platform

std::string SystrapPlatform::StatsSummary() const {
  const double per_ns = TscPerNs();
  auto get = [](const std::atomic<uint64_t>& c) {
    return c.load(std::memory_order_relaxed);
  };
  const TimedStat& c = stats_.stub_calls;
  return absl::StrFormat(
      "systrap: %d stub calls (mmap/munmap/mprotect/clone), %.1f ms waited "
      "(max %.0f us); %d guest-side copies (%d whole, %d withdrawn)",
      c.count(), c.sum() / per_ns / 1e6, c.longest() / per_ns / 1e3,
      get(stats_.copies), get(stats_.copies_full),
      get(stats_.copies_withdrawn));
}

SystrapPlatform::~SystrapPlatform() {
  if (stop_fd_ >= 0) {
    uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
  }
  if (service_.joinable()) service_.join();
  if (source_pidfd_ >= 0) {
    syscall(SYS_pidfd_send_signal, source_pidfd_, SIGKILL, nullptr, 0);
    siginfo_t info;
    waitid(static_cast<idtype_t>(3), source_pidfd_, &info, WEXITED);
    close(source_pidfd_);
  }
  if (epfd_ >= 0) close(epfd_);
  if (stop_fd_ >= 0) close(stop_fd_);
  if (source_sock_ >= 0) close(source_sock_);
  if (source_sock_peer_ >= 0) close(source_sock_peer_);
  if (base_ != 0) munmap(reinterpret_cast<void*>(base_), STUB_SOURCE_END);
}

absl::Status SystrapPlatform::MapStubRegion() {
  const SystrapFeatures& f = features_;
  // Per-thread region: [guard][slot header + XSAVE][altstack].
  uint64_t slot_bytes = RoundUp(STUB_SLOT_HEADER + f.xsave_size + 64, kPage);
  uint64_t alt_min = std::max<uint64_t>(4 * f.min_sigstksz, 32 * 1024) +
                     RoundUp(f.xsave_size + 4096, kPage);
  region_size_ = 64 * 1024;
  while (region_size_ < kPage + slot_bytes + alt_min) region_size_ *= 2;
  slot_off_ = kPage;
  altstack_off_ = kPage + slot_bytes;

  uint64_t len = 0, src_off = 0;
  const void* blob = sandbox_stub_blob(&len, &src_off);
  if (len > STUB_CODE_MAX) return absl::InternalError("stub blob too large");

  // Candidate bases: 1 GiB aligned, well below the Sentry's own mappings.
  for (uintptr_t cand = 0x7e0000000000; cand > 0x100000000000;
       cand -= 0x40000000) {
    void* p = mmap(reinterpret_cast<void*>(cand), STUB_SOURCE_END,
                   PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) continue;
    if (p != reinterpret_cast<void*>(cand)) {
      munmap(p, STUB_SOURCE_END);
      continue;
    }
    base_ = cand;
    break;
  }
  if (base_ == 0) return absl::ResourceExhaustedError("no room for stubs");
  void* ctl = mmap(reinterpret_cast<void*>(base_ + STUB_SOURCE_CTL_OFF), kPage,
                   PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (ctl == MAP_FAILED) return ErrnoStatus(errno, "mmap source control");
  ctl_ = static_cast<stub_source_ctl*>(ctl);

  memcpy(reinterpret_cast<void*>(base_ + STUB_CODE_OFF), blob, len);
  auto* p = reinterpret_cast<stub_params*>(base_);
  p->magic = STUB_PARAMS_MAGIC;
  p->stub_base = base_;
  p->code_start = base_ + STUB_CODE_OFF;
  p->code_len = RoundUp(len, kPage);
  p->region_size = region_size_;
  p->slot_off = slot_off_;
  p->altstack_off = altstack_off_;
  p->altstack_size = region_size_ - altstack_off_;
  p->xsave_size = f.xsave_size;
  p->xfeatures = f.xfeatures;
  // The PID and the filters stay out of the params block, which guest code
  // can read (stub_abi.h).
  ctl_->sentry_pid = static_cast<uint64_t>(getpid());
  p->memfd = mf_->fd();
  p->use_fsgsbase = f.fsgsbase;
  p->cpuid_faulting = f.cpuid_faulting;
  p->use_sud = f.syscall_user_dispatch && opts_.use_sud;
  p->max_spin = kMaxStubSpin;
  // Fixed numbers below 3 but the memory file's: stubs dup their pipes
  // there (stub.c: stub_new_main).
  p->reply_fd = mf_->fd() == 0 ? 1 : 0;
  p->data_fd = mf_->fd() == 2 || p->reply_fd == 2 ? 1 : 2;
  p->source_sock = source_sock_peer_;

  StubFilterParams fp;
  fp.code_start = p->code_start;
  fp.code_end = p->code_start + p->code_len;
  fp.threads_start = base_ + STUB_THREADS_OFF;
  fp.threads_end = fp.threads_start + STUB_MAX_THREADS * region_size_;
  fp.memfd = mf_->fd();
  fp.reply_fd = p->reply_fd;
  fp.data_fd = p->data_fd;
  if ((fp.threads_start >> 32) != ((fp.threads_end - 1) >> 32)) {
    return absl::InternalError("thread regions cross a 4 GiB boundary");
  }
  auto proc = StubProcessFilter(fp);
  auto guest = StubGuestFilter(fp);
  if (proc.size() > STUB_FILTER_MAX_INSNS ||
      guest.size() > STUB_FILTER_MAX_INSNS) {
    return absl::InternalError("stub filters too long");
  }
  memcpy(ctl_->process_insns, proc.data(), proc.size() * sizeof(sock_filter));
  ctl_->process_filter_len = static_cast<uint32_t>(proc.size());
  guest_filter_ = std::move(guest);

  if (mprotect(reinterpret_cast<void*>(base_), STUB_PARAMS_SIZE, PROT_READ) ||
      mprotect(reinterpret_cast<void*>(base_ + STUB_CODE_OFF), p->code_len,
               PROT_READ | PROT_EXEC)) {
    return ErrnoStatus(errno, "mprotect stub region");
  }
  return absl::OkStatus();
}

absl::Status SystrapPlatform::StartSource() {
  uint64_t len = 0, src_off = 0;
  sandbox_stub_blob(&len, &src_off);
  uintptr_t entry = base_ + STUB_CODE_OFF + src_off;
  uintptr_t sp = base_ + STUB_SOURCE_STACK_OFF + STUB_SOURCE_STACK_SIZE - 8;
  long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid < 0) return ErrnoStatus(errno, "clone source stub");
  if (pid == 0) {
    // The child shares nothing with us but must drop the rseq area glibc
    // registered for this thread: it lies in memory the source unmaps, and
    // the kernel would fault on the next return to user space.
    if (__rseq_size != 0) {
      char* area =
          static_cast<char*>(__builtin_thread_pointer()) + __rseq_offset;
      for (unsigned len : {32u, __rseq_size, 20u}) {
        if (syscall(SYS_rseq, area, len, 1 /*UNREGISTER*/, 0x53053053) == 0) {
          break;
        }
      }
    }
    __asm__ volatile(
        "mov %0, %%rsp\n"
        "jmp *%1\n" ::"r"(sp),
        "r"(entry)
        : "memory");
    __builtin_unreachable();
  }
  source_pid_ = pid;
  close(source_sock_peer_);
  source_sock_peer_ = -1;
  source_pidfd_ = syscall(SYS_pidfd_open, pid, 0);
  if (source_pidfd_ < 0) return ErrnoStatus(errno, "pidfd_open source stub");
  // Wait (bounded) for the source to be ready.
  for (int i = 0; i < 500; ++i) {
    if (Load(&ctl_->ready) == 1) return absl::OkStatus();
    struct timespec ts = {0, 10 * 1000 * 1000};
    Futex(&ctl_->ready, FUTEX_WAIT, 0, &ts);
    siginfo_t info = {};
    if (waitid(static_cast<idtype_t>(3), source_pidfd_, &info,
               WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid != 0) {
      return absl::InternalError(
          absl::StrFormat("source stub exited (code %d status %d)",
                          info.si_code, info.si_status));
    }
  }
  return absl::DeadlineExceededError("source stub did not start");
}

void SystrapPlatform::ServiceThread(std::promise<absl::Status>* started) {
  absl::Status s = StartSource();
  bool ok = s.ok();
  started->set_value(std::move(s));
  if (!ok) return;
  WatchLoop();
}

void SystrapPlatform::WatchLoop() {
  epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // 0 = source stub
  epoll_ctl(epfd_, EPOLL_CTL_ADD, source_pidfd_, &ev);
  ev.data.u64 = ~0ull;  // stop
  epoll_ctl(epfd_, EPOLL_CTL_ADD, stop_fd_, &ev);
  for (;;) {
    epoll_event evs[16];
    int n = epoll_wait(epfd_, evs, 16, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < n; ++i) {
      uint64_t id = evs[i].data.u64;
      if (id == ~0ull) return;
      if (id == 0) {
        absl::MutexLock l(&watch_mu_);
        source_dead_ = true;
        epoll_ctl(epfd_, EPOLL_CTL_DEL, source_pidfd_, nullptr);
        Store(&ctl_->done_seq, kResultDead);
        FutexWake(&ctl_->done_seq, INT32_MAX);
        continue;
      }
      std::shared_ptr<Stub> stub;
      {
        absl::MutexLock l(&watch_mu_);
        auto it = watched_.find(id);
        if (it == watched_.end()) continue;
        stub = it->second.lock();
      }
      if (stub == nullptr) continue;
      Unwatch(id, stub->pidfd());
      stub->MarkDead();
    }
  }
}

namespace {

// One message of the source stub's socket: a byte and at most one fd.
// Self-referencing (the msghdr points into it): use as a local only.
struct OneFdMessage {
  char byte = 0;
  iovec iov = {};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr m = {};

  // recvmsg without blocking (EINTR retried); MSG_DONTWAIT|MSG_CMSG_CLOEXEC
  // is the only receive the seccomp allowlist has (recv is recvfrom, which
  // it kills).
  ssize_t Recv(int sock) {
    iov = {&byte, 1};
    m = {};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    ssize_t n;
    do {
      n = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    return n;
  }
};

}  // namespace

int SystrapPlatform::RecvReplyFd() {
  OneFdMessage msg;
  const ssize_t n = msg.Recv(source_sock_);
  msghdr& m = msg.m;
  cmsghdr* c = n == 1 ? CMSG_FIRSTHDR(&m) : nullptr;
  if (c == nullptr || c->cmsg_level != SOL_SOCKET ||
      c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)) ||
      (m.msg_flags & MSG_CTRUNC) != 0) {
    // Never leave a message queued: the next stub would get this one's
    // pipe. Whatever fd a message carried is closed; with no FD left in
    // the Sentry (EMFILE) the kernel dropped it and set MSG_CTRUNC.
    if (n == 1) CloseReceivedFds(m);
    DrainSourceSocket();
    return -1;
  }
  int fd;
  memcpy(&fd, CMSG_DATA(c), sizeof(fd));
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void SystrapPlatform::CloseReceivedFds(msghdr& m) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
        c->cmsg_len < CMSG_LEN(0)) {
      continue;
    }
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
      close(fd);
    }
  }
}

void SystrapPlatform::DrainSourceSocket() {
  for (;;) {
    OneFdMessage msg;
    if (msg.Recv(source_sock_) <= 0) return;
    CloseReceivedFds(msg.m);
  }
}

void SystrapPlatform::Unwatch(uint64_t id, int pidfd) {
  absl::MutexLock l(&watch_mu_);
  auto it = watched_.find(id);
  if (it == watched_.end()) return;
  watched_.erase(it);
  epoll_ctl(epfd_, EPOLL_CTL_DEL, pidfd, nullptr);
}

absl::Status SystrapPlatform::Init() {
  const SystrapFeatures& f = features_;
  cpuid_.Init(f.xfeatures, f.xsave_size, f.fsgsbase);
  if (cpu_set_t set; sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i) {
      if (CPU_ISSET(i, &set)) cpus_.push_back(i);
    }
  }
  spin_ticks_ = static_cast<uint64_t>(opts_.spin_ns * TscPerNs());
  {
    constexpr int kN = 2000;
    uint64_t t0 = __rdtsc();
    for (int i = 0; i < kN; ++i) _mm_pause();
    double pause_ns = (__rdtsc() - t0) / TscPerNs() / kN;
    if (pause_ns < 1) pause_ns = 1;
    stub_spin_iters_ = static_cast<uint32_t>(
        std::min(opts_.spin_ns / pause_ns, double{kMaxStubSpin}));
    stub_busy_spin_iters_ = static_cast<uint32_t>(
        std::min(opts_.busy_spin_ns / pause_ns, double{kMaxStubSpin}));
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return ErrnoStatus(errno, "socketpair");
  }
  source_sock_ = sv[0];
  source_sock_peer_ = sv[1];
  if (auto s = MapStubRegion(); !s.ok()) return s;
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (epfd_ < 0 || stop_fd_ < 0) return ErrnoStatus(errno, "epoll/eventfd");
  std::promise<absl::Status> started;
  auto fut = started.get_future();
  service_ = std::thread([this, &started] { ServiceThread(&started); });
  absl::Status s = fut.get();
  if (!s.ok()) {
    service_.join();
  }
  return s;
}

void SystrapPlatform::WriteGuestFilter(uint64_t shared_off, bool show) {
  auto* req = reinterpret_cast<stub_request*>(mf_->Internal(shared_off, kPage));
  if (req == nullptr) return;
  if (!show) {
    memset(&req->guest_filter, 0,
           sizeof(req->guest_filter) + sizeof(req->guest_insns));
    return;
  }
  memcpy(req->guest_insns, guest_filter_.data(),
         guest_filter_.size() * sizeof(sock_filter));
  req->guest_filter.len = static_cast<uint16_t>(guest_filter_.size());
  req->guest_filter.filter =
      base_ + STUB_REQUEST_OFF + offsetof(stub_request, guest_insns);
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

absl::StatusOr<std::unique_ptr<AddressSpace>>
SystrapPlatform::NewAddressSpace() {
  // The stub's FDs in the Sentry (reply pipe, data pipe's two ends, pidfd),
  // taken from the budget first: past it the guest's fork fails, and no
  // host call below runs out of FDs.
  HostFdHold fds = HostFdHold::Take(kStubHostFds);
  if (!fds.ok()) {
    return absl::ResourceExhaustedError("host FD budget: no room for a stub");
  }
  auto shared = mf_->Allocate(2 * kPage);
  if (!shared.ok()) return shared.status();
  // Thread 0 comes with the stub: its region, and its sigaltstack in the
  // (not yet mapped) request page.
  auto thread0 = mf_->Allocate(region_size_ - kPage);
  if (!thread0.ok()) {
    mf_->Free(*shared, 2 * kPage);
    return thread0.status();
  }
  auto free_all = [&] {
    mf_->Free(*shared, 2 * kPage);
    mf_->Free(*thread0, region_size_ - kPage);
  };
  {
    auto* req = reinterpret_cast<stub_request*>(mf_->Internal(*shared, kPage));
    req->ss_sp = base_ + STUB_THREADS_OFF + altstack_off_;
    req->ss_flags = 0;
    req->ss_size = region_size_ - altstack_off_;
  }
  WriteGuestFilter(*shared, true);  // thread 0's (Stub::filter_users_ = 1)
  long pid;
  int reply_fd = -1, data_rfd = -1, data_wfd = -1;
  {
    absl::MutexLock l(&source_mu_);
    {
      absl::MutexLock w(&watch_mu_);
      if (source_dead_) {
        free_all();
        return absl::UnavailableError("source stub died");
      }
    }
    ctl_->shared_off = *shared;
    ctl_->thread0_off = *thread0;
    uint32_t seq = ++source_seq_;
    Store(&ctl_->req_seq, seq);
    FutexWake(&ctl_->req_seq);
    for (;;) {
      uint32_t v = Load(&ctl_->done_seq);
      if (v == seq) break;
      if (v == kResultDead) {
        free_all();
        return absl::UnavailableError("source stub died");
      }
      Futex(&ctl_->done_seq, FUTEX_WAIT, v);
    }
    pid = ctl_->result;
    // The source sent the pipe ends before it cloned, so they are queued
    // (every one it sent is taken, so that none is left for the next stub).
    const int sent = ctl_->fd_sent;
    if (sent >= 1) reply_fd = RecvReplyFd();
    if (sent >= 2) data_rfd = RecvReplyFd();
    if (sent >= 3) data_wfd = RecvReplyFd();
    if (data_rfd < 0 || data_wfd < 0) {
      if (data_rfd >= 0) close(data_rfd);
      if (data_wfd >= 0) close(data_wfd);
      data_rfd = data_wfd = -1;
    }
  }
  auto close_data = [&] {
    if (data_rfd >= 0) close(data_rfd);
    if (data_wfd >= 0) close(data_wfd);
  };
  if (pid <= 0) {
    close_data();
    if (reply_fd >= 0) close(reply_fd);
    free_all();
    return ErrnoStatus(static_cast<int>(-pid), "clone stub");
  }
  int pidfd = reply_fd < 0 ? -1 : syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0) {
    int e = reply_fd < 0 ? EPROTO : errno;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close_data();
    if (reply_fd >= 0) close(reply_fd);
    free_all();
    return ErrnoStatus(e, "stub reply pipe / pidfd_open");
  }
  uint64_t id;
  {
    absl::MutexLock l(&watch_mu_);
    id = next_id_++;
  }
  // Lock order: a Stub's threads_mu_ before watch_mu_ (Kill unwatches).
  auto stub = std::make_shared<Stub>(this, pid, pidfd, reply_fd, data_rfd,
                                     data_wfd, *shared, id);
  stub->AdoptThread0(*thread0);
  stub->AdoptHostFds(std::move(fds));
  {
    absl::MutexLock l(&watch_mu_);
    watched_[id] = stub;
    epoll_event ev = {};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, pidfd, &ev);
  }
  // The stub unmaps the source's stack itself when it enters its loop; its
  // first request (the caller's first MapFile) waits for that.
  return std::unique_ptr<AddressSpace>(new SystrapAddressSpace(this, stub));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Platform>> NewSystrapPlatform(
    std::unique_ptr<MemoryFile> memory_file, const SystrapOptions& opts) {
  if (memory_file == nullptr) {
    return absl::InvalidArgumentError("no memory file");
  }
  auto p = std::make_unique<SystrapPlatform>(std::move(memory_file), opts);
  if (auto s = p->Init(); !s.ok()) return s;
  return std::unique_ptr<Platform>(std::move(p));
}

SystrapTimings TakeSystrapTimings(Context& ctx) {
  SystrapTimings out;
  auto* c = dynamic_cast<SystrapContext*>(&ctx);
  if (c == nullptr) return out;
  SystrapContext::Ticks t = c->TakeTicks();
  out.handoffs = t.handoffs;
  out.spins = t.spins;
  out.spin_hits = t.spin_hits;
  out.same_cpu = t.same_cpu;
  out.sentry_sleeps = t.sleeps;
  out.stub_sleeps = t.stub_sleeps;
  if (t.n == 0) return out;
  double k = 1.0 / TscPerNs() / t.n;
  out.round_trips = t.n;
  out.to_stub_ns = t.to_stub * k;
  out.guest_ns = t.guest * k;
  out.to_sentry_ns = t.to_sentry * k;
  out.sentry_ns = t.sentry * k;
  double* p50[] = {&out.to_stub_p50_ns, &out.guest_p50_ns,
                   &out.to_sentry_p50_ns, &out.sentry_p50_ns};
  for (int p = 0; p < SystrapContext::kPhases; ++p) {
    uint64_t total = 0, seen = 0;
    for (uint32_t c : t.hist[p]) total += c;
    for (int b = 0; b < SystrapContext::kHistBuckets && total > 0; ++b) {
      seen += t.hist[p][b];
      if (2 * seen >= total) {
        *p50[p] = SystrapContext::BucketMidNs(b);
        break;
      }
    }
  }
  return out;
}

pid_t SystrapStubPid(AddressSpace& as) {
  auto* s = dynamic_cast<SystrapAddressSpace*>(&as);
  return s == nullptr ? -1 : s->stub()->pid();
}

}  // namespace sandbox::platform
