// Pipes: pipe(2), pipe2(2), splice(2), tee(2), vmsplice(2), and fcntl's
// F_GETPIPE_SZ/F_SETPIPE_SZ (pipe.h). fs/pipe.c and fs/splice.c.
#include "sentry/syscalls/pipe.h"

#include <fcntl.h>
#include <signal.h>

#include <algorithm>
#include <vector>

#include "sentry/abi/syscalls.h"
#include "sentry/fs/pipe/pipe_file.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {
namespace {

using fs::pipe::Pipe;
using fs::pipe::PipeOf;
using vfs::FileRef;

constexpr uint32_t kONotificationPipe = O_EXCL;  // O_NOTIFICATION_PIPE
constexpr uint32_t kSpliceFMove = 1, kSpliceFNonblock = 2, kSpliceFMore = 4,
                   kSpliceFGift = 8;
constexpr uint32_t kSpliceFAll =
    kSpliceFMove | kSpliceFNonblock | kSpliceFMore | kSpliceFGift;
// MAX_RW_COUNT: the most one call moves.
constexpr size_t kMaxRwCount = 0x7ffff000;
// Largest vmsplice the Sentry gathers at once (a partial count beyond).
constexpr size_t kMaxVmsplice = 1 << 20;

// fdget: EBADF for a closed descriptor or an O_PATH one.
KResult<FileRef> GetFile(Task& t, int32_t fd) {
  TRY(FileRef f, t.fd_table().Get(fd, nullptr));
  if (f->status_flags() & O_PATH) return kEBADF;
  return f;
}

// EPIPE raises SIGPIPE, as pipe_write and wait_for_space do.
template <typename T>
KResult<T> RaiseSigpipe(Task& t, KResult<T> r) {
  if (!r.ok() && r.error() == kEPIPE) {
    t.thread_group().SignalDefaultAction(SIGPIPE);
  }
  return r;
}

// pipe2(2).
SyscallResult Pipe2(Task& t, UserAddr fds, int32_t flags_arg) {
  uint32_t flags = static_cast<uint32_t>(flags_arg);
  if (flags &
      ~uint32_t{O_CLOEXEC | O_NONBLOCK | O_DIRECT | kONotificationPipe}) {
    return kEINVAL;
  }
  // Notification pipes (watch queues) are not built: as a kernel without
  // CONFIG_WATCH_QUEUE.
  if (flags & kONotificationPipe) return Errno(ENOPKG);
  auto [r, w] = fs::pipe::NewPipe(flags, t.creds().fsuid, t.creds().fsgid);
  uint64_t limit = t.thread_group().GetLimit(RLIMIT_NOFILE).rlim_cur;
  bool cloexec = flags & O_CLOEXEC;
  TRY(int rfd, t.fd_table().Install(std::move(r), 0, cloexec, limit));
  KResult<int> wfd = t.fd_table().Install(std::move(w), 0, cloexec, limit);
  if (!wfd.ok()) {
    (void)t.fd_table().Remove(rfd);
    return wfd.error();
  }
  int32_t out[2] = {rfd, wfd.value()};
  KResult<void> c = t.CopyOutFull(fds.addr, out, sizeof(out));
  if (!c.ok()) {
    // Linux installs the descriptors only after the copy succeeded.
    (void)t.fd_table().Remove(rfd);
    (void)t.fd_table().Remove(wfd.value());
    return c.error();
  }
  return uint64_t{0};
}

// pipe(2).
SyscallResult PipeSyscall(Task& t, UserAddr fds) { return Pipe2(t, fds, 0); }

// An optional loff_t in guest memory (splice's off_in/off_out).
struct UserOffset {
  uint64_t addr;
  int64_t value = 0;
};

// Reads from a file into a pipe: the file's position (off == null) or an
// explicit offset, which advances.
KResult<size_t> FileRead(vfs::IoContext& ctx, vfs::FileDescription& f,
                         UserOffset* off, absl::Span<uint8_t> dst) {
  if (off == nullptr) return f.Read(ctx, dst);
  TRY(size_t n, f.PRead(ctx, dst, off->value));
  off->value += n;
  return n;
}

KResult<size_t> FileWrite(vfs::IoContext& ctx, vfs::FileDescription& f,
                          UserOffset* off, absl::Span<const uint8_t> src) {
  if (off == nullptr) return f.Write(ctx, src);
  TRY(size_t n, f.PWrite(ctx, src, off->value));
  off->value += n;
  return n;
}

// An explicit offset needs a file with a position (FMODE_PREAD /
// FMODE_PWRITE: EINVAL otherwise) and must not be negative
// (rw_verify_area).
KResult<void> CheckOffset(vfs::FileDescription& f, const UserOffset* off) {
  if (off == nullptr) return OkResult();
  KResult<int64_t> pos = f.Seek(0, SEEK_CUR);
  if (!pos.ok() && pos.error() == kESPIPE) return kEINVAL;
  if (off->value < 0) return kEINVAL;
  return OkResult();
}

// splice(2).
SyscallResult Splice(Task& t, Fd fd_in, UserAddr off_in_addr, Fd fd_out,
                     UserAddr off_out_addr, uint64_t len, uint32_t flags) {
  if (len == 0) return uint64_t{0};
  if (flags & ~kSpliceFAll) return kEINVAL;
  TRY(FileRef in, GetFile(t, fd_in.fd));
  TRY(FileRef out, GetFile(t, fd_out.fd));
  Pipe* ipipe = PipeOf(*in);
  Pipe* opipe = PipeOf(*out);
  if (ipipe != nullptr && !off_in_addr.null()) return kESPIPE;
  if (opipe != nullptr && !off_out_addr.null()) return kESPIPE;
  UserOffset off_in{off_in_addr.addr}, off_out{off_out_addr.addr};
  if (!off_out_addr.null()) {
    TRY(off_out.value, t.CopyInObj<int64_t>(off_out.addr));
  }
  if (!off_in_addr.null()) {
    TRY(off_in.value, t.CopyInObj<int64_t>(off_in.addr));
  }
  // do_splice.
  if (!in->readable() || !out->writable()) return kEBADF;
  len = std::min<uint64_t>(len, kMaxRwCount);
  vfs::IoContext ctx = t.io_context();
  bool nonblock = flags & kSpliceFNonblock;
  size_t n;
  if (ipipe != nullptr && opipe != nullptr) {
    if (ipipe == opipe) return kEINVAL;
    nonblock |= in->nonblocking() || out->nonblocking();
    TRY(n, RaiseSigpipe(t, Pipe::Splice(*ipipe, *opipe, len, nonblock,
                                        ctx.interrupt_fd)));
    return n;
  }
  if (ipipe != nullptr) {
    UserOffset* off = off_out_addr.null() ? nullptr : &off_out;
    TRY_VOID(CheckOffset(*out, off));
    if (out->status_flags() & O_APPEND) return kEINVAL;
    nonblock |= in->nonblocking();
    TRY(n,
        RaiseSigpipe(t, ipipe->SpliceToFile(
                            ctx.interrupt_fd, len, nonblock, !out->MayBlock(),
                            [&](absl::Span<const uint8_t> src) {
                              return FileWrite(ctx, *out, off, src);
                            })));
    if (off != nullptr) TRY_VOID(t.CopyOutObj<int64_t>(off->addr, off->value));
    return n;
  }
  if (opipe != nullptr) {
    UserOffset* off = off_in_addr.null() ? nullptr : &off_in;
    TRY_VOID(CheckOffset(*in, off));
    nonblock |= out->nonblocking();
    TRY(n, RaiseSigpipe(t, opipe->SpliceFromFile(
                               ctx.interrupt_fd, len, nonblock, !in->MayBlock(),
                               [&](absl::Span<uint8_t> dst) {
                                 return FileRead(ctx, *in, off, dst);
                               })));
    if (off != nullptr) TRY_VOID(t.CopyOutObj<int64_t>(off->addr, off->value));
    return n;
  }
  return kEINVAL;
}

// tee(2).
SyscallResult Tee(Task& t, Fd fd_in, Fd fd_out, uint64_t len, uint32_t flags) {
  if (flags & ~kSpliceFAll) return kEINVAL;
  if (len == 0) return uint64_t{0};
  TRY(FileRef in, GetFile(t, fd_in.fd));
  TRY(FileRef out, GetFile(t, fd_out.fd));
  if (!in->readable() || !out->writable()) return kEBADF;
  Pipe* ipipe = PipeOf(*in);
  Pipe* opipe = PipeOf(*out);
  if (ipipe == nullptr || opipe == nullptr || ipipe == opipe) return kEINVAL;
  bool nonblock =
      (flags & kSpliceFNonblock) || in->nonblocking() || out->nonblocking();
  vfs::IoContext ctx = t.io_context();
  TRY(size_t n, RaiseSigpipe(t, Pipe::Tee(*ipipe, *opipe,
                                          std::min<uint64_t>(len, kMaxRwCount),
                                          nonblock, ctx.interrupt_fd)));
  return n;
}

// vmsplice(2): user memory into a pipe (write end) or out of it (read
// end). Pages are copied, never gifted.
SyscallResult Vmsplice(Task& t, Fd fd, UserAddr iov, uint64_t nr_segs,
                       uint32_t flags) {
  if (flags & ~kSpliceFAll) return kEINVAL;
  TRY(FileRef f, GetFile(t, fd.fd));
  bool to_pipe;
  if (f->writable()) {
    to_pipe = true;
  } else if (f->readable()) {
    to_pipe = false;
  } else {
    return kEBADF;
  }
  if (nr_segs > static_cast<uint64_t>(abi::kUioMaxIov)) return kEINVAL;
  std::vector<abi::Iovec> v(nr_segs);
  TRY_VOID(t.CopyInFull(iov.addr, v.data(), v.size() * sizeof(abi::Iovec)));
  uint64_t total = 0;
  for (const abi::Iovec& e : v) {
    if (e.iov_len > static_cast<uint64_t>(INT64_MAX) - total) return kEINVAL;
    total += e.iov_len;
  }
  if (total == 0) return uint64_t{0};
  Pipe* p = PipeOf(*f);
  if (p == nullptr) return kEBADF;
  bool nonblock = flags & kSpliceFNonblock;
  vfs::IoContext ctx = t.io_context();
  if (to_pipe) {
    // Gather what can be read (a fault ends the gathering).
    std::vector<uint8_t> tmp;
    for (const abi::Iovec& e : v) {
      size_t room = kMaxVmsplice - tmp.size();
      if (room == 0) break;
      size_t want = std::min<uint64_t>(e.iov_len, room);
      size_t at = tmp.size();
      tmp.resize(at + want);
      KResult<size_t> c = t.CopyIn(e.iov_base, tmp.data() + at, want);
      size_t got = c.ok() ? c.value() : 0;
      tmp.resize(at + got);
      if (got < want) break;
    }
    if (tmp.empty()) return kEFAULT;
    KResult<size_t> r = p->SpliceFromFile(
        ctx.interrupt_fd, tmp.size(), nonblock, /*atomic=*/true,
        [&](absl::Span<uint8_t> dst) -> KResult<size_t> {
          std::copy_n(tmp.begin(), dst.size(), dst.begin());
          return dst.size();
        });
    TRY(size_t n, RaiseSigpipe(t, r));
    return n;
  }
  KResult<size_t> r = p->SpliceToFile(
      ctx.interrupt_fd, total, nonblock, /*atomic=*/true,
      [&](absl::Span<const uint8_t> src) -> KResult<size_t> {
        size_t done = 0;
        for (const abi::Iovec& e : v) {
          if (done == src.size()) break;
          size_t chunk = std::min<uint64_t>(e.iov_len, src.size() - done);
          KResult<size_t> c = t.CopyOut(e.iov_base, src.data() + done, chunk);
          if (!c.ok()) {
            if (done == 0) return c.error();
            break;
          }
          done += c.value();
          if (c.value() < chunk) break;
        }
        return done;
      });
  TRY(size_t n, r);
  return n;
}

}  // namespace

SyscallResult FcntlPipe(Task& t, vfs::FileDescription& f, int32_t cmd,
                        uint64_t arg) {
  Pipe* p = PipeOf(f);
  if (p == nullptr) return kEBADF;
  if (cmd == F_GETPIPE_SZ) return p->Capacity();
  // pipe_fcntl takes the argument as an unsigned int.
  TRY(uint64_t size,
      p->SetCapacity(static_cast<uint32_t>(arg),
                     t.creds().HasCapability(kernel::kCapSysResource)));
  return size;
}

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(PipeSyscall);
SANDBOX_SYSCALL_HANDLER(Pipe2);
SANDBOX_SYSCALL_HANDLER(Splice);
SANDBOX_SYSCALL_HANDLER(Tee);
SANDBOX_SYSCALL_HANDLER(Vmsplice);

}  // namespace sandbox::syscalls
