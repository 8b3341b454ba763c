// tmpfs directory sizes and link counts, as Linux's shmem reports them
// (what du and ls -l show): a directory's st_size is BOGO_DIRENT_SIZE (20)
// per entry plus two (for . and ..), its st_nlink 2 plus its
// subdirectories, its st_blocks 0; a file's st_blocks count whole pages.
// Run in /dev/shm, a tmpfs both natively and in the sandbox.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr off_t kBogoDirentSize = 20;

// rm -rf without a shell (the sandbox's test root has none).
void RemoveTree(const std::string& path) {
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      struct stat st;
      std::string child = path + "/" + name;
      if (lstat(child.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        RemoveTree(child);
      } else {
        unlink(child.c_str());
      }
    }
    closedir(d);
  }
  rmdir(path.c_str());
}

class TmpfsDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct statfs sf;
    if (statfs("/dev/shm", &sf) != 0 || sf.f_type != TMPFS_MAGIC) {
      GTEST_SKIP() << "/dev/shm is not a tmpfs here";
    }
    static int n = 0;
    dir_ = "/dev/shm/tmpfs_test." + std::to_string(getpid()) + "." +
           std::to_string(n++);
    ASSERT_THAT(mkdir(dir_.c_str(), 0755), SyscallSucceeds());
  }
  void TearDown() override {
    if (!dir_.empty()) RemoveTree(dir_);
  }
  struct stat Stat(const std::string& rel) {
    struct stat st = {};
    EXPECT_THAT(lstat((dir_ + rel).c_str(), &st), SyscallSucceeds()) << rel;
    return st;
  }
  std::string dir_;
};

TEST_F(TmpfsDirTest, SizeCountsEntriesNlinkCountsSubdirs) {
  struct stat st = Stat("");
  EXPECT_EQ(st.st_size, 2 * kBogoDirentSize);
  EXPECT_EQ(st.st_nlink, 2u);
  EXPECT_EQ(st.st_blocks, 0);
  int fd = open((dir_ + "/f").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_THAT(mkdir((dir_ + "/s").c_str(), 0755), SyscallSucceeds());
  ASSERT_THAT(symlink("x", (dir_ + "/l").c_str()), SyscallSucceeds());
  ASSERT_THAT(mkfifo((dir_ + "/p").c_str(), 0644), SyscallSucceeds());
  ASSERT_THAT(link((dir_ + "/f").c_str(), (dir_ + "/h").c_str()),
              SyscallSucceeds());
  st = Stat("");
  EXPECT_EQ(st.st_size, 7 * kBogoDirentSize);  // f s l p h . ..
  EXPECT_EQ(st.st_nlink, 3u);
  EXPECT_EQ(st.st_blocks, 0);
  EXPECT_EQ(Stat("/s").st_size, 2 * kBogoDirentSize);
  // A rename within the directory keeps the count; out of it, moves it.
  ASSERT_THAT(rename((dir_ + "/f").c_str(), (dir_ + "/g").c_str()),
              SyscallSucceeds());
  EXPECT_EQ(Stat("").st_size, 7 * kBogoDirentSize);
  ASSERT_THAT(rename((dir_ + "/g").c_str(), (dir_ + "/s/g").c_str()),
              SyscallSucceeds());
  EXPECT_EQ(Stat("").st_size, 6 * kBogoDirentSize);
  EXPECT_EQ(Stat("/s").st_size, 3 * kBogoDirentSize);
  // Replacing an existing name removes one entry.
  ASSERT_THAT(rename((dir_ + "/h").c_str(), (dir_ + "/p").c_str()),
              SyscallSucceeds());
  EXPECT_EQ(Stat("").st_size, 5 * kBogoDirentSize);
  ASSERT_THAT(unlink((dir_ + "/l").c_str()), SyscallSucceeds());
  ASSERT_THAT(unlink((dir_ + "/s/g").c_str()), SyscallSucceeds());
  ASSERT_THAT(rmdir((dir_ + "/s").c_str()), SyscallSucceeds());
  st = Stat("");
  EXPECT_EQ(st.st_size, 3 * kBogoDirentSize);  // p . ..
  EXPECT_EQ(st.st_nlink, 2u);
}

TEST_F(TmpfsDirTest, FileBlocksAreWholePages) {
  const std::string f = dir_ + "/f";
  int fd = open(f.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(Stat("/f").st_blocks, 0);
  ASSERT_THAT(write(fd, "x", 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(Stat("/f").st_blocks, 8);  // one 4 KiB page in 512-byte units
  ASSERT_THAT(ftruncate(fd, 1 << 20), SyscallSucceeds());
  EXPECT_EQ(Stat("/f").st_blocks, 8);  // the hole takes no pages
  EXPECT_EQ(Stat("/f").st_size, 1 << 20);
  close(fd);
}

}  // namespace
}  // namespace sandbox::testutil
