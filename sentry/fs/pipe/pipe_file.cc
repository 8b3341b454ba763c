#include "sentry/fs/pipe/pipe_file.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <atomic>

#include "sentry/vfs/filesystem.h"

namespace sandbox::fs::pipe {
namespace {

// pipefs: never mounted; it exists for its device number.
class PipeFs final : public vfs::Filesystem {
 public:
  std::string_view type_name() const override { return "pipefs"; }
  std::shared_ptr<vfs::Dentry> root() const override { return nullptr; }
  vfs::FsStats StatFs() override { return {}; }
};

std::atomic<uint64_t> next_pipe_ino{1};

}  // namespace

uint64_t PipeFsDev() {
  static const uint64_t dev = (new PipeFs())->dev();
  return dev;
}

PipeEnd::PipeEnd(std::shared_ptr<Pipe> pipe, bool reader, bool writer)
    : pipe_(std::move(pipe)), reader_(reader), writer_(writer) {}

PipeEnd::~PipeEnd() {
  if (reader_) pipe_->RemoveReader();
  if (writer_) pipe_->RemoveWriter();
}

KResult<size_t> PipeEnd::Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst,
                              uint32_t status_flags) {
  return pipe_->Read(ctx.interrupt_fd, dst, status_flags & O_NONBLOCK);
}

KResult<size_t> PipeEnd::Write(vfs::IoContext& ctx,
                               absl::Span<const uint8_t> src,
                               uint32_t status_flags) {
  return pipe_->Write(ctx.interrupt_fd, src, status_flags & O_NONBLOCK,
                      status_flags & O_DIRECT);
}

KResult<uint64_t> PipeEnd::Ioctl(vfs::IoContext& ctx, uint32_t cmd,
                                 uint64_t arg) {
  if (cmd != FIONREAD) return kENOTTY;
  if (ctx.user == nullptr) return kEFAULT;
  int32_t n = static_cast<int32_t>(pipe_->Queued());
  TRY_VOID(ctx.user->CopyOutFull(arg, &n, sizeof(n)));
  return uint64_t{0};
}

PipeFile::PipeFile(std::shared_ptr<Pipe> pipe, Inode inode, uint32_t flags)
    : vfs::FileDescription(flags),
      end_(std::move(pipe), readable(), writable()),
      inode_(inode) {}

PipeFile::~PipeFile() { pipe().locks().ReleaseDescription(this); }

KResult<abi::Stat> PipeFile::Stat() {
  abi::Stat st = {};
  st.st_dev = PipeFsDev();
  st.st_ino = inode_.ino;
  st.st_nlink = 1;
  st.st_mode = S_IFIFO | S_IRUSR | S_IWUSR;
  st.st_uid = inode_.uid;
  st.st_gid = inode_.gid;
  st.st_blksize = kPageSize;
  st.st_atim = pipe().atime();
  st.st_mtim = st.st_ctim = pipe().mtime();
  return st;
}

std::pair<std::shared_ptr<PipeFile>, std::shared_ptr<PipeFile>> NewPipe(
    uint32_t flags, uint32_t uid, uint32_t gid) {
  auto pipe = std::make_shared<Pipe>();
  PipeFile::Inode inode{next_pipe_ino.fetch_add(1, std::memory_order_relaxed),
                        uid, gid};
  uint32_t status = flags & (O_NONBLOCK | O_DIRECT);
  pipe->AddReader();
  pipe->AddWriter();
  auto r = std::make_shared<PipeFile>(pipe, inode, O_RDONLY | status);
  auto w = std::make_shared<PipeFile>(pipe, inode, O_WRONLY | status);
  return {std::move(r), std::move(w)};
}

KResult<std::shared_ptr<vfs::VfsFile>> FifoState::Open(
    const vfs::VirtualDentry& vd, uint32_t flags) {
  std::shared_ptr<Pipe> pipe;
  {
    absl::MutexLock l(&mu_);
    pipe = pipe_.lock();
    if (pipe == nullptr) {
      pipe = std::make_shared<Pipe>();
      pipe_ = pipe;
    }
  }
  TRY(Pipe::OpenWait wait, pipe->OpenFifoEnd(flags));
  return std::shared_ptr<vfs::VfsFile>(
      std::make_shared<FifoFile>(vd, flags, std::move(pipe), wait));
}

FifoFile::FifoFile(vfs::VirtualDentry vd, uint32_t flags,
                   std::shared_ptr<Pipe> pipe, Pipe::OpenWait wait)
    : vfs::VfsFile(std::move(vd), flags),
      end_(std::move(pipe), readable(), writable()),
      wait_(wait) {}

KResult<void> FifoFile::WaitOpen(vfs::IoContext& ctx) {
  return pipe().WaitForPartner(wait_, ctx.interrupt_fd);
}

Pipe* PipeOf(vfs::FileDescription& f) {
  if (auto* p = dynamic_cast<PipeFile*>(&f)) return &p->pipe();
  if (auto* p = dynamic_cast<FifoFile*>(&f)) return &p->pipe();
  return nullptr;
}

}  // namespace sandbox::fs::pipe
