// Open file descriptions on a Pipe: the two ends of a pipe(2) pipe
// (PipeFile, on an anonymous pipefs inode) and the openers of a FIFO
// (FifoFile, a VfsFile on the FIFO's inode in its file system, or on a
// pipe(2) pipe's pipefs inode when /proc/PID/fd/N of a pipe end is opened).
//
// pipefs: one internal, never attached mount (Linux's pipe_mnt). Each
// pipe(2) pipe has an anonymous inode there (S_IFIFO 0600, the creator's
// fsuid/fsgid) holding the Pipe, as Linux's i_pipe; both ends and every
// reopening share it, so fstat, advisory locks and chmod through the
// magic link see one inode. Opening that inode (the magic link's jump)
// follows fifo_open for a pipe: a new description on the same pipe with
// the new access mode, which (unlike a FIFO open) never waits for a
// partner and never fails with ENXIO.
//
// Each description counts as a reader and/or writer of its Pipe from its
// creation to its destruction (the last close). Read, write, FIONREAD and
// packet mode (O_DIRECT on the writing description) are the Pipe's; fstat
// of a pipe(2) end shows S_IFIFO 0600 owned by the creator, st_blksize
// 4096, st_size 0, on the pipefs device; a FIFO's fstat is its inode's.
#ifndef SENTRY_FS_PIPE_PIPE_FILE_H_
#define SENTRY_FS_PIPE_PIPE_FILE_H_

#include <stdint.h>

#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sentry/fs/pipe/pipe.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::fs::pipe {

// The I/O both kinds of description share.
class PipeEnd {
 public:
  PipeEnd(std::shared_ptr<Pipe> pipe, bool reader, bool writer);
  ~PipeEnd();
  PipeEnd(const PipeEnd&) = delete;
  PipeEnd& operator=(const PipeEnd&) = delete;

  Pipe& pipe() const { return *pipe_; }
  KResult<size_t> Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst,
                       uint32_t status_flags);
  KResult<size_t> Write(vfs::IoContext& ctx, absl::Span<const uint8_t> src,
                        uint32_t status_flags);
  // FIONREAD; ENOTTY for the rest.
  KResult<uint64_t> Ioctl(vfs::IoContext& ctx, uint32_t cmd, uint64_t arg);
  // pipe_poll for this end (Pipe::Readiness).
  uint32_t Readiness(uint32_t mask, uint64_t poll_version) const {
    return pipe_->Readiness(reader_, writer_, poll_version, mask);
  }

 private:
  const std::shared_ptr<Pipe> pipe_;
  const bool reader_;
  const bool writer_;
};

// One end of a pipe(2) pipe.
class PipeFile final : public vfs::FileDescription {
 public:
  // `location`: the pipe's anonymous pipefs inode (from NewPipe).
  PipeFile(vfs::VirtualDentry location, std::shared_ptr<Pipe> pipe,
           uint32_t flags);
  ~PipeFile() override;

  Pipe& pipe() const { return end_.pipe(); }
  // The pipefs inode, where /proc/PID/fd/N of this end jumps.
  const vfs::VirtualDentry* location() const override { return &location_; }

  KResult<size_t> Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) override {
    return end_.Read(ctx, dst, status_flags());
  }
  KResult<size_t> Write(vfs::IoContext& ctx,
                        absl::Span<const uint8_t> src) override {
    return end_.Write(ctx, src, status_flags());
  }
  KResult<abi::Stat> Stat() override;
  KResult<uint64_t> Ioctl(vfs::IoContext& ctx, uint32_t cmd,
                          uint64_t arg) override {
    return end_.Ioctl(ctx, cmd, arg);
  }
  bool MayBlock() const override { return true; }
  vfs::lock::FileLocks* locks() override {
    return &location_.dentry->inode().locks();
  }
  uint32_t Readiness(uint32_t mask) override { return end_.Readiness(mask, 0); }
  void EventRegister(vfs::WaitEntry* e, uint32_t mask) override {
    pipe().EventRegister(e, mask);
  }
  bool CanPoll() const override { return true; }

 private:
  const vfs::VirtualDentry location_;
  PipeEnd end_;
};

// pipe(2)/pipe2(2): the read end (O_RDONLY) and the write end (O_WRONLY) of
// a new pipe, with the status flags in `flags` (O_NONBLOCK, O_DIRECT),
// owned by uid/gid.
std::pair<std::shared_ptr<PipeFile>, std::shared_ptr<PipeFile>> NewPipe(
    uint32_t flags, uint32_t uid, uint32_t gid);

// st_dev of pipe(2) pipes (the pipefs anonymous device).
uint64_t PipeFsDev();
// Whether `inode` is a pipe(2) pipe's pipefs inode (readlink of
// /proc/PID/fd/N shows "pipe:[INO]" for it, as pipefs_dname).
bool IsPipeFsInode(const vfs::Inode& inode);

// A FIFO inode's pipe: created by the first opener, shared by all openers,
// freed (with its data) when the last one closes, as Linux's i_pipe.
class FifoState {
 public:
  // Opens the FIFO reached at `vd` with open(2) `flags` (counts the
  // opener; ENXIO for O_WRONLY|O_NONBLOCK without readers). The open
  // completes in WaitOpen, which the open syscall calls: O_RDONLY waits
  // for a writer, O_WRONLY for a reader (unless O_NONBLOCK / O_RDWR).
  KResult<std::shared_ptr<vfs::VfsFile>> Open(const vfs::VirtualDentry& vd,
                                              uint32_t flags)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  std::weak_ptr<Pipe> pipe_ ABSL_GUARDED_BY(mu_);
};

// An opener of a FIFO.
class FifoFile final : public vfs::VfsFile {
 public:
  FifoFile(vfs::VirtualDentry vd, uint32_t flags, std::shared_ptr<Pipe> pipe,
           Pipe::OpenWait wait);

  Pipe& pipe() const { return end_.pipe(); }

  KResult<void> WaitOpen(vfs::IoContext& ctx) override;
  KResult<size_t> Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) override {
    return end_.Read(ctx, dst, status_flags());
  }
  KResult<size_t> Write(vfs::IoContext& ctx,
                        absl::Span<const uint8_t> src) override {
    return end_.Write(ctx, src, status_flags());
  }
  KResult<uint64_t> Ioctl(vfs::IoContext& ctx, uint32_t cmd,
                          uint64_t arg) override {
    return end_.Ioctl(ctx, cmd, arg);
  }
  bool MayBlock() const override { return true; }
  // pipe_poll; an O_RDONLY|O_NONBLOCK opener that found no writer sees no
  // POLLHUP until a writer has come (f_version).
  uint32_t Readiness(uint32_t mask) override {
    return end_.Readiness(mask, wait_.poll_version);
  }
  void EventRegister(vfs::WaitEntry* e, uint32_t mask) override {
    pipe().EventRegister(e, mask);
  }
  bool CanPoll() const override { return true; }

 private:
  PipeEnd end_;
  const Pipe::OpenWait wait_;
};

// The pipe behind a pipe(2) end or a FIFO description, or null.
Pipe* PipeOf(vfs::FileDescription& f);

}  // namespace sandbox::fs::pipe

#endif  // SENTRY_FS_PIPE_PIPE_FILE_H_
