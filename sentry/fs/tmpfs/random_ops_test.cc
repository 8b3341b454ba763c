// Random sequences of path operations on hostile-looking paths ("..",
// ".", "//", symlink loops, long names, NULs): nothing crashes, every
// failure is an errno, and the tree's link counts stay consistent.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/testing.h"

namespace sandbox::fs::tmpfs {
namespace {

class RandomOpsTest : public TmpfsTest {
 protected:
  std::string RandomPath(std::mt19937& rng) {
    static const std::vector<std::string> parts = {"a",
                                                   "b",
                                                   "c",
                                                   "..",
                                                   ".",
                                                   "",
                                                   "l",
                                                   "loop",
                                                   std::string(256, 'n'),
                                                   std::string("x\0y", 3)};
    std::string p = (rng() % 2) ? "/" : "";
    int n = 1 + rng() % 4;
    for (int i = 0; i < n; ++i) {
      if (i > 0) p += (rng() % 5 == 0) ? "//" : "/";
      p += parts[rng() % parts.size()];
    }
    if (rng() % 6 == 0) p += "/";
    return p;
  }

  // Checks nlink of every directory reachable from `path` against its
  // subdirectories, recursively (depth-limited).
  void CheckLinks(const std::string& path, int depth) {
    if (depth > 6) return;
    auto st = vfs::StatAt(Base(), path, AT_SYMLINK_NOFOLLOW);
    ASSERT_TRUE(st.ok()) << path;
    if (!S_ISDIR(st->st_mode)) return;
    uint64_t subdirs = 0;
    for (const std::string& n : List(path)) {
      if (n == "." || n == "..") continue;
      std::string child = path == "/" ? "/" + n : path + "/" + n;
      auto cst = vfs::StatAt(Base(), child, AT_SYMLINK_NOFOLLOW);
      ASSERT_TRUE(cst.ok()) << child;
      if (S_ISDIR(cst->st_mode)) {
        ++subdirs;
        CheckLinks(child, depth + 1);
      }
    }
    EXPECT_EQ(st->st_nlink, 2 + subdirs) << path;
  }
};

TEST_F(RandomOpsTest, NoCrashAndConsistentLinks) {
  std::mt19937 rng(12345);
  ASSERT_OK(Symlink("loop", "/loop"));
  ASSERT_OK(Symlink("a/b", "/l"));
  int created = 0, removed = 0, renamed = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string p = RandomPath(rng);
    std::string q = RandomPath(rng);
    auto& creds = (rng() % 3 == 0) ? user_ : root_;
    auto b = Base(creds);
    switch (rng() % 10) {
      case 0:
        created += vfs::MkdirAt(b, p, 0777, 0).ok();
        break;
      case 1:
        created += vfs::OpenAt(b, p, O_CREAT | O_RDWR, 0666, 0).ok();
        break;
      case 2:
        removed += vfs::UnlinkAt(b, p, 0).ok();
        break;
      case 3:
        removed += vfs::UnlinkAt(b, p, AT_REMOVEDIR).ok();
        break;
      case 4:
        renamed +=
            vfs::RenameAt(b, p, b, q, rng() % 3 == 0 ? RENAME_EXCHANGE : 0)
                .ok();
        break;
      case 5:
        (void)vfs::LinkAt(b, p, b, q, 0);
        break;
      case 6:
        (void)vfs::SymlinkAt(b, q, p);
        break;
      case 7:
        (void)vfs::StatAt(b, p, (rng() % 2) ? AT_SYMLINK_NOFOLLOW : 0);
        break;
      case 8:
        (void)vfs::OpenAt(b, p, O_RDONLY | O_DIRECTORY, 0, 0);
        break;
      case 9:
        (void)vfs::ReadlinkAt(b, p);
        break;
    }
  }
  // The mix must exercise the operations, not just their errors.
  EXPECT_GT(created, 20);
  EXPECT_GT(removed, 5);
  EXPECT_GT(renamed, 5);
  CheckLinks("/", 0);
}

}  // namespace
}  // namespace sandbox::fs::tmpfs
