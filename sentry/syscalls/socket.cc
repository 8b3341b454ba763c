// The socket syscalls: socket, socketpair, bind, listen, accept, accept4,
// connect, getsockname, getpeername, sendto, recvfrom, sendmsg, recvmsg,
// sendmmsg, recvmmsg, shutdown, setsockopt, getsockopt (net/socket.c).
//
// Handlers decode and validate what does not depend on the family, in
// Linux's order (flag bits, the descriptor: EBADF then ENOTSOCK, lengths,
// addresses, iovecs, control messages), and delegate to the socket
// (sentry/net/socket.h); the family decides the rest. The data goes
// straight between the guest's iovecs and the family (socket_io.h); the
// cmsg codec is sentry/net/cmsg.h.
#include "sentry/net/socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/pid_namespace.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/net/cmsg.h"
#include "sentry/net/family.h"
#include "sentry/net/namespace.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/socket_io.h"
#include "sentry/syscalls/vfs_util.h"

namespace sandbox::syscalls {
namespace {

using net::SockAddr;
using net::Socket;
using vfs::FileRef;

// Linux's MSG_CMSG_COMPAT (include/linux/socket.h; not in the C library's
// headers): a 32-bit caller's flag, EINVAL from a 64-bit one.
constexpr uint32_t kMsgCmsgCompat = 0x80000000u;
// Kernel-internal send flags a caller cannot set
// (MSG_INTERNAL_SENDMSG_FLAGS: MSG_SPLICE_PAGES, MSG_SENDPAGE_NOPOLICY,
// MSG_SENDPAGE_DECRYPTED).
constexpr int kMsgInternalSendFlags = 0x8000000 | 0x10000 | 0x100000;
constexpr int kMsgWaitForOne = 0x10000;  // MSG_WAITFORONE
constexpr int kSockTypeMask = 0xf;       // SOCK_TYPE_MASK
constexpr uint64_t kTaskSizeMax = 0x7ffffffff000;

struct SockRef {
  FileRef file;  // holds the socket for the call
  Socket* sock;
};

// sockfd_lookup_light: EBADF for a descriptor that is not open or is
// O_PATH (fdget), ENOTSOCK for a file that is not a socket.
KResult<SockRef> LookupSock(Task& t, Fd fd) {
  TRY(FileRef f, GetFile(t, fd.fd));
  Socket* s = net::AsSocket(*f);
  if (s == nullptr) return kENOTSOCK;
  return SockRef{std::move(f), s};
}

// move_addr_to_kernel: EINVAL for a length < 0 or > sizeof(sockaddr_storage),
// EFAULT for an unreadable address.
KResult<SockAddr> AddrFromUser(Task& t, uint64_t uaddr, int32_t len) {
  if (len < 0 || len > static_cast<int32_t>(SockAddr::kMaxLen)) {
    return kEINVAL;
  }
  SockAddr a;
  a.len = static_cast<uint32_t>(len);
  if (len > 0) TRY_VOID(t.CopyInFull(uaddr, a.bytes, a.len));
  return a;
}

// move_addr_to_user: reads the guest's length (EFAULT), EINVAL if
// negative, copies min(length, a.len) bytes and stores the real length.
KResult<void> AddrToUser(Task& t, const SockAddr& a, uint64_t uaddr,
                         uint64_t ulen) {
  TRY(int32_t len, t.CopyInObj<int32_t>(ulen));
  if (len > static_cast<int32_t>(a.len)) len = static_cast<int32_t>(a.len);
  if (len < 0) return kEINVAL;
  if (len > 0) TRY_VOID(t.CopyOutFull(uaddr, a.bytes, len));
  return t.CopyOutObj<int32_t>(ulen, static_cast<int32_t>(a.len));
}

bool AccessOk(uint64_t addr, uint64_t len) {
  return len <= kTaskSizeMax && addr <= kTaskSizeMax - len;
}

uint32_t OpenFlags(int sock_flags) {
  return O_RDWR | ((sock_flags & SOCK_NONBLOCK) ? O_NONBLOCK : 0);
}

// ---- socket(2), socketpair(2). ----

SyscallResult DoSocket(Task& t, SockDomain domain_arg, SockType type_arg,
                       int32_t protocol) {
  const int32_t domain = domain_arg.v, type = type_arg.v;
  const int flags = type & ~kSockTypeMask;
  if (flags & ~(SOCK_CLOEXEC | SOCK_NONBLOCK)) return kEINVAL;
  net::Caller c = net::CallerOf(t);
  TRY(net::SocketRef s, net::CreateSocket(c, domain, type & kSockTypeMask,
                                          protocol, OpenFlags(flags)));
  TRY(int fd, t.fd_table().Install(std::move(s), 0, flags & SOCK_CLOEXEC,
                                   NofileLimit(t)));
  return static_cast<uint64_t>(fd);
}

// socketpair(2): Linux takes both descriptors and stores their numbers in
// the guest's array before it makes the sockets, so EMFILE and EFAULT come
// before the family's errors (the array is probed, not clobbered, here).
SyscallResult DoSocketpair(Task& t, SockDomain domain_arg, SockType type_arg,
                           int32_t protocol, UserAddr sv) {
  const int32_t domain = domain_arg.v, type = type_arg.v;
  const int flags = type & ~kSockTypeMask;
  if (flags & ~(SOCK_CLOEXEC | SOCK_NONBLOCK)) return kEINVAL;
  const uint64_t limit = NofileLimit(t);
  TRY_VOID(t.fd_table().CheckFree(limit));
  int32_t probe[2];
  TRY_VOID(t.CopyInFull(sv.addr, probe, sizeof(probe)));
  TRY_VOID(t.CopyOutFull(sv.addr, probe, sizeof(probe)));
  net::Caller c = net::CallerOf(t);
  TRY(net::SocketPair p, net::CreateSocketPair(c, domain, type & kSockTypeMask,
                                               protocol, OpenFlags(flags)));
  const bool cloexec = flags & SOCK_CLOEXEC;
  TRY(int fd0, t.fd_table().Install(std::move(p.first), 0, cloexec, limit));
  KResult<int> fd1 =
      t.fd_table().Install(std::move(p.second), 0, cloexec, limit);
  if (!fd1.ok()) {
    (void)t.fd_table().Remove(fd0);
    return fd1.error();
  }
  const int32_t fds[2] = {fd0, fd1.value()};
  if (!t.CopyOutFull(sv.addr, fds, sizeof(fds)).ok()) {
    (void)t.fd_table().Remove(fd0);
    (void)t.fd_table().Remove(fd1.value());
    return kEFAULT;
  }
  return uint64_t{0};
}

// ---- bind, listen, connect, accept, names, shutdown. ----

// bind(2): the descriptor, then the address.
SyscallResult Bind(Task& t, Fd fd, UserSockAddr addr, int32_t len) {
  TRY(SockRef s, LookupSock(t, fd));
  TRY(SockAddr a, AddrFromUser(t, addr.addr, len));
  net::Caller c = net::CallerOf(t);
  TRY_VOID(s.sock->Bind(c, a));
  return uint64_t{0};
}

// listen(2): the backlog is cut to net.core.somaxconn (compared unsigned,
// so a negative backlog is somaxconn too).
SyscallResult Listen(Task& t, Fd fd, int32_t backlog) {
  TRY(SockRef s, LookupSock(t, fd));
  net::Caller c = net::CallerOf(t);
  const int64_t somaxconn = c.netns->sysctl().somaxconn.load();
  if (static_cast<uint32_t>(backlog) > somaxconn) {
    backlog = static_cast<int32_t>(somaxconn);
  }
  TRY_VOID(s.sock->Listen(c, backlog));
  return uint64_t{0};
}

// connect(2): since Linux 5.x (__sys_connect_file) the address is read
// before the descriptor is known to be a socket.
SyscallResult Connect(Task& t, Fd fd, UserSockAddr addr, int32_t len) {
  TRY(FileRef f, GetFile(t, fd.fd));
  TRY(SockAddr a, AddrFromUser(t, addr.addr, len));
  Socket* s = net::AsSocket(*f);
  if (s == nullptr) return kENOTSOCK;
  net::Caller c = net::CallerOf(t);
  KResult<void> r = s->Connect(c, a);
  if (!r.ok()) {
    return r.error() == kERestartSys ? s->IntrErrno(true) : r.error();
  }
  return uint64_t{0};
}

// accept4(2) (__sys_accept4_file): EBADF, the flags (EINVAL), a free
// descriptor (EMFILE), ENOTSOCK, then the family's accept. The peer's
// address is stored after the connection is taken (a bad length loses it,
// as on Linux).
SyscallResult DoAccept(Task& t, Fd fd, UserAddr uaddr, UserAddr ulen,
                       int32_t flags) {
  TRY(FileRef f, GetFile(t, fd.fd));
  if (flags & ~(SOCK_CLOEXEC | SOCK_NONBLOCK)) return kEINVAL;
  const uint64_t limit = NofileLimit(t);
  TRY_VOID(t.fd_table().CheckFree(limit));
  Socket* s = net::AsSocket(*f);
  if (s == nullptr) return kENOTSOCK;
  net::Caller c = net::CallerOf(t);
  SockAddr peer;
  KResult<FileRef> nf =
      s->Accept(c, OpenFlags(flags), uaddr.null() ? nullptr : &peer);
  if (!nf.ok()) {
    return nf.error() == kERestartSys ? s->IntrErrno(false) : nf.error();
  }
  if (!uaddr.null()) TRY_VOID(AddrToUser(t, peer, uaddr.addr, ulen.addr));
  TRY(int nfd, t.fd_table().Install(std::move(nf.value()), 0,
                                    flags & SOCK_CLOEXEC, limit));
  return static_cast<uint64_t>(nfd);
}

SyscallResult Accept(Task& t, Fd fd, UserAddr addr, UserAddr len) {
  return DoAccept(t, fd, addr, len, 0);
}

SyscallResult Accept4(Task& t, Fd fd, UserAddr addr, UserAddr len,
                      int32_t flags) {
  return DoAccept(t, fd, addr, len, flags);
}

// getsockname(2)/getpeername(2): the family's name (ENOTCONN, ...) first,
// then the guest's length.
SyscallResult GetName(Task& t, Fd fd, UserAddr addr, UserAddr len, bool peer) {
  TRY(SockRef s, LookupSock(t, fd));
  net::Caller c = net::CallerOf(t);
  TRY(SockAddr a, peer ? s.sock->GetPeerName(c) : s.sock->GetSockName(c));
  TRY_VOID(AddrToUser(t, a, addr.addr, len.addr));
  return uint64_t{0};
}

SyscallResult Getsockname(Task& t, Fd fd, UserAddr addr, UserAddr len) {
  return GetName(t, fd, addr, len, false);
}

SyscallResult Getpeername(Task& t, Fd fd, UserAddr addr, UserAddr len) {
  return GetName(t, fd, addr, len, true);
}

// shutdown(2): `how` outside SHUT_RD..SHUT_RDWR is EINVAL (unix_shutdown,
// inet_shutdown check it first).
SyscallResult Shutdown(Task& t, Fd fd, int32_t how) {
  TRY(SockRef s, LookupSock(t, fd));
  if (how < SHUT_RD || how > SHUT_RDWR) return kEINVAL;
  net::Caller c = net::CallerOf(t);
  TRY_VOID(s.sock->Shutdown(c, how));
  return uint64_t{0};
}

// ---- sendto, recvfrom. ----

// sendto(2): the buffer's range (import_ubuf: EFAULT) before the
// descriptor, the address after it.
SyscallResult Sendto(Task& t, Fd fd, UserInBuf buf, uint64_t len, int32_t flags,
                     UserSockAddr addr, int32_t addr_len) {
  if (!AccessOk(buf.addr, std::min(len, kSockMaxRwCount))) return kEFAULT;
  TRY(SockRef s, LookupSock(t, fd));
  net::SendRequest req;
  if (!addr.null()) {
    TRY(SockAddr a, AddrFromUser(t, addr.addr, addr_len));
    if (a.len > 0) req.to = a;
  }
  req.flags = flags & ~kMsgInternalSendFlags;
  GuestMessageIo io(t, buf.addr, len);
  TRY(size_t n, SockSend(t, *s.sock, io, req));
  return n;
}

// recvfrom(2): the address is stored only after a successful receive; an
// error storing it replaces the count.
SyscallResult Recvfrom(Task& t, Fd fd, UserAddr buf, uint64_t len,
                       int32_t flags, UserAddr addr, UserAddr addr_len) {
  if (!AccessOk(buf.addr, std::min(len, kSockMaxRwCount))) return kEFAULT;
  TRY(SockRef s, LookupSock(t, fd));
  net::RecvRequest req;
  req.flags = flags;
  req.want_from = !addr.null();
  GuestMessageIo io(t, buf.addr, len);
  TRY(size_t n, SockRecv(t, *s.sock, io, req));
  // Received descriptors have nowhere to go: scm_recv drops them.
  req.control.rights.clear();
  if (!addr.null()) TRY_VOID(AddrToUser(t, req.from, addr.addr, addr_len.addr));
  return n;
}

// ---- sendmsg, recvmsg and their batches. ----

// struct user_msghdr.
struct UserMsg {
  uint64_t name;
  int32_t namelen;
  int32_t pad;
  uint64_t iov;
  uint64_t iovlen;
  uint64_t control;
  uint64_t controllen;
  int32_t flags;
  int32_t pad2;
};
static_assert(sizeof(UserMsg) == sizeof(msghdr));
constexpr uint64_t kNamelenOff = offsetof(UserMsg, namelen);
constexpr uint64_t kControllenOff = offsetof(UserMsg, controllen);
constexpr uint64_t kFlagsOff = offsetof(UserMsg, flags);

// copy_msghdr_from_user + import_iovec: EFAULT, EINVAL for a negative
// msg_namelen (a longer one is cut to sizeof(sockaddr_storage)), EMSGSIZE
// for more than UIO_MAXIOV iovecs, then the iovecs' errors. `send` reads
// the address (move_addr_to_kernel).
struct DecodedMsg {
  UserMsg m;
  std::vector<abi::Iovec> iov;
  SockAddr name;
};
KResult<DecodedMsg> CopyInMsg(Task& t, uint64_t umsg, bool send) {
  DecodedMsg d;
  TRY(d.m, t.CopyInObj<UserMsg>(umsg));
  int32_t namelen = d.m.name == 0 ? 0 : d.m.namelen;
  if (namelen < 0) return kEINVAL;
  namelen = std::min<int32_t>(namelen, SockAddr::kMaxLen);
  if (send && d.m.name != 0 && namelen > 0) {
    TRY(d.name, AddrFromUser(t, d.m.name, namelen));
  }
  if (d.m.iovlen > static_cast<uint64_t>(abi::kUioMaxIov)) return kEMSGSIZE;
  TRY(d.iov, ImportIovecs(t, d.m.iov, d.m.iovlen));
  return d;
}

// The SCM_CREDENTIALS checks' view of the sender, and descriptor lookups
// for SCM_RIGHTS (fget_raw).
net::cmsg::SendContext SendContextOf(Task& t, const Socket& s) {
  net::cmsg::SendContext ctx;
  ctx.family = s.family();
  const kernel::Credentials& cr = t.creds();
  ctx.creds.tgid = static_cast<int32_t>(t.thread_group().tgid());
  ctx.creds.uid = cr.ruid;
  ctx.creds.euid = cr.euid;
  ctx.creds.suid = cr.suid;
  ctx.creds.gid = cr.rgid;
  ctx.creds.egid = cr.egid;
  ctx.creds.sgid = cr.sgid;
  ctx.creds.cap_sys_admin = cr.HasCapability(kernel::kCapSysAdmin);
  ctx.creds.cap_setuid = cr.HasCapability(kernel::kCapSetuid);
  ctx.creds.cap_setgid = cr.HasCapability(kernel::kCapSetgid);
  ctx.get_file = [&t](int fd) { return GetFileRaw(t, fd); };
  ctx.pid_exists = [&t](int32_t pid) {
    return pid > 0 && t.kernel().root_pid_namespace().Lookup(
                          static_cast<kernel::ThreadId>(pid)) != nullptr;
  };
  return ctx;
}

// ___sys_sendmsg for one message at `umsg`; `allowed` are the msghdr
// flags that count (MSG_EOR for sendmmsg). `left` gets whether some data
// was not sent (sendmmsg stops there).
KResult<size_t> SendOne(Task& t, Socket& s, uint64_t umsg, int flags,
                        int allowed, bool* left) {
  TRY(DecodedMsg d, CopyInMsg(t, umsg, /*send=*/true));
  // ____sys_sendmsg: the control buffer.
  if (d.m.controllen > INT32_MAX) return kENOBUFS;
  flags |= d.m.flags & allowed;
  net::SendRequest req;
  if (d.m.controllen > 0) {
    const size_t len = d.m.controllen;
    if (len > net::cmsg::kStackCtlLen && len >= net::cmsg::kOptmemMax) {
      return kENOBUFS;  // sock_kmalloc over optmem_max
    }
    std::vector<uint8_t> ctl(len);
    TRY_VOID(t.CopyInFull(d.m.control, ctl.data(), len));
    // scm_send, the first thing every family's sendmsg does.
    TRY(req.control, net::cmsg::ParseSend(ctl, SendContextOf(t, s)));
  }
  req.flags = flags & ~kMsgInternalSendFlags;
  if (d.name.len > 0) req.to = d.name;
  GuestMessageIo io(t, std::move(d.iov));
  TRY(size_t n, SockSend(t, s, io, req));
  if (left != nullptr) *left = n < io.size();
  return n;
}

// The receiver's side of the control messages: the guest's msg_control
// and its descriptor table.
class GuestRecvSink final : public net::cmsg::RecvSink {
 public:
  GuestRecvSink(Task& t, uint64_t control) : t_(t), control_(control) {}
  bool Write(size_t at, const void* src, size_t n) override {
    return t_.CopyOutFull(control_ + at, src, n).ok();
  }
  KResult<int> InstallFd(const FileRef& f, bool cloexec) override {
    return t_.fd_table().Install(f, 0, cloexec, NofileLimit(t_));
  }
  void RemoveFd(int fd) override { (void)t_.fd_table().Remove(fd); }

 private:
  Task& t_;
  uint64_t control_;
};

// ___sys_recvmsg for one message at `umsg`. `oob` gets whether the
// message was out-of-band data (recvmmsg stops there).
KResult<size_t> RecvOne(Task& t, Socket& s, uint64_t umsg, int flags,
                        bool* oob) {
  TRY(DecodedMsg d, CopyInMsg(t, umsg, /*send=*/false));
  net::RecvRequest req;
  req.flags = flags;
  req.want_from = d.m.name != 0;
  GuestMessageIo io(t, std::move(d.iov));
  TRY(size_t n, SockRecv(t, s, io, req));
  // scm_recv runs inside the family's recvmsg: descriptors are installed
  // even if storing the address below fails.
  GuestRecvSink sink(t, d.m.control);
  net::cmsg::RecvResult cr =
      net::cmsg::PutReceived(req.control, d.m.control != 0, d.m.controllen,
                             flags & MSG_CMSG_CLOEXEC, sink);
  if (d.m.name != 0) {
    TRY_VOID(AddrToUser(t, req.from, d.m.name, umsg + kNamelenOff));
  }
  const int32_t out_flags =
      req.msg_flags | cr.msg_flags | (flags & MSG_CMSG_CLOEXEC);
  TRY_VOID(t.CopyOutObj<int32_t>(umsg + kFlagsOff, out_flags));
  TRY_VOID(t.CopyOutObj<uint64_t>(umsg + kControllenOff, cr.controllen));
  if (oob != nullptr) *oob = out_flags & MSG_OOB;
  return n;
}

// sendmsg(2): MSG_CMSG_COMPAT is EINVAL before the lookup
// (forbid_cmsg_compat on 64-bit calls).
SyscallResult Sendmsg(Task& t, Fd fd, UserMsghdr msg, Flags flags) {
  const int f = static_cast<int>(flags.v);
  if (static_cast<uint32_t>(f) & kMsgCmsgCompat) return kEINVAL;
  TRY(SockRef s, LookupSock(t, fd));
  TRY(size_t n, SendOne(t, *s.sock, msg.addr, f, 0, nullptr));
  return n;
}

// recvmsg(2).
SyscallResult Recvmsg(Task& t, Fd fd, UserRecvMsghdr msg, Flags flags) {
  const int f = static_cast<int>(flags.v);
  if (static_cast<uint32_t>(f) & kMsgCmsgCompat) return kEINVAL;
  TRY(SockRef s, LookupSock(t, fd));
  TRY(size_t n, RecvOne(t, *s.sock, msg.addr, f, nullptr));
  return n;
}

// struct mmsghdr: a msghdr and the count of its message.
constexpr uint64_t kMmsgSize = sizeof(UserMsg) + 8;
constexpr uint64_t kMmsgLenOff = sizeof(UserMsg);

// sendmmsg(2): at most UIO_MAXIOV messages; stops at the first error (its
// errno only if nothing was sent) or at a message not sent whole.
SyscallResult Sendmmsg(Task& t, Fd fd, UserAddr msgs, uint32_t vlen,
                       Flags flags) {
  const int f = static_cast<int>(flags.v);
  if (static_cast<uint32_t>(f) & kMsgCmsgCompat) return kEINVAL;
  vlen = std::min<uint32_t>(vlen, abi::kUioMaxIov);
  TRY(SockRef s, LookupSock(t, fd));
  uint32_t datagrams = 0;
  Errno err = kEINVAL;
  bool failed = false;
  while (datagrams < vlen) {
    const uint64_t entry = msgs.addr + datagrams * kMmsgSize;
    bool left = false;
    KResult<size_t> r = SendOne(t, *s.sock, entry, f, MSG_EOR, &left);
    if (!r.ok()) {
      err = r.error();
      failed = true;
      break;
    }
    KResult<void> w = t.CopyOutObj<uint32_t>(entry + kMmsgLenOff,
                                             static_cast<uint32_t>(r.value()));
    if (!w.ok()) {
      err = w.error();
      failed = true;
      break;
    }
    ++datagrams;
    if (left) break;
  }
  if (datagrams != 0 || !failed) return uint64_t{datagrams};
  return err;
}

// recvmmsg(2): the timeout is read first (EFAULT) and checked (EINVAL);
// SO_ERROR pending ends the call at once. The timeout is checked after
// each datagram only (the documented Linux behaviour: a wait for the next
// one is not cut short by it). MSG_WAITFORONE makes every receive after
// the first MSG_DONTWAIT. An error after some datagrams is kept as
// SO_ERROR (unless EAGAIN) and the count returned.
SyscallResult Recvmmsg(Task& t, Fd fd, UserAddr msgs, uint32_t vlen,
                       Flags flags, UserPtr<abi::Timespec> timeout) {
  int f = static_cast<int>(flags.v);
  if (static_cast<uint32_t>(f) & kMsgCmsgCompat) return kEINVAL;
  abi::Timespec ts = {};
  int64_t end_ns = -1;
  if (!timeout.null()) {
    TRY(ts, timeout.CopyIn(t));
    if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) {
      return kEINVAL;
    }
    end_ns = vfs::MonotonicNowNs() +
             std::min<int64_t>(ts.tv_sec, INT64_MAX / 4000000000) * 1000000000 +
             ts.tv_nsec;
  }
  TRY(SockRef s, LookupSock(t, fd));
  Socket& sock = *s.sock;
  if (!(f & MSG_ERRQUEUE)) {
    int e = sock.TakeSoError();
    if (e != 0) return Errno(e);
  }
  uint32_t datagrams = 0;
  KResult<void> err = OkResult();
  while (datagrams < vlen) {
    const uint64_t entry = msgs.addr + uint64_t{datagrams} * kMmsgSize;
    bool oob = false;
    KResult<size_t> r = RecvOne(t, sock, entry, f & ~kMsgWaitForOne, &oob);
    if (!r.ok()) {
      err = r.error();
      break;
    }
    err = t.CopyOutObj<uint32_t>(entry + kMmsgLenOff,
                                 static_cast<uint32_t>(r.value()));
    if (!err.ok()) break;
    ++datagrams;
    if (f & kMsgWaitForOne) f |= MSG_DONTWAIT;
    if (end_ns >= 0) {
      const int64_t left = end_ns - vfs::MonotonicNowNs();
      if (left <= 0) {
        ts = {0, 0};
        break;
      }
      ts = {left / 1000000000, left % 1000000000};
    }
    if (oob) break;
  }
  if (!err.ok()) {
    if (datagrams == 0) return err.error();
    const Errno e = err.error();
    if (e != kEAGAIN && !e.IsRestart()) sock.SetSoError(e.number());
  }
  if (datagrams > 0 && !timeout.null()) TRY_VOID(timeout.CopyOut(t, ts));
  return uint64_t{datagrams};
}

// ---- setsockopt, getsockopt. ----

// The largest option value copied in or out (options are ints and small
// structs; netlink's membership list is the longest).
constexpr size_t kMaxOptLen = 4096;

// setsockopt(2): the lookup, then a negative length is EINVAL (Linux
// 6.x). The value is copied in up to where it stops being readable; a
// family that finds it too short (EINVAL) while the guest claimed at least
// an int's worth faulted on Linux: EFAULT.
SyscallResult Setsockopt(Task& t, Fd fd, int32_t level, int32_t name,
                         UserAddr val, int32_t len) {
  TRY(SockRef s, LookupSock(t, fd));
  if (len < 0) return kEINVAL;
  const size_t want = std::min<size_t>(len, kMaxOptLen);
  std::vector<uint8_t> buf(want);
  size_t got = 0;
  if (want > 0) {
    KResult<size_t> c = t.CopyIn(val.addr, buf.data(), want);
    got = c.ok() ? std::min(c.value(), want) : 0;
  }
  net::Caller c = net::CallerOf(t);
  KResult<void> r =
      s.sock->SetSockOpt(c, level, name, absl::MakeConstSpan(buf.data(), got));
  if (!r.ok()) {
    if (r.error() == kEINVAL && got < want &&
        len >= static_cast<int32_t>(sizeof(int))) {
      return kEFAULT;
    }
    return r.error();
  }
  return uint64_t{0};
}

// getsockopt(2): reads the length (EFAULT; EINVAL if negative), asks the
// socket for at most that many bytes, copies them out, then the new
// length. A family that has no options of `level` answers EOPNOTSUPP
// before Linux reads the length.
SyscallResult Getsockopt(Task& t, Fd fd, int32_t level, int32_t name,
                         UserAddr val, UserAddr ulen) {
  TRY(SockRef s, LookupSock(t, fd));
  net::Caller c = net::CallerOf(t);
  KResult<int32_t> len = t.CopyInObj<int32_t>(ulen.addr);
  if (!len.ok()) {
    if (level != SOL_SOCKET) {
      KResult<size_t> probe = s.sock->GetSockOpt(c, level, name, {});
      if (!probe.ok() && probe.error() == kEOPNOTSUPP) return kEOPNOTSUPP;
    }
    return kEFAULT;
  }
  if (len.value() < 0) return kEINVAL;
  std::vector<uint8_t> buf(std::min<size_t>(len.value(), kMaxOptLen));
  TRY(size_t n, s.sock->GetSockOpt(c, level, name, absl::MakeSpan(buf)));
  n = std::min(n, buf.size());
  if (n > 0) TRY_VOID(t.CopyOutFull(val.addr, buf.data(), n));
  TRY_VOID(t.CopyOutObj<int32_t>(ulen.addr, static_cast<int32_t>(n)));
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(DoSocket);
SANDBOX_SYSCALL_HANDLER(DoSocketpair);
SANDBOX_SYSCALL_HANDLER(Bind);
SANDBOX_SYSCALL_HANDLER(Listen);
SANDBOX_SYSCALL_HANDLER(Connect);
SANDBOX_SYSCALL_HANDLER(Accept);
SANDBOX_SYSCALL_HANDLER(Accept4);
SANDBOX_SYSCALL_HANDLER(Getsockname);
SANDBOX_SYSCALL_HANDLER(Getpeername);
SANDBOX_SYSCALL_HANDLER(Shutdown);
SANDBOX_SYSCALL_HANDLER(Sendto);
SANDBOX_SYSCALL_HANDLER(Recvfrom);
SANDBOX_SYSCALL_HANDLER(Sendmsg);
SANDBOX_SYSCALL_HANDLER(Recvmsg);
SANDBOX_SYSCALL_HANDLER(Sendmmsg);
SANDBOX_SYSCALL_HANDLER(Recvmmsg);
SANDBOX_SYSCALL_HANDLER(Setsockopt);
SANDBOX_SYSCALL_HANDLER(Getsockopt);

}  // namespace sandbox::syscalls
