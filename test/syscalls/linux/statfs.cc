// statfs(2), fstatfs(2) and the sync family.
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

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
