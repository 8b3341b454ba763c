// The I/O both kinds of donated host socket share: a host descriptor the
// Sentry holds (O_NONBLOCK) and drives with sendmsg, recvmsg, poll and
// ioctl only, for a guest socket whose other side is on the host. Two
// users: hostinet::HostStream (a broker-made TCP or UDP socket) and
// hostunix::HostEndpoint (a Gofer-made host Unix socket of a ":uds" mount).
// Each decides what its family allows (flags, addresses, control data)
// and hands the transfer here.
//
// Blocking is the Sentry's: a call that would block waits on the host fd
// and the task's interrupt fd (vfs::ThreadWaiter) unless `nonblock`,
// until the deadline (EAGAIN) or a signal (ERESTARTSYS, or EINTR when the
// socket has its own timeout: Linux's sock_intr_errno). A stream send
// sends everything (a partial count when stopped after some); a stream
// receive with MSG_WAITALL likewise.
//
// Thread-safety: stateless functions; the host serializes concurrent calls
// on one socket.
#ifndef SENTRY_NET_HOST_FD_IO_H_
#define SENTRY_NET_HOST_FD_IO_H_

#include <stddef.h>
#include <stdint.h>

#include "sentry/base/result.h"
#include "sentry/net/message.h"
#include "sentry/net/socket.h"
#include "sentry/net/wait.h"

namespace sandbox::net {

// How one call may block.
struct HostBlocking {
  bool nonblock = false;     // O_NONBLOCK or MSG_DONTWAIT: EAGAIN, no wait
  int64_t deadline_ns = -1;  // CLOCK_MONOTONIC; -1: none
  bool timed = false;        // the socket's own timeout is set (EINTR)
};

// The blocking of a send (SO_SNDTIMEO) or a receive (SO_RCVTIMEO) on
// `self` with the call's `flags` and the caller's extra deadline.
HostBlocking SendBlocking(const Socket& self, const Caller& c, int flags);
HostBlocking RecvBlocking(const Socket& self, const Caller& c, int flags);

// Waits for `events` (POLLERR and POLLHUP always) on host `fd` until
// `deadline_ns` (-1: none): EAGAIN at the deadline; when interrupted
// ERESTARTSYS, or EINTR if `timed`.
KResult<void> WaitHostFd(int fd, const Caller& c, short events,
                         int64_t deadline_ns, bool timed);

// sendmsg(2) of `data` on host `fd` with `host_flags` (MSG_DONTWAIT and
// MSG_NOSIGNAL added). SOCK_STREAM (`stream`): in chunks until all is sent
// or a fault, an error or a wait stops it (the count so far, if any). A
// record (datagram, seqpacket): copied in whole first (EFAULT if any of it
// faults; EMSGSIZE over `max_record`) and sent in one call.
KResult<size_t> SendToHostFd(int fd, const Caller& c, MessageIo& data,
                             bool stream, size_t max_record, int host_flags,
                             const HostBlocking& b);

// What a receive reports of what the host gave.
struct HostRecvOptions {
  bool stream = false;
  size_t max_record = 0;  // the largest record read at once
  // The host's msg_flags copied into the request's (MSG_TRUNC, ...).
  int kept_msg_flags = 0;
  // Any control message (closed unseen) sets MSG_CTRUNC.
  bool ctrunc_on_control = false;
  // The sender's address given when the request wants one.
  SockAddr from;
};

// recvmsg(2) on host `fd` into `data` for `req` (its MSG_PEEK, MSG_TRUNC,
// MSG_OOB pass to the host; MSG_WAITALL loops a stream unless peeking or
// MSG_OOB; MSG_OOB never waits). Descriptors the host sends are closed.
// A record's count is the host's (its real length with MSG_TRUNC).
KResult<size_t> RecvFromHostFd(int fd, const Caller& c, MessageIo& data,
                               RecvRequest& req, const HostRecvOptions& o,
                               const HostBlocking& b);

// shutdown(2) on host `fd`.
KResult<void> ShutdownHostFd(int fd, int how);
// FIONREAD/SIOCINQ and SIOCOUTQ from host `fd`, written to the guest's
// int at `arg`; ENOTTY otherwise.
KResult<uint64_t> HostFdIoctl(int fd, const Caller& c, uint32_t cmd,
                              uint64_t arg);
// Host `fd`'s readiness for `mask` now (a zero-timeout poll).
uint32_t HostFdReadiness(int fd, uint32_t mask);

}  // namespace sandbox::net

#endif  // SENTRY_NET_HOST_FD_IO_H_
