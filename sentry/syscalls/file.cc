// File syscalls over the FD table: read/write family, lseek, close, dup,
// fcntl, fstat/newfstatat, ioctl, readlink. Path-based calls come with the
// VFS issue.
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sentry/abi/syscalls.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/syscalls/lock.h"
#include "sentry/syscalls/pipe.h"
#include "sentry/syscalls/table.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::syscalls {
namespace {

using vfs::FileDescription;
using vfs::FileRef;

// Largest transfer one read/write syscall makes through the Sentry's
// bounce buffer; the guest sees a short count beyond it, as Linux allows.
constexpr size_t kMaxTransfer = 1 << 20;
// The highest user address + 1 on x86-64 (TASK_SIZE_MAX).
constexpr uint64_t kTaskSizeMax = 0x7ffffffff000;

KResult<FileRef> GetFile(Task& t, Fd fd) {
  return t.fd_table().Get(fd.fd, nullptr);
}

uint64_t NofileLimit(Task& t) {
  return t.thread_group().GetLimit(RLIMIT_NOFILE).rlim_cur;
}

// access_ok(): the range lies in user space.
bool RangeOk(uint64_t addr, uint64_t len) {
  return len <= kTaskSizeMax && addr <= kTaskSizeMax - len;
}

KResult<size_t> DoRead(Task& t, FileDescription& f, UserAddr buf,
                       uint64_t count, int64_t offset) {
  if (!RangeOk(buf.addr, count)) return kEFAULT;
  if (count == 0) return size_t{0};
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

KResult<size_t> DoWrite(Task& t, FileDescription& f, uint64_t buf,
                        uint64_t count, int64_t offset) {
  if (!RangeOk(buf, count)) return kEFAULT;
  if (count == 0) return size_t{0};
  std::vector<uint8_t> tmp(std::min<uint64_t>(count, kMaxTransfer));
  // A partial copy writes what could be read, as Linux does.
  TRY(size_t got, t.CopyIn(buf, tmp.data(), tmp.size()));
  vfs::IoContext ctx = t.io_context();
  auto src = absl::MakeConstSpan(tmp.data(), got);
  return RaiseSigpipe(
      t, offset < 0 ? f.Write(ctx, src) : f.PWrite(ctx, src, offset));
}

// read(2).
SyscallResult Read(Task& t, Fd fd, UserAddr buf, uint64_t count) {
  TRY(FileRef f, GetFile(t, fd));
  if (!f->readable()) return kEBADF;
  TRY(size_t n, DoRead(t, *f, buf, count, -1));
  return n;
}

// write(2).
SyscallResult Write(Task& t, Fd fd, UserInBuf buf, uint64_t count) {
  TRY(FileRef f, GetFile(t, fd));
  if (!f->writable()) return kEBADF;
  TRY(size_t n, DoWrite(t, *f, buf.addr, count, -1));
  return n;
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
  std::vector<abi::Iovec> v(iovcnt);
  TRY_VOID(t.CopyInFull(iov.addr, v.data(), v.size() * sizeof(abi::Iovec)));
  uint64_t total = 0;
  for (const abi::Iovec& e : v) {
    if (e.iov_len > static_cast<uint64_t>(INT64_MAX) - total) return kEINVAL;
    total += e.iov_len;
    if (!RangeOk(e.iov_base, e.iov_len)) return kEFAULT;
  }
  return v;
}

// readv(2).
SyscallResult Readv(Task& t, Fd fd, UserAddr iov, int32_t iovcnt) {
  TRY(FileRef f, GetFile(t, fd));
  if (!f->readable()) return kEBADF;
  TRY(std::vector<abi::Iovec> v, CopyInIovecs(t, iov, iovcnt));
  uint64_t total = 0;
  for (const abi::Iovec& e : v) total += e.iov_len;
  if (total == 0) return uint64_t{0};
  std::vector<uint8_t> tmp(std::min<uint64_t>(total, kMaxTransfer));
  vfs::IoContext ctx = t.io_context();
  TRY(size_t n, f->Read(ctx, absl::MakeSpan(tmp)));
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
  return done;
}

// writev(2): the iovecs are gathered so one host write keeps pipe writes
// up to PIPE_BUF atomic.
SyscallResult Writev(Task& t, Fd fd, UserAddr iov, int32_t iovcnt) {
  TRY(FileRef f, GetFile(t, fd));
  if (!f->writable()) return kEBADF;
  TRY(std::vector<abi::Iovec> v, CopyInIovecs(t, iov, iovcnt));
  std::vector<uint8_t> tmp;
  for (const abi::Iovec& e : v) {
    size_t room = kMaxTransfer - tmp.size();
    if (room == 0) break;
    size_t want = std::min<uint64_t>(e.iov_len, room);
    size_t at = tmp.size();
    tmp.resize(at + want);
    KResult<size_t> c = t.CopyIn(e.iov_base, tmp.data() + at, want);
    if (!c.ok()) {
      tmp.resize(at);
      if (at == 0) return c.error();
      break;
    }
    tmp.resize(at + c.value());
    if (c.value() < want) break;
  }
  if (tmp.empty()) return uint64_t{0};
  vfs::IoContext ctx = t.io_context();
  TRY(size_t n, RaiseSigpipe(t, f->Write(ctx, absl::MakeConstSpan(tmp))));
  return n;
}

// lseek(2).
SyscallResult Lseek(Task& t, Fd fd, int64_t offset, int32_t whence) {
  TRY(FileRef f, GetFile(t, fd));
  if (whence < SEEK_SET || whence > SEEK_HOLE) return kEINVAL;
  TRY(int64_t off, f->Seek(offset, whence));
  return static_cast<uint64_t>(off);
}

// close(2).
SyscallResult Close(Task& t, Fd fd) {
  TRY(FileRef f, t.fd_table().Remove(fd.fd));
  f.reset();  // The last reference closes it here, with no lock held.
  return uint64_t{0};
}

// dup(2).
SyscallResult Dup(Task& t, Fd fd) {
  TRY(FileRef f, GetFile(t, fd));
  TRY(int nfd, t.fd_table().Install(std::move(f), 0, false, NofileLimit(t)));
  return static_cast<uint64_t>(nfd);
}

KResult<uint64_t> DoDup3(Task& t, Fd oldfd, Fd newfd, bool cloexec) {
  TRY(FileRef f, GetFile(t, oldfd));
  TRY(FileRef old,
      t.fd_table().InstallAt(newfd.fd, std::move(f), cloexec, NofileLimit(t)));
  old.reset();
  return static_cast<uint64_t>(newfd.fd);
}

// dup2(2).
SyscallResult Dup2(Task& t, Fd oldfd, Fd newfd) {
  if (oldfd.fd == newfd.fd) {
    TRY(FileRef f, GetFile(t, oldfd));
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

// fcntl(2).
SyscallResult Fcntl(Task& t, Fd fd, int32_t cmd, uint64_t arg) {
  bool cloexec = false;
  TRY(FileRef f, t.fd_table().Get(fd.fd, &cloexec));
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
    case F_SETFL:
      f->SetStatusFlags(static_cast<uint32_t>(arg));
      return uint64_t{0};
    case F_GETPIPE_SZ:
    case F_SETPIPE_SZ:
      return FcntlPipe(t, *f, cmd, arg);
    case F_GETLK:
    case F_SETLK:
    case F_SETLKW:
    case F_OFD_GETLK:
    case F_OFD_SETLK:
    case F_OFD_SETLKW:
      return FcntlLock(t, *f, cmd, arg);
    case F_ADD_SEALS: {
      // memfd_add_seals(): a writable description first, then known bits,
      // then whether the file can be sealed at all.
      if (!f->writable()) return kEPERM;
      constexpr uint32_t kAllSeals = 0x3f;  // F_SEAL_SEAL .. F_SEAL_EXEC
      const uint32_t seals = static_cast<uint32_t>(arg);
      if (seals & ~kAllSeals) return kEINVAL;
      auto* vf = dynamic_cast<vfs::VfsFile*>(f.get());
      if (vf == nullptr) return kEINVAL;
      TRY_VOID(vf->AddSeals(seals));
      return uint64_t{0};
    }
    case F_GET_SEALS: {
      auto* vf = dynamic_cast<vfs::VfsFile*>(f.get());
      if (vf == nullptr) return kEINVAL;
      TRY(uint32_t seals, vf->GetSeals());
      return uint64_t{seals};
    }
    default:
      return kEINVAL;
  }
}

// fstat(2).
SyscallResult Fstat(Task& t, Fd fd, UserPtr<abi::Stat> buf) {
  TRY(FileRef f, GetFile(t, fd));
  TRY(abi::Stat st, f->Stat());
  TRY_VOID(buf.CopyOut(t, st));
  return uint64_t{0};
}

// newfstatat(2).
SyscallResult Newfstatat(Task& t, Fd dirfd, UserCString path,
                         UserPtr<abi::Stat> buf, Flags flags) {
  if ((flags.v &
       ~uint64_t{AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT}) != 0) {
    return kEINVAL;
  }
  TRY(std::string p, path.CopyIn(t));
  if (p.empty()) {
    if (!(flags.v & AT_EMPTY_PATH)) return kENOENT;
    if (dirfd.fd == AT_FDCWD) return kENOENT;  // No file system yet.
    return Fstat(t, dirfd, buf);
  }
  // No file system until the VFS issue: every path is absent.
  return kENOENT;
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
    default: {
      vfs::IoContext ctx = t.io_context();
      return f->Ioctl(ctx, cmd, arg);
    }
  }
}

// The executable path if `path` names this process's /proc exe link.
bool IsOwnExeLink(Task& t, const std::string& path) {
  if (path == "/proc/self/exe" || path == "/proc/thread-self/exe") return true;
  constexpr std::string_view kProc = "/proc/";
  if (path.rfind(kProc, 0) != 0) return false;
  std::string_view rest = std::string_view(path).substr(kProc.size());
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos || rest.substr(slash) != "/exe") {
    return false;
  }
  int pid;
  return absl::SimpleAtoi(std::string(rest.substr(0, slash)), &pid) &&
         pid == t.thread_group().tgid();
}

KResult<uint64_t> DoReadlink(Task& t, UserCString path, UserAddr buf,
                             int32_t bufsiz) {
  TRY(std::string p, path.CopyIn(t));
  if (bufsiz <= 0) return kEINVAL;
  if (p.empty()) return kENOENT;
  // Until the VFS issue, /proc/<self>/exe is the only link there is.
  if (!IsOwnExeLink(t, p)) return kENOENT;
  std::string target = t.thread_group().exe_path();
  size_t n = std::min<size_t>(target.size(), bufsiz);
  TRY(size_t copied, t.CopyOut(buf.addr, target.data(), n));
  return copied;
}

// readlink(2).
SyscallResult Readlink(Task& t, UserCString path, UserAddr buf,
                       int32_t bufsiz) {
  return DoReadlink(t, path, buf, bufsiz);
}

// readlinkat(2).
SyscallResult Readlinkat(Task& t, Fd dirfd, UserCString path, UserAddr buf,
                         int32_t bufsiz) {
  (void)dirfd;  // Only absolute /proc paths resolve until the VFS issue.
  return DoReadlink(t, path, buf, bufsiz);
}

// getcwd(2).
SyscallResult Getcwd(Task& t, UserAddr buf, uint64_t size) {
  std::string cwd = t.thread_group().cwd();
  if (size < cwd.size() + 1) return kERANGE;
  TRY_VOID(t.CopyOutFull(buf.addr, cwd.c_str(), cwd.size() + 1));
  return uint64_t{cwd.size() + 1};
}

}  // namespace

void RegisterFileSyscalls(SyscallTable& t) {
  using namespace abi;  // NOLINT: nr::
  t.Full<&Read>(nr::read);
  t.Full<&Write>(nr::write);
  t.Full<&PRead64>(nr::pread64);
  t.Full<&PWrite64>(nr::pwrite64);
  t.Full<&Readv>(nr::readv);
  t.Full<&Writev>(nr::writev);
  t.Full<&Lseek>(nr::lseek);
  t.Full<&Close>(nr::close);
  t.Full<&Dup>(nr::dup);
  t.Full<&Dup2>(nr::dup2);
  t.Full<&Dup3>(nr::dup3);
  t.Partial<&Fcntl>(nr::fcntl,
                    "F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, "
                    "F_SETFL, F_ADD_SEALS, F_GET_SEALS, F_GETLK, F_SETLK, "
                    "F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, "
                    "F_GETPIPE_SZ, F_SETPIPE_SZ; other commands EINVAL");
  t.Full<&Fstat>(nr::fstat);
  t.Partial<&Newfstatat>(nr::newfstatat,
                         "AT_EMPTY_PATH on an FD; paths ENOENT until the VFS");
  t.Partial<&Ioctl>(nr::ioctl,
                    "FIOCLEX, FIONCLEX; host stdio: TCGETS, TIOCGWINSZ");
  t.Partial<&Getcwd>(nr::getcwd,
                     "the caller's directory; chdir comes with the VFS");
  t.Partial<&Readlink>(nr::readlink,
                       "/proc/self/exe only until the VFS; others ENOENT");
  t.Partial<&Readlinkat>(nr::readlinkat,
                         "/proc/self/exe only until the VFS; others ENOENT");
}

}  // namespace sandbox::syscalls
