// getdents64(2) and getdents(2): every entry once, "." and "..", offsets
// usable with lseek, buffer and descriptor errors.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

struct Entry {
  std::string name;
  uint64_t ino;
  int type;
  int64_t off;
};

// All entries of `fd` from its offset, read with a `bufsize` buffer.
std::vector<Entry> ReadAll64(int fd, size_t bufsize = 4096) {
  std::vector<Entry> out;
  std::vector<char> buf(bufsize);
  for (;;) {
    long n = syscall(SYS_getdents64, fd, buf.data(), buf.size());
    EXPECT_GE(n, 0) << strerror(errno);
    if (n <= 0) break;
    for (long pos = 0; pos < n;) {
      auto* d = reinterpret_cast<struct dirent64*>(buf.data() + pos);
      out.push_back({d->d_name, d->d_ino, d->d_type, d->d_off});
      pos += d->d_reclen;
    }
  }
  return out;
}

TEST(GetdentsTest, ListsEveryEntryOnce) {
  TempPath dir = TempPath::CreateDir();
  ASSERT_THAT(mkdir((dir.path() + "/sub").c_str(), 0755), SyscallSucceeds());
  for (int i = 0; i < 50; ++i) {
    std::string p = dir.path() + "/file" + std::to_string(i);
    FileDescriptor fd(open(p.c_str(), O_CREAT | O_WRONLY, 0644));
    ASSERT_TRUE(fd.valid());
  }
  ASSERT_THAT(symlink("x", (dir.path() + "/link").c_str()), SyscallSucceeds());
  FileDescriptor fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(fd.valid());
  // A small buffer forces many calls.
  std::vector<Entry> all = ReadAll64(fd.get(), 64);
  std::set<std::string> names;
  for (const Entry& e : all) {
    EXPECT_TRUE(names.insert(e.name).second) << "twice: " << e.name;
    if (e.name == "sub" || e.name == "." || e.name == "..") {
      EXPECT_EQ(e.type, DT_DIR) << e.name;
    } else if (e.name == "link") {
      EXPECT_EQ(e.type, DT_LNK);
    } else {
      EXPECT_EQ(e.type, DT_REG) << e.name;
    }
  }
  EXPECT_EQ(names.size(), 54u);
  EXPECT_TRUE(names.count(".") && names.count("..") && names.count("file49"));
  struct stat st;
  ASSERT_THAT(stat((dir.path() + "/sub").c_str(), &st), SyscallSucceeds());
  for (const Entry& e : all) {
    if (e.name == "sub") {
      EXPECT_EQ(e.ino, st.st_ino);
    }
  }
  // At the end: 0.
  char buf[256];
  EXPECT_THAT(syscall(SYS_getdents64, fd.get(), buf, sizeof(buf)),
              SyscallSucceedsWithValue(0));
}

TEST(GetdentsTest, SeekToReturnedOffsetResumes) {
  TempPath dir = TempPath::CreateDir();
  for (int i = 0; i < 5; ++i) {
    std::string p = dir.path() + "/f" + std::to_string(i);
    FileDescriptor fd(open(p.c_str(), O_CREAT | O_WRONLY, 0644));
  }
  FileDescriptor fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(fd.valid());
  std::vector<Entry> all = ReadAll64(fd.get());
  ASSERT_EQ(all.size(), 7u);
  // Resume after the third entry.
  ASSERT_THAT(lseek(fd.get(), all[2].off, SEEK_SET),
              SyscallSucceedsWithValue(all[2].off));
  std::vector<Entry> rest = ReadAll64(fd.get());
  ASSERT_EQ(rest.size(), 4u);
  EXPECT_EQ(rest[0].name, all[3].name);
  // Rewind.
  ASSERT_THAT(lseek(fd.get(), 0, SEEK_SET), SyscallSucceeds());
  EXPECT_EQ(ReadAll64(fd.get()).size(), 7u);
}

TEST(GetdentsTest, OldGetdentsHasTypeInLastByte) {
  TempPath dir = TempPath::CreateDir();
  ASSERT_THAT(mkdir((dir.path() + "/d").c_str(), 0755), SyscallSucceeds());
  FileDescriptor fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(fd.valid());
  char buf[4096];
  long n = syscall(SYS_getdents, fd.get(), buf, sizeof(buf));
  ASSERT_GT(n, 0) << strerror(errno);
  std::set<std::string> names;
  for (long pos = 0; pos < n;) {
    // struct linux_dirent: ino, off (8 bytes each), reclen, name.
    unsigned short reclen;
    memcpy(&reclen, buf + pos + 16, 2);
    std::string name(buf + pos + 18);
    names.insert(name);
    EXPECT_EQ(buf[pos + reclen - 1], DT_DIR) << name;
    pos += reclen;
  }
  EXPECT_EQ(names, (std::set<std::string>{".", "..", "d"}));
}

TEST(GetdentsTest, Errors) {
  TempPath dir = TempPath::CreateDir();
  TempPath file = TempPath::CreateFile();
  FileDescriptor dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  FileDescriptor ffd(open(file.path().c_str(), O_RDONLY));
  ASSERT_TRUE(dfd.valid() && ffd.valid());
  char buf[256];
  // Too small for one entry.
  EXPECT_THAT(syscall(SYS_getdents64, dfd.get(), buf, 8),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(syscall(SYS_getdents64, ffd.get(), buf, sizeof(buf)),
              SyscallFailsWithErrno(ENOTDIR));
  EXPECT_THAT(syscall(SYS_getdents64, -1, buf, sizeof(buf)),
              SyscallFailsWithErrno(EBADF));
  EXPECT_THAT(syscall(SYS_getdents64, dfd.get(), reinterpret_cast<char*>(8),
                      sizeof(buf)),
              SyscallFailsWithErrno(EFAULT));
  FileDescriptor pfd(open(dir.path().c_str(), O_PATH));
  ASSERT_TRUE(pfd.valid());
  EXPECT_THAT(syscall(SYS_getdents64, pfd.get(), buf, sizeof(buf)),
              SyscallFailsWithErrno(EBADF));
}

TEST(GetdentsTest, RemovedDirectoryIsEmpty) {
  std::string d = NewTempPath();
  ASSERT_THAT(mkdir(d.c_str(), 0755), SyscallSucceeds());
  FileDescriptor fd(open(d.c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(fd.valid());
  ASSERT_THAT(rmdir(d.c_str()), SyscallSucceeds());
  char buf[256];
  EXPECT_THAT(syscall(SYS_getdents64, fd.get(), buf, sizeof(buf)),
              SyscallFailsWithErrno(ENOENT));
}

}  // namespace
}  // namespace sandbox::testutil
