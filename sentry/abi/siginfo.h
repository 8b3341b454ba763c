// siginfo_t as the kernel lays it out on x86-64 (uapi asm-generic/
// siginfo.h): 128 bytes, the three ints of the head, then the union of the
// per-cause fields at offset 16. The Sentry's kernel keeps glibc's
// siginfo_t, whose layout is this one byte for byte (linux_test.cc checks
// it); code that writes single fields to the guest (waitid) names them
// here. No logic.
#ifndef SENTRY_ABI_SIGINFO_H_
#define SENTRY_ABI_SIGINFO_H_

#include <stddef.h>
#include <stdint.h>

namespace sandbox::abi {

// _sifields._kill (SI_USER, SI_TKILL).
struct SiginfoKill {
  int32_t pid;
  uint32_t uid;
};

// _sifields._timer (SI_TIMER).
struct SiginfoTimer {
  int32_t tid;
  int32_t overrun;
  uint64_t sigval;
  int32_t sys_private;
};

// _sifields._rt (SI_QUEUE, SI_MESGQ).
struct SiginfoRt {
  int32_t pid;
  uint32_t uid;
  uint64_t sigval;
};

// _sifields._sigchld (SIGCHLD).
struct SiginfoSigchld {
  int32_t pid;
  uint32_t uid;
  int32_t status;
  int64_t utime;
  int64_t stime;
};

// _sifields._sigfault (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP).
struct SiginfoSigfault {
  uint64_t addr;
};

// _sifields._sigpoll (SIGIO/SIGPOLL).
struct SiginfoSigpoll {
  int64_t band;
  int32_t fd;
};

// _sifields._sigsys (SIGSYS).
struct SiginfoSigsys {
  uint64_t call_addr;
  int32_t syscall;
  uint32_t arch;
};

inline constexpr size_t kSiginfoSize = 128;  // SI_MAX_SIZE

struct Siginfo {
  int32_t si_signo;
  int32_t si_errno;
  int32_t si_code;
  union {
    uint8_t bytes[kSiginfoSize - 16];
    SiginfoKill kill;
    SiginfoTimer timer;
    SiginfoRt rt;
    SiginfoSigchld sigchld;
    SiginfoSigfault sigfault;
    SiginfoSigpoll sigpoll;
    SiginfoSigsys sigsys;
  };
};
static_assert(sizeof(Siginfo) == kSiginfoSize);
static_assert(offsetof(Siginfo, si_code) == 8);
static_assert(offsetof(Siginfo, bytes) == 16);
static_assert(offsetof(Siginfo, sigchld) == 16);
static_assert(offsetof(SiginfoSigchld, status) == 8);  // si_status at 24
static_assert(offsetof(SiginfoSigchld, utime) == 16);  // si_utime at 32
static_assert(offsetof(SiginfoTimer, sigval) == 8);    // si_value at 24
static_assert(offsetof(SiginfoSigpoll, fd) == 8);      // si_fd at 24
static_assert(offsetof(SiginfoSigsys, arch) == 12);    // si_arch at 28

}  // namespace sandbox::abi

#endif  // SENTRY_ABI_SIGINFO_H_
