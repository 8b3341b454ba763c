// Test fixture: a tmpfs lower layer the test fills first (through its own
// mount namespace), a tmpfs upper layer, and the overlay of the two mounted
// as the root of a mount namespace; helpers call the VFS path operations as
// the syscalls do, on the overlay or directly on either layer.
#ifndef SENTRY_FS_OVERLAY_TESTING_H_
#define SENTRY_FS_OVERLAY_TESTING_H_

#include <fcntl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "platform/memory_file.h"
#include "sentry/fs/overlay/overlay.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/operations.h"

namespace sandbox::fs::overlay {

// File operations against the tree rooted at a VirtualDentry.
class Tree {
 public:
  Tree() = default;
  explicit Tree(vfs::VirtualDentry root) : root_(std::move(root)) {}

  vfs::ResolveBase Base(const kernel::Credentials& c) const {
    return {c, root_, root_};
  }
  vfs::ResolveBase Base() const { return Base(creds_); }

  KResult<std::shared_ptr<vfs::VfsFile>> Open(std::string_view path,
                                              uint32_t flags,
                                              uint32_t mode = 0644) const {
    return vfs::OpenAt(Base(), path, flags, mode, 022);
  }
  KResult<void> Mkdir(std::string_view path, uint32_t mode = 0755) const {
    return vfs::MkdirAt(Base(), path, mode, 0);
  }
  KResult<void> Unlink(std::string_view path) const {
    return vfs::UnlinkAt(Base(), path, 0);
  }
  KResult<void> Rmdir(std::string_view path) const {
    return vfs::UnlinkAt(Base(), path, AT_REMOVEDIR);
  }
  KResult<void> Rename(std::string_view from, std::string_view to,
                       uint32_t flags = 0) const {
    return vfs::RenameAt(Base(), from, Base(), to, flags);
  }
  KResult<void> Link(std::string_view from, std::string_view to) const {
    return vfs::LinkAt(Base(), from, Base(), to, 0);
  }
  KResult<void> Symlink(std::string_view target, std::string_view path) const {
    return vfs::SymlinkAt(Base(), target, path);
  }
  KResult<abi::Stat> Stat(std::string_view path, int flags = 0) const {
    return vfs::StatAt(Base(), path, flags);
  }
  Errno StatErr(std::string_view path) const {
    auto st = Stat(path, AT_SYMLINK_NOFOLLOW);
    return st.ok() ? Errno(0) : st.error();
  }
  // Creates or replaces `path` with `data`.
  KResult<void> WriteFile(std::string_view path, std::string_view data,
                          uint32_t flags = O_CREAT | O_WRONLY | O_TRUNC,
                          uint32_t mode = 0644) const {
    TRY(std::shared_ptr<vfs::VfsFile> f, Open(path, flags, mode));
    TRY(size_t n, WriteAll(*f, data));
    if (n != data.size()) return kEIO;
    return OkResult();
  }
  static KResult<size_t> WriteAll(vfs::FileDescription& f,
                                  std::string_view data) {
    vfs::IoContext ctx;
    return f.Write(
        ctx, absl::Span<const uint8_t>(
                 reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  }
  static std::string ReadAll(vfs::FileDescription& f) {
    std::string out;
    vfs::IoContext ctx;
    uint8_t buf[4096];
    for (;;) {
      auto n = f.Read(ctx, absl::MakeSpan(buf));
      if (!n.ok() || *n == 0) break;
      out.append(reinterpret_cast<char*>(buf), *n);
    }
    return out;
  }
  // The contents of `path`, or "<errno name>".
  std::string Read(std::string_view path) const {
    auto f = Open(path, O_RDONLY);
    if (!f.ok()) return "<" + std::string(f.error().name()) + ">";
    return ReadAll(**f);
  }
  // Sorted names (without "." and "..") getdents reports for `path`.
  std::vector<std::string> List(std::string_view path) const {
    std::vector<std::string> names;
    auto f = Open(path, O_RDONLY | O_DIRECTORY);
    EXPECT_TRUE(f.ok()) << path;
    if (!f.ok()) return names;
    auto r = (*f)->IterDirents([&](const vfs::DirEntry& e) {
      if (e.name != "." && e.name != "..") names.emplace_back(e.name);
      return true;
    });
    EXPECT_TRUE(r.ok());
    std::sort(names.begin(), names.end());
    return names;
  }

  vfs::VirtualDentry root_;
  kernel::Credentials creds_ = kernel::Credentials::Root();
};

class OverlayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto mf = platform::MemoryFile::Create(uint64_t{256} << 20);
    ASSERT_TRUE(mf.ok()) << mf.status();
    mf_ = std::move(*mf);
    lower_fs_ =
        tmpfs::Filesystem::Create(*mf_, tmpfs::Options{.root_mode = 0755});
    lower_ns_ = vfs::MountNamespace::Create(lower_fs_, 0);
    lower_ = Tree(lower_ns_->Root());
  }

  // Mounts the overlay of the lower tree (filled by the test) and a new
  // upper tmpfs.
  void MountOverlay() { MountOverlayOn(lower_ns_->Root()); }
  void MountOverlayOn(vfs::VirtualDentry lower) {
    upper_fs_ = tmpfs::Filesystem::Create(*mf_);
    auto o = OverlayFilesystem::Create(Options{lower, upper_fs_});
    ASSERT_TRUE(o.ok()) << o.error().name();
    ovl_fs_ = std::move(o).value();
    ns_ = vfs::MountNamespace::Create(ovl_fs_, 0);
    ovl_ = Tree(ns_->Root());
    upper_ns_ = vfs::MountNamespace::Create(upper_fs_, 0);
    upper_ = Tree(upper_ns_->Root());
  }

  std::unique_ptr<platform::MemoryFile> mf_;
  std::shared_ptr<tmpfs::Filesystem> lower_fs_;
  std::shared_ptr<vfs::MountNamespace> lower_ns_;
  std::shared_ptr<tmpfs::Filesystem> upper_fs_;
  std::shared_ptr<vfs::MountNamespace> upper_ns_;
  std::shared_ptr<OverlayFilesystem> ovl_fs_;
  std::shared_ptr<vfs::MountNamespace> ns_;
  Tree lower_, upper_, ovl_;
};

#define OVL_EXPECT_ERRNO(expr, err)                                \
  do {                                                             \
    auto _r = (expr);                                              \
    ASSERT_FALSE(_r.ok()) << #expr " succeeded";                   \
    EXPECT_EQ(_r.error(), err) << #expr ": " << _r.error().name(); \
  } while (0)
#define OVL_ASSERT_OK(expr)                                                   \
  do {                                                                        \
    auto _r = (expr);                                                         \
    ASSERT_TRUE(_r.ok()) << #expr ": " << (_r.ok() ? "" : _r.error().name()); \
  } while (0)

}  // namespace sandbox::fs::overlay

#endif  // SENTRY_FS_OVERLAY_TESTING_H_
