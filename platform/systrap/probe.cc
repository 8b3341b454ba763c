// The host feature probe (ProbeSystrapFeatures: syscall user dispatch,
// CPUID faulting, FSGSBASE, the XSAVE layout, CPUs), the TSC rate, and the
// host calls the Sentry's seccomp allowlist must allow for this platform
// (SeccompNeeds, SystrapSeccompSyscalls). No locks: the probe runs once (a
// function-local static).
#include <asm/prctl.h>
#include <cpuid.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "platform/systrap/systrap.h"
#include "platform/systrap/systrap_internal.h"

namespace sandbox::platform {
namespace {

constexpr uint64_t kXFeatureMaskXtileData = 1ull << 18;

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

}  // namespace

namespace systrap_internal {

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

}  // namespace systrap_internal

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

}  // namespace sandbox::platform
