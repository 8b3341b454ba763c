// The kernel's view of the syscall table (implemented in sentry/syscalls),
// so that sentry/kernel does not depend on the handlers.
#ifndef SENTRY_KERNEL_SYSCALL_DISPATCHER_H_
#define SENTRY_KERNEL_SYSCALL_DISPATCHER_H_

#include <stdint.h>

#include "sentry/base/result.h"

namespace sandbox::kernel {

class Task;

// The six syscall argument registers (rdi, rsi, rdx, r10, r8, r9).
struct SyscallArgs {
  uint64_t v[6] = {};
};

class SyscallDispatcher {
 public:
  virtual ~SyscallDispatcher() = default;
  // Runs syscall `nr` for `task`; the result is the value for rax or an
  // Errno (restart codes included: the run loop resolves them).
  virtual KResult<uint64_t> Dispatch(Task& task, uint64_t nr,
                                     const SyscallArgs& args) = 0;
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_SYSCALL_DISPATCHER_H_
