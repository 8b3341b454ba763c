// Errno: a Linux error number as a value type.
//
// Kernel paths return KResult<T> (result.h), which holds either a T or an
// Errno. The kernel-internal restart codes (ERESTARTSYS and friends, 512-516)
// are Errnos too; they never reach the guest: the syscall exit path turns
// them into EINTR or a restart.
#ifndef SENTRY_BASE_ERRNO_H_
#define SENTRY_BASE_ERRNO_H_

#include <errno.h>

#include <cstdint>
#include <string_view>

namespace sandbox {

// Kernel-internal codes (include/linux/errno.h). Never returned to the guest.
inline constexpr int kERESTARTSYS = 512;
inline constexpr int kERESTARTNOINTR = 513;
inline constexpr int kERESTARTNOHAND = 514;
inline constexpr int kENOIOCTLCMD = 515;
inline constexpr int kERESTART_RESTARTBLOCK = 516;

class Errno {
 public:
  constexpr explicit Errno(int number) : number_(number) {}

  constexpr int number() const { return number_; }
  // The symbolic name ("ENOENT"), or "E?" for an unknown number.
  std::string_view name() const;
  // The message strerror(3) gives ("No such file or directory").
  std::string_view message() const;
  // True for ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND,
  // ERESTART_RESTARTBLOCK.
  constexpr bool IsRestart() const {
    return number_ == kERESTARTSYS || number_ == kERESTARTNOINTR ||
           number_ == kERESTARTNOHAND || number_ == kERESTART_RESTARTBLOCK;
  }

  friend constexpr bool operator==(Errno a, Errno b) {
    return a.number_ == b.number_;
  }

 private:
  int number_;
};

// Name of errno `number` ("ENOENT"), or nullptr if unknown.
const char* ErrnoName(int number);

// Preallocated constants, so call sites read `return kENOENT;`.
#define SANDBOX_ERRNO_CONSTANT(name) inline constexpr Errno k##name{name};
SANDBOX_ERRNO_CONSTANT(EPERM)
SANDBOX_ERRNO_CONSTANT(ENOENT)
SANDBOX_ERRNO_CONSTANT(ESRCH)
SANDBOX_ERRNO_CONSTANT(EINTR)
SANDBOX_ERRNO_CONSTANT(EIO)
SANDBOX_ERRNO_CONSTANT(ENXIO)
SANDBOX_ERRNO_CONSTANT(E2BIG)
SANDBOX_ERRNO_CONSTANT(ENOEXEC)
SANDBOX_ERRNO_CONSTANT(EBADF)
SANDBOX_ERRNO_CONSTANT(ECHILD)
SANDBOX_ERRNO_CONSTANT(EAGAIN)
SANDBOX_ERRNO_CONSTANT(ENOMEM)
SANDBOX_ERRNO_CONSTANT(EACCES)
SANDBOX_ERRNO_CONSTANT(EFAULT)
SANDBOX_ERRNO_CONSTANT(EBUSY)
SANDBOX_ERRNO_CONSTANT(EEXIST)
SANDBOX_ERRNO_CONSTANT(EXDEV)
SANDBOX_ERRNO_CONSTANT(ENODEV)
SANDBOX_ERRNO_CONSTANT(ENOTDIR)
SANDBOX_ERRNO_CONSTANT(EISDIR)
SANDBOX_ERRNO_CONSTANT(EINVAL)
SANDBOX_ERRNO_CONSTANT(ENFILE)
SANDBOX_ERRNO_CONSTANT(EMFILE)
SANDBOX_ERRNO_CONSTANT(ENOTTY)
SANDBOX_ERRNO_CONSTANT(ETXTBSY)
SANDBOX_ERRNO_CONSTANT(EFBIG)
SANDBOX_ERRNO_CONSTANT(ENOSPC)
SANDBOX_ERRNO_CONSTANT(ESPIPE)
SANDBOX_ERRNO_CONSTANT(EROFS)
SANDBOX_ERRNO_CONSTANT(EMLINK)
SANDBOX_ERRNO_CONSTANT(EPIPE)
SANDBOX_ERRNO_CONSTANT(EDOM)
SANDBOX_ERRNO_CONSTANT(ERANGE)
SANDBOX_ERRNO_CONSTANT(EDEADLK)
SANDBOX_ERRNO_CONSTANT(ENAMETOOLONG)
SANDBOX_ERRNO_CONSTANT(ENOLCK)
SANDBOX_ERRNO_CONSTANT(ENOSYS)
SANDBOX_ERRNO_CONSTANT(ENOTEMPTY)
SANDBOX_ERRNO_CONSTANT(ELOOP)
SANDBOX_ERRNO_CONSTANT(ENODATA)
SANDBOX_ERRNO_CONSTANT(EOVERFLOW)
SANDBOX_ERRNO_CONSTANT(ENOTSOCK)
SANDBOX_ERRNO_CONSTANT(EOPNOTSUPP)
SANDBOX_ERRNO_CONSTANT(ETIMEDOUT)
SANDBOX_ERRNO_CONSTANT(ECONNREFUSED)
SANDBOX_ERRNO_CONSTANT(ENOTSUP)
#undef SANDBOX_ERRNO_CONSTANT

inline constexpr Errno kERestartSys{kERESTARTSYS};
inline constexpr Errno kERestartNoIntr{kERESTARTNOINTR};
inline constexpr Errno kERestartNoHand{kERESTARTNOHAND};
inline constexpr Errno kERestartRestartBlock{kERESTART_RESTARTBLOCK};

}  // namespace sandbox

#endif  // SENTRY_BASE_ERRNO_H_
