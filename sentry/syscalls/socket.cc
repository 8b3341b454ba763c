// Sockets: none yet. socket(2) fails with EAFNOSUPPORT for every family, as
// a kernel built without networking does, so C libraries give up quietly
// (glibc's nscd and syslog lookups) instead of logging an unknown syscall.
// Networking comes with its own issue; then this file holds the family.
//
// Until then no descriptor is a socket, so every call on a socket
// descriptor fails as Linux's sockfd_lookup does for a file that is not
// one: EBADF for a descriptor that is not open (or is O_PATH: fdget),
// else ENOTSOCK, after the checks Linux makes before the lookup.
#include <errno.h>
#include <sys/socket.h>
#include <time.h>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/table.h"
#include "sentry/syscalls/vfs_util.h"

namespace sandbox::syscalls {
namespace {

// Linux's MSG_CMSG_COMPAT (include/linux/socket.h; not in the C library's
// headers): a 32-bit caller's flag, EINVAL from a 64-bit one.
constexpr uint32_t kMsgCmsgCompat = 0x80000000u;

// sockfd_lookup(): EBADF or, since nothing is a socket yet, ENOTSOCK.
SyscallResult NotASocket(Task& t, Fd fd) {
  TRY(vfs::FileRef f, GetFile(t, fd.fd));
  (void)f;
  return kENOTSOCK;
}

// bind(2), connect(2), getsockname(2), getpeername(2): the address is read
// or written only after the lookup.
SyscallResult AddrCall(Task& t, Fd fd, UserAddr addr, int32_t len) {
  (void)addr;
  (void)len;
  return NotASocket(t, fd);
}
// listen(2), shutdown(2).
SyscallResult IntCall(Task& t, Fd fd, int32_t arg) {
  (void)arg;
  return NotASocket(t, fd);
}
// accept(2).
SyscallResult Accept(Task& t, Fd fd, UserAddr addr, UserAddr len) {
  (void)addr;
  (void)len;
  return NotASocket(t, fd);
}
// accept4(2): unknown flags are EINVAL only for a socket (after the
// lookup since Linux 6.x's fd classes; 6.1 checked them first).
SyscallResult Accept4(Task& t, Fd fd, UserAddr addr, UserAddr len,
                      Flags flags) {
  (void)addr;
  (void)len;
  (void)flags;
  return NotASocket(t, fd);
}
// sendto(2), recvfrom(2).
SyscallResult XferTo(Task& t, Fd fd, UserAddr buf, uint64_t len, Flags flags,
                     UserAddr addr, UserAddr addr_len) {
  (void)buf;
  (void)len;
  (void)flags;
  (void)addr;
  (void)addr_len;
  return NotASocket(t, fd);
}
// sendmsg(2), recvmsg(2): MSG_CMSG_COMPAT is EINVAL before the lookup
// (forbid_cmsg_compat on 64-bit calls).
SyscallResult XferMsg(Task& t, Fd fd, UserAddr msg, Flags flags) {
  (void)msg;
  if ((static_cast<uint32_t>(flags.v) & kMsgCmsgCompat) != 0) return kEINVAL;
  return NotASocket(t, fd);
}
// sendmmsg(2).
SyscallResult Sendmmsg(Task& t, Fd fd, UserAddr msgs, uint32_t vlen,
                       Flags flags) {
  (void)msgs;
  (void)vlen;
  if ((static_cast<uint32_t>(flags.v) & kMsgCmsgCompat) != 0) return kEINVAL;
  return NotASocket(t, fd);
}
// recvmmsg(2): the timeout is read (EFAULT) before the lookup.
SyscallResult Recvmmsg(Task& t, Fd fd, UserAddr msgs, uint32_t vlen,
                       Flags flags, UserPtr<timespec> timeout) {
  (void)msgs;
  (void)vlen;
  if ((static_cast<uint32_t>(flags.v) & kMsgCmsgCompat) != 0) return kEINVAL;
  if (!timeout.null()) {
    TRY_VOID(timeout.CopyIn(t));
  }
  return NotASocket(t, fd);
}
// setsockopt(2): a negative length is EINVAL only for a socket (after the
// lookup, as Linux 6.18 does; 6.1 checked it first).
SyscallResult Setsockopt(Task& t, Fd fd, int32_t level, int32_t name,
                         UserAddr val, int32_t len) {
  (void)level;
  (void)name;
  (void)val;
  (void)len;
  return NotASocket(t, fd);
}
// getsockopt(2).
SyscallResult Getsockopt(Task& t, Fd fd, int32_t level, int32_t name,
                         UserAddr val, UserAddr len) {
  (void)level;
  (void)name;
  (void)val;
  (void)len;
  return NotASocket(t, fd);
}

}  // namespace

void RegisterSocketSyscalls(SyscallTable& t) {
  using namespace abi;  // NOLINT: nr::
  t.Unsupported(nr::socket, Errno(EAFNOSUPPORT),
                "no networking yet: every family is EAFNOSUPPORT");
  static constexpr char kNone[] = "no sockets yet: EBADF, else ENOTSOCK";
  t.Partial<&AddrCall>(nr::bind, kNone);
  t.Partial<&AddrCall>(nr::connect, kNone);
  t.Partial<&AddrCall>(nr::getsockname, kNone);
  t.Partial<&AddrCall>(nr::getpeername, kNone);
  t.Partial<&IntCall>(nr::listen, kNone);
  t.Partial<&IntCall>(nr::shutdown, kNone);
  t.Partial<&Accept>(nr::accept, kNone);
  t.Partial<&Accept4>(nr::accept4, kNone);
  t.Partial<&XferTo>(nr::sendto, kNone);
  t.Partial<&XferTo>(nr::recvfrom, kNone);
  t.Partial<&XferMsg>(nr::sendmsg, kNone);
  t.Partial<&XferMsg>(nr::recvmsg, kNone);
  t.Partial<&Sendmmsg>(nr::sendmmsg, kNone);
  t.Partial<&Recvmmsg>(nr::recvmmsg, kNone);
  t.Partial<&Setsockopt>(nr::setsockopt, kNone);
  t.Partial<&Getsockopt>(nr::getsockopt, kNone);
}

}  // namespace sandbox::syscalls
