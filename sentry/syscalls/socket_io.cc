#include "sentry/syscalls/socket_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "sentry/abi/linux.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/syscalls/args.h"

namespace sandbox::syscalls {

using abi::AccessOk;

GuestMessageIo::GuestMessageIo(kernel::Task& t, std::vector<abi::Iovec> v)
    : t_(t), v_(std::move(v)) {
  uint64_t room = kSockMaxRwCount;
  size_t keep = 0;
  for (abi::Iovec& e : v_) {
    if (room == 0) break;
    e.iov_len = std::min<uint64_t>(e.iov_len, room);
    room -= e.iov_len;
    size_ += e.iov_len;
    ++keep;
  }
  v_.resize(keep);
}

void GuestMessageIo::Seek(size_t at, size_t* seg, uint64_t* off) {
  if (at < cur_at_) cur_at_ = cur_seg_ = 0;
  while (cur_seg_ < v_.size() && at - cur_at_ >= v_[cur_seg_].iov_len) {
    cur_at_ += v_[cur_seg_].iov_len;
    ++cur_seg_;
  }
  *seg = cur_seg_;
  *off = at - cur_at_;
}

template <bool kOut>
KResult<size_t> GuestMessageIo::Copy(size_t at, uint8_t* p, size_t n) {
  if (at >= size_ || n == 0) return size_t{0};
  size_t seg;
  uint64_t off;
  Seek(at, &seg, &off);
  size_t done = 0;
  while (done < n && seg < v_.size()) {
    const abi::Iovec& e = v_[seg];
    const size_t k = std::min<uint64_t>(e.iov_len - off, n - done);
    KResult<size_t> c = kOut ? t_.CopyOut(e.iov_base + off, p + done, k)
                             : t_.CopyIn(e.iov_base + off, p + done, k);
    const size_t got = c.ok() ? std::min(c.value(), k) : 0;
    done += got;
    if (got < k) {
      if (done == 0) return kEFAULT;
      return done;
    }
    ++seg;
    off = 0;
  }
  return done;
}

KResult<size_t> GuestMessageIo::CopyIn(size_t at, absl::Span<uint8_t> dst) {
  return Copy<false>(at, dst.data(), dst.size());
}

KResult<size_t> GuestMessageIo::CopyOut(size_t at,
                                        absl::Span<const uint8_t> src) {
  return Copy<true>(at, const_cast<uint8_t*>(src.data()), src.size());
}

KResult<std::vector<abi::Iovec>> ImportIovecs(kernel::Task& t, uint64_t uvec,
                                              uint64_t n) {
  std::vector<abi::Iovec> v(n);
  if (n == 0) return v;
  TRY_VOID(UserArray<abi::Iovec>{uvec}.CopyIn(t, v.data(), n));
  // copy_iovec_from_user: a length that is negative as ssize_t.
  for (const abi::Iovec& e : v) {
    if (static_cast<int64_t>(e.iov_len) < 0) return kEINVAL;
  }
  if (n == 1) {  // import_ubuf: the clamped length is checked
    const uint64_t len = std::min(v[0].iov_len, kSockMaxRwCount);
    if (!AccessOk(v[0].iov_base, len)) return kEFAULT;
    return v;
  }
  for (const abi::Iovec& e : v) {
    if (!AccessOk(e.iov_base, e.iov_len)) return kEFAULT;
  }
  return v;
}

KResult<size_t> SockSend(kernel::Task& t, net::Socket& s, net::MessageIo& io,
                         net::SendRequest& req) {
  if (s.status_flags() & O_NONBLOCK) req.flags |= MSG_DONTWAIT;
  const int flags = req.flags;
  net::Caller c = net::CallerOf(t);
  KResult<size_t> r = s.SendMsg(c, io, req);
  if (!r.ok()) {
    if (r.error() == kEPIPE && s.type() == SOCK_STREAM &&
        !(flags & MSG_NOSIGNAL)) {
      t.thread_group().SignalDefaultAction(SIGPIPE);
    }
    if (r.error() == kERestartSys) return s.IntrErrno(true);
  }
  return r;
}

KResult<size_t> SockRecv(kernel::Task& t, net::Socket& s, net::MessageIo& io,
                         net::RecvRequest& req) {
  if (s.status_flags() & O_NONBLOCK) req.flags |= MSG_DONTWAIT;
  net::Caller c = net::CallerOf(t);
  KResult<size_t> r = s.RecvMsg(c, io, req);
  if (!r.ok() && r.error() == kERestartSys) return s.IntrErrno(false);
  return r;
}

KResult<size_t> SocketReadv(kernel::Task& t, net::Socket& s,
                            std::vector<abi::Iovec> v) {
  GuestMessageIo io(t, std::move(v));
  if (io.size() == 0) return size_t{0};
  net::RecvRequest req;
  return SockRecv(t, s, io, req);
}

KResult<size_t> SocketWritev(kernel::Task& t, net::Socket& s,
                             std::vector<abi::Iovec> v) {
  GuestMessageIo io(t, std::move(v));
  net::SendRequest req;
  if (s.type() == SOCK_SEQPACKET) req.flags |= MSG_EOR;
  return SockSend(t, s, io, req);
}

}  // namespace sandbox::syscalls
