#include "sentry/net/sockfs.h"

#include <sys/stat.h>

#include <atomic>
#include <memory>
#include <string_view>

#include "sentry/vfs/dentry.h"
#include "sentry/vfs/inode.h"

namespace sandbox::net {
namespace {

class SockFs final : public vfs::Filesystem {
 public:
  SockFs() {
    // init_pseudo's root: a directory nobody can walk into.
    root_ = vfs::Dentry::NewRoot(std::make_shared<vfs::Inode>(
        *this, 1, vfs::NewInodeAttrs{S_IFDIR | 0600, 0, 0, 0}));
  }
  std::string_view type_name() const override { return "sockfs"; }
  std::shared_ptr<vfs::Dentry> root() const override { return root_; }
  vfs::FsStats StatFs() override {
    vfs::FsStats st;
    st.type = kSockfsMagic;
    st.block_size = st.frsize = 4096;
    return st;
  }

 private:
  std::shared_ptr<vfs::Dentry> root_;
};

// A socket's inode (sock_alloc): st_blksize a page.
class SockInode final : public vfs::Inode {
 public:
  SockInode(SockFs& fs, uint64_t ino, uint32_t uid, uint32_t gid)
      : vfs::Inode(fs, ino, vfs::NewInodeAttrs{S_IFSOCK | 0777, uid, gid, 0}) {}
  abi::Stat Stat() const override {
    abi::Stat st = vfs::Inode::Stat();
    st.st_blksize = 4096;
    return st;
  }
};

struct SockMount {
  std::shared_ptr<SockFs> fs;
  std::shared_ptr<vfs::Mount> mount;
};

const SockMount& Instance() {
  static const SockMount* m = [] {
    auto fs = std::make_shared<SockFs>();
    auto mount = vfs::Mount::Create(fs, fs->root(), 0, "sockfs", "");
    return new SockMount{std::move(fs), std::move(mount)};
  }();
  return *m;
}

}  // namespace

vfs::Filesystem& Sockfs() { return *Instance().fs; }

vfs::VirtualDentry NewSockfsLocation(uint64_t ino, uint32_t uid,
                                     uint32_t gid) {
  const SockMount& m = Instance();
  return {m.mount, vfs::Dentry::NewAnonymous(
                       m.fs->root(),
                       std::make_shared<SockInode>(*m.fs, ino, uid, gid))};
}

uint64_t NextSockfsIno() {
  // Linux's get_next_ino starts past the low numbers other pseudo file
  // systems use; any unique number will do.
  static std::atomic<uint64_t> next{10000};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace sandbox::net
