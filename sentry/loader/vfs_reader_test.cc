// OpenExecutable's checks (execve's do_open_execat) and VfsFileReader,
// over a tmpfs root.
#include "sentry/loader/vfs_reader.h"

#include <fcntl.h>

#include <string>

#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/testing.h"
#include "sentry/vfs/operations.h"

namespace sandbox::loader {
namespace {

class VfsReaderTest : public fs::tmpfs::TmpfsTest {};

TEST_F(VfsReaderTest, ExecuteWithoutReadPermission) {
  WriteFile("/prog",
            "\x7f"
            "ELF-and-more",
            0111);
  ASSERT_OK(vfs::ChmodAt(Base(), "/prog", 0111, 0));
  auto f = OpenExecutable(Base(user_), "/prog");
  ASSERT_TRUE(f.ok()) << f.error().name();
  VfsFileReader reader(std::move(f).value());
  EXPECT_EQ(reader.Size().value(), 13u);
  char buf[32] = {};
  EXPECT_EQ(reader.ReadAt(1, buf, sizeof(buf)).value(), 12u);
  EXPECT_EQ(std::string(buf, 3), "ELF");
  EXPECT_EQ(reader.ReadAt(100, buf, sizeof(buf)).value(), 0u);
}

TEST_F(VfsReaderTest, Errors) {
  WriteFile("/data", "x", 0644);
  ASSERT_OK(Mkdir("/dir", 0755));
  // No execute bit: EACCES even for root.
  EXPECT_ERRNO(OpenExecutable(Base(), "/data"), kEACCES);
  // Not a regular file.
  EXPECT_ERRNO(OpenExecutable(Base(), "/dir"), kEACCES);
  EXPECT_ERRNO(OpenExecutable(Base(), "/missing"), kENOENT);
  EXPECT_ERRNO(OpenExecutable(Base(), "/data/x"), kENOTDIR);
  // Through a symlink: the target counts.
  ASSERT_OK(Symlink("/dir", "/link"));
  EXPECT_ERRNO(OpenExecutable(Base(), "/link"), kEACCES);
}

TEST_F(VfsReaderTest, NoexecMountIsEacces) {
  WriteFile("/prog", "x", 0755);
  ASSERT_OK(vfs::ChmodAt(Base(), "/prog", 0755, 0));
  EXPECT_OK(OpenExecutable(Base(), "/prog"));
  ns_->root_mount()->set_flags(vfs::kMountNoExec);
  EXPECT_ERRNO(OpenExecutable(Base(), "/prog"), kEACCES);
}

}  // namespace
}  // namespace sandbox::loader
