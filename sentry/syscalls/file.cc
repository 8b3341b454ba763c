// File syscalls over the FD table: the read/write family (read, write,
// pread64, pwrite64, readv, writev, preadv, pwritev, preadv2, pwritev2),
// lseek, close, close_range, dup, dup2, dup3, fcntl, ioctl. Path-based
// calls live in open.cc, stat.cc, namei.cc, attr.cc, cwd.cc...
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "sentry/abi/linux.h"
#include "sentry/abi/syscalls.h"
#include "sentry/fs/host/host_file.h"
#include "sentry/fs/pipe/pipe_file.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/guest_io.h"
#include "sentry/net/socket.h"
#include "sentry/syscalls/fasync.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/lock.h"
#include "sentry/syscalls/pipe.h"
#include "sentry/syscalls/socket_io.h"
#include "sentry/syscalls/vfs_util.h"
#include "sentry/vfs/permissions.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::syscalls {
namespace {

using vfs::FileDescription;
using vfs::FileRef;

// Largest transfer one read/write syscall makes through the Sentry's
// bounce buffer; the guest sees a short count beyond it, as Linux allows.
constexpr size_t kMaxTransfer = 1 << 20;
// Largest direct transfer (Linux's MAX_RW_COUNT): files whose data lives in
// the memory file (CanDirectIo) copy straight between their pages and the
// guest's, with no bounce buffer and no kMaxTransfer bound.
using abi::kMaxRwCount;

KResult<FileRef> GetFile(Task& t, Fd fd) { return syscalls::GetFile(t, fd.fd); }

KResult<size_t> DoRead(Task& t, FileDescription& f, UserAddr buf,
                       uint64_t count, int64_t offset) {
  if (!abi::AccessOk(buf.addr, count)) return kEFAULT;
  if (count == 0) return size_t{0};
  if (f.CanDirectIo(t.mm().memory_file())) {
    mm::GuestSegments dst(t.mm(), /*guest_written=*/true);
    dst.Add(buf.addr, std::min(count, kMaxRwCount));
    vfs::IoContext ctx = t.io_context();
    return f.ReadDirect(ctx, dst, offset);
  }
  std::vector<uint8_t> tmp(std::min<uint64_t>(count, kMaxTransfer));
  vfs::IoContext ctx = t.io_context();
  TRY(size_t n, offset < 0 ? f.Read(ctx, absl::MakeSpan(tmp))
                           : f.PRead(ctx, absl::MakeSpan(tmp), offset));
  if (n == 0) return size_t{0};
  return t.CopyOut(buf.addr, tmp.data(), n);
}

// EPIPE from a write also raises SIGPIPE, as Linux's pipes and sockets do.
KResult<size_t> RaiseSigpipe(Task& t, KResult<size_t> r) {
  if (!r.ok() && r.error() == kEPIPE) {
    t.thread_group().SignalDefaultAction(SIGPIPE);
  }
  return r;
}

KResult<uint64_t> DoWritev(Task& t, FileDescription& f,
                           absl::Span<const abi::Iovec> v, int64_t offset,
                           vfs::IoContext& ctx);

KResult<size_t> DoWrite(Task& t, FileDescription& f, uint64_t buf,
                        uint64_t count, int64_t offset) {
  if (!abi::AccessOk(buf, count)) return kEFAULT;
  if (count == 0) return size_t{0};
  const abi::Iovec iov{buf, count};
  vfs::IoContext ctx = t.io_context();
  TRY(uint64_t n, DoWritev(t, f, absl::MakeConstSpan(&iov, 1), offset, ctx));
  return static_cast<size_t>(n);
}

// read(2).
SyscallResult Read(Task& t, Fd fd, UserAddr buf, uint64_t count) {
  TRY(FileRef f, GetFile(t, fd));
  if (!f->readable()) return kEBADF;
  if (net::Socket* s = net::AsSocket(*f)) {  // sock_read_iter
    if (!abi::AccessOk(buf.addr, count)) return kEFAULT;
    TRY(size_t n, SocketReadv(t, *s, {abi::Iovec{buf.addr, count}}));
    return n;
  }
  TRY(size_t n, DoRead(t, *f, buf, count, -1));
  return n;
}

// write(2). On a socket a write of nothing is still a send (a datagram of
// no bytes), as Linux's vfs_write does.
SyscallResult Write(Task& t, Fd fd, UserInBuf buf, uint64_t count) {
  TRY(FileRef f, GetFile(t, fd));
  if (!f->writable()) return kEBADF;
  if (net::Socket* s = net::AsSocket(*f)) {  // sock_write_iter
    if (!abi::AccessOk(buf.addr, count)) return kEFAULT;
    TRY(size_t n, SocketWritev(t, *s, {abi::Iovec{buf.addr, count}}));
    return n;
  }
  TRY(size_t n, DoWrite(t, *f, buf.addr, count, -1));
  return n;
}

uint64_t IovTotal(const std::vector<abi::Iovec>& v) {
  uint64_t total = 0;
  for (const abi::Iovec& e : v) total += e.iov_len;
  return total;
}

// pread64(2).
SyscallResult PRead64(Task& t, Fd fd, UserAddr buf, uint64_t count,
                      int64_t offset) {
  TRY(FileRef f, GetFile(t, fd));
  if (!f->readable()) return kEBADF;
  if (offset < 0) return kEINVAL;
  TRY(size_t n, DoRead(t, *f, buf, count, offset));
  return n;
}

// pwrite64(2).
SyscallResult PWrite64(Task& t, Fd fd, UserInBuf buf, uint64_t count,
                       int64_t offset) {
  TRY(FileRef f, GetFile(t, fd));
  if (!f->writable()) return kEBADF;
  if (offset < 0) return kEINVAL;
  TRY(size_t n, DoWrite(t, *f, buf.addr, count, offset));
  return n;
}

KResult<std::vector<abi::Iovec>> CopyInIovecs(Task& t, UserAddr iov,
                                              int iovcnt) {
  if (iovcnt < 0 || iovcnt > abi::kUioMaxIov) return kEINVAL;
  TRY(std::vector<abi::Iovec> v,
      UserArray<abi::Iovec>{iov.addr}.CopyIn(t, iovcnt));
  uint64_t total = 0;
  for (const abi::Iovec& e : v) {
    if (e.iov_len > static_cast<uint64_t>(INT64_MAX) - total) return kEINVAL;
    total += e.iov_len;
    if (!abi::AccessOk(e.iov_base, e.iov_len)) return kEFAULT;
  }
  return v;
}

// The iovecs (checked by CopyInIovecs) as a direct-I/O buffer, at most
// MAX_RW_COUNT bytes in all (rw_verify_area).
std::unique_ptr<mm::GuestSegments> DirectSegments(
    Task& t, absl::Span<const abi::Iovec> v, bool guest_written) {
  auto segs = std::make_unique<mm::GuestSegments>(t.mm(), guest_written);
  uint64_t room = kMaxRwCount;
  for (const abi::Iovec& e : v) {
    const uint64_t k = std::min<uint64_t>(e.iov_len, room);
    segs->Add(e.iov_base, k);
    room -= k;
  }
  return segs;
}

// Reads into the iovecs at the description's offset (offset < 0) or at
// `offset`, through one bounce buffer (or directly: CanDirectIo).
KResult<uint64_t> DoReadv(Task& t, FileDescription& f,
                          const std::vector<abi::Iovec>& v, int64_t offset,
                          vfs::IoContext& ctx) {
  uint64_t total = 0;
  for (const abi::Iovec& e : v) total += e.iov_len;
  if (total == 0) return uint64_t{0};
  if (f.CanDirectIo(t.mm().memory_file())) {
    TRY(size_t n, f.ReadDirect(ctx, *DirectSegments(t, v, true), offset));
    return uint64_t{n};
  }
  std::vector<uint8_t> tmp(std::min<uint64_t>(total, kMaxTransfer));
  TRY(size_t n, offset < 0 ? f.Read(ctx, absl::MakeSpan(tmp))
                           : f.PRead(ctx, absl::MakeSpan(tmp), offset));
  size_t done = 0;
  for (const abi::Iovec& e : v) {
    if (done == n) break;
    size_t chunk = std::min<uint64_t>(e.iov_len, n - done);
    KResult<size_t> c = t.CopyOut(e.iov_base, tmp.data() + done, chunk);
    if (!c.ok()) {
      if (done == 0) return c.error();
      break;
    }
    done += c.value();
    if (c.value() < chunk) break;
  }
  return uint64_t{done};
}

// pipe_write blocks until the whole count went in, so a write to a pipe or
// FIFO, or to the host stdio (a pipe, terminal or file of the caller's)
// goes on past the bounce buffer: chunk after chunk while each went in
// whole; so does a stream socket's (when reached through the bounce path:
// write(2) and writev(2) on sockets take socket_io.h's direct path). Other
// files get one chunk (a short count), as before.
bool WritesWholeCount(FileDescription& f) {
  if (net::Socket* s = net::AsSocket(f)) return s->type() == SOCK_STREAM;
  return fs::pipe::PipeOf(f) != nullptr ||
         dynamic_cast<fs::host::HostFile*>(&f) != nullptr;
}

// Writes the iovecs (checked by CopyInIovecs, or one range checked by
// DoWrite) at the description's offset (offset < 0) or at `offset`:
// directly when the file's data is in the memory file (CanDirectIo), else
// gathered into bounce-buffer chunks of kMaxTransfer bytes, each one Write
// (so pipe writes up to PIPE_BUF stay atomic). A chunk that went in short,
// a fault in the guest's buffer or an error ends the call; an error after
// some bytes went in gives their count (EPIPE still raises SIGPIPE, as
// pipe_write does), before any is the errno (ERESTARTSYS: EINTR or restart).
KResult<uint64_t> DoWritev(Task& t, FileDescription& f,
                           absl::Span<const abi::Iovec> v, int64_t offset,
                           vfs::IoContext& ctx) {
  if (f.CanDirectIo(t.mm().memory_file())) {
    std::unique_ptr<mm::GuestSegments> src = DirectSegments(t, v, false);
    if (src->size() == 0) return uint64_t{0};
    TRY(size_t n, f.WriteDirect(ctx, *src, offset));
    return uint64_t{n};
  }
  const bool whole = WritesWholeCount(f);
  std::vector<uint8_t> tmp;
  size_t iov = 0;        // the next iovec to gather from
  uint64_t iov_off = 0;  // bytes of v[iov] already gathered
  uint64_t done = 0;     // bytes written by earlier chunks
  for (;;) {
    tmp.clear();
    bool fault = false;
    // At most MAX_RW_COUNT in all (rw_verify_area).
    const size_t limit = std::min<uint64_t>(kMaxTransfer, kMaxRwCount - done);
    while (iov < v.size() && tmp.size() < limit) {
      const abi::Iovec& e = v[iov];
      if (iov_off == e.iov_len) {
        ++iov;
        iov_off = 0;
        continue;
      }
      size_t want = std::min<uint64_t>(e.iov_len - iov_off, limit - tmp.size());
      size_t at = tmp.size();
      tmp.resize(at + want);
      // A partial copy writes what could be read, as Linux does.
      KResult<size_t> c = t.CopyIn(e.iov_base + iov_off, tmp.data() + at, want);
      size_t got = c.ok() ? std::min(c.value(), want) : 0;
      tmp.resize(at + got);
      iov_off += got;
      if (got < want) {
        if (tmp.empty() && done == 0) return c.ok() ? kEFAULT : c.error();
        fault = true;
        break;
      }
    }
    if (tmp.empty()) break;
    auto src = absl::MakeConstSpan(tmp);
    KResult<size_t> r = RaiseSigpipe(
        t, offset < 0 ? f.Write(ctx, src) : f.PWrite(ctx, src, offset + done));
    if (!r.ok()) {
      if (done == 0) return r.error();
      break;
    }
    done += r.value();
    if (!whole || fault || r.value() < tmp.size()) break;
  }
  return done;
}

// readv(2).
SyscallResult Readv(Task& t, Fd fd, UserAddr iov, int32_t iovcnt) {
  TRY(FileRef f, GetFile(t, fd));
  if (!f->readable()) return kEBADF;
  TRY(std::vector<abi::Iovec> v, CopyInIovecs(t, iov, iovcnt));
  if (net::Socket* s = net::AsSocket(*f)) {
    TRY(size_t n, SocketReadv(t, *s, std::move(v)));
    return n;
  }
  vfs::IoContext ctx = t.io_context();
  return DoReadv(t, *f, v, -1, ctx);
}

// writev(2).
SyscallResult Writev(Task& t, Fd fd, UserAddr iov, int32_t iovcnt) {
  TRY(FileRef f, GetFile(t, fd));
  if (!f->writable()) return kEBADF;
  TRY(std::vector<abi::Iovec> v, CopyInIovecs(t, iov, iovcnt));
  if (net::Socket* s = net::AsSocket(*f)) {
    // vfs_writev: nothing to write is 0, no empty datagram.
    if (IovTotal(v) == 0) return uint64_t{0};
    TRY(size_t n, SocketWritev(t, *s, std::move(v)));
    return n;
  }
  vfs::IoContext ctx = t.io_context();
  return DoWritev(t, *f, v, -1, ctx);
}

// RWF_* (linux/fs.h).
constexpr uint32_t kRwfHipri = 0x1, kRwfDsync = 0x2, kRwfSync = 0x4,
                   kRwfNowait = 0x8, kRwfAppend = 0x10, kRwfNoappend = 0x20,
                   kRwfAtomic = 0x40, kRwfDontcache = 0x80,
                   kRwfNosignal = 0x100;
constexpr uint32_t kRwfSupported = kRwfHipri | kRwfDsync | kRwfSync |
                                   kRwfNowait | kRwfAppend | kRwfNoappend |
                                   kRwfAtomic | kRwfDontcache | kRwfNosignal;

// kiocb_set_rw_flags: EOPNOTSUPP for unknown flags and for what no file
// here supports (RWF_NOWAIT: no description has FMODE_NOWAIT yet;
// RWF_ATOMIC, RWF_DONTCACHE). HIPRI, DSYNC and SYNC need nothing of an
// in-memory file; APPEND/NOAPPEND reach the write through the context.
KResult<void> CheckRwFlags(uint64_t flags) {
  if (flags & ~uint64_t{kRwfSupported}) return kEOPNOTSUPP;
  if (flags & (kRwfNowait | kRwfAtomic | kRwfDontcache)) return kEOPNOTSUPP;
  return OkResult();
}

// preadv(2)/preadv2(2). On 64-bit the offset is pos_l alone (pos_h is
// shifted out, as pos_from_hilo does); preadv2 takes -1 as "the current
// offset".
KResult<uint64_t> DoPreadv(Task& t, Fd fd, UserAddr iov, int32_t iovcnt,
                           int64_t offset, uint64_t flags, bool v2) {
  if (offset < 0 && !(v2 && offset == -1)) return kEINVAL;
  TRY(FileRef f, GetFile(t, fd));
  if (!f->readable()) return kEBADF;
  TRY(std::vector<abi::Iovec> v, CopyInIovecs(t, iov, iovcnt));
  TRY_VOID(CheckRwFlags(flags));
  vfs::IoContext ctx = t.io_context();
  return DoReadv(t, *f, v, offset, ctx);
}

KResult<uint64_t> DoPwritev(Task& t, Fd fd, UserAddr iov, int32_t iovcnt,
                            int64_t offset, uint64_t flags, bool v2) {
  if (offset < 0 && !(v2 && offset == -1)) return kEINVAL;
  TRY(FileRef f, GetFile(t, fd));
  if (!f->writable()) return kEBADF;
  TRY(std::vector<abi::Iovec> v, CopyInIovecs(t, iov, iovcnt));
  TRY_VOID(CheckRwFlags(flags));
  vfs::IoContext ctx = t.io_context();
  ctx.rw_flags = static_cast<uint32_t>(flags);
  return DoWritev(t, *f, v, offset, ctx);
}

// preadv(2).
SyscallResult Preadv(Task& t, Fd fd, UserAddr iov, int32_t iovcnt,
                     int64_t pos_l, int64_t pos_h) {
  (void)pos_h;
  return DoPreadv(t, fd, iov, iovcnt, pos_l, 0, false);
}

// pwritev(2).
SyscallResult Pwritev(Task& t, Fd fd, UserAddr iov, int32_t iovcnt,
                      int64_t pos_l, int64_t pos_h) {
  (void)pos_h;
  return DoPwritev(t, fd, iov, iovcnt, pos_l, 0, false);
}

// preadv2(2).
SyscallResult Preadv2(Task& t, Fd fd, UserAddr iov, int32_t iovcnt,
                      int64_t pos_l, int64_t pos_h, Flags flags) {
  (void)pos_h;
  return DoPreadv(t, fd, iov, iovcnt, pos_l, flags.v & 0xffffffff, true);
}

// pwritev2(2).
SyscallResult Pwritev2(Task& t, Fd fd, UserAddr iov, int32_t iovcnt,
                       int64_t pos_l, int64_t pos_h, Flags flags) {
  (void)pos_h;
  return DoPwritev(t, fd, iov, iovcnt, pos_l, flags.v & 0xffffffff, true);
}

// lseek(2).
SyscallResult Lseek(Task& t, Fd fd, int64_t offset, int32_t whence) {
  TRY(FileRef f, GetFile(t, fd));
  if (whence < SEEK_SET || whence > SEEK_HOLE) return kEINVAL;
  TRY(int64_t off, f->Seek(offset, whence));
  return static_cast<uint64_t>(off);
}

// close_range(2): closes (or with CLOSE_RANGE_CLOEXEC marks close-on-exec)
// every descriptor in [first, last]; CLOSE_RANGE_UNSHARE first gives the
// task a private copy of a table it shares with other threads.
SyscallResult CloseRange(Task& t, uint32_t first, uint32_t last, Flags flags) {
  if (flags.v & ~uint64_t{CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC}) {
    return kEINVAL;
  }
  if (first > last) return kEINVAL;
  if (flags.v & CLOSE_RANGE_UNSHARE) t.UnshareFdTable();
  if (flags.v & CLOSE_RANGE_CLOEXEC) {
    t.fd_table().SetCloexecRange(first, last);
    return uint64_t{0};
  }
  // The descriptions are released here, with no lock held.
  std::vector<FileRef> closed = t.fd_table().RemoveRange(first, last);
  closed.clear();
  return uint64_t{0};
}

// close(2).
SyscallResult Close(Task& t, Fd fd) {
  TRY(FileRef f, t.fd_table().Remove(fd.fd));
  f.reset();  // The last reference closes it here, with no lock held.
  return uint64_t{0};
}

// dup(2). The dup family takes O_PATH descriptions too (fget_raw).
SyscallResult Dup(Task& t, Fd fd) {
  TRY(FileRef f, GetFileRaw(t, fd.fd));
  TRY(int nfd, t.fd_table().Install(std::move(f), 0, false, NofileLimit(t)));
  return static_cast<uint64_t>(nfd);
}

KResult<uint64_t> DoDup3(Task& t, Fd oldfd, Fd newfd, bool cloexec) {
  TRY(FileRef f, GetFileRaw(t, oldfd.fd));
  TRY(FileRef old,
      t.fd_table().InstallAt(newfd.fd, std::move(f), cloexec, NofileLimit(t)));
  old.reset();
  return static_cast<uint64_t>(newfd.fd);
}

// dup2(2).
SyscallResult Dup2(Task& t, Fd oldfd, Fd newfd) {
  if (oldfd.fd == newfd.fd) {
    TRY(FileRef f, GetFileRaw(t, oldfd.fd));
    return static_cast<uint64_t>(newfd.fd);
  }
  return DoDup3(t, oldfd, newfd, false);
}

// dup3(2).
SyscallResult Dup3(Task& t, Fd oldfd, Fd newfd, Flags flags) {
  if ((flags.v & ~uint64_t{O_CLOEXEC}) != 0) return kEINVAL;
  if (oldfd.fd == newfd.fd) return kEINVAL;
  return DoDup3(t, oldfd, newfd, flags.v & O_CLOEXEC);
}

// check_fcntl_cmd: what an O_PATH description allows.
bool AllowedOnPath(int32_t cmd) {
  switch (cmd) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
    case F_GETFD:
    case F_SETFD:
    case F_GETFL:
      return true;
    default:
      return false;
  }
}

// fcntl(2). One switch: file locks, seals and pipe sizes are cases of it.
SyscallResult Fcntl(Task& t, Fd fd, int32_t cmd, uint64_t arg) {
  bool cloexec = false;
  TRY(FileRef f, t.fd_table().Get(fd.fd, &cloexec));
  if ((f->status_flags() & O_PATH) && !AllowedOnPath(cmd)) return kEBADF;
  switch (cmd) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC: {
      int32_t min = static_cast<int32_t>(arg);
      uint64_t limit = NofileLimit(t);
      if (min < 0 || static_cast<uint64_t>(min) >= limit) return kEINVAL;
      TRY(int nfd, t.fd_table().Install(std::move(f), min,
                                        cmd == F_DUPFD_CLOEXEC, limit));
      return static_cast<uint64_t>(nfd);
    }
    case F_GETFD:
      return cloexec ? uint64_t{FD_CLOEXEC} : uint64_t{0};
    case F_SETFD:
      TRY_VOID(t.fd_table().SetCloexec(fd.fd, arg & FD_CLOEXEC));
      return uint64_t{0};
    case F_GETFL:
      return uint64_t{f->status_flags()};
    case F_SETFL: {
      // setfl: O_NOATIME only for the owner (or CAP_FOWNER).
      uint32_t v = static_cast<uint32_t>(arg);
      vfs::VfsFile* vf = AsVfsFile(f);
      if ((v & O_NOATIME) && !(f->status_flags() & O_NOATIME) &&
          vf != nullptr &&
          !vfs::IsOwnerOrCapable(t.creds(), vf->inode().Attrs().uid)) {
        return kEPERM;
      }
      const bool was_async = f->status_flags() & O_ASYNC;
      f->SetStatusFlags(v);
      // setfl -> ->fasync when O_ASYNC changes (fasync.h).
      if (was_async != static_cast<bool>(v & O_ASYNC)) {
        SetAsync(t, *f, fd.fd, v & O_ASYNC);
      }
      return uint64_t{0};
    }
    case F_ADD_SEALS: {
      // memfd_add_seals(): a writable description first, then known bits,
      // then whether the file can be sealed at all.
      if (!f->writable()) return kEPERM;
      constexpr uint32_t kAllSeals = 0x3f;  // F_SEAL_SEAL .. F_SEAL_EXEC
      const uint32_t seals = static_cast<uint32_t>(arg);
      if (seals & ~kAllSeals) return kEINVAL;
      TRY_VOID(f->AddSeals(seals));
      return uint64_t{0};
    }
    case F_GET_SEALS: {
      TRY(uint32_t seals, f->GetSeals());
      return uint64_t{seals};
    }
    case F_GETPIPE_SZ:
    case F_SETPIPE_SZ:
      return FcntlPipe(t, *f, cmd, arg);
    case F_NOTIFY: {
      // fcntl_dirnotify(): a mask without events removes the watch (any
      // file); else only a directory may be watched (ENOTDIR). Accepted,
      // but no DN_* signal is ever sent: the sandbox has no file change
      // notification yet.
      if ((static_cast<uint32_t>(arg) & ~uint32_t{DN_MULTISHOT}) == 0) {
        return uint64_t{0};
      }
      TRY(abi::Stat st, f->Stat());
      if (!S_ISDIR(st.st_mode)) return kENOTDIR;
      return uint64_t{0};
    }
    case F_GETLK:
    case F_SETLK:
    case F_SETLKW:
    case F_OFD_GETLK:
    case F_OFD_SETLK:
    case F_OFD_SETLKW:
      return FcntlLock(t, *f, cmd, arg);
    default:
      if (IsFcntlAsync(cmd)) return FcntlAsync(t, *f, cmd, arg);
      return kEINVAL;
  }
}

// ioctl(2).
SyscallResult Ioctl(Task& t, Fd fd, uint32_t cmd, uint64_t arg) {
  TRY(FileRef f, GetFile(t, fd));
  switch (cmd) {
    case FIOCLEX:
      TRY_VOID(t.fd_table().SetCloexec(fd.fd, true));
      return uint64_t{0};
    case FIONCLEX:
      TRY_VOID(t.fd_table().SetCloexec(fd.fd, false));
      return uint64_t{0};
    case FIONBIO: {
      TRY(int32_t on, UserPtr<int32_t>{arg}.CopyIn(t));
      uint32_t fl = f->status_flags();
      f->SetStatusFlags(on ? fl | O_NONBLOCK : fl & ~uint32_t{O_NONBLOCK});
      return uint64_t{0};
    }
    case FIONREAD: {
      // A regular file: the bytes after the offset, as an int (others go
      // to the file: pipes, terminals).
      vfs::VfsFile* vf = AsVfsFile(f);
      if (vf == nullptr || !vf->inode().IsRegular()) break;
      TRY(int64_t pos, f->Seek(0, SEEK_CUR));
      int64_t size = static_cast<int64_t>(vf->inode().Attrs().size);
      TRY_VOID(
          UserPtr<int32_t>{arg}.CopyOut(t, static_cast<int32_t>(size - pos)));
      return uint64_t{0};
    }
    case FIOQSIZE: {
      vfs::VfsFile* vf = AsVfsFile(f);
      if (vf == nullptr) break;
      vfs::Inode& inode = vf->inode();
      if (!inode.IsRegular() && !inode.IsDir() && !inode.IsSymlink()) {
        return kENOTTY;
      }
      TRY_VOID(UserPtr<int64_t>{arg}.CopyOut(t, inode.Stat().st_size));
      return uint64_t{0};
    }
    default:
      break;
  }
  vfs::IoContext ctx = t.io_context();
  return f->Ioctl(ctx, cmd, arg);
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Read);
SANDBOX_SYSCALL_HANDLER(Write);
SANDBOX_SYSCALL_HANDLER(PRead64);
SANDBOX_SYSCALL_HANDLER(PWrite64);
SANDBOX_SYSCALL_HANDLER(Readv);
SANDBOX_SYSCALL_HANDLER(Writev);
SANDBOX_SYSCALL_HANDLER(Preadv);
SANDBOX_SYSCALL_HANDLER(Pwritev);
SANDBOX_SYSCALL_HANDLER(Preadv2);
SANDBOX_SYSCALL_HANDLER(Pwritev2);
SANDBOX_SYSCALL_HANDLER(Lseek);
SANDBOX_SYSCALL_HANDLER(Close);
SANDBOX_SYSCALL_HANDLER(CloseRange);
SANDBOX_SYSCALL_HANDLER(Dup);
SANDBOX_SYSCALL_HANDLER(Dup2);
SANDBOX_SYSCALL_HANDLER(Dup3);
SANDBOX_SYSCALL_HANDLER(Fcntl);
SANDBOX_SYSCALL_HANDLER(Ioctl);

}  // namespace sandbox::syscalls
