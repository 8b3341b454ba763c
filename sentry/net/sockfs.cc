#include "sentry/net/sockfs.h"

#include <atomic>
#include <memory>
#include <string_view>

#include "sentry/vfs/dentry.h"

namespace sandbox::net {
namespace {

class SockFs final : public vfs::Filesystem {
 public:
  std::string_view type_name() const override { return "sockfs"; }
  std::shared_ptr<vfs::Dentry> root() const override { return nullptr; }
  vfs::FsStats StatFs() override {
    vfs::FsStats st;
    st.type = kSockfsMagic;
    st.block_size = st.frsize = 4096;
    return st;
  }
};

}  // namespace

vfs::Filesystem& Sockfs() {
  static SockFs* fs = new SockFs;
  return *fs;
}

uint64_t NextSockfsIno() {
  // Linux's get_next_ino starts past the low numbers other pseudo file
  // systems use; any unique number will do.
  static std::atomic<uint64_t> next{10000};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace sandbox::net
