#include "sentry/net/host_fd_io.h"

#include <errno.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "sentry/vfs/waiter.h"

namespace sandbox::net {
namespace {

// Bytes moved per host call of a stream.
constexpr size_t kStreamChunk = 64 << 10;
// Room for the SCM_RIGHTS the host may send (SCM_MAX_FD = 253).
constexpr size_t kCmsgSpace = CMSG_SPACE(sizeof(int) * 253) + 64;

// send(2) through sendmsg (glibc's send is sendto, which the Sentry's
// seccomp allowlist does not have).
ssize_t SendBytes(int fd, const uint8_t* p, size_t n, int flags) {
  iovec iov = {const_cast<uint8_t*>(p), n};
  msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  return sendmsg(fd, &mh, flags);
}

// Closes every descriptor in the control data the host sent; returns
// whether there was any control message.
bool DropControl(msghdr& mh) {
  bool any = false;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm != nullptr;
       cm = CMSG_NXTHDR(&mh, cm)) {
    any = true;
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
        cm->cmsg_len >= CMSG_LEN(0)) {
      size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < n; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
        close(fd);
      }
    }
  }
  return any;
}

}  // namespace

HostBlocking SendBlocking(const Socket& self, const Caller& c, int flags) {
  const int64_t own = self.SendDeadline();
  return HostBlocking{self.nonblocking() || (flags & MSG_DONTWAIT),
                      EarlierDeadline(own, c.deadline_ns), own >= 0};
}

HostBlocking RecvBlocking(const Socket& self, const Caller& c, int flags) {
  const int64_t own = self.RecvDeadline();
  return HostBlocking{self.nonblocking() || (flags & MSG_DONTWAIT),
                      EarlierDeadline(own, c.deadline_ns), own >= 0};
}

KResult<void> WaitHostFd(int fd, const Caller& c, short events,
                         int64_t deadline_ns, bool timed) {
  vfs::ThreadWaiter w;
  pollfd p = {fd, static_cast<short>(events | POLLERR | POLLHUP), 0};
  for (;;) {
    pollfd now = p;
    if (poll(&now, 1, 0) > 0) return OkResult();
    switch (w.Sleep(c.io.interrupt_fd, deadline_ns, {&p, 1})) {
      case vfs::WakeReason::kNotified:
        break;
      case vfs::WakeReason::kInterrupted:
        // sock_intr_errno: restartable unless a timeout is set.
        return timed ? kEINTR : kERestartSys;
      case vfs::WakeReason::kTimedOut:
        return kEAGAIN;
    }
  }
}

KResult<size_t> SendToHostFd(int fd, const Caller& c, MessageIo& data,
                             bool stream, size_t max_record, int host_flags,
                             const HostBlocking& b) {
  host_flags |= MSG_DONTWAIT | MSG_NOSIGNAL;
  const size_t total = data.size();
  if (!stream) {
    // One record, whole: copied in first (EFAULT if any of it faults).
    if (total > max_record) return kEMSGSIZE;
    std::vector<uint8_t> buf(total);
    if (total > 0) {
      TRY(size_t got, data.CopyIn(0, absl::MakeSpan(buf)));
      if (got != total) return kEFAULT;
    }
    for (;;) {
      ssize_t n = SendBytes(fd, buf.data(), buf.size(), host_flags);
      if (n >= 0) return static_cast<size_t>(n);
      const int err = errno;
      if (err != EAGAIN) return Errno(err);
      if (b.nonblock) return kEAGAIN;
      TRY_VOID(WaitHostFd(fd, c, POLLOUT, b.deadline_ns, b.timed));
    }
  }
  std::vector<uint8_t> buf(std::min(std::max<size_t>(total, 1), kStreamChunk));
  size_t sent = 0;
  do {
    const size_t want = std::min(buf.size(), total - sent);
    KResult<size_t> got = data.CopyIn(sent, absl::MakeSpan(buf.data(), want));
    if (!got.ok() || (*got == 0 && want > 0)) {
      if (sent > 0) return sent;
      return got.ok() ? kEFAULT : got.error();
    }
    size_t off = 0;
    // A zero-length send is one host call (it may still block or fail).
    while (off < *got || (total == 0 && off == 0)) {
      ssize_t n = SendBytes(fd, buf.data() + off, *got - off, host_flags);
      if (n >= 0) {
        off += static_cast<size_t>(n);
        if (total == 0) return size_t{0};
        continue;
      }
      const int err = errno;
      KResult<void> waited = OkResult();
      if (err != EAGAIN) {
        waited = Errno(err);
      } else if (b.nonblock) {
        waited = kEAGAIN;
      } else {
        waited = WaitHostFd(fd, c, POLLOUT, b.deadline_ns, b.timed);
      }
      if (!waited.ok()) {
        if (sent + off > 0) return sent + off;
        return waited.error();
      }
    }
    sent += off;
    // The guest's buffer stopped being readable: what went so far.
    if (*got < want) return sent;
  } while (sent < total);
  return sent;
}

KResult<size_t> RecvFromHostFd(int fd, const Caller& c, MessageIo& data,
                               RecvRequest& req, const HostRecvOptions& o,
                               const HostBlocking& b) {
  const bool waitall = o.stream && (req.flags & MSG_WAITALL) &&
                       !(req.flags & (MSG_PEEK | MSG_OOB));
  const int host_flags = MSG_DONTWAIT | MSG_CMSG_CLOEXEC |
                         (req.flags & (MSG_PEEK | MSG_TRUNC | MSG_OOB));
  const size_t total = data.size();
  std::vector<uint8_t> buf(std::max<size_t>(
      1, std::min(total, o.stream ? kStreamChunk : o.max_record)));
  alignas(cmsghdr) uint8_t control[kCmsgSpace];
  size_t done = 0;
  for (;;) {
    iovec iov = {buf.data(), o.stream ? std::min(buf.size(), total - done)
                                      : std::min(buf.size(), total)};
    msghdr mh = {};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof(control);
    ssize_t n = recvmsg(fd, &mh, host_flags);
    if (n < 0) {
      const int err = errno;
      KResult<void> waited = OkResult();
      if (err != EAGAIN) {
        waited = Errno(err);
      } else if (b.nonblock || (req.flags & MSG_OOB)) {
        waited = kEAGAIN;
      } else {
        waited = WaitHostFd(fd, c, POLLIN, b.deadline_ns, b.timed);
      }
      if (!waited.ok()) {
        if (done > 0) return done;
        return waited.error();
      }
      continue;
    }
    const bool had_control = DropControl(mh);
    if (o.ctrunc_on_control && (had_control || (mh.msg_flags & MSG_CTRUNC))) {
      req.msg_flags |= MSG_CTRUNC;
    }
    req.msg_flags |= mh.msg_flags & o.kept_msg_flags;
    if (req.want_from) req.from = o.from;
    // A record's real length with MSG_TRUNC may exceed the buffer.
    const size_t have = std::min(static_cast<size_t>(n), iov.iov_len);
    size_t copied = 0;
    if (have > 0) {
      KResult<size_t> out =
          data.CopyOut(done, absl::MakeConstSpan(buf.data(), have));
      if (!out.ok()) return done > 0 ? KResult<size_t>(done) : out.error();
      copied = *out;
    }
    if (!o.stream) return static_cast<size_t>(n);
    done += copied;
    if (n == 0 || !waitall || done >= total || copied < have) return done;
  }
}

KResult<void> ShutdownHostFd(int fd, int how) {
  if (shutdown(fd, how) != 0) return Errno(errno);
  return OkResult();
}

KResult<uint64_t> HostFdIoctl(int fd, const Caller& c, uint32_t cmd,
                              uint64_t arg) {
  if (cmd != FIONREAD && cmd != TIOCOUTQ) return kENOTTY;
  int v = 0;
  if (ioctl(fd, cmd, &v) != 0) return Errno(errno);
  if (c.io.user == nullptr) return kEFAULT;
  TRY_VOID(c.io.user->CopyOutFull(arg, &v, sizeof(v)));
  return uint64_t{0};
}

uint32_t HostFdReadiness(int fd, uint32_t mask) {
  pollfd p = {fd, static_cast<short>(mask & 0xffff), 0};
  if (poll(&p, 1, 0) <= 0) return 0;
  return static_cast<uint32_t>(static_cast<uint16_t>(p.revents)) & mask;
}

}  // namespace sandbox::net
