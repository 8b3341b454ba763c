// statfs(2), fstatfs(2) and the sync family.
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr long kStValid = 0x20;  // ST_VALID (linux/statfs.h)

TEST(StatfsTest, DevShmIsTmpfs) {
  struct statfs st;
  ASSERT_THAT(statfs("/dev/shm", &st), SyscallSucceeds());
  EXPECT_EQ(st.f_type, TMPFS_MAGIC);
  EXPECT_EQ(st.f_namelen, 255);
  EXPECT_GT(st.f_bsize, 0);
  EXPECT_EQ(st.f_flags & ST_RDONLY, 0u);
  FileDescriptor fd(open("/dev/shm", O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(fd.valid());
  struct statfs fst;
  ASSERT_THAT(fstatfs(fd.get(), &fst), SyscallSucceeds());
  EXPECT_EQ(fst.f_type, TMPFS_MAGIC);
  // O_PATH descriptors are enough.
  FileDescriptor pfd(open("/dev/shm", O_PATH));
  ASSERT_THAT(fstatfs(pfd.get(), &fst), SyscallSucceeds());
}

// What every file system with sizes shows (an in-memory one with a size
// limit, or a disk): blocks, free <= total, available <= free.
void ExpectSizes(const char* path) {
  struct statfs st;
  ASSERT_THAT(statfs(path, &st), SyscallSucceeds());
  EXPECT_GT(st.f_bsize, 0) << path;
  EXPECT_GT(st.f_frsize, 0) << path;
  EXPECT_GT(st.f_namelen, 0) << path;
  EXPECT_GT(st.f_blocks, 0u) << path;
  EXPECT_LE(st.f_bfree, st.f_blocks) << path;
  EXPECT_LE(st.f_bavail, st.f_bfree) << path;
  EXPECT_LE(st.f_ffree, st.f_files) << path;
  EXPECT_NE(st.f_flags & kStValid, 0) << path;
  struct statvfs vst;
  ASSERT_THAT(statvfs(path, &vst), SyscallSucceeds());
  EXPECT_EQ(vst.f_blocks, st.f_blocks) << path;
  EXPECT_EQ(vst.f_frsize, static_cast<unsigned long>(st.f_frsize)) << path;
}

TEST(StatfsTest, RootAndTheTempDirHaveSizes) {
  ExpectSizes("/");
  ExpectSizes(TempDir().c_str());
}

// /dev/shm is a tmpfs (TMPFS_MAGIC, page-sized blocks; its own sizes are
// the host's choice). Its free blocks are its available ones.
TEST(StatfsTest, DevShmCountsAreConsistent) {
  struct statfs st;
  ASSERT_THAT(statfs("/dev/shm", &st), SyscallSucceeds());
  ASSERT_EQ(st.f_type, TMPFS_MAGIC);
  EXPECT_EQ(st.f_bsize, sysconf(_SC_PAGESIZE));
  EXPECT_EQ(st.f_frsize, st.f_bsize);
  EXPECT_EQ(st.f_bavail, st.f_bfree);
  EXPECT_LE(st.f_bfree, st.f_blocks);
  EXPECT_LE(st.f_ffree, st.f_files);
}

// ---- A tmpfs the test mounts (needs CAP_SYS_ADMIN; native runs unshare
// a mount namespace first, the sandbox is one of its own). ----

const std::string& MountUnavailable() {
  static const std::string* why = [] {
    auto* s = new std::string;
    if (unshare(CLONE_NEWNS) != 0) {
      if (errno != ENOSYS) {
        *s = std::string("unshare(CLONE_NEWNS): ") + strerror(errno) +
             " (needs CAP_SYS_ADMIN)";
        return s;
      }
    } else if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) !=
               0) {
      *s = std::string("making / private: ") + strerror(errno);
    }
    return s;
  }();
  return *why;
}

class TmpfsStatfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!MountUnavailable().empty()) GTEST_SKIP() << MountUnavailable();
    dir_.emplace(TempPath::CreateDir());
  }
  void TearDown() override {
    if (mounted_ && dir_) umount2(dir_->path().c_str(), MNT_DETACH);
  }
  // Mounts a new tmpfs at the test directory; false (a skip) without the
  // privilege.
  bool Mount(unsigned long flags, const char* data) {
    if (mounted_) umount2(dir_->path().c_str(), MNT_DETACH);
    mounted_ = false;
    if (mount("none", dir_->path().c_str(), "tmpfs", flags, data) != 0) {
      ADD_FAILURE() << "mount tmpfs " << (data ? data : "") << ": "
                    << strerror(errno);
      return false;
    }
    mounted_ = true;
    return true;
  }
  struct statfs Statfs() {
    struct statfs st = {};
    EXPECT_THAT(statfs(dir_->path().c_str(), &st), SyscallSucceeds());
    return st;
  }

  std::optional<TempPath> dir_;
  bool mounted_ = false;
};

// Linux's default: half of RAM in pages (sysinfo's totalram), and as many
// inodes; a fresh instance uses one inode (its root) and no blocks.
TEST_F(TmpfsStatfsTest, DefaultIsHalfOfRam) {
  ASSERT_TRUE(Mount(0, nullptr));
  struct sysinfo si;
  ASSERT_THAT(sysinfo(&si), SyscallSucceeds());
  const uint64_t half =
      uint64_t{si.totalram} * si.mem_unit / sysconf(_SC_PAGESIZE) / 2;
  struct statfs st = Statfs();
  EXPECT_EQ(st.f_type, TMPFS_MAGIC);
  EXPECT_EQ(st.f_bsize, sysconf(_SC_PAGESIZE));
  EXPECT_EQ(st.f_frsize, st.f_bsize);
  EXPECT_EQ(st.f_namelen, 255);
  EXPECT_EQ(st.f_blocks, half);
  EXPECT_EQ(st.f_bfree, st.f_blocks);
  EXPECT_EQ(st.f_bavail, st.f_blocks);
  EXPECT_EQ(st.f_files, half);
  EXPECT_EQ(st.f_ffree, half - 1);
}

TEST_F(TmpfsStatfsTest, SizeAndNrInodesAreTheLimits) {
  ASSERT_TRUE(Mount(0, "size=1m,nr_inodes=100"));
  struct statfs st = Statfs();
  EXPECT_EQ(uint64_t{st.f_blocks} * st.f_bsize, uint64_t{1} << 20);
  EXPECT_EQ(st.f_files, 100u);
  EXPECT_EQ(st.f_ffree, 99u);
  // A file with data takes an inode and blocks; removing it gives them
  // back.
  std::string file = dir_->path() + "/f";
  {
    FileDescriptor fd(open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    ASSERT_TRUE(fd.valid());
    std::vector<char> data(3 * 4096, 'x');
    ASSERT_THAT(write(fd.get(), data.data(), data.size()),
                SyscallSucceedsWithValue(data.size()));
  }
  struct statfs used = Statfs();
  EXPECT_EQ(used.f_ffree, 98u);
  EXPECT_LT(used.f_bfree, st.f_blocks);
  EXPECT_EQ(used.f_bavail, used.f_bfree);
  ASSERT_THAT(unlink(file.c_str()), SyscallSucceeds());
  struct statfs after = Statfs();
  EXPECT_EQ(after.f_ffree, 99u);
  EXPECT_EQ(after.f_bfree, st.f_blocks);
}

TEST_F(TmpfsStatfsTest, NrInodesLimitGivesEnospc) {
  ASSERT_TRUE(Mount(0, "nr_inodes=3"));
  std::string a = dir_->path() + "/a", b = dir_->path() + "/b",
              c = dir_->path() + "/c";
  ASSERT_THAT(mknod(a.c_str(), S_IFREG | 0644, 0), SyscallSucceeds());
  ASSERT_THAT(mkdir(b.c_str(), 0755), SyscallSucceeds());
  EXPECT_THAT(mknod(c.c_str(), S_IFREG | 0644, 0),
              SyscallFailsWithErrno(ENOSPC));
  EXPECT_EQ(Statfs().f_ffree, 0u);
  ASSERT_THAT(unlink(a.c_str()), SyscallSucceeds());
  EXPECT_THAT(mknod(c.c_str(), S_IFREG | 0644, 0), SyscallSucceeds());
}

// size=0 and nr_inodes=0 mean "no limit": no sizes at all.
TEST_F(TmpfsStatfsTest, UnlimitedShowsNoSizes) {
  ASSERT_TRUE(Mount(0, "size=0,nr_inodes=0"));
  struct statfs st = Statfs();
  EXPECT_EQ(st.f_type, TMPFS_MAGIC);
  EXPECT_EQ(st.f_blocks, 0u);
  EXPECT_EQ(st.f_bfree, 0u);
  EXPECT_EQ(st.f_files, 0u);
  EXPECT_EQ(st.f_ffree, 0u);
}

// f_flags: kStValid and the mount's flags (calculate_f_flags); relatime
// unless noatime or strictatime.
TEST_F(TmpfsStatfsTest, FlagsFollowTheMount) {
  ASSERT_TRUE(Mount(0, nullptr));
  struct statfs st = Statfs();
  EXPECT_EQ(st.f_flags, kStValid | ST_RELATIME);
  ASSERT_TRUE(Mount(MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, nullptr));
  st = Statfs();
  EXPECT_EQ(st.f_flags, kStValid | ST_RDONLY | ST_NOSUID | ST_NODEV |
                            ST_NOEXEC | ST_RELATIME);
  struct statvfs vst;
  ASSERT_THAT(statvfs(dir_->path().c_str(), &vst), SyscallSucceeds());
  EXPECT_EQ(vst.f_flag,
            static_cast<unsigned long>(ST_RDONLY | ST_NOSUID | ST_NODEV |
                                       ST_NOEXEC | ST_RELATIME));
  ASSERT_TRUE(Mount(MS_NOATIME | MS_NODIRATIME, nullptr));
  EXPECT_EQ(Statfs().f_flags, kStValid | ST_NOATIME | ST_NODIRATIME);
  ASSERT_TRUE(Mount(MS_STRICTATIME, nullptr));
  EXPECT_EQ(Statfs().f_flags, kStValid);
}

TEST(StatfsTest, Errors) {
  struct statfs st;
  EXPECT_THAT(statfs(NewTempPath().c_str(), &st),
              SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(fstatfs(-1, &st), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(syscall(SYS_statfs, "/dev/shm", reinterpret_cast<void*>(8)),
              SyscallFailsWithErrno(EFAULT));
}

TEST(SyncTest, FsyncFamily) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDWR));
  ASSERT_TRUE(fd.valid());
  EXPECT_THAT(fsync(fd.get()), SyscallSucceeds());
  EXPECT_THAT(fdatasync(fd.get()), SyscallSucceeds());
  EXPECT_THAT(syncfs(fd.get()), SyscallSucceeds());
  sync();
  EXPECT_THAT(fsync(-1), SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(sync_file_range(fd.get(), 0, 10, SYNC_FILE_RANGE_WRITE),
              SyscallSucceeds());
  EXPECT_THAT(sync_file_range(fd.get(), -1, 10, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(sync_file_range(fd.get(), 0, 10, 8),
              SyscallFailsWithErrno(EINVAL));
  FileDescriptor pfd(open(file.path().c_str(), O_PATH));
  EXPECT_THAT(fsync(pfd.get()), SyscallFailsWithErrno(EBADF));
  TempPath dir = TempPath::CreateDir();
  FileDescriptor dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  EXPECT_THAT(fsync(dfd.get()), SyscallSucceeds());
}

}  // namespace
}  // namespace sandbox::testutil
