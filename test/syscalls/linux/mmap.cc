// mmap(2), mprotect(2), munmap(2): anonymous and file mappings, protection
// faults (checked in forked children), and argument errors.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

// An anonymous private mapping, unmapped when destroyed.
class Mapping {
 public:
  Mapping(size_t len, int prot, int flags = MAP_PRIVATE | MAP_ANONYMOUS,
          int fd = -1)
      : len_(len) {
    addr_ = mmap(nullptr, len, prot, flags, fd, 0);
    EXPECT_NE(addr_, MAP_FAILED) << strerror(errno);
  }
  ~Mapping() {
    if (addr_ != MAP_FAILED) munmap(addr_, len_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  bool ok() const { return addr_ != MAP_FAILED; }
  char* ptr() const { return static_cast<char*>(addr_); }
  size_t len() const { return len_; }

 private:
  void* addr_;
  size_t len_;
};

void Touch(volatile char* p) { *p = 1; }
char Peek(volatile char* p) { return *p; }

TEST(MmapTest, AnonymousIsZeroFilledAndWritable) {
  size_t len = 4 * PageSize();
  Mapping m(len, PROT_READ | PROT_WRITE);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.ptr()) % PageSize(), 0u);
  for (size_t i = 0; i < len; i += 512) ASSERT_EQ(m.ptr()[i], 0) << i;
  memset(m.ptr(), 0x5a, len);
  EXPECT_EQ(m.ptr()[len - 1], 0x5a);
}

TEST(MmapTest, ZeroLengthIsEinval) {
  EXPECT_EQ(mmap(nullptr, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            MAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
}

TEST(MmapTest, NeitherSharedNorPrivateIsEinval) {
  EXPECT_EQ(mmap(nullptr, PageSize(), PROT_READ, MAP_ANONYMOUS, -1, 0),
            MAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
}

TEST(MmapTest, BadFdIsEbadf) {
  EXPECT_EQ(mmap(nullptr, PageSize(), PROT_READ, MAP_PRIVATE, -1, 0),
            MAP_FAILED);
  EXPECT_EQ(errno, EBADF);
}

TEST(MmapTest, UnalignedOffsetIsEinval) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  EXPECT_EQ(mmap(nullptr, PageSize(), PROT_READ, MAP_PRIVATE, fd.get(), 1),
            MAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
}

TEST(MmapTest, FixedMapsAtTheAddress) {
  Mapping area(3 * PageSize(), PROT_NONE);
  ASSERT_TRUE(area.ok());
  char* want = area.ptr() + PageSize();
  void* got = mmap(want, PageSize(), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ASSERT_EQ(got, want) << strerror(errno);
  Touch(want);
  EXPECT_EQ(want[0], 1);
}

TEST(MmapTest, AccessAfterMunmapIsSigsegv) {
  char* p;
  {
    Mapping m(PageSize(), PROT_READ | PROT_WRITE);
    ASSERT_TRUE(m.ok());
    p = m.ptr();
  }  // Unmapped here.
  EXPECT_THAT(InForkedChild([p] { Touch(p); }), KilledBySignal(SIGSEGV));
}

TEST(MmapTest, ProtNoneReadIsSigsegv) {
  Mapping m(PageSize(), PROT_NONE);
  ASSERT_TRUE(m.ok());
  char* p = m.ptr();
  EXPECT_THAT(InForkedChild([p] { Peek(p); }), KilledBySignal(SIGSEGV));
}

TEST(MmapTest, MprotectReadOnlyThenWriteIsSigsegv) {
  Mapping m(PageSize(), PROT_READ | PROT_WRITE);
  ASSERT_TRUE(m.ok());
  Touch(m.ptr());
  ASSERT_THAT(mprotect(m.ptr(), PageSize(), PROT_READ), SyscallSucceeds());
  EXPECT_EQ(Peek(m.ptr()), 1);  // Still readable.
  char* p = m.ptr();
  EXPECT_THAT(InForkedChild([p] { Touch(p); }), KilledBySignal(SIGSEGV));
  // And writable again after restoring the protection.
  ASSERT_THAT(mprotect(m.ptr(), PageSize(), PROT_READ | PROT_WRITE),
              SyscallSucceeds());
  Touch(m.ptr() + 1);
  EXPECT_EQ(m.ptr()[1], 1);
}

TEST(MmapTest, MprotectPartOfAMapping) {
  Mapping m(3 * PageSize(), PROT_READ | PROT_WRITE);
  ASSERT_TRUE(m.ok());
  char* middle = m.ptr() + PageSize();
  ASSERT_THAT(mprotect(middle, PageSize(), PROT_NONE), SyscallSucceeds());
  Touch(m.ptr());
  Touch(middle + PageSize());
  EXPECT_THAT(InForkedChild([middle] { Peek(middle); }),
              KilledBySignal(SIGSEGV));
}

TEST(MmapTest, MprotectErrors) {
  Mapping m(PageSize(), PROT_READ);
  ASSERT_TRUE(m.ok());
  // Unaligned start.
  EXPECT_THAT(mprotect(m.ptr() + 1, PageSize(), PROT_READ),
              SyscallFailsWithErrno(EINVAL));
  // Unknown protection bits.
  EXPECT_THAT(mprotect(m.ptr(), PageSize(), 0x1000),
              SyscallFailsWithErrno(EINVAL));
  // Unmapped range.
  char* p = m.ptr();
  ASSERT_THAT(munmap(p, PageSize()), SyscallSucceeds());
  EXPECT_THAT(mprotect(p, PageSize(), PROT_READ),
              SyscallFailsWithErrno(ENOMEM));
  // Map again so the destructor's munmap is of something we own.
  ASSERT_EQ(mmap(p, PageSize(), PROT_READ,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
            p);
}

TEST(MmapTest, MunmapErrors) {
  Mapping m(PageSize(), PROT_READ);
  ASSERT_TRUE(m.ok());
  EXPECT_THAT(munmap(m.ptr() + 1, PageSize()), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(munmap(m.ptr(), 0), SyscallFailsWithErrno(EINVAL));
}

TEST(MmapTest, MunmapOfUnmappedRangeSucceeds) {
  char* p;
  {
    Mapping m(PageSize(), PROT_READ);
    ASSERT_TRUE(m.ok());
    p = m.ptr();
  }
  EXPECT_THAT(munmap(p, PageSize()), SyscallSucceeds());
}

TEST(MmapTest, SharedFileMappingSeesWrites) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  ASSERT_THAT(ftruncate(fd.get(), PageSize()), SyscallSucceeds());
  Mapping m(PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  ASSERT_TRUE(m.ok());
  // write(2) shows through the mapping...
  ASSERT_THAT(pwrite(fd.get(), "file", 4, 0), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(m.ptr(), 4), "file");
  // ...and a store through the mapping shows in read(2).
  memcpy(m.ptr() + 8, "mapped", 6);
  char buf[6];
  ASSERT_THAT(pread(fd.get(), buf, 6, 8), SyscallSucceedsWithValue(6));
  EXPECT_EQ(std::string(buf, 6), "mapped");
}

TEST(MmapTest, PrivateFileMappingIsCopyOnWrite) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd(open(file.path().c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  ASSERT_THAT(pwrite(fd.get(), "original", 8, 0), SyscallSucceedsWithValue(8));
  Mapping m(PageSize(), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::string(m.ptr(), 8), "original");
  memcpy(m.ptr(), "modified", 8);
  char buf[8];
  ASSERT_THAT(pread(fd.get(), buf, 8, 0), SyscallSucceedsWithValue(8));
  EXPECT_EQ(std::string(buf, 8), "original");
}

TEST(MmapTest, ForkedChildWritesAreNotSeenInPrivateMapping) {
  Mapping m(PageSize(), PROT_READ | PROT_WRITE);
  ASSERT_TRUE(m.ok());
  m.ptr()[0] = 'p';
  char* p = m.ptr();
  EXPECT_THAT(InForkedChild([p] {
                p[0] = 'c';
                _exit(p[0] == 'c' ? 0 : 1);
              }),
              ExitedWithCode(0));
  EXPECT_EQ(m.ptr()[0], 'p');
}

TEST(MmapTest, SharedAnonymousIsSharedWithChild) {
  Mapping m(PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);
  ASSERT_TRUE(m.ok());
  char* p = m.ptr();
  EXPECT_THAT(InForkedChild([p] { p[0] = 'c'; }), ExitedWithCode(0));
  EXPECT_EQ(m.ptr()[0], 'c');
}

}  // namespace
}  // namespace sandbox::testutil
