// The data path between a task and a socket, shared by the socket
// syscalls (socket.cc) and read/write/readv/writev on a socket (file.cc):
// a net::MessageIo over the guest's iovecs (no bounce buffer), Linux's
// import_iovec, and the send/receive wrappers every path takes
// (sock_sendmsg/sock_recvmsg with O_NONBLOCK as MSG_DONTWAIT, SIGPIPE,
// sock_intr_errno).
#ifndef SENTRY_SYSCALLS_SOCKET_IO_H_
#define SENTRY_SYSCALLS_SOCKET_IO_H_

#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "sentry/abi/linux.h"
#include "sentry/base/result.h"
#include "sentry/kernel/task.h"
#include "sentry/net/message.h"
#include "sentry/net/socket.h"

namespace sandbox::syscalls {

// Linux's MAX_RW_COUNT: the most one call transfers.
inline constexpr uint64_t kSockMaxRwCount = 0x7ffff000;

// The guest's iovecs as a MessageIo: copies go straight between guest
// memory and the family's buffers through Task::CopyIn/CopyOut; a copy
// that faults part-way is short (EFAULT if nothing was copied), as
// copy_from_iter/copy_to_iter are. The total is clamped to MAX_RW_COUNT by
// the constructor (later segments shortened or dropped).
class GuestMessageIo final : public net::MessageIo {
 public:
  GuestMessageIo(kernel::Task& t, std::vector<abi::Iovec> v);
  GuestMessageIo(kernel::Task& t, uint64_t base, uint64_t len)
      : GuestMessageIo(t, {abi::Iovec{base, len}}) {}

  size_t size() const override { return size_; }
  KResult<size_t> CopyIn(size_t at, absl::Span<uint8_t> dst) override;
  KResult<size_t> CopyOut(size_t at, absl::Span<const uint8_t> src) override;

 private:
  // The segment holding byte `at` and the offset into it (a cursor makes
  // sequential copies O(1)).
  void Seek(size_t at, size_t* seg, uint64_t* off);
  template <bool kOut>
  KResult<size_t> Copy(size_t at, uint8_t* p, size_t n);

  kernel::Task& t_;
  std::vector<abi::Iovec> v_;
  size_t size_ = 0;
  size_t cur_at_ = 0, cur_seg_ = 0;  // byte cur_at_ starts segment cur_seg_
};

// import_iovec for sendmsg/recvmsg: `n` iovecs at `uvec` (n <= UIO_MAXIOV,
// checked by the caller with its own errno): EFAULT reading them, EINVAL
// for a negative length, EFAULT for a range outside user space.
KResult<std::vector<abi::Iovec>> ImportIovecs(kernel::Task& t, uint64_t uvec,
                                              uint64_t n);

// sock_sendmsg: MSG_DONTWAIT added for an O_NONBLOCK description; EPIPE
// from a stream socket raises SIGPIPE unless MSG_NOSIGNAL (unix_stream and
// TCP do; datagram and seqpacket EPIPE do not); an interrupted wait is
// EINTR or ERESTARTSYS by SO_SNDTIMEO (sock_intr_errno).
KResult<size_t> SockSend(kernel::Task& t, net::Socket& s, net::MessageIo& io,
                         net::SendRequest& req);
// sock_recvmsg, likewise (SO_RCVTIMEO).
KResult<size_t> SockRecv(kernel::Task& t, net::Socket& s, net::MessageIo& io,
                         net::RecvRequest& req);

// read(2)/readv(2) and write(2)/writev(2) on a socket (sock_read_iter,
// sock_write_iter): one RecvMsg/SendMsg over the guest's buffers (a
// datagram is one message, whatever its size); a read of nothing returns 0
// without receiving; a write on a SOCK_SEQPACKET socket is MSG_EOR.
KResult<size_t> SocketReadv(kernel::Task& t, net::Socket& s,
                            std::vector<abi::Iovec> v);
KResult<size_t> SocketWritev(kernel::Task& t, net::Socket& s,
                             std::vector<abi::Iovec> v);

}  // namespace sandbox::syscalls

#endif  // SENTRY_SYSCALLS_SOCKET_IO_H_
