#include "sentry/net/sockfs.h"

#include <sys/stat.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "sentry/vfs/dentry.h"
#include "sentry/vfs/inode.h"

namespace sandbox::net {
namespace {

// sockfs: one instance with one internal mount, never attached (Linux's
// sock_mnt), created on first use and never destroyed.
class SockFs final : public vfs::Filesystem {
 public:
  SockFs() {
    // init_pseudo's root: a directory nobody can walk into.
    root_ = vfs::Dentry::NewRoot(std::make_shared<vfs::Inode>(
        *this, 1, vfs::NewInodeAttrs{S_IFDIR | 0600, 0, 0, 0}));
  }
  std::string_view type_name() const override { return "sockfs"; }
  std::shared_ptr<vfs::Dentry> root() const override { return root_; }
  // sockfs_dname.
  std::string DName(const vfs::Dentry& d) const override {
    return "socket:[" + std::to_string(d.inode().ino()) + "]";
  }
  vfs::FsStats StatFs() override {
    vfs::FsStats st;
    st.type = kSockfsMagic;
    st.block_size = st.frsize = 4096;
    return st;
  }

 private:
  std::shared_ptr<vfs::Dentry> root_;
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

uint64_t NextSockfsIno() {
  // Linux's get_next_ino starts past the low numbers other pseudo file
  // systems use; any unique number will do.
  static std::atomic<uint64_t> next{10000};
  return next.fetch_add(1, std::memory_order_relaxed);
}

vfs::VirtualDentry NewSocketInode(uint32_t uid, uint32_t gid) {
  const SockMount& m = Instance();
  // The default Inode::Open is ENXIO: sock_no_open.
  auto inode = std::make_shared<vfs::Inode>(
      *m.fs, NextSockfsIno(), vfs::NewInodeAttrs{S_IFSOCK | 0777, uid, gid, 0});
  return vfs::VirtualDentry{
      m.mount, vfs::Dentry::NewAnonymous(m.fs->root(), std::move(inode))};
}

}  // namespace sandbox::net
