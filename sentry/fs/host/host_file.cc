#include "sentry/fs/host/host_file.h"

#include <errno.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "platform/sleep_state.h"

namespace sandbox::fs::host {
namespace {

// Largest single host read/write, so one guest request cannot make the
// Sentry allocate without bound.
constexpr size_t kMaxChunk = 1 << 20;

Errno HostErrno() { return Errno(errno); }

}  // namespace

KResult<std::shared_ptr<HostFile>> HostFile::Create(int host_fd) {
  int flags = fcntl(host_fd, F_GETFL);
  if (flags < 0) return HostErrno();
  struct stat st;
  if (fstat(host_fd, &st) != 0) return HostErrno();
  bool may_block = !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode);
  // The guest's O_NONBLOCK starts clear whatever the host's is: the host's
  // belongs to the caller's shell, and blocking reads are emulated anyway.
  flags &= ~O_NONBLOCK;
  return std::shared_ptr<HostFile>(new HostFile(host_fd, flags, may_block));
}

HostFile::~HostFile() { close(fd_); }

KResult<void> HostFile::WaitReady(vfs::IoContext& ctx, short events) {
  if (!may_block_) return OkResult();
  pollfd fds[2] = {{fd_, events, 0}, {ctx.interrupt_fd, POLLIN, 0}};
  int nfds = ctx.interrupt_fd >= 0 ? 2 : 1;
  int timeout = nonblocking() ? 0 : -1;
  platform::ScopedSleep sleeping;  // /proc: S
  for (;;) {
    int n = poll(fds, nfds, timeout);
    if (n < 0) {
      if (errno == EINTR) continue;
      return HostErrno();
    }
    if (n == 0) return kEAGAIN;  // Only with timeout 0.
    if (nfds == 2 && fds[1].revents != 0) return kERestartSys;
    // POLLHUP/POLLERR: the read or write reports what happened.
    return OkResult();
  }
}

uint32_t HostFile::Readiness(uint32_t mask) {
  if (!may_block_) return vfs::kDefaultPollMask & mask;
  pollfd p = {fd_, static_cast<short>(mask & 0xffff), 0};
  int n;
  while ((n = poll(&p, 1, 0)) < 0 && errno == EINTR) {
  }
  if (n <= 0) return 0;
  return static_cast<uint16_t>(p.revents) & mask & ~vfs::kPollNval;
}

KResult<size_t> HostFile::Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) {
  size_t n = std::min(dst.size(), kMaxChunk);
  for (;;) {
    TRY_VOID(WaitReady(ctx, POLLIN));
    ssize_t r = read(fd_, dst.data(), n);
    if (r >= 0) return static_cast<size_t>(r);
    // The host description may be O_NONBLOCK (set by the caller): then the
    // data poll saw may have gone to another reader; wait again.
    if (errno == EAGAIN && may_block_ && !nonblocking()) continue;
    if (errno == EINTR) continue;
    return HostErrno();
  }
}

// A blocking description (the guest's view) takes the whole chunk, as a
// Linux pipe, socket or terminal write blocks until all of it went in, even
// when the host description is O_NONBLOCK (the caller's choice): a short
// host write waits and goes on. An interruption or an error after some
// bytes went in gives their count.
KResult<size_t> HostFile::Write(vfs::IoContext& ctx,
                                absl::Span<const uint8_t> src) {
  const size_t n = std::min(src.size(), kMaxChunk);
  size_t done = 0;
  for (;;) {
    KResult<void> ready = WaitReady(ctx, POLLOUT);
    if (!ready.ok()) {
      if (done > 0) return done;
      return ready.error();
    }
    ssize_t r = write(fd_, src.data() + done, n - done);
    if (r > 0) {
      done += static_cast<size_t>(r);
      if (done == n || !may_block_ || nonblocking()) return done;
      continue;
    }
    if (r == 0) return done;
    if (errno == EAGAIN && may_block_ && !nonblocking()) continue;
    if (errno == EINTR) continue;
    if (done > 0) return done;
    return HostErrno();
  }
}

KResult<size_t> HostFile::PRead(vfs::IoContext& ctx, absl::Span<uint8_t> dst,
                                int64_t offset) {
  (void)ctx;
  ssize_t r = pread(fd_, dst.data(), std::min(dst.size(), kMaxChunk), offset);
  if (r < 0) return HostErrno();
  return static_cast<size_t>(r);
}

KResult<size_t> HostFile::PWrite(vfs::IoContext& ctx,
                                 absl::Span<const uint8_t> src,
                                 int64_t offset) {
  (void)ctx;
  ssize_t r = pwrite(fd_, src.data(), std::min(src.size(), kMaxChunk), offset);
  if (r < 0) return HostErrno();
  return static_cast<size_t>(r);
}

KResult<int64_t> HostFile::Seek(int64_t offset, int whence) {
  off_t r = lseek(fd_, offset, whence);
  if (r < 0) return HostErrno();
  return static_cast<int64_t>(r);
}

KResult<abi::Stat> HostFile::Stat() {
  struct stat st;
  if (fstat(fd_, &st) != 0) return HostErrno();
  abi::Stat out = {};
  out.st_dev = st.st_dev;
  out.st_ino = st.st_ino;
  out.st_nlink = st.st_nlink;
  out.st_mode = st.st_mode;
  out.st_uid = st.st_uid;
  out.st_gid = st.st_gid;
  out.st_rdev = st.st_rdev;
  out.st_size = st.st_size;
  out.st_blksize = st.st_blksize;
  out.st_blocks = st.st_blocks;
  out.st_atim = {st.st_atim.tv_sec, st.st_atim.tv_nsec};
  out.st_mtim = {st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
  out.st_ctim = {st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
  return out;
}

KResult<uint64_t> HostFile::Ioctl(vfs::IoContext& ctx, uint32_t cmd,
                                  uint64_t arg) {
  switch (cmd) {
    case TCGETS: {
      abi::Termios t;
      // SAFETY: the host kernel writes sizeof(abi::Termios) bytes (its own
      // struct termios) into `t`.
      if (syscall(SYS_ioctl, fd_, TCGETS, &t) != 0) return HostErrno();
      if (ctx.user == nullptr) return kEFAULT;
      TRY_VOID(ctx.user->CopyOutFull(arg, &t, sizeof(t)));
      return uint64_t{0};
    }
    case TIOCGWINSZ: {
      abi::Winsize w;
      if (syscall(SYS_ioctl, fd_, TIOCGWINSZ, &w) != 0) return HostErrno();
      if (ctx.user == nullptr) return kEFAULT;
      TRY_VOID(ctx.user->CopyOutFull(arg, &w, sizeof(w)));
      return uint64_t{0};
    }
    default:
      return kENOTTY;
  }
}

KResult<void> HostFile::Sync(bool data_only) {
  int r = data_only ? fdatasync(fd_) : fsync(fd_);
  if (r != 0) return Errno(errno);
  return OkResult();
}

}  // namespace sandbox::fs::host
