// fcntl(F_NOTIFY) (dnotify): accepted on a directory, ENOTDIR on any other
// file unless the mask has no event (which removes the watch), EBADF on
// O_PATH. (The sandbox sends no DN_* signal yet: not tested.)
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

TEST(DnotifyTest, AcceptedOnADirectory) {
  TempPath dir = TempPath::CreateDir();
  FileDescriptor fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(fd.valid());
  EXPECT_THAT(fcntl(fd.get(), F_NOTIFY, DN_CREATE | DN_DELETE | DN_MULTISHOT),
              SyscallSucceedsWithValue(0));
  EXPECT_THAT(fcntl(fd.get(), F_NOTIFY, DN_MODIFY), SyscallSucceeds());
  // No event: the watch goes.
  EXPECT_THAT(fcntl(fd.get(), F_NOTIFY, 0), SyscallSucceeds());
}

TEST(DnotifyTest, OtherFilesAreEnotdir) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDONLY));
  ASSERT_TRUE(fd.valid());
  EXPECT_THAT(fcntl(fd.get(), F_NOTIFY, DN_MODIFY),
              SyscallFailsWithErrno(ENOTDIR));
  Pipe p;
  EXPECT_THAT(fcntl(p.r.get(), F_NOTIFY, DN_ACCESS),
              SyscallFailsWithErrno(ENOTDIR));
  // A mask without events is a removal, fine on any file.
  EXPECT_THAT(fcntl(fd.get(), F_NOTIFY, 0), SyscallSucceeds());
  EXPECT_THAT(fcntl(fd.get(), F_NOTIFY, DN_MULTISHOT), SyscallSucceeds());
}

TEST(DnotifyTest, OPathIsEbadf) {
  TempPath dir = TempPath::CreateDir();
  FileDescriptor fd(open(dir.path().c_str(), O_PATH));
  ASSERT_TRUE(fd.valid());
  EXPECT_THAT(fcntl(fd.get(), F_NOTIFY, DN_CREATE),
              SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(fcntl(-1, F_NOTIFY, DN_CREATE), SyscallFailsWithErrno(EBADF));
}

}  // namespace
}  // namespace sandbox::testutil
