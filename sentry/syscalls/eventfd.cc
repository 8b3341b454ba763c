// eventfd(2) and eventfd2(2): sentry/fs/eventfd. The file is O_RDWR with
// O_NONBLOCK and O_CLOEXEC from EFD_NONBLOCK and EFD_CLOEXEC; other flags
// than those and EFD_SEMAPHORE are EINVAL; eventfd(2) takes no flags.
#include "sentry/fs/eventfd/eventfd.h"

#include <fcntl.h>
#include <sys/eventfd.h>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/task.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"

namespace sandbox::syscalls {
namespace {

static_assert(EFD_SEMAPHORE == fs::eventfd::kEfdSemaphore);
static_assert(EFD_CLOEXEC == O_CLOEXEC && EFD_NONBLOCK == O_NONBLOCK);

SyscallResult DoEventfd(Task& t, uint32_t count, uint64_t flags) {
  if (flags & ~uint64_t{EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE}) {
    return kEINVAL;
  }
  auto f = std::make_shared<fs::eventfd::EventFd>(
      count, flags & EFD_SEMAPHORE, O_RDWR | (flags & O_NONBLOCK));
  TRY(int fd, t.fd_table().Install(std::move(f), 0, flags & EFD_CLOEXEC,
                                   NofileLimit(t)));
  return static_cast<uint64_t>(fd);
}

// eventfd2(2).
SyscallResult Eventfd2(Task& t, uint32_t count, Flags flags) {
  return DoEventfd(t, count, flags.v & 0xffffffff);
}

// eventfd(2).
SyscallResult Eventfd(Task& t, uint32_t count) {
  return DoEventfd(t, count, 0);
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Eventfd);
SANDBOX_SYSCALL_HANDLER(Eventfd2);

}  // namespace sandbox::syscalls
