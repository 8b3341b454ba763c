// SystrapPlatform: the stub region (blob, params block, source control
// page), the source stub and the service thread that forks it and watches
// every stub's pidfd (reaping the dead), the creation of stubs
// (NewAddressSpace: the reply and data pipes received from the source), the
// guest filter in the request page, and the factory NewSystrapPlatform.
// Locking: source_mu_ (one stub creation at a time), watch_mu_ (the watched
// stubs; taken after a Stub's locks: Stub::Kill unwatches).
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
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

#include <algorithm>
#include <future>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "platform/systrap/seccomp_filters.h"
#include "platform/systrap/systrap.h"
#include "platform/systrap/systrap_internal.h"

extern "C" const void* sandbox_stub_blob(uint64_t* len,
                                         uint64_t* source_main_off);

namespace sandbox::platform::systrap_internal {

namespace {

// Bound on any spin count the stub reads from its (guest-writable) slot.
constexpr uint32_t kMaxStubSpin = 1u << 24;
// Host FDs a stub costs the Sentry: its reply pipe's read end, its data
// pipe's two ends and its pidfd (HostFdBudget).
constexpr size_t kStubHostFds = 4;

static_assert(sizeof(stub_regs) == sizeof(user_regs_struct));
static_assert(sizeof(stub_slot) == STUB_SLOT_HEADER);
static_assert(offsetof(stub_params, code_start) == STUB_P_CODE_START);
static_assert(offsetof(stub_request, guest_filter) == STUB_REQ_FILTER_OFF);
static_assert(sizeof(stub_request) <= kPage);
static_assert(sizeof(stub_source_ctl) <= kPage);
static_assert(sizeof(stub_params) <= STUB_PARAMS_SIZE);
static_assert(sizeof(sock_filter) == sizeof(stub_sock_filter));

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

}  // namespace

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

}  // namespace sandbox::platform::systrap_internal

namespace sandbox::platform {

absl::StatusOr<std::unique_ptr<Platform>> NewSystrapPlatform(
    std::unique_ptr<MemoryFile> memory_file, const SystrapOptions& opts) {
  if (memory_file == nullptr) {
    return absl::InvalidArgumentError("no memory file");
  }
  auto p = std::make_unique<systrap_internal::SystrapPlatform>(
      std::move(memory_file), opts);
  if (auto s = p->Init(); !s.ok()) return s;
  return std::unique_ptr<Platform>(std::move(p));
}

}  // namespace sandbox::platform
