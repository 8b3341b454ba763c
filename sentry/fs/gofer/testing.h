// Test fixture: a real Gofer server (gofer/server, in-process, unconfined)
// serving a temporary directory over a socketpair, a gofer file system on
// the other end mounted as the root of a mount namespace, and helpers that
// call the VFS path operations as the syscalls do.
#ifndef SENTRY_FS_GOFER_TESTING_H_
#define SENTRY_FS_GOFER_TESTING_H_

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gofer/server/server.h"
#include "gofer/server/testing.h"
#include "gtest/gtest.h"
#include "platform/memory_file.h"
#include "sentry/fs/gofer/filesystem.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/operations.h"

namespace sandbox::fs::gofer {

class GoferFsTest : public ::testing::Test {
 protected:
  // Starts the server and mounts the file system (call once per test,
  // after preparing the host tree under root()).
  void Mount(Options opts = {}, ::gofer::ServerOptions sopts = {}) {
    if (geteuid() != 0) opts.set_owner = false;
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    raw_ = sv[0];
    int root = open(tree_.root().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(root, 0);
    server_ = std::thread([fd = sv[1], root, sopts] {
      ::gofer::ServeConnection(::gofer::UniqueFd(fd), ::gofer::UniqueFd(root),
                               sopts);
    });
    auto fs = NewGoferFilesystem(::gofer::UniqueFd(sv[0]), opts);
    ASSERT_TRUE(fs.ok()) << fs.error().name();
    fs_ = std::move(fs).value();
    ns_ = vfs::MountNamespace::Create(
        fs_, fs_->read_only() ? vfs::kMountReadOnly : 0);
    root_vd_ = ns_->Root();
  }

  void TearDown() override {
    if (!server_.joinable()) return;
    root_vd_ = {};
    ns_.reset();
    // The server sees end of stream even if a test kept a reference.
    shutdown(raw_, SHUT_RDWR);
    fs_.reset();
    server_.join();
  }

  std::string Host(std::string_view rel) const {
    return tree_.root() + "/" + std::string(rel);
  }

  vfs::ResolveBase Base() const { return {root_, root_vd_, root_vd_}; }

  KResult<std::shared_ptr<vfs::VfsFile>> Open(std::string_view path,
                                              uint32_t flags,
                                              uint32_t mode = 0644) {
    return vfs::OpenAt(Base(), path, flags, mode, 022);
  }
  std::string ReadAll(vfs::FileDescription& f) {
    std::string out;
    vfs::IoContext ctx;
    uint8_t buf[4096];
    for (;;) {
      auto n = f.Read(ctx, absl::MakeSpan(buf));
      EXPECT_TRUE(n.ok());
      if (!n.ok() || *n == 0) break;
      out.append(reinterpret_cast<char*>(buf), *n);
    }
    return out;
  }
  KResult<size_t> Write(vfs::FileDescription& f, std::string_view data) {
    vfs::IoContext ctx;
    return f.Write(
        ctx, absl::Span<const uint8_t>(
                 reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  }
  // Names getdents reports for `path`, "." and ".." included.
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

  ::gofer::testing::TempTree tree_;
  std::thread server_;
  int raw_ = -1;
  std::shared_ptr<GoferFilesystem> fs_;
  std::shared_ptr<vfs::MountNamespace> ns_;
  vfs::VirtualDentry root_vd_;
  kernel::Credentials root_ = kernel::Credentials::Root();
};

// The host file's bytes, "<missing>" if it cannot be opened.
inline std::string HostRead(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "<missing>";
  std::string s = ::gofer::testing::ReadAll(fd);
  close(fd);
  return s;
}

// A GoferFsTest whose file system caches pages in its own memory file
// (mmap, direct I/O): call MountWithCache() instead of Mount().
class GoferFsWithMemoryFileTest : public GoferFsTest {
 protected:
  void SetUp() override {
    auto mf = platform::MemoryFile::Create(uint64_t{64} << 20);
    ASSERT_TRUE(mf.ok()) << mf.status();
    mf_ = std::move(*mf);
  }
  void MountWithCache() {
    Options opts;
    opts.memory_file = mf_.get();
    Mount(opts);
  }
  // TearDown drops the file system before members go.
  std::unique_ptr<platform::MemoryFile> mf_;
};

#define EXPECT_ERRNO(expr, err)                                    \
  do {                                                             \
    auto _r = (expr);                                              \
    ASSERT_FALSE(_r.ok()) << #expr " succeeded";                   \
    EXPECT_EQ(_r.error(), err) << #expr ": " << _r.error().name(); \
  } while (0)
#define ASSERT_OK(expr)                                                       \
  do {                                                                        \
    auto _r = (expr);                                                         \
    ASSERT_TRUE(_r.ok()) << #expr ": " << (_r.ok() ? "" : _r.error().name()); \
  } while (0)

}  // namespace sandbox::fs::gofer

#endif  // SENTRY_FS_GOFER_TESTING_H_
