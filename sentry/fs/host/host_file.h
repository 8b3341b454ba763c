// HostFile: a FileDescription over a host file descriptor that the sandbox
// was handed (the stdio of `runsc do`).
//
// The host description is shared with the caller (a `>>` redirect shares
// its offset with the shell), so read/write/lseek use the host description's
// own offset, and its O_NONBLOCK is never changed: the guest's O_NONBLOCK
// lives in this FileDescription and is emulated with poll(2). Blocking waits
// poll the host FD together with the task's interrupt FD, so a signal or a
// kill stops a task blocked on a terminal or pipe.
//
// A blocking write takes all of its (at most 1 MiB) chunk, waiting again
// after a short host write (a host description the caller made O_NONBLOCK),
// so write(2)'s chunk loop (sentry/syscalls/file.cc) gives the whole count
// as Linux's pipes and terminals do; interrupted after some bytes, their
// count. The host write itself can block in the host kernel when the host
// description is blocking (not interruptible until the reader reads).
//
// fstat and an allowlist of terminal ioctls (TCGETS, TIOCGWINSZ) pass
// through; other ioctls get ENOTTY.
//
// Thread-safety: thread-safe; the host FD is immutable and owned.
#ifndef SENTRY_FS_HOST_HOST_FILE_H_
#define SENTRY_FS_HOST_HOST_FILE_H_

#include <memory>

#include "sentry/base/result.h"
#include "sentry/vfs/file_description.h"

namespace sandbox::fs::host {

class HostFile final : public vfs::FileDescription {
 public:
  // Takes ownership of `host_fd` (which must be open). The access mode and
  // status flags come from the host description.
  static KResult<std::shared_ptr<HostFile>> Create(int host_fd);
  ~HostFile() override;

  int host_fd() const { return fd_; }

  KResult<size_t> Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) override;
  KResult<size_t> Write(vfs::IoContext& ctx,
                        absl::Span<const uint8_t> src) override;
  KResult<size_t> PRead(vfs::IoContext& ctx, absl::Span<uint8_t> dst,
                        int64_t offset) override;
  KResult<size_t> PWrite(vfs::IoContext& ctx, absl::Span<const uint8_t> src,
                         int64_t offset) override;
  KResult<int64_t> Seek(int64_t offset, int whence) override;
  KResult<abi::Stat> Stat() override;
  // The host's fsync/fdatasync (EINVAL for pipes and terminals).
  KResult<void> Sync(bool data_only) override;
  KResult<uint64_t> Ioctl(vfs::IoContext& ctx, uint32_t cmd,
                          uint64_t arg) override;
  bool MayBlock() const override { return may_block_; }
  // Readiness is the host's: a zero-timeout poll of the host FD (regular
  // files and block devices: always ready, as Linux's default mask). No
  // Notify comes from the host, so waits poll HostPollFd on the host.
  uint32_t Readiness(uint32_t mask) override;
  int HostPollFd() const override { return may_block_ ? fd_ : -1; }
  bool CanPoll() const override { return may_block_; }

 private:
  HostFile(int fd, uint32_t flags, bool may_block)
      : FileDescription(flags), fd_(fd), may_block_(may_block) {}

  // Waits until the host FD is ready for `events` (POLLIN/POLLOUT), or the
  // task is interrupted (ERESTARTSYS). With O_NONBLOCK: EAGAIN if not ready.
  KResult<void> WaitReady(vfs::IoContext& ctx, short events);

  const int fd_;
  // False for regular files and block devices, which poll always reports
  // ready and whose reads do not wait for another party.
  const bool may_block_;
};

}  // namespace sandbox::fs::host

#endif  // SENTRY_FS_HOST_HOST_FILE_H_
