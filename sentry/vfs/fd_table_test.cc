#include "sentry/vfs/fd_table.h"

#include <memory>

#include "gtest/gtest.h"

namespace sandbox::vfs {
namespace {

FileRef NewFile() { return std::make_shared<FileDescription>(O_RDWR); }

TEST(FdTableTest, LowestFreeDescriptor) {
  FdTable t;
  FileRef a = NewFile();
  EXPECT_EQ(t.Install(a, 0, false, 1024).value(), 0);
  EXPECT_EQ(t.Install(a, 0, false, 1024).value(), 1);
  EXPECT_EQ(t.Install(a, 0, false, 1024).value(), 2);
  ASSERT_TRUE(t.Remove(1).ok());
  EXPECT_EQ(t.Install(a, 0, false, 1024).value(), 1);
  EXPECT_EQ(t.Install(a, 10, false, 1024).value(), 10);
  EXPECT_EQ(t.Install(a, 0, false, 1024).value(), 3);
  EXPECT_EQ(t.Count(), 5u);
  EXPECT_EQ(a.use_count(), 6);
}

TEST(FdTableTest, Limits) {
  FdTable t;
  FileRef a = NewFile();
  EXPECT_EQ(t.Install(a, 0, false, 2).value(), 0);
  EXPECT_EQ(t.Install(a, 0, false, 2).value(), 1);
  EXPECT_EQ(t.Install(a, 0, false, 2).error(), kEMFILE);
  EXPECT_EQ(t.Install(a, 5, false, 2).error(), kEINVAL);
  EXPECT_EQ(t.Install(a, -1, false, 2).error(), kEINVAL);
  EXPECT_EQ(t.InstallAt(2, a, false, 2).error(), kEBADF);
  EXPECT_EQ(t.InstallAt(-1, a, false, 2).error(), kEBADF);
}

TEST(FdTableTest, InstallAtReplacesAndReturnsOld) {
  FdTable t;
  FileRef a = NewFile(), b = NewFile();
  ASSERT_EQ(t.Install(a, 0, true, 100).value(), 0);
  auto old = t.InstallAt(0, b, false, 100);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old.value(), a);
  bool cloexec = true;
  EXPECT_EQ(t.Get(0, &cloexec).value(), b);
  EXPECT_FALSE(cloexec);
  // A far descriptor grows the table; the gap stays free.
  ASSERT_TRUE(t.InstallAt(50, a, false, 100).ok());
  EXPECT_EQ(t.Install(a, 0, false, 100).value(), 1);
}

TEST(FdTableTest, CloseOnExec) {
  FdTable t;
  FileRef a = NewFile();
  ASSERT_TRUE(t.Install(a, 0, false, 100).ok());
  ASSERT_TRUE(t.Install(a, 0, true, 100).ok());
  ASSERT_TRUE(t.Install(a, 0, false, 100).ok());
  ASSERT_TRUE(t.SetCloexec(2, true).ok());
  EXPECT_EQ(t.SetCloexec(7, true).error(), kEBADF);
  EXPECT_EQ(t.RemoveCloexec().size(), 2u);
  EXPECT_NE(t.Get(0), nullptr);
  EXPECT_EQ(t.Get(1), nullptr);
  EXPECT_EQ(t.Get(2), nullptr);
  EXPECT_EQ(t.Install(a, 0, false, 100).value(), 1);
}

TEST(FdTableTest, RemoveErrorsAndFork) {
  FdTable t;
  EXPECT_EQ(t.Remove(0).error(), kEBADF);
  EXPECT_EQ(t.Remove(-5).error(), kEBADF);
  EXPECT_EQ(t.Get(-5), nullptr);
  EXPECT_EQ(t.Get(3, nullptr).error(), kEBADF);
  FileRef a = NewFile();
  ASSERT_TRUE(t.Install(a, 0, true, 100).ok());
  auto copy = t.Fork();
  ASSERT_TRUE(t.Remove(0).ok());
  bool cloexec = false;
  EXPECT_EQ(copy->Get(0, &cloexec).value(), a);
  EXPECT_TRUE(cloexec);
  EXPECT_EQ(copy->RemoveAll().size(), 1u);
  EXPECT_EQ(copy->Count(), 0u);
}

TEST(FileDescriptionTest, StatusFlags) {
  FileDescription f(O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC);
  EXPECT_EQ(f.status_flags(), uint32_t{O_WRONLY | O_APPEND});
  EXPECT_FALSE(f.readable());
  EXPECT_TRUE(f.writable());
  f.SetStatusFlags(O_NONBLOCK | O_RDWR);
  EXPECT_EQ(f.status_flags(), uint32_t{O_WRONLY | O_NONBLOCK});
  EXPECT_TRUE(f.nonblocking());
  IoContext ctx;
  uint8_t buf[4];
  EXPECT_EQ(f.Read(ctx, absl::MakeSpan(buf)).error(), kEINVAL);
  EXPECT_EQ(f.PRead(ctx, absl::MakeSpan(buf), 0).error(), kESPIPE);
  EXPECT_EQ(f.Ioctl(ctx, 0, 0).error(), kENOTTY);
}

}  // namespace
}  // namespace sandbox::vfs
