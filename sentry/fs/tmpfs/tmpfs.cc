#include "sentry/fs/tmpfs/tmpfs.h"

#include <sys/stat.h>
#include <unistd.h>

#include "sentry/fs/pipe/pipe_file.h"
#include "sentry/fs/tmpfs/directory.h"
#include "sentry/fs/tmpfs/inode.h"
#include "sentry/fs/tmpfs/regular_file.h"

namespace sandbox::fs::tmpfs {
namespace {

constexpr uint64_t kPage = abi::kPageSize;

class Symlink final : public TmpfsInode {
 public:
  Symlink(Filesystem& fs, uint64_t ino, const vfs::NewInodeAttrs& attrs,
          std::string_view target)
      : TmpfsInode(fs, ino, attrs), target_(target) {
    absl::MutexLock l(&mu_);
    attrs_.size = target_.size();
  }
  KResult<std::string> Readlink() override { return target_; }

 private:
  const std::string target_;  // immutable
};

// A FIFO: every opener shares the inode's pipe (sentry/fs/pipe).
class FifoInode final : public TmpfsInode {
 public:
  using TmpfsInode::TmpfsInode;
  KResult<std::shared_ptr<vfs::VfsFile>> Open(const vfs::VirtualDentry& vd,
                                              uint32_t flags) override {
    return fifo_.Open(vd, flags);
  }

 private:
  pipe::FifoState fifo_;
};

// Sockets, device nodes: attributes only until their drivers exist.
class SpecialInode final : public TmpfsInode {
 public:
  using TmpfsInode::TmpfsInode;
};

}  // namespace

uint64_t DefaultMaxPages(const platform::MemoryFile& mf) {
  // The sandbox's RAM is its memory limit (runsc do --memory), when set.
  if (const uint64_t limit = mf.Limit(); limit != 0) return limit / kPage / 2;
  return DefaultMaxPages();
}

uint64_t DefaultMaxPages() {
  static const uint64_t pages = [] {
    long n = sysconf(_SC_PHYS_PAGES);
    long psz = sysconf(_SC_PAGESIZE);
    if (n <= 0 || psz <= 0) return uint64_t{0};
    return static_cast<uint64_t>(n) * static_cast<uint64_t>(psz) / kPage / 2;
  }();
  return pages;
}

Filesystem::Filesystem(platform::MemoryFile& mf, const Options& opts)
    : mf_(mf),
      max_pages_(opts.max_bytes ? *opts.max_bytes / kPage
                                : DefaultMaxPages(mf)),
      max_inodes_(opts.max_inodes ? *opts.max_inodes : DefaultMaxPages(mf)) {}

std::shared_ptr<Filesystem> Filesystem::Create(platform::MemoryFile& mf,
                                               const Options& opts) {
  std::shared_ptr<Filesystem> fs(new Filesystem(mf, opts));
  vfs::NewInodeAttrs attrs;
  attrs.mode = S_IFDIR | (opts.root_mode & 07777);
  attrs.uid = opts.root_uid;
  attrs.gid = opts.root_gid;
  std::shared_ptr<vfs::Inode> root = fs->NewInode(attrs, {}).value();
  fs->root_ = vfs::Dentry::NewRoot(std::move(root));
  return fs;
}

KResult<std::shared_ptr<vfs::Inode>> Filesystem::NewInode(
    const vfs::NewInodeAttrs& attrs, std::string_view symlink_target) {
  // shmem_reserve_inode: ENOSPC at the inode limit.
  uint64_t live = inodes_.load(std::memory_order_relaxed);
  do {
    if (max_inodes_ != 0 && live >= max_inodes_) return kENOSPC;
  } while (!inodes_.compare_exchange_weak(live, live + 1,
                                          std::memory_order_relaxed));
  uint64_t ino = next_ino_.fetch_add(1, std::memory_order_relaxed);
  switch (attrs.mode & S_IFMT) {
    case S_IFDIR:
      return std::shared_ptr<vfs::Inode>(
          std::make_shared<Directory>(*this, ino, attrs));
    case S_IFREG:
      return std::shared_ptr<vfs::Inode>(
          std::make_shared<RegularFile>(*this, ino, attrs));
    case S_IFLNK:
      return std::shared_ptr<vfs::Inode>(
          std::make_shared<Symlink>(*this, ino, attrs, symlink_target));
    case S_IFIFO:
      return std::shared_ptr<vfs::Inode>(
          std::make_shared<FifoInode>(*this, ino, attrs));
    case S_IFSOCK:
    case S_IFCHR:
    case S_IFBLK:
      return std::shared_ptr<vfs::Inode>(
          std::make_shared<SpecialInode>(*this, ino, attrs));
    default:
      ReleaseInode();
      return kEINVAL;
  }
}

bool Filesystem::ReservePages(uint64_t n) {
  uint64_t used = used_pages_.load(std::memory_order_relaxed);
  do {
    if (max_pages_ != 0 && used + n > max_pages_) return false;
  } while (!used_pages_.compare_exchange_weak(used, used + n,
                                              std::memory_order_relaxed));
  return true;
}

bool Filesystem::CouldHoldPages(uint64_t n) const {
  const uint64_t used = used_pages_.load(std::memory_order_relaxed);
  if (max_pages_ != 0 && (used > max_pages_ || n > max_pages_ - used)) {
    return false;
  }
  constexpr uint64_t kPageBytes = 4096;
  if (n > UINT64_MAX / kPageBytes) return false;
  return mf_.CouldFit(n * kPageBytes);
}

void Filesystem::ReleasePages(uint64_t n) {
  used_pages_.fetch_sub(n, std::memory_order_relaxed);
}

// shmem_statfs: sizes only for a limited instance (size=0 / nr_inodes=0
// show zeros); the used pages are file data pages, every live inode (the
// root too) counts against the inode limit.
vfs::FsStats Filesystem::StatFs() {
  vfs::FsStats st;
  st.type = kTmpfsMagic;
  st.block_size = st.frsize = kPage;
  if (max_pages_ != 0) {
    uint64_t used = used_pages_.load(std::memory_order_relaxed);
    st.blocks = max_pages_;
    st.blocks_free = st.blocks_avail = max_pages_ - std::min(used, max_pages_);
  }
  if (max_inodes_ != 0) {
    uint64_t live = inodes_.load(std::memory_order_relaxed);
    st.files = max_inodes_;
    st.files_free = max_inodes_ - std::min(live, max_inodes_);
  }
  st.name_max = vfs::kNameMax;
  return st;
}

}  // namespace sandbox::fs::tmpfs
