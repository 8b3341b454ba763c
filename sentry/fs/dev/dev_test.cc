#include "sentry/fs/dev/dev.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/operations.h"

namespace sandbox::fs::dev {
namespace {

class DevTest : public ::testing::Test {
 protected:
  DevTest()
      : ns_(vfs::MountNamespace::Create(NewDevFilesystem(), 0)),
        creds_(kernel::Credentials::Root()),
        base_{creds_, ns_->Root(), ns_->Root()} {}

  std::shared_ptr<vfs::VfsFile> Open(const std::string& path, int flags) {
    auto f = vfs::OpenAt(base_, path, flags, 0, 0);
    EXPECT_TRUE(f.ok()) << path;
    return f.ok() ? *f : nullptr;
  }

  std::shared_ptr<vfs::MountNamespace> ns_;
  kernel::Credentials creds_;
  vfs::ResolveBase base_;
  vfs::IoContext ctx_;
};

TEST_F(DevTest, DeviceNumbersAndModes) {
  struct {
    const char* name;
    unsigned major, minor;
  } devs[] = {{"/null", 1, 3},   {"/zero", 1, 5},    {"/full", 1, 7},
              {"/random", 1, 8}, {"/urandom", 1, 9}, {"/tty", 5, 0},
              {"/ptmx", 5, 2}};
  for (const auto& d : devs) {
    abi::Stat st = vfs::StatAt(base_, d.name, 0).value();
    EXPECT_EQ(st.st_mode, S_IFCHR | 0666u) << d.name;
    EXPECT_EQ(major(st.st_rdev), d.major) << d.name;
    EXPECT_EQ(minor(st.st_rdev), d.minor) << d.name;
  }
  EXPECT_EQ(vfs::ReadlinkAt(base_, "/fd").value(), "/proc/self/fd");
  EXPECT_EQ(vfs::ReadlinkAt(base_, "/stderr").value(), "/proc/self/fd/2");
  EXPECT_EQ(vfs::StatAt(base_, "/shm", 0).value().st_mode, S_IFDIR | 01777u);
}

TEST_F(DevTest, NullZeroFull) {
  uint8_t buf[16];
  memset(buf, 0xaa, sizeof(buf));
  auto null = Open("/null", O_RDWR);
  EXPECT_EQ(null->Read(ctx_, absl::MakeSpan(buf)).value(), 0u);
  EXPECT_EQ(null->Write(ctx_, absl::MakeConstSpan(buf)).value(), sizeof(buf));
  auto zero = Open("/zero", O_RDWR);
  EXPECT_EQ(zero->Read(ctx_, absl::MakeSpan(buf)).value(), sizeof(buf));
  for (uint8_t b : buf) EXPECT_EQ(b, 0);
  EXPECT_EQ(zero->Write(ctx_, absl::MakeConstSpan(buf)).value(), sizeof(buf));
  auto full = Open("/full", O_RDWR);
  memset(buf, 0xaa, sizeof(buf));
  EXPECT_EQ(full->Read(ctx_, absl::MakeSpan(buf)).value(), sizeof(buf));
  for (uint8_t b : buf) EXPECT_EQ(b, 0);
  EXPECT_EQ(full->Write(ctx_, absl::MakeConstSpan(buf)).error(), kENOSPC);
  EXPECT_EQ(full->Seek(100, SEEK_SET).value(), 0);
}

TEST_F(DevTest, RandomDiffersAndTtyHasNoDriver) {
  uint8_t a[32], b[32];
  auto r = Open("/urandom", O_RDONLY);
  ASSERT_EQ(r->Read(ctx_, absl::MakeSpan(a)).value(), sizeof(a));
  ASSERT_EQ(r->Read(ctx_, absl::MakeSpan(b)).value(), sizeof(b));
  EXPECT_NE(memcmp(a, b, sizeof(a)), 0);
  EXPECT_EQ(vfs::OpenAt(base_, "/tty", O_RDWR, 0, 0).error(), kENXIO);
  EXPECT_EQ(vfs::MkdirAt(base_, "/newdir", 0755, 0).error(), kEPERM);
  EXPECT_EQ(vfs::MkdirAt(base_, "/shm", 0755, 0).error(), kEEXIST);
}

}  // namespace
}  // namespace sandbox::fs::dev
