// The pieces of one sendmsg/recvmsg as the socket layer sees them, decoded
// by the syscall layer (sentry/syscalls/socket.cc, sentry/net/cmsg.h):
// addresses as raw bytes with their length, the data as a MessageIo over the
// guest's iovecs (or a buffer), control messages as typed values.
#ifndef SENTRY_NET_MESSAGE_H_
#define SENTRY_NET_MESSAGE_H_

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "sentry/base/result.h"
#include "sentry/vfs/fd_table.h"

namespace sandbox::net {

// A socket address as the guest passes it: up to sizeof(sockaddr_storage)
// bytes (move_addr_to_kernel refuses longer ones with EINVAL), family in
// the first two bytes when len >= 2.
struct SockAddr {
  static constexpr uint32_t kMaxLen = sizeof(sockaddr_storage);  // 128
  uint8_t bytes[kMaxLen] = {};
  uint32_t len = 0;

  // sa_family, or AF_UNSPEC when shorter than the family field.
  uint16_t family() const {
    if (len < sizeof(uint16_t)) return AF_UNSPEC;
    uint16_t f;
    memcpy(&f, bytes, sizeof(f));
    return f;
  }
  static SockAddr From(const void* p, uint32_t n) {
    SockAddr a;
    a.len = std::min(n, kMaxLen);
    memcpy(a.bytes, p, a.len);
    return a;
  }
  absl::Span<const uint8_t> span() const { return {bytes, len}; }
};

// struct ucred: the ids SCM_CREDENTIALS and SO_PEERCRED carry, as seen in
// the sandbox (pid is the thread-group id in the sandbox's PID namespace).
struct Ucred {
  int32_t pid = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  bool operator==(const Ucred& o) const {
    return pid == o.pid && uid == o.uid && gid == o.gid;
  }
};

// Control messages of one message (struct scm_cookie and friends).
struct ControlMessages {
  // SCM_RIGHTS: descriptions in flight, in order (at most SCM_MAX_FD).
  std::vector<vfs::FileRef> rights;
  // SCM_CREDENTIALS: sent explicitly (checked by the syscall layer against
  // the sender's ids), or attached for a receiver with SO_PASSCRED.
  std::optional<Ucred> creds;
  // Other ancillary data, as (level, type, payload): on a send, every
  // message of a level other than SOL_SOCKET, in order, for the protocol
  // to check (ip_cmsg_send: IP_PKTINFO, IP_TOS, IP_TTL, IPV6_*); on a
  // receive, what the protocol attaches (SO_TIMESTAMP*, IP_PKTINFO,
  // IP_TOS, IP_TTL, IP_RECVERR's sock_extended_err, IPV6_PKTINFO, ...),
  // written before the credentials and descriptors, in order.
  struct Raw {
    int level = 0;
    int type = 0;
    std::vector<uint8_t> data;
  };
  std::vector<Raw> raw;
  bool empty() const {
    return rights.empty() && !creds.has_value() && raw.empty();
  }
};

// The data buffer of one send or receive: the guest's iovecs (implemented
// by the syscall layer over the task's memory) or a host buffer (read(2)
// and write(2) through the bounce buffer, tests). Offsets are positions in
// the concatenation of the segments.
class MessageIo {
 public:
  virtual ~MessageIo() = default;
  // Total bytes of the buffer.
  virtual size_t size() const = 0;
  // Copies bytes [at, at + dst.size()) of the buffer into dst (a send).
  // Returns the bytes copied: short only where the guest's buffer stops
  // being readable, EFAULT if that is at `at`.
  virtual KResult<size_t> CopyIn(size_t at, absl::Span<uint8_t> dst) = 0;
  // Copies src into the buffer at `at` (a receive), short or EFAULT as
  // CopyIn.
  virtual KResult<size_t> CopyOut(size_t at, absl::Span<const uint8_t> src) = 0;
};

// A MessageIo over a host buffer (never faults).
class SpanIo final : public MessageIo {
 public:
  explicit SpanIo(absl::Span<uint8_t> buf) : buf_(buf) {}
  explicit SpanIo(absl::Span<const uint8_t> buf)
      : buf_(const_cast<uint8_t*>(buf.data()), buf.size()), read_only_(true) {}
  size_t size() const override { return buf_.size(); }
  KResult<size_t> CopyIn(size_t at, absl::Span<uint8_t> dst) override {
    size_t n = at >= buf_.size() ? 0 : std::min(dst.size(), buf_.size() - at);
    memcpy(dst.data(), buf_.data() + at, n);
    return n;
  }
  KResult<size_t> CopyOut(size_t at, absl::Span<const uint8_t> src) override {
    if (read_only_) return kEFAULT;
    size_t n = at >= buf_.size() ? 0 : std::min(src.size(), buf_.size() - at);
    memcpy(buf_.data() + at, src.data(), n);
    return n;
  }

 private:
  absl::Span<uint8_t> buf_;
  bool read_only_ = false;
};

// sendmsg(2)'s request beyond the data.
struct SendRequest {
  int flags = 0;               // MSG_* (MSG_DONTWAIT, MSG_NOSIGNAL, ...)
  std::optional<SockAddr> to;  // msg_name / sendto's address
  ControlMessages control;     // moved into the message sent
};

// recvmsg(2)'s request and its results beyond the data.
struct RecvRequest {
  int flags = 0;           // MSG_PEEK, MSG_WAITALL, MSG_TRUNC, ...
  bool want_from = false;  // msg_name given: fill `from`
  // Results.
  SockAddr from;            // the sender's address (len 0: none)
  int msg_flags = 0;        // MSG_TRUNC, MSG_EOR, MSG_CTRUNC, ...
  ControlMessages control;  // received; the syscall layer installs fds
};

}  // namespace sandbox::net

#endif  // SENTRY_NET_MESSAGE_H_
