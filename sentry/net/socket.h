// Socket: the file description of a socket (Linux's struct socket + struct
// file on sockfs; gVisor's pkg/sentry/socket.Socket).
//
// A socket is an ordinary FileDescription, so read/write/readv/writev,
// poll/select/epoll, fcntl, dup, close-on-exec and SCM_RIGHTS work as for
// any file. Its inode is on the anonymous sockfs (sockfs.h): fstat gives
// S_IFSOCK, /proc/PID/fd/N reads "socket:[INO]".
//
// Families (sentry/net/unix, sentry/net/netlink, later sentry/net/inet)
// derive from Socket and register a factory with the layer (family.h). The
// syscall layer (sentry/syscalls/socket.cc) decodes and validates the
// arguments that do not depend on the family (lengths, pointers, flag bits)
// and calls these operations; a family overrides those it supports, the
// defaults return the errno Linux gives for a family without the operation
// (sock_no_* in net/core/sock.c: EOPNOTSUPP).
//
// The SOL_SOCKET options every family shares (SO_TYPE, SO_DOMAIN,
// SO_PROTOCOL, SO_RCVBUF/SO_SNDBUF with Linux's doubling and limits,
// SO_RCVTIMEO/SO_SNDTIMEO, SO_PASSCRED, SO_LINGER, SO_KEEPALIVE, ...) are
// kept by this base class (socket.cc, sock_setsockopt/sk_getsockopt);
// families see SetSockOpt/GetSockOpt first and call the base for what they
// do not handle themselves.
//
// Thread-safety: every operation may be called concurrently; the base's
// option state is under opt_mu_, families lock their own state.
#ifndef SENTRY_NET_SOCKET_H_
#define SENTRY_NET_SOCKET_H_

#include <stdint.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "sentry/base/result.h"
#include "sentry/net/message.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/mount.h"

namespace sandbox::kernel {
class Task;
}  // namespace sandbox::kernel

namespace sandbox::net {

class NetNamespace;

// Who makes a socket call. Built by the syscall layer from the task
// (CallerOf in sentry/syscalls), by Socket::Read/Write from the current
// task, and by unit tests directly (task null: no file system, pid 0).
struct Caller {
  vfs::IoContext io;              // interrupt fd, guest memory, credentials
  kernel::Task* task = nullptr;   // the calling task, or null (tests)
  Ucred ucred;                    // the caller's pid (tgid), euid, egid
  NetNamespace* netns = nullptr;  // the caller's network namespace
  // An extra deadline (CLOCK_MONOTONIC ns) for blocking waits, -1 for none:
  // recvmmsg's timeout. Families wait until the earlier of it and
  // RecvDeadline()/SendDeadline().
  int64_t deadline_ns = -1;
};

// The Caller of task `t` (the syscall layer), and of the task running on
// this thread for a FileDescription operation (null task in unit tests:
// root ids, pid 0, the root network namespace).
Caller CallerOf(kernel::Task& t);
Caller CurrentCaller(const vfs::IoContext& ctx);

class Socket : public vfs::FileDescription {
 public:
  // `flags` are open flags (O_RDWR, maybe O_NONBLOCK). `owner` is the
  // creator's ids (the sockfs inode's uid and gid).
  Socket(int family, int type, int protocol, uint32_t flags,
         const Ucred& owner);
  ~Socket() override;

  int family() const { return family_; }
  int type() const { return type_; }  // SOCK_STREAM, ... without flags
  int protocol() const { return protocol_; }
  uint64_t ino() const { return ino_; }  // the sockfs inode number
  // The socket's sockfs inode and its anonymous dentry (sockfs.h): where
  // /proc/PID/fd/N jumps; fstat reads this inode.
  const vfs::VirtualDentry* location() const override { return &location_; }

  // ---- The socket calls. ----
  // bind(2): `addr` is what the guest passed (its length checked against
  // sizeof(sockaddr_storage) by the syscall layer).
  virtual KResult<void> Bind(Caller& c, const SockAddr& addr);
  virtual KResult<void> Listen(Caller& c, int backlog);
  // accept4(2): waits (unless non-blocking) for a connection and returns
  // its new socket, made with open flags `flags` (O_NONBLOCK). `peer`
  // receives the peer's address when not null.
  virtual KResult<vfs::FileRef> Accept(Caller& c, uint32_t flags,
                                       SockAddr* peer);
  virtual KResult<void> Connect(Caller& c, const SockAddr& addr);
  virtual KResult<SockAddr> GetSockName(Caller& c);
  virtual KResult<SockAddr> GetPeerName(Caller& c);
  // shutdown(2): SHUT_RD, SHUT_WR or SHUT_RDWR (checked by the caller).
  virtual KResult<void> Shutdown(Caller& c, int how);
  // sendmsg(2): sends data.size() bytes (a stream socket blocks until all
  // went in unless non-blocking; a partial count when interrupted after
  // some). EPIPE is returned as is: the syscall layer raises SIGPIPE
  // unless MSG_NOSIGNAL.
  virtual KResult<size_t> SendMsg(Caller& c, MessageIo& data, SendRequest& req);
  // recvmsg(2): returns the bytes received (or, for a datagram with
  // MSG_TRUNC in req.flags, the datagram's real length).
  virtual KResult<size_t> RecvMsg(Caller& c, MessageIo& data, RecvRequest& req);
  // setsockopt(2)/getsockopt(2). The value is copied in by the syscall
  // layer (at most a page); GetSockOpt writes at most val.size() bytes and
  // returns how many it wrote (the new optlen). The base handles
  // SOL_SOCKET as sk_setsockopt/sk_getsockopt do (SO_PEEK_OFF is
  // EOPNOTSUPP there: a family with set_peek_off handles it before calling
  // the base; SO_PEERCRED gives the "no peer" ids {0, 65534, 65534}: a
  // connected family answers it). Other levels are EOPNOTSUPP, as for a
  // family without ops->setsockopt (AF_UNIX); families with options of
  // their own handle their levels.
  virtual KResult<void> SetSockOpt(Caller& c, int level, int name,
                                   absl::Span<const uint8_t> val);
  virtual KResult<size_t> GetSockOpt(Caller& c, int level, int name,
                                     absl::Span<uint8_t> val);
  // The socket ioctls a family answers (FIONREAD/SIOCINQ, SIOCOUTQ, ...).
  // Socket::Ioctl answers the interface ioctls (SIOCGIF*: stack/ifioctl.h)
  // before asking the family.
  // ENOTTY by default.
  virtual KResult<uint64_t> SocketIoctl(Caller& c, uint32_t cmd, uint64_t arg);

  // ---- FileDescription. ----
  // read/write/readv/writev: RecvMsg/SendMsg with no flags, through
  // Caller of the current task.
  KResult<size_t> Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) override;
  KResult<size_t> Write(vfs::IoContext& ctx,
                        absl::Span<const uint8_t> src) override;
  KResult<int64_t> Seek(int64_t, int) override { return kESPIPE; }
  KResult<abi::Stat> Stat() override;
  KResult<uint64_t> Ioctl(vfs::IoContext& ctx, uint32_t cmd,
                          uint64_t arg) override;
  bool MayBlock() const override { return true; }
  bool CanPoll() const override { return true; }

  // ---- Options kept by the base (families read them). ----
  // SO_SNDBUF / SO_RCVBUF as getsockopt reports them (already doubled).
  int64_t sndbuf() const ABSL_LOCKS_EXCLUDED(opt_mu_);
  int64_t rcvbuf() const ABSL_LOCKS_EXCLUDED(opt_mu_);
  bool passcred() const ABSL_LOCKS_EXCLUDED(opt_mu_);
  // Deadline (CLOCK_MONOTONIC ns, -1: none) of a wait starting now, from
  // SO_RCVTIMEO / SO_SNDTIMEO.
  int64_t RecvDeadline() const ABSL_LOCKS_EXCLUDED(opt_mu_);
  int64_t SendDeadline() const ABSL_LOCKS_EXCLUDED(opt_mu_);
  // sock_intr_errno(timeo): what a wait of this socket interrupted by a
  // signal returns: EINTR when a timeout is set (SO_SNDTIMEO for send and
  // connect, SO_RCVTIMEO for recv and accept), else ERESTARTSYS. Families
  // return ERESTARTSYS from interrupted waits; the syscall layer and
  // Read/Write map it through this.
  Errno IntrErrno(bool send) const ABSL_LOCKS_EXCLUDED(opt_mu_);
  // The SOL_SOCKET options the Internet families act on (a snapshot).
  struct SolFlags {
    bool reuseaddr = false;  // SO_REUSEADDR (sk_reuse)
    bool reuseport = false;  // SO_REUSEPORT (sk_reuseport)
    bool keepalive = false;  // SO_KEEPALIVE
    bool oobinline = false;  // SO_OOBINLINE
    bool broadcast = false;  // SO_BROADCAST
    bool linger = false;     // SO_LINGER's l_onoff
    int64_t lingertime = 0;  // SO_LINGER's l_linger, in jiffies (kHz 100)
    int rcvlowat = 1;        // SO_RCVLOWAT
    bool rcvtstamp = false;  // SO_TIMESTAMP(NS)
    bool rcvtstampns = false;
    int bound_dev_if = 0;  // SO_BINDTODEVICE / SO_BINDTOIFINDEX
    int priority = 0;      // SO_PRIORITY
  };
  SolFlags sol_flags() const ABSL_LOCKS_EXCLUDED(opt_mu_);
  // sk_clone_lock: a connection accepted from `listener` starts with the
  // listener's SOL_SOCKET options (buffer sizes and their locks, timeouts,
  // SO_KEEPALIVE, SO_LINGER, SO_RCVLOWAT, SO_MARK, the timestamp flags,
  // ...), but not its SO_ERROR, SO_ACCEPTCONN, SO_COOKIE or SO_PRIORITY. Called
  // on the new socket before anyone else sees it.
  void InheritOptions(const Socket& listener) ABSL_LOCKS_EXCLUDED(opt_mu_);
  // Sets SO_ERROR (a pending asynchronous error) / takes it (getsockopt
  // SO_ERROR and the next call clear it).
  void SetSoError(int err) ABSL_LOCKS_EXCLUDED(opt_mu_);
  int TakeSoError() ABSL_LOCKS_EXCLUDED(opt_mu_);

 protected:
  // Families call this for listening sockets (SO_ACCEPTCONN).
  void set_listening(bool v) ABSL_LOCKS_EXCLUDED(opt_mu_);
  // The default SO_SNDBUF/SO_RCVBUF of a new socket (net.core.wmem_default
  // / rmem_default); families with other defaults call this.
  void SetBufferDefaults(int64_t sndbuf, int64_t rcvbuf)
      ABSL_LOCKS_EXCLUDED(opt_mu_);

 private:
  const int family_;
  const int type_;
  const int protocol_;
  const vfs::VirtualDentry location_;
  const uint64_t ino_;

  mutable absl::Mutex opt_mu_;
  int64_t sndbuf_ ABSL_GUARDED_BY(opt_mu_);
  int64_t rcvbuf_ ABSL_GUARDED_BY(opt_mu_);
  // SO_RCVTIMEO/SO_SNDTIMEO in jiffies (Linux's sk_rcvtimeo), kNoTimeout
  // (MAX_SCHEDULE_TIMEOUT) for none; 0 (a negative tv_sec) never waits.
  int64_t rcvtimeo_ ABSL_GUARDED_BY(opt_mu_);
  int64_t sndtimeo_ ABSL_GUARDED_BY(opt_mu_);
  bool passcred_ ABSL_GUARDED_BY(opt_mu_) = false;
  bool listening_ ABSL_GUARDED_BY(opt_mu_) = false;
  int so_error_ ABSL_GUARDED_BY(opt_mu_) = 0;
  // Options stored for getsockopt without effect on a socket that never
  // leaves the Sentry (SO_KEEPALIVE, SO_REUSEADDR, SO_BROADCAST,
  // SO_OOBINLINE, SO_DONTROUTE, SO_PRIORITY, SO_LINGER, SO_RCVLOWAT,
  // SO_MARK, the timestamp flags, ...): socket.cc.
  struct Stored;
  KResult<void> SetSolSocket(Caller& c, int name, absl::Span<const uint8_t> val)
      ABSL_LOCKS_EXCLUDED(opt_mu_);
  KResult<size_t> GetSolSocket(Caller& c, int name, absl::Span<uint8_t> val)
      ABSL_LOCKS_EXCLUDED(opt_mu_);
  std::unique_ptr<Stored> stored_ ABSL_GUARDED_BY(opt_mu_);
};

// The description as a socket, or null.
Socket* AsSocket(vfs::FileDescription& f);
inline Socket* AsSocket(const vfs::FileRef& f) {
  return f ? AsSocket(*f) : nullptr;
}

}  // namespace sandbox::net

#endif  // SENTRY_NET_SOCKET_H_
