#include "sentry/fs/dev/dev.h"

#include <sys/stat.h>

#include <string>

#include "sentry/fs/dev/memdev.h"
#include "sentry/fs/kernfs/kernfs.h"

namespace sandbox::fs::dev {
namespace {

constexpr uint64_t kTmpfsMagic = 0x01021994;  // devtmpfs reports tmpfs's
constexpr uint32_t kTtyGid = 5;               // group "tty"

// A character device node whose opens go to `open`.
class CharDevice final : public vfs::Inode {
 public:
  using OpenFn = std::function<KResult<std::shared_ptr<vfs::VfsFile>>(
      const vfs::VirtualDentry&, uint32_t)>;
  CharDevice(kernfs::Filesystem& fs, uint32_t major, uint32_t minor,
             uint32_t gid, OpenFn open)
      : vfs::Inode(fs, fs.NextIno(),
                   vfs::NewInodeAttrs{S_IFCHR | 0666, 0, gid,
                                      vfs::MakeDev(major, minor)}),
        open_(std::move(open)) {}

  KResult<std::shared_ptr<vfs::VfsFile>> Open(const vfs::VirtualDentry& vd,
                                              uint32_t flags) override {
    return open_(vd, flags);
  }

 private:
  const OpenFn open_;
};

std::shared_ptr<vfs::Inode> MemNode(kernfs::Filesystem& fs, uint32_t minor,
                                    MemDevice kind) {
  return std::make_shared<CharDevice>(
      fs, 1, minor, 0,
      [kind](const vfs::VirtualDentry& vd,
             uint32_t flags) -> KResult<std::shared_ptr<vfs::VfsFile>> {
        return std::shared_ptr<vfs::VfsFile>(
            std::make_shared<MemDevFile>(vd, flags, kind));
      });
}

// A device without a driver in the sandbox yet: open fails with ENXIO
// (tty: no controlling terminal, as Linux's tty_open_current_tty).
std::shared_ptr<vfs::Inode> NoDriverNode(kernfs::Filesystem& fs, uint32_t major,
                                         uint32_t minor, uint32_t gid) {
  return std::make_shared<CharDevice>(
      fs, major, minor, gid,
      [](const vfs::VirtualDentry&, uint32_t)
          -> KResult<std::shared_ptr<vfs::VfsFile>> { return kENXIO; });
}

}  // namespace

std::shared_ptr<vfs::Filesystem> NewDevFilesystem() {
  auto fs = std::make_shared<kernfs::Filesystem>("devtmpfs", kTmpfsMagic);
  auto root = std::make_shared<kernfs::Dir>(*fs, 0755);
  root->Add("null", MemNode(*fs, 3, MemDevice::kNull));
  root->Add("zero", MemNode(*fs, 5, MemDevice::kZero));
  root->Add("full", MemNode(*fs, 7, MemDevice::kFull));
  root->Add("random", MemNode(*fs, 8, MemDevice::kRandom));
  root->Add("urandom", MemNode(*fs, 9, MemDevice::kURandom));
  root->Add("tty", NoDriverNode(*fs, 5, 0, kTtyGid));
  root->Add("ptmx", NoDriverNode(*fs, 5, 2, kTtyGid));
  root->Add("fd", std::make_shared<kernfs::Symlink>(*fs, "/proc/self/fd"));
  root->Add("stdin", std::make_shared<kernfs::Symlink>(*fs, "/proc/self/fd/0"));
  root->Add("stdout",
            std::make_shared<kernfs::Symlink>(*fs, "/proc/self/fd/1"));
  root->Add("stderr",
            std::make_shared<kernfs::Symlink>(*fs, "/proc/self/fd/2"));
  root->Add("pts", std::make_shared<kernfs::Dir>(*fs, 0755));
  root->Add("shm", std::make_shared<kernfs::Dir>(*fs, 01777));
  fs->SetRoot(root);
  return fs;
}

}  // namespace sandbox::fs::dev
