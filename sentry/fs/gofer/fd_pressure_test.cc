// Descriptor pressure (issue 17, finding 4): a Gofer with few handles left
// fails only the call that finds none (ENFILE: the host's limit), the client
// gives back what its caches hold, and every call works again once the guest
// lets go.
#include <sys/stat.h>

#include <string>
#include <vector>

#include "gofer/server/testing.h"
#include "gtest/gtest.h"
#include "sentry/fs/gofer/testing.h"

namespace sandbox::fs::gofer {
namespace {

constexpr int kDirs = 8;
constexpr int kFilesPerDir = 40;  // 320 files, 5x the Gofer's handles

class FdPressureTest : public GoferFsTest {
 protected:
  void SetUp() override {
    for (int d = 0; d < kDirs; ++d) {
      const std::string dir = Host("d" + std::to_string(d));
      ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
      for (int f = 0; f < kFilesPerDir; ++f) {
        ::gofer::testing::WriteFile(dir + "/f" + std::to_string(f), "x");
      }
    }
  }
  void MountSmall() {
    Options opts;
    opts.max_cached_inodes = 32;  // half of the Gofer's handles, as boot
    ::gofer::ServerOptions sopts;
    sopts.max_handles = 64;
    Mount(opts, sopts);
  }
  static std::string Path(int d, int f) {
    return "/d" + std::to_string(d) + "/f" + std::to_string(f);
  }
};

// A tree walk (find) over more files than the Gofer has handles: every
// stat succeeds (the name cache gives its handles back), as natively.
TEST_F(FdPressureTest, WalkingMoreFilesThanHandlesSucceeds) {
  MountSmall();
  int listed = 0;
  for (int d = 0; d < kDirs; ++d) {
    for (const std::string& name : List("/d" + std::to_string(d))) {
      if (name == "." || name == "..") continue;
      ++listed;
      auto st = vfs::StatAt(Base(), "/d" + std::to_string(d) + "/" + name, 0);
      EXPECT_TRUE(st.ok()) << name << ": "
                           << (st.ok() ? "" : st.error().name());
    }
  }
  EXPECT_EQ(listed, kDirs * kFilesPerDir);
}

// find over a directory with more subdirectories than the Gofer has
// handles (its first GetdentsPlus batch alone could take them all): every
// subdirectory opens, lists and stats, as natively.
TEST_F(FdPressureTest, FindOverManySubdirectoriesSucceeds) {
  ASSERT_EQ(mkdir(Host("wide").c_str(), 0755), 0);
  for (int i = 0; i < 300; ++i) {
    const std::string sub = Host("wide/s" + std::to_string(i));
    ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
    ::gofer::testing::WriteFile(sub + "/a", "x");
    ::gofer::testing::WriteFile(sub + "/b", "x");
  }
  MountSmall();
  auto top = Open("/wide", O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(top.ok());
  int seen = 0;
  for (const std::string& name : List("/wide")) {
    if (name == "." || name == "..") continue;
    const std::string sub = "/wide/" + name;
    auto st = vfs::StatAt(Base(), sub, 0);
    ASSERT_TRUE(st.ok()) << sub << ": " << st.error().name();
    for (const std::string& f : List(sub)) {
      if (f == "." || f == "..") continue;
      auto fst = vfs::StatAt(Base(), sub + "/" + f, 0);
      ASSERT_TRUE(fst.ok()) << sub << "/" << f << ": " << fst.error().name();
      ++seen;
    }
  }
  EXPECT_EQ(seen, 600);
}

// A guest holds files open until the Gofer has no handle left: that open
// fails with ENFILE (and only it); once the files are closed, opens work
// again at once.
TEST_F(FdPressureTest, HoldingFilesFailsOnlyTheOpenPastTheLimitAndRecovers) {
  MountSmall();
  std::vector<std::shared_ptr<vfs::VfsFile>> held;
  Errno failed{0};
  for (int d = 0; d < kDirs && failed.number() == 0; ++d) {
    for (int f = 0; f < kFilesPerDir; ++f) {
      auto file = Open(Path(d, f), O_RDONLY);
      if (!file.ok()) {
        failed = file.error();
        break;
      }
      held.push_back(std::move(file).value());
    }
  }
  EXPECT_EQ(failed, kENFILE);   // the host's limit, not the guest's table
  EXPECT_GT(held.size(), 16u);  // the cache gave its handles to open files
  EXPECT_LT(held.size(), 64u);
  EXPECT_GT(fs_->fd_pressure_events(), 0u);
  held.clear();
  // Everything, not just what was open before.
  for (int d = 0; d < kDirs; ++d) {
    for (int f = 0; f < kFilesPerDir; ++f) {
      auto file = Open(Path(d, f), O_RDONLY);
      ASSERT_TRUE(file.ok()) << Path(d, f) << ": " << file.error().name();
      EXPECT_EQ(ReadAll(**file), "x");
    }
  }
}

}  // namespace
}  // namespace sandbox::fs::gofer
