// The systrap platform: guest code runs in stub processes; every guest
// syscall and fault arrives as a signal in the stub's handler, which hands the
// registers to the Sentry through shared memory (see stub_abi.h, stub.c).
//
// Start-up contract for the caller:
//  - Call NewSystrapPlatform before the Sentry installs its own seccomp
//    filter (the source stub every stub is cloned from is made then, and
//    must not inherit the Sentry's filter), and before dropping the ability
//    to fork. The platform keeps one long-lived service thread: it is the
//    parent of the source stub (stubs die with it, PR_SET_PDEATHSIG) and
//    watches the stubs' pidfds.
//  - The Sentry's seccomp allowlist must then allow what SeccompNeeds()
//    lists below.
//  - Stubs are children of the Sentry process: do not set SIGCHLD to SIG_IGN
//    (harmless, but stubs are then reaped by the kernel) and do not reap
//    unknown children with wait(-1).
//  - Destroy every AddressSpace and Context before the Platform.
#ifndef PLATFORM_SYSTRAP_SYSTRAP_H_
#define PLATFORM_SYSTRAP_SYSTRAP_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "platform/memory_file.h"
#include "platform/platform.h"

namespace sandbox::platform {

struct SystrapOptions {
  // Let Sentry and stub threads spin briefly for each other when a CPU is
  // free (much faster than a futex wake-up across CPUs in a VM).
  bool spin = true;
  // Upper bound of one spin, in nanoseconds.
  int spin_ns = 20000;
  // Upper bound of the stub's spin while the Sentry serves a request it
  // marked as long CPU-bound work (platform/long_work.h), in nanoseconds.
  int busy_spin_ns = 500000;
  // While not spinning, run each stub thread on the CPU of the Sentry thread
  // that waits for it.
  bool pin = true;
  // While spinning (with `pin`), run the stub thread on another CPU than the
  // Sentry thread's, so that both really spin: the scheduler otherwise
  // tends to keep them on one CPU, where spinning is useless (same-CPU
  // rule: they sleep instead). Off by default: moving a sleeping stub thread
  // to another vCPU costs a slow cross-vCPU wake-up (~100 us in some VMs),
  // which pays off only when a CPU is idle (perf/platform_NOTES.md).
  bool spread = false;
  // Syscall user dispatch as the fast path when the host has it (else every
  // guest syscall goes through the seccomp filter's SECCOMP_RET_TRAP).
  bool use_sud = true;
  // A guest thread that has not stopped this long after Interrupt() is
  // killed (kDead): only a hostile guest can block the interrupt signal
  // (see README.md). <= 0 waits forever.
  int interrupt_kill_ms = 1000;
};

// Host features the platform found. Tests use this to skip what the host
// cannot do.
struct SystrapFeatures {
  bool syscall_user_dispatch = false;
  bool cpuid_faulting = false;
  bool fsgsbase = false;
  uint64_t xfeatures = 0;     // user XSAVE features saved per thread
  uint32_t xsave_size = 0;    // bytes of a user-format XSAVE image
  uint64_t min_sigstksz = 0;  // AT_MINSIGSTKSZ
  int cpus = 1;
};

SystrapFeatures ProbeSystrapFeatures();

// Where a round trip's time goes over the round trips a Context served
// since the last call: means, and medians (from a histogram: 25 ns steps
// below 1 us, 250 ns steps above, capped at ~23 us), which are what a loaded
// machine does not distort (statistics; the stub's timestamps come from
// guest-writable memory and are only plausible, never trusted).
struct SystrapTimings {
  uint64_t round_trips = 0;  // with timestamps in order (see handoffs)
  double to_stub_ns = 0;     // Sentry hands off -> stub about to sigreturn
  double guest_ns = 0;       // sigreturn, guest code, trap, signal delivery
  double to_sentry_ns = 0;   // handler entry -> Sentry sees the event
  double sentry_ns = 0;      // Sentry sees the event -> next handoff
  double to_stub_p50_ns = 0;
  double guest_p50_ns = 0;
  double to_sentry_p50_ns = 0;
  double sentry_p50_ns = 0;
  // How the Sentry waited for the stub, over all `handoffs` (round trips;
  // `round_trips` above counts only those whose timestamps were in order,
  // which the phase split needs): spins begun, spins that saw the event,
  // spins skipped because the stub thread last ran on the Sentry thread's
  // CPU, futex sleeps.
  uint64_t handoffs = 0, spins = 0, spin_hits = 0, same_cpu = 0,
           sentry_sleeps = 0;
  // Futex waits of the stub thread for the Sentry's reply (counted by the
  // stub in its slot: plausible, not trusted).
  uint64_t stub_sleeps = 0;
};
SystrapTimings TakeSystrapTimings(Context& ctx);

// Creates the platform; takes ownership of the memory file.
absl::StatusOr<std::unique_ptr<Platform>> NewSystrapPlatform(
    std::unique_ptr<MemoryFile> memory_file, const SystrapOptions& opts = {});

// The host pid of the stub process behind `as` (for tests and `runsc ps`
// style diagnostics), or -1 if `as` is not a systrap address space.
pid_t SystrapStubPid(AddressSpace& as);

// The host syscalls the platform itself needs in the Sentry (for the
// Sentry's seccomp allowlist), as text: futex, tgkill(SIGCHLD),
// sched_setaffinity, pidfd_open, pidfd_send_signal(SIGKILL),
// waitid(P_PIDFD), epoll_ctl/epoll_wait, fallocate, ... (see probe.cc).
std::string SeccompNeeds();

// The same needs in a form the Sentry's allowlist takes directly (see
// sentry/confine/seccomp.h): syscall `nr` is needed when every check
// ((arg[index] & mask) == value) holds; several entries for one number are
// alternatives. Only what the platform calls after NewSystrapPlatform
// returned: creation happens before any filter.
struct HostSyscallNeed {
  struct Arg {
    unsigned index;
    uint64_t mask;
    uint64_t value;
  };
  int nr;
  std::vector<Arg> args;
  const char* why;
};
std::vector<HostSyscallNeed> SystrapSeccompSyscalls();

}  // namespace sandbox::platform

#endif  // PLATFORM_SYSTRAP_SYSTRAP_H_
