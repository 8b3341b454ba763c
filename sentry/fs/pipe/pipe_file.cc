#include "sentry/fs/pipe/pipe_file.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <atomic>
#include <string>

#include "sentry/vfs/dentry.h"
#include "sentry/vfs/filesystem.h"
#include "sentry/vfs/mount.h"

namespace sandbox::fs::pipe {
namespace {

constexpr uint64_t kPipeFsMagic = 0x50495045;  // PIPEFS_MAGIC

// pipefs: one instance with one internal mount, never attached (so never
// in a mount table), created on first use and never destroyed.
class PipeFs final : public vfs::Filesystem {
 public:
  PipeFs() {
    // init_pseudo's root: a directory nobody can walk into (no lookup).
    root_ = vfs::Dentry::NewRoot(std::make_shared<vfs::Inode>(
        *this, 1, vfs::NewInodeAttrs{S_IFDIR | 0600, 0, 0, 0}));
  }
  std::string_view type_name() const override { return "pipefs"; }
  std::shared_ptr<vfs::Dentry> root() const override { return root_; }
  // pipefs_dname.
  std::string DName(const vfs::Dentry& d) const override {
    return "pipe:[" + std::to_string(d.inode().ino()) + "]";
  }
  vfs::FsStats StatFs() override {
    vfs::FsStats st;
    st.type = kPipeFsMagic;
    return st;
  }

 private:
  std::shared_ptr<vfs::Dentry> root_;
};

// A pipe(2) pipe's inode: holds the Pipe (Linux's i_pipe) for as long as
// an end or a reopened description holds the inode.
class PipeInode final : public vfs::Inode {
 public:
  PipeInode(PipeFs& fs, uint64_t ino, uint32_t uid, uint32_t gid,
            std::shared_ptr<Pipe> pipe)
      : vfs::Inode(fs, ino, vfs::NewInodeAttrs{S_IFIFO | 0600, uid, gid, 0}),
        pipe_(std::move(pipe)) {}

  // The inode's owner and mode; st_blksize a page; atime the last read,
  // mtime and ctime the last write (pipe_read/pipe_write update them).
  abi::Stat Stat() const override {
    abi::Stat st = vfs::Inode::Stat();
    st.st_blksize = kPageSize;
    st.st_blocks = 0;
    st.st_atim = pipe_->atime();
    st.st_mtim = st.st_ctim = pipe_->mtime();
    return st;
  }

  // fifo_open on a pipefs inode (is_pipe): counts the opener as a reader
  // and/or writer and never waits for a partner nor fails with ENXIO (a
  // FIFO's O_RDONLY/O_WRONLY would); EINVAL for access mode 3.
  KResult<std::shared_ptr<vfs::VfsFile>> Open(const vfs::VirtualDentry& vd,
                                              uint32_t flags) override {
    switch (flags & O_ACCMODE) {
      case O_RDONLY:
        pipe_->AddReader();
        break;
      case O_WRONLY:
        pipe_->AddWriter();
        break;
      case O_RDWR:
        pipe_->AddReader();
        pipe_->AddWriter();
        break;
      default:
        return kEINVAL;
    }
    return std::shared_ptr<vfs::VfsFile>(
        std::make_shared<FifoFile>(vd, flags, pipe_, Pipe::OpenWait{}));
  }

 private:
  const std::shared_ptr<Pipe> pipe_;
};

struct PipeMount {
  std::shared_ptr<PipeFs> fs;
  std::shared_ptr<vfs::Mount> mount;
};

const PipeMount& Instance() {
  static const PipeMount* m = [] {
    auto fs = std::make_shared<PipeFs>();
    auto mount = vfs::Mount::Create(fs, fs->root(), 0, "pipefs", "");
    return new PipeMount{std::move(fs), std::move(mount)};
  }();
  return *m;
}

std::atomic<uint64_t> next_pipe_ino{2};  // 1 is the root

}  // namespace

uint64_t PipeFsDev() { return Instance().fs->dev(); }

bool IsPipeFsInode(const vfs::Inode& inode) {
  return &inode.fs() == Instance().fs.get();  // pipefs has pipe inodes only
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

PipeFile::PipeFile(vfs::VirtualDentry location, std::shared_ptr<Pipe> pipe,
                   uint32_t flags)
    : vfs::FileDescription(flags),
      location_(std::move(location)),
      end_(std::move(pipe), readable(), writable()) {}

PipeFile::~PipeFile() {
  location_.dentry->inode().locks().ReleaseDescription(this);
}

KResult<abi::Stat> PipeFile::Stat() { return location_.dentry->inode().Stat(); }

std::pair<std::shared_ptr<PipeFile>, std::shared_ptr<PipeFile>> NewPipe(
    uint32_t flags, uint32_t uid, uint32_t gid) {
  const PipeMount& m = Instance();
  auto pipe = std::make_shared<Pipe>();
  auto inode = std::make_shared<PipeInode>(
      *m.fs, next_pipe_ino.fetch_add(1, std::memory_order_relaxed), uid, gid,
      pipe);
  vfs::VirtualDentry location{
      m.mount, vfs::Dentry::NewAnonymous(m.fs->root(), std::move(inode))};
  uint32_t status = flags & (O_NONBLOCK | O_DIRECT);
  pipe->AddReader();
  pipe->AddWriter();
  auto r = std::make_shared<PipeFile>(location, pipe, O_RDONLY | status);
  auto w = std::make_shared<PipeFile>(location, pipe, O_WRONLY | status);
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
