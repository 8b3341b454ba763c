// read(2)/write(2) (and readv/writev) on a TCP socket straight between the
// guest's pages and the connection's StreamBuffer: the syscall layer's
// direct path (vfs::GuestIo) instead of its bounce buffer, which costs an
// allocation, a zero fill and a copy per call on each side.
#include <signal.h>
#include <string.h>

#include "platform/memory_file.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/net/tcp/tcp_socket.h"

namespace sandbox::net::tcp {
namespace {

// A GuestIo as a MessageIo: bytes [at, at + n) of the guest buffer are
// copied through the memory file (SIGBUS-safe Read/Write). GuestIo::Walk
// walks from the start, so the pieces before `at` are skipped.
class GuestIoMessage final : public MessageIo {
 public:
  explicit GuestIoMessage(vfs::GuestIo& g) : g_(g), mf_(g.memory_file()) {}
  size_t size() const override { return g_.size(); }
  KResult<size_t> CopyIn(size_t at, absl::Span<uint8_t> dst) override {
    return Copy(at, dst.data(), dst.size(), /*to_guest=*/false);
  }
  KResult<size_t> CopyOut(size_t at, absl::Span<const uint8_t> src) override {
    return Copy(at, const_cast<uint8_t*>(src.data()), src.size(),
                /*to_guest=*/true);
  }

 private:
  KResult<size_t> Copy(size_t at, uint8_t* p, size_t n, bool to_guest) {
    if (n == 0) return size_t{0};
    if (at >= g_.size()) return size_t{0};
    n = std::min(n, g_.size() - at);
    size_t done = 0;
    KResult<size_t> r =
        g_.Walk(at + n, [&](uint64_t mfo, size_t pos, size_t k) -> size_t {
          if (pos + k <= at) return k;
          const size_t skip = pos < at ? at - pos : 0;
          const size_t len = k - skip;
          uint8_t* q = p + (pos + skip - at);
          const bool ok = to_guest ? mf_.Write(mfo + skip, q, len)
                                   : mf_.Read(mfo + skip, q, len);
          if (!ok) return skip;
          done += len;
          return k;
        });
    if (done == 0) return r.ok() ? KResult<size_t>(kEFAULT) : r.error();
    return done;
  }

  vfs::GuestIo& g_;
  platform::MemoryFile& mf_;
};

}  // namespace

KResult<size_t> TcpSocket::ReadDirect(vfs::IoContext& ctx, vfs::GuestIo& dst,
                                      int64_t offset) {
  if (offset >= 0) return kESPIPE;
  Caller c = CurrentCaller(ctx);
  GuestIoMessage io(dst);
  RecvRequest req;
  KResult<size_t> r = RecvMsg(c, io, req);
  if (!r.ok() && r.error() == kERestartSys) return IntrErrno(false);
  return r;
}

KResult<size_t> TcpSocket::WriteDirect(vfs::IoContext& ctx, vfs::GuestIo& src,
                                       int64_t offset) {
  if (offset >= 0) return kESPIPE;
  Caller c = CurrentCaller(ctx);
  GuestIoMessage io(src);
  SendRequest req;
  KResult<size_t> r = SendMsg(c, io, req);
  if (!r.ok() && r.error() == kERestartSys) return IntrErrno(true);
  // The direct path of the syscall layer does not raise SIGPIPE as its
  // bounce path does: EPIPE from a write raises it here (sk_stream_error).
  if (!r.ok() && r.error() == kEPIPE && c.task != nullptr) {
    c.task->thread_group().SignalDefaultAction(SIGPIPE);
  }
  return r;
}

}  // namespace sandbox::net::tcp
