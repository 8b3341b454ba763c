#include "sentry/net/socket.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/net/namespace.h"
#include "sentry/net/sockfs.h"
#include "sentry/net/stack/ifioctl.h"

namespace sandbox::net {

struct Socket::Stored {};

namespace {

abi::Timespec Now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return {ts.tv_sec, ts.tv_nsec};
}

}  // namespace

Caller CallerOf(kernel::Task& t) {
  Caller c;
  c.io = t.io_context();
  c.task = &t;
  const kernel::Credentials& cr = t.creds();
  c.ucred = {static_cast<int32_t>(t.thread_group().tgid()), cr.euid, cr.egid};
  c.netns = &NetNamespace::Root();
  return c;
}

Caller CurrentCaller(const vfs::IoContext& ctx) {
  kernel::Task* t = kernel::Task::Current();
  Caller c;
  if (t != nullptr) c = CallerOf(*t);
  c.io = ctx;
  c.netns = &NetNamespace::Root();
  return c;
}

Socket::Socket(int family, int type, int protocol, uint32_t flags,
               const Ucred& owner)
    : vfs::FileDescription(flags),
      family_(family),
      type_(type),
      protocol_(protocol),
      ino_(NextSockfsIno()),
      owner_(owner),
      ctime_(Now()) {
  NetSysctls& s = NetNamespace::Root().sysctl();
  sndbuf_ = s.wmem_default.load();
  rcvbuf_ = s.rmem_default.load();
}

Socket::~Socket() = default;

KResult<void> Socket::Bind(Caller&, const SockAddr&) { return kEOPNOTSUPP; }
KResult<void> Socket::Listen(Caller&, int) { return kEOPNOTSUPP; }
KResult<vfs::FileRef> Socket::Accept(Caller&, uint32_t, SockAddr*) {
  return kEOPNOTSUPP;
}
KResult<void> Socket::Connect(Caller&, const SockAddr&) { return kEOPNOTSUPP; }
KResult<SockAddr> Socket::GetSockName(Caller&) { return kEOPNOTSUPP; }
KResult<SockAddr> Socket::GetPeerName(Caller&) { return kEOPNOTSUPP; }
KResult<void> Socket::Shutdown(Caller&, int) { return kEOPNOTSUPP; }
KResult<size_t> Socket::SendMsg(Caller&, MessageIo&, SendRequest&) {
  return kEOPNOTSUPP;
}
KResult<size_t> Socket::RecvMsg(Caller&, MessageIo&, RecvRequest&) {
  return kEOPNOTSUPP;
}

KResult<void> Socket::SetSockOpt(Caller&, int level, int name,
                                 absl::Span<const uint8_t> val) {
  (void)level, (void)name, (void)val;
  return kENOPROTOOPT;  // the generic SOL_SOCKET options come next
}

KResult<size_t> Socket::GetSockOpt(Caller&, int level, int name,
                                   absl::Span<uint8_t> val) {
  (void)level, (void)name, (void)val;
  return kENOPROTOOPT;
}

KResult<uint64_t> Socket::SocketIoctl(Caller&, uint32_t, uint64_t) {
  return kENOTTY;
}

KResult<size_t> Socket::Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) {
  Caller c = CurrentCaller(ctx);
  SpanIo io(dst);
  RecvRequest req;
  return RecvMsg(c, io, req);
}

KResult<size_t> Socket::Write(vfs::IoContext& ctx,
                              absl::Span<const uint8_t> src) {
  Caller c = CurrentCaller(ctx);
  SpanIo io(src);
  SendRequest req;
  return SendMsg(c, io, req);
}

KResult<abi::Stat> Socket::Stat() {
  abi::Stat st = {};
  st.st_dev = Sockfs().dev();
  st.st_ino = ino_;
  st.st_nlink = 1;
  st.st_mode = S_IFSOCK | 0777;
  st.st_uid = owner_.uid;
  st.st_gid = owner_.gid;
  st.st_blksize = 4096;
  st.st_atim = st.st_mtim = st.st_ctim = ctime_;
  return st;
}

KResult<uint64_t> Socket::Ioctl(vfs::IoContext& ctx, uint32_t cmd,
                                uint64_t arg) {
  Caller c = CurrentCaller(ctx);
  // sock_do_ioctl -> dev_ioctl: the interface ioctls of every socket.
  if (stack::IsInterfaceIoctl(cmd)) {
    constexpr int kCapNetAdmin = 12;
    bool admin = ctx.creds == nullptr || ctx.creds->HasCapability(kCapNetAdmin);
    return stack::InterfaceIoctl(c.netns->Get<stack::Interfaces>(), ctx.user,
                                 admin, cmd, arg);
  }
  return SocketIoctl(c, cmd, arg);
}

int64_t Socket::sndbuf() const {
  absl::MutexLock l(&opt_mu_);
  return sndbuf_;
}
int64_t Socket::rcvbuf() const {
  absl::MutexLock l(&opt_mu_);
  return rcvbuf_;
}
bool Socket::passcred() const {
  absl::MutexLock l(&opt_mu_);
  return passcred_;
}

int64_t Socket::RecvDeadline() const {
  absl::MutexLock l(&opt_mu_);
  return rcvtimeo_ns_ == 0 ? -1 : vfs::MonotonicNowNs() + rcvtimeo_ns_;
}
int64_t Socket::SendDeadline() const {
  absl::MutexLock l(&opt_mu_);
  return sndtimeo_ns_ == 0 ? -1 : vfs::MonotonicNowNs() + sndtimeo_ns_;
}

void Socket::SetSoError(int err) {
  absl::MutexLock l(&opt_mu_);
  so_error_ = err;
}
int Socket::TakeSoError() {
  absl::MutexLock l(&opt_mu_);
  int e = so_error_;
  so_error_ = 0;
  return e;
}

void Socket::set_listening(bool v) {
  absl::MutexLock l(&opt_mu_);
  listening_ = v;
}

void Socket::SetBufferDefaults(int64_t sndbuf, int64_t rcvbuf) {
  absl::MutexLock l(&opt_mu_);
  sndbuf_ = sndbuf;
  rcvbuf_ = rcvbuf;
}

Socket* AsSocket(vfs::FileDescription& f) {
  return dynamic_cast<Socket*>(&f);
}

}  // namespace sandbox::net
