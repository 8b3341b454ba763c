#include "platform/memory_file.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"

namespace sandbox::platform {
namespace {

constexpr uint64_t kPageSize = 4096;

absl::Status ErrnoStatus(int e, const char* what) {
  return absl::Status(absl::ErrnoToStatusCode(e),
                      absl::StrFormat("%s: %s", what, strerror(e)));
}

// ---------------------------------------------------------------------------
// Fault-tolerant copies.
//
// A copy through the file mapping runs with a thread-local jump buffer armed
// and the faulting range recorded. The process-wide SIGBUS/SIGSEGV handler
// jumps back if the fault address lies in the armed range on the faulting
// thread; any other fault is passed to the previously installed handler (or
// to the default action), so other users of these signals keep working.

struct CopyGuard {
  sigjmp_buf env;
  uintptr_t start = 0;
  uintptr_t end = 0;
  volatile sig_atomic_t armed = 0;
};

thread_local CopyGuard tls_guard;

struct sigaction g_old_bus;
struct sigaction g_old_segv;

void Chain(const struct sigaction& old, int sig, siginfo_t* info, void* uc) {
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction != nullptr) {
      old.sa_sigaction(sig, info, uc);
      return;
    }
  } else if (old.sa_handler == SIG_IGN) {
    return;
  } else if (old.sa_handler != SIG_DFL) {
    old.sa_handler(sig);
    return;
  }
  // Default action: restore it and return, so the fault repeats and kills us
  // with the right signal.
  signal(sig, SIG_DFL);
}

void FaultHandler(int sig, siginfo_t* info, void* uc) {
  CopyGuard& g = tls_guard;
  uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  if (g.armed && addr >= g.start && addr < g.end) {
    g.armed = 0;
    siglongjmp(g.env, 1);
  }
  Chain(sig == SIGBUS ? g_old_bus : g_old_segv, sig, info, uc);
}

void InstallFaultHandlerOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa = {};
    sa.sa_sigaction = FaultHandler;
    // SA_NODEFER: we leave the handler by siglongjmp without restoring the
    // mask, so the signal must not stay blocked.
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_old_bus);
    sigaction(SIGSEGV, &sa, &g_old_segv);
  });
}

enum class Op { kRead, kWrite, kZero };

// Copies with faults on [base, base+n) turned into a false return.
bool SafeCopy(Op op, uint8_t* base, void* other, size_t n) {
  CopyGuard& g = tls_guard;
  g.start = reinterpret_cast<uintptr_t>(base);
  g.end = g.start + n;
  if (sigsetjmp(g.env, 0) != 0) {
    return false;
  }
  g.armed = 1;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  switch (op) {
    case Op::kRead:
      memcpy(other, base, n);
      break;
    case Op::kWrite:
      memcpy(base, other, n);
      break;
    case Op::kZero:
      memset(base, 0, n);
      break;
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  g.armed = 0;
  return true;
}

// memmove(dst, src, n) with faults on either range turned into a false
// return (the guard spans both).
bool SafeMove(uint8_t* dst, const uint8_t* src, size_t n) {
  CopyGuard& g = tls_guard;
  g.start = reinterpret_cast<uintptr_t>(std::min<const uint8_t*>(dst, src));
  g.end = reinterpret_cast<uintptr_t>(std::max<const uint8_t*>(dst, src)) + n;
  if (sigsetjmp(g.env, 0) != 0) {
    return false;
  }
  g.armed = 1;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  memmove(dst, src, n);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  g.armed = 0;
  return true;
}

class MemoryFileImpl final : public MemoryFile {
 public:
  MemoryFileImpl(int fd, uint8_t* base, uint64_t size)
      : fd_(fd), base_(base), size_(size) {
    free_[0] = size;
  }
  ~MemoryFileImpl() override {
    munmap(base_, size_);
    close(fd_);
  }

  int fd() const override { return fd_; }

  absl::StatusOr<uint64_t> Allocate(uint64_t length) override {
    if (length == 0 || length % kPageSize != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("bad allocation length %d", length));
    }
    // The OOM handler may free memory (a killed process's pages); a few
    // rounds, then the caller gets the failure.
    constexpr int kOomRounds = 3;
    for (int round = 0;; ++round) {
      OomHandler oom;
      {
        absl::MutexLock l(&mu_);
        if (limit_ == 0 || length <= limit_ - std::min(limit_, allocated_)) {
          // First fit over the free runs, ordered by offset.
          for (auto it = free_.begin(); it != free_.end(); ++it) {
            if (it->second < length) continue;
            uint64_t off = it->first;
            uint64_t rest = it->second - length;
            free_.erase(it);
            if (rest != 0) free_[off + length] = rest;
            allocated_ += length;
            return off;
          }
          return absl::ResourceExhaustedError(absl::StrFormat(
              "memory file full (%d bytes allocated)", allocated_));
        }
        oom = oom_;
      }
      if (round >= kOomRounds || oom == nullptr || !oom(length)) {
        limit_failures_.fetch_add(1, std::memory_order_relaxed);
        return absl::ResourceExhaustedError(
            absl::StrFormat("memory limit reached (%d bytes)", Limit()));
      }
    }
  }

  void SetLimit(uint64_t bytes) override {
    absl::MutexLock l(&mu_);
    limit_ = bytes;
  }
  uint64_t Limit() const override {
    absl::MutexLock l(&mu_);
    return limit_;
  }
  void SetOomHandler(OomHandler handler) override {
    absl::MutexLock l(&mu_);
    oom_ = std::move(handler);
  }
  uint64_t LimitFailures() const override {
    return limit_failures_.load(std::memory_order_relaxed);
  }

  void Free(uint64_t offset, uint64_t length) override {
    if (length == 0) return;
    if (offset % kPageSize != 0 || length % kPageSize != 0 || offset > size_ ||
        length > size_ - offset) {
      return;  // Caller bug; refuse rather than corrupt the allocator.
    }
    // Release the pages first: the range must read as zeroes when reused.
    fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
    absl::MutexLock l(&mu_);
    // Refuse ranges that overlap free space (double free).
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && next->first < offset + length) return;
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second > offset) return;
    }
    uint64_t start = offset, len = length;
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        start = prev->first;
        len += prev->second;
        free_.erase(prev);
      }
    }
    if (next != free_.end() && next->first == offset + length) {
      len += next->second;
      free_.erase(next);
    }
    free_[start] = len;
    allocated_ -= length;
  }

  bool Read(uint64_t offset, void* dst, size_t n) override {
    if (!InBounds(offset, n)) return false;
    if (n == 0) return true;
    if (n >= kSyscallCopyMin) {
      return FileCopy(/*write=*/false, offset, dst, n) ||
             SafeCopy(Op::kRead, base_ + offset, dst, n);
    }
    return SafeCopy(Op::kRead, base_ + offset, dst, n);
  }
  bool Write(uint64_t offset, const void* src, size_t n) override {
    if (!InBounds(offset, n)) return false;
    if (n == 0) return true;
    if (n >= kSyscallCopyMin) {
      return FileCopy(/*write=*/true, offset, const_cast<void*>(src), n) ||
             SafeCopy(Op::kWrite, base_ + offset, const_cast<void*>(src), n);
    }
    return SafeCopy(Op::kWrite, base_ + offset, const_cast<void*>(src), n);
  }
  bool Zero(uint64_t offset, size_t n) override {
    if (!InBounds(offset, n)) return false;
    if (n == 0) return true;
    // Whole pages of a large range go back to the host instead.
    uint64_t first = (offset + kPageSize - 1) & ~(kPageSize - 1);
    uint64_t last = (offset + n) & ~(kPageSize - 1);
    if (last > first && last - first >= 16 * kPageSize) {
      if (fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, first,
                    last - first) == 0) {
        return SafeCopy(Op::kZero, base_ + offset, nullptr, first - offset) &&
               SafeCopy(Op::kZero, base_ + last, nullptr, offset + n - last);
      }
    }
    return SafeCopy(Op::kZero, base_ + offset, nullptr, n);
  }

  bool Copy(uint64_t dst, uint64_t src, size_t n) override {
    if (!InBounds(dst, n) || !InBounds(src, n)) return false;
    if (n == 0 || dst == src) return true;
    return SafeMove(base_ + dst, base_ + src, n);
  }

  uint8_t* Internal(uint64_t offset, size_t n) override {
    if (!InBounds(offset, n)) return nullptr;
    return base_ + offset;
  }

  uint64_t AllocatedBytes() const override {
    absl::MutexLock l(&mu_);
    return allocated_;
  }

  bool CouldFit(uint64_t bytes) const override {
    absl::MutexLock l(&mu_);
    const uint64_t bound = limit_ != 0 ? std::min(limit_, size_) : size_;
    return allocated_ <= bound && bytes <= bound - allocated_;
  }

 private:
  // Copies of at least this many bytes go through pread/pwrite on the memfd
  // instead of the Sentry's mapping: the kernel then finds (or allocates)
  // the pages itself, where a memcpy takes one host page fault per page the
  // Sentry has not touched yet: guest pages (written through the stubs'
  // mappings) and fresh pages. A page fault is an exception round trip,
  // several microseconds in a virtual machine; one syscall copies 16 pages
  // for about the cost of one.
  static constexpr size_t kSyscallCopyMin = 16 << 10;

  // pread/pwrite of [offset, offset+n); false (nothing to rely on: the
  // caller copies through the mapping instead) on any error.
  bool FileCopy(bool write, uint64_t offset, void* buf, size_t n) {
    auto* p = static_cast<uint8_t*>(buf);
    size_t done = 0;
    while (done < n) {
      ssize_t r = write ? pwrite(fd_, p + done, n - done,
                                 static_cast<off_t>(offset + done))
                        : pread(fd_, p + done, n - done,
                                static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      done += static_cast<size_t>(r);
    }
    return true;
  }

  bool InBounds(uint64_t offset, size_t n) const {
    return offset <= size_ && n <= size_ - offset;
  }

  const int fd_;
  uint8_t* const base_;
  const uint64_t size_;
  mutable absl::Mutex mu_;
  // Free runs: offset -> length, disjoint and coalesced.
  std::map<uint64_t, uint64_t> free_ ABSL_GUARDED_BY(mu_);
  uint64_t allocated_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t limit_ ABSL_GUARDED_BY(mu_) = 0;  // 0: none
  OomHandler oom_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> limit_failures_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<MemoryFile>> MemoryFile::Create(
    uint64_t max_size) {
  if (max_size == 0 || max_size % kPageSize != 0) {
    return absl::InvalidArgumentError("memory file size must be page-aligned");
  }
  InstallFaultHandlerOnce();
  int fd = memfd_create("sandbox-memory", MFD_CLOEXEC);
  if (fd < 0) {
    return ErrnoStatus(errno, "memfd_create");
  }
  if (ftruncate(fd, max_size) != 0) {
    int e = errno;
    close(fd);
    return ErrnoStatus(e, "ftruncate memory file");
  }
  void* p = mmap(nullptr, max_size, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    close(fd);
    return ErrnoStatus(e, "mmap memory file");
  }
  return std::unique_ptr<MemoryFile>(
      new MemoryFileImpl(fd, static_cast<uint8_t*>(p), max_size));
}

}  // namespace sandbox::platform
