// The seccomp programs of stub threads (see stub_abi.h for where they live).
#ifndef PLATFORM_SYSTRAP_SECCOMP_FILTERS_H_
#define PLATFORM_SYSTRAP_SECCOMP_FILTERS_H_

#include <linux/filter.h>
#include <stdint.h>

#include <vector>

namespace sandbox::platform {

struct StubFilterParams {
  uint64_t code_start = 0;  // [code_start, code_end): the stub's code
  uint64_t code_end = 0;
  uint64_t threads_start = 0;  // [threads_start, threads_end): futex words
  uint64_t threads_end = 0;
  int memfd = -1;
  int reply_fd = -1;  // the reply pipe's write end in stubs
  int data_fd = -1;   // the data pipe's read end in stubs (guest-side copies)
};

// Every stub thread: syscalls from outside the stub's code trap (SIGSYS);
// from inside it only what the stub's own code issues, with pinned arguments
// where they matter (mmap of the memory file, thread clone flags, write to
// the reply pipe); anything else kills the stub.
std::vector<sock_filter> StubProcessFilter(const StubFilterParams& p);

// Stacked by guest threads: from inside the stub's code only futex
// WAIT/WAKE on the thread regions, rt_sigreturn, sched_yield and
// arch_prctl(FS/GS) (in particular no write: only the syscall thread, which
// runs the process filter alone, can reply to the Sentry); from outside
// everything traps.
std::vector<sock_filter> StubGuestFilter(const StubFilterParams& p);

// Kernel constants the filters use, exported for tests.
inline constexpr uint32_t kStubThreadCloneFlags =
    0x100 | 0x200 | 0x400 | 0x800 | 0x10000 | 0x40000;  // VM FS FILES
                                                        // SIGHAND THREAD
                                                        // SYSVSEM

}  // namespace sandbox::platform

#endif  // PLATFORM_SYSTRAP_SECCOMP_FILTERS_H_
