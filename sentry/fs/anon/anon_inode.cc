#include "sentry/fs/anon/anon_inode.h"

#include <time.h>

#include <memory>

#include "sentry/vfs/dentry.h"
#include "sentry/vfs/filesystem.h"

namespace sandbox::fs::anon {
namespace {

constexpr uint64_t kAnonInodeFsMagic = 0x09041934;  // ANON_INODE_FS_MAGIC

class AnonInodeFs final : public vfs::Filesystem {
 public:
  std::string_view type_name() const override { return "anon_inodefs"; }
  std::shared_ptr<vfs::Dentry> root() const override { return nullptr; }
  vfs::FsStats StatFs() override {
    vfs::FsStats st;
    st.type = kAnonInodeFsMagic;
    return st;
  }
};

struct Instance {
  AnonInodeFs fs;
  abi::Timespec boot;
};

const Instance& Get() {
  static const Instance* i = [] {
    auto* n = new Instance;
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    n->boot = {ts.tv_sec, ts.tv_nsec};
    return n;
  }();
  return *i;
}

}  // namespace

abi::Stat AnonInodeStat() {
  const Instance& i = Get();
  abi::Stat st = {};
  st.st_dev = i.fs.dev();
  st.st_ino = 1;
  st.st_nlink = 1;
  st.st_mode = 0600;  // S_IRUSR | S_IWUSR, no type
  st.st_blksize = 4096;
  st.st_atim = st.st_mtim = st.st_ctim = i.boot;
  return st;
}

}  // namespace sandbox::fs::anon
