// A VFS over a tmpfs root for in-process tests: a memory file, a mount
// namespace, credentials for root and for an unprivileged user, and
// helpers that call the path operations as the syscalls will.
#ifndef SENTRY_FS_TMPFS_TESTING_H_
#define SENTRY_FS_TMPFS_TESTING_H_

#include <fcntl.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "platform/memory_file.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/fs_context.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/operations.h"

namespace sandbox::fs::tmpfs {

class TmpfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto mf = platform::MemoryFile::Create(uint64_t{256} << 20);
    ASSERT_TRUE(mf.ok()) << mf.status();
    mf_ = std::move(*mf);
    fs_ = Filesystem::Create(*mf_, Options{.root_mode = 0755});
    ns_ = vfs::MountNamespace::Create(fs_, 0);
    root_vd_ = ns_->Root();
  }

  vfs::ResolveBase Base(const kernel::Credentials& c) const {
    return {c, root_vd_, cwd_.ok() ? cwd_ : root_vd_};
  }
  vfs::ResolveBase Base() const { return Base(root_); }

  KResult<std::shared_ptr<vfs::VfsFile>> Open(std::string_view path,
                                              uint32_t flags,
                                              uint32_t mode = 0644) {
    return vfs::OpenAt(Base(), path, flags, mode, 022);
  }
  KResult<std::shared_ptr<vfs::VfsFile>> OpenAs(const kernel::Credentials& c,
                                                std::string_view path,
                                                uint32_t flags,
                                                uint32_t mode = 0644) {
    return vfs::OpenAt(Base(c), path, flags, mode, 022);
  }
  KResult<void> Mkdir(std::string_view path, uint32_t mode = 0755) {
    return vfs::MkdirAt(Base(), path, mode, 0);
  }
  KResult<void> Symlink(std::string_view target, std::string_view path) {
    return vfs::SymlinkAt(Base(), target, path);
  }
  // Creates `path` with `data` as root.
  void WriteFile(std::string_view path, std::string_view data,
                 uint32_t mode = 0644) {
    auto f = Open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
    ASSERT_TRUE(f.ok()) << f.error().name();
    vfs::IoContext ctx;
    auto n = (*f)->Write(
        ctx, absl::Span<const uint8_t>(
                 reinterpret_cast<const uint8_t*>(data.data()), data.size()));
    ASSERT_TRUE(n.ok());
    ASSERT_EQ(*n, data.size());
  }
  std::string ReadAll(vfs::FileDescription& f) {
    std::string out;
    vfs::IoContext ctx;
    uint8_t buf[1000];
    for (;;) {
      auto n = f.Read(ctx, absl::MakeSpan(buf));
      if (!n.ok() || *n == 0) break;
      out.append(reinterpret_cast<char*>(buf), *n);
    }
    return out;
  }
  // Names getdents reports for `path` (including "." and "..").
  std::vector<std::string> List(std::string_view path) {
    std::vector<std::string> names;
    auto f = Open(path, O_RDONLY | O_DIRECTORY);
    EXPECT_TRUE(f.ok());
    if (!f.ok()) return names;
    auto r = (*f)->IterDirents([&](const vfs::DirEntry& e) {
      names.emplace_back(e.name);
      return true;
    });
    EXPECT_TRUE(r.ok());
    return names;
  }
  Errno StatErr(std::string_view path, int flags = 0) {
    auto st = vfs::StatAt(Base(), path, flags);
    return st.ok() ? Errno(0) : st.error();
  }

  std::unique_ptr<platform::MemoryFile> mf_;
  std::shared_ptr<Filesystem> fs_;
  std::shared_ptr<vfs::MountNamespace> ns_;
  vfs::VirtualDentry root_vd_;
  vfs::VirtualDentry cwd_;
  kernel::Credentials root_ = kernel::Credentials::Root();
  kernel::Credentials user_ = kernel::Credentials::User(1000, 1000);
  kernel::Credentials user2_ = kernel::Credentials::User(2000, 2000);
};

// EXPECT_ERRNO(expr, kEXXX): expr (a KResult) failed with that errno.
#define EXPECT_ERRNO(expr, err)                                    \
  do {                                                             \
    auto _r = (expr);                                              \
    ASSERT_FALSE(_r.ok()) << #expr " succeeded";                   \
    EXPECT_EQ(_r.error(), err) << #expr ": " << _r.error().name(); \
  } while (0)
#define EXPECT_OK(expr)                                                       \
  do {                                                                        \
    auto _r = (expr);                                                         \
    EXPECT_TRUE(_r.ok()) << #expr ": " << (_r.ok() ? "" : _r.error().name()); \
  } while (0)
#define ASSERT_OK(expr)                                                       \
  do {                                                                        \
    auto _r = (expr);                                                         \
    ASSERT_TRUE(_r.ok()) << #expr ": " << (_r.ok() ? "" : _r.error().name()); \
  } while (0)

}  // namespace sandbox::fs::tmpfs

#endif  // SENTRY_FS_TMPFS_TESTING_H_
