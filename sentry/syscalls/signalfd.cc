// signalfd(2) and signalfd4(2): files in sentry/fs/signalfd, checks in
// Linux's order (fs/signalfd.c): a sizemask other than 8 is EINVAL, an
// unreadable mask EFAULT, flags other than SFD_CLOEXEC and SFD_NONBLOCK
// EINVAL; ufd -1 makes a new O_RDWR file, any other value must be an open
// descriptor (EBADF) of a signalfd (EINVAL), whose mask is replaced and
// which is returned. SIGKILL and SIGSTOP are silently left out of the
// mask. signalfd(2) is signalfd4 with no flags.
#include "sentry/fs/signalfd/signalfd.h"

#include <fcntl.h>
#include <sys/signalfd.h>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/task.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"

namespace sandbox::syscalls {
namespace {

using fs::signalfd::SignalFd;

static_assert(SFD_CLOEXEC == O_CLOEXEC && SFD_NONBLOCK == O_NONBLOCK);

SyscallResult DoSignalfd4(Task& t, int32_t ufd, UserAddr mask,
                          uint64_t sizemask, int32_t flags) {
  if (sizemask != sizeof(kernel::SigSet)) return kEINVAL;
  TRY(kernel::SigSet set, t.CopyInObj<kernel::SigSet>(mask.addr));
  if (flags & ~(SFD_CLOEXEC | SFD_NONBLOCK)) return kEINVAL;
  if (ufd == -1) {
    auto f = std::make_shared<SignalFd>(set, O_RDWR | (flags & SFD_NONBLOCK));
    TRY(int fd, t.fd_table().Install(std::move(f), 0, flags & SFD_CLOEXEC,
                                     NofileLimit(t)));
    return static_cast<uint64_t>(fd);
  }
  TRY(vfs::FileRef f, GetFile(t, ufd));
  auto* sf = dynamic_cast<SignalFd*>(f.get());
  if (sf == nullptr) return kEINVAL;
  sf->SetMask(set);
  return static_cast<uint64_t>(ufd);
}

// signalfd4(2).
SyscallResult Signalfd4(Task& t, int32_t ufd, UserAddr mask, uint64_t sizemask,
                        Flags flags) {
  return DoSignalfd4(t, ufd, mask, sizemask, static_cast<int32_t>(flags.v));
}

// signalfd(2).
SyscallResult Signalfd(Task& t, int32_t ufd, UserAddr mask, uint64_t sizemask) {
  return DoSignalfd4(t, ufd, mask, sizemask, 0);
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Signalfd);
SANDBOX_SYSCALL_HANDLER(Signalfd4);

}  // namespace sandbox::syscalls
