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
          int fd = -1, off_t offset = 0)
      : len_(len) {
    addr_ = mmap(nullptr, len, prot, flags, fd, offset);
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

// A file of `size` bytes of 'f' in the test's directory, open O_RDWR.
FileDescriptor FileOfSize(const TempPath& path, size_t size) {
  FileDescriptor fd(open(path.path().c_str(), O_RDWR | O_CLOEXEC));
  EXPECT_TRUE(fd.valid()) << strerror(errno);
  if (!fd.valid()) return fd;
  std::string data(size, 'f');
  EXPECT_THAT(pwrite(fd.get(), data.data(), size, 0),
              SyscallSucceedsWithValue(size));
  return fd;
}

TEST(MmapFileTest, AccessModeOfTheDescriptionIsEnforced) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor rw = FileOfSize(file, PageSize());
  ASSERT_TRUE(rw.valid());
  FileDescriptor ro(open(file.path().c_str(), O_RDONLY | O_CLOEXEC));
  FileDescriptor wo(open(file.path().c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(ro.valid() && wo.valid());
  // Shared and writable needs a writable description.
  EXPECT_EQ(mmap(nullptr, PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED,
                 ro.get(), 0),
            MAP_FAILED);
  EXPECT_EQ(errno, EACCES);
  // Any mapping needs a readable one.
  EXPECT_EQ(mmap(nullptr, PageSize(), PROT_READ, MAP_PRIVATE, wo.get(), 0),
            MAP_FAILED);
  EXPECT_EQ(errno, EACCES);
  EXPECT_EQ(mmap(nullptr, PageSize(), PROT_WRITE, MAP_SHARED, wo.get(), 0),
            MAP_FAILED);
  EXPECT_EQ(errno, EACCES);
  // A private writable mapping of a read-only description is fine.
  Mapping priv(PageSize(), PROT_READ | PROT_WRITE, MAP_PRIVATE, ro.get());
  ASSERT_TRUE(priv.ok());
  priv.ptr()[0] = 'p';
  // A shared read-only one can never become writable.
  Mapping shared(PageSize(), PROT_READ, MAP_SHARED, ro.get());
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared.ptr()[0], 'f');
  EXPECT_THAT(mprotect(shared.ptr(), PageSize(), PROT_READ | PROT_WRITE),
              SyscallFailsWithErrno(EACCES));
  // With a read-write description it can.
  Mapping shared_rw(PageSize(), PROT_READ, MAP_SHARED, rw.get());
  ASSERT_TRUE(shared_rw.ok());
  EXPECT_THAT(mprotect(shared_rw.ptr(), PageSize(), PROT_READ | PROT_WRITE),
              SyscallSucceeds());
  shared_rw.ptr()[1] = 's';
  EXPECT_EQ(shared.ptr()[1], 's');
}

TEST(MmapFileTest, AppendOnlyDescriptionMayBeMappedShared) {
  // Linux refuses shared mappings of append-only inodes (chattr +a), not of
  // O_APPEND descriptions.
  TempPath file = TempPath::CreateFile();
  ASSERT_TRUE(FileOfSize(file, PageSize()).valid());
  FileDescriptor fd(open(file.path().c_str(), O_RDWR | O_APPEND | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  Mapping m(PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  EXPECT_TRUE(m.ok());
}

TEST(MmapFileTest, ArgumentErrors) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd = FileOfSize(file, PageSize());
  ASSERT_TRUE(fd.valid());
  // Unknown flags: ignored by MAP_SHARED, refused by MAP_SHARED_VALIDATE.
  constexpr int kMapSharedValidate = 0x03;
  constexpr int kUnknown = 0x800000;
  EXPECT_EQ(mmap(nullptr, PageSize(), PROT_READ, kMapSharedValidate | kUnknown,
                 fd.get(), 0),
            MAP_FAILED);
  EXPECT_EQ(errno, EOPNOTSUPP);
  {
    Mapping m(PageSize(), PROT_READ, MAP_SHARED | kUnknown, fd.get());
    EXPECT_TRUE(m.ok());
    Mapping v(PageSize(), PROT_READ, kMapSharedValidate, fd.get());
    EXPECT_TRUE(v.ok());
  }
  // An offset whose end passes the largest file offset.
  EXPECT_EQ(mmap(nullptr, 2 * PageSize(), PROT_READ, MAP_SHARED, fd.get(),
                 static_cast<off_t>(INT64_MAX - PageSize() + 1)),
            MAP_FAILED);
  EXPECT_EQ(errno, EOVERFLOW);
  // Grows-down file mappings do not exist.
  EXPECT_EQ(mmap(nullptr, PageSize(), PROT_READ, MAP_PRIVATE | MAP_GROWSDOWN,
                 fd.get(), 0),
            MAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
  // No huge pages for a file that is not on hugetlbfs.
  EXPECT_EQ(mmap(nullptr, PageSize(), PROT_READ, MAP_PRIVATE | MAP_HUGETLB,
                 fd.get(), 0),
            MAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(mmap(nullptr, 0, PROT_READ, MAP_PRIVATE, fd.get(), 0), MAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
}

TEST(MmapFileTest, DirectoryHasNoMmapIsEnodev) {
  TempPath dir = TempPath::CreateDir();
  FileDescriptor fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  EXPECT_EQ(mmap(nullptr, PageSize(), PROT_READ, MAP_PRIVATE, fd.get(), 0),
            MAP_FAILED);
  EXPECT_EQ(errno, ENODEV);
}

TEST(MmapFileTest, PageWhollyPastTheEndIsSigbus) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd = FileOfSize(file, 100);
  ASSERT_TRUE(fd.valid());
  Mapping m(3 * PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  ASSERT_TRUE(m.ok());
  // The page holding the end: data, then zeros.
  EXPECT_EQ(m.ptr()[99], 'f');
  EXPECT_EQ(m.ptr()[100], 0);
  EXPECT_EQ(m.ptr()[PageSize() - 1], 0);
  char* p = m.ptr() + PageSize();
  EXPECT_THAT(InForkedChild([p] { Peek(p); }), KilledBySignal(SIGBUS));
  // read(2) into such a (writable) page is EFAULT, not a signal.
  EXPECT_THAT(pread(fd.get(), p, 10, 0), SyscallFailsWithErrno(EFAULT));
  // Growing the file makes the page valid.
  ASSERT_THAT(ftruncate(fd.get(), 2 * PageSize()), SyscallSucceeds());
  EXPECT_EQ(Peek(p), 0);
}

TEST(MmapFileTest, TruncationZapsPagesPastTheNewEnd) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd = FileOfSize(file, 2 * PageSize());
  ASSERT_TRUE(fd.valid());
  Mapping shared(2 * PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  Mapping priv(2 * PageSize(), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get());
  ASSERT_TRUE(shared.ok() && priv.ok());
  shared.ptr()[PageSize()] = 's';
  priv.ptr()[PageSize()] = 'p';  // a private copy of the second page
  ASSERT_THAT(ftruncate(fd.get(), PageSize()), SyscallSucceeds());
  char* s = shared.ptr() + PageSize();
  char* p = priv.ptr() + PageSize();
  EXPECT_THAT(InForkedChild([s] { Peek(s); }), KilledBySignal(SIGBUS));
  // Private copies go too.
  EXPECT_THAT(InForkedChild([p] { Peek(p); }), KilledBySignal(SIGBUS));
  // The first page stays, in both.
  EXPECT_EQ(shared.ptr()[0], 'f');
  EXPECT_EQ(priv.ptr()[0], 'f');
}

TEST(MmapFileTest, PrivateMappingSeesFileChangesUntilItWrites) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd = FileOfSize(file, PageSize());
  ASSERT_TRUE(fd.valid());
  Mapping m(PageSize(), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get());
  ASSERT_TRUE(m.ok());
  ASSERT_THAT(pwrite(fd.get(), "A", 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(m.ptr()[0], 'A');  // not yet copied: the file's page
  m.ptr()[1] = 'B';            // copied now
  ASSERT_THAT(pwrite(fd.get(), "C", 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(m.ptr()[0], 'A');
  EXPECT_EQ(m.ptr()[1], 'B');
}

TEST(MmapFileTest, WritesSurviveMunmapAndReachOtherMappings) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd = FileOfSize(file, 2 * PageSize());
  ASSERT_TRUE(fd.valid());
  {
    Mapping a(2 * PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
    ASSERT_TRUE(a.ok());
    Mapping b(PageSize(), PROT_READ, MAP_SHARED, fd.get(),
              static_cast<off_t>(PageSize()));
    ASSERT_TRUE(b.ok());
    a.ptr()[PageSize() + 5] = 'x';
    EXPECT_EQ(b.ptr()[5], 'x');  // the same page, at an offset
  }
  char c;
  ASSERT_THAT(pread(fd.get(), &c, 1, PageSize() + 5),
              SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'x');
}

TEST(MmapFileTest, PopulateAndFixedNoreplace) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd = FileOfSize(file, 2 * PageSize());
  ASSERT_TRUE(fd.valid());
  Mapping m(2 * PageSize(), PROT_READ, MAP_SHARED | MAP_POPULATE, fd.get());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.ptr()[PageSize()], 'f');
  // MAP_FIXED_NOREPLACE over the mapping: EEXIST; over free space: maps.
  constexpr int kFixedNoreplace = 0x100000;
  EXPECT_EQ(mmap(m.ptr(), PageSize(), PROT_READ, MAP_SHARED | kFixedNoreplace,
                 fd.get(), 0),
            MAP_FAILED);
  EXPECT_EQ(errno, EEXIST);
  char* want = m.ptr() + PageSize();
  ASSERT_THAT(munmap(want, PageSize()), SyscallSucceeds());
  void* got = mmap(want, PageSize(), PROT_READ, MAP_SHARED | kFixedNoreplace,
                   fd.get(), 0);
  ASSERT_EQ(got, want) << strerror(errno);
  EXPECT_EQ(want[0], 'f');
}

TEST(MmapFileTest, MremapGrowsAFileMapping) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd = FileOfSize(file, 2 * PageSize());
  ASSERT_TRUE(fd.valid());
  ASSERT_THAT(pwrite(fd.get(), "second", 6, PageSize()),
              SyscallSucceedsWithValue(6));
  void* p = mmap(nullptr, PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED,
                 fd.get(), 0);
  ASSERT_NE(p, MAP_FAILED);
  void* q = mremap(p, PageSize(), 3 * PageSize(), MREMAP_MAYMOVE);
  ASSERT_NE(q, MAP_FAILED) << strerror(errno);
  char* c = static_cast<char*>(q);
  EXPECT_EQ(std::string(c + PageSize(), 6), "second");
  c[PageSize()] = 'S';
  char b;
  ASSERT_THAT(pread(fd.get(), &b, 1, PageSize()), SyscallSucceedsWithValue(1));
  EXPECT_EQ(b, 'S');
  // The third page is past the end of the file.
  char* past = c + 2 * PageSize();
  EXPECT_THAT(InForkedChild([past] { Peek(past); }), KilledBySignal(SIGBUS));
  ASSERT_THAT(munmap(q, 3 * PageSize()), SyscallSucceeds());
}

TEST(MremapTest, OldSizeZeroDuplicatesASharedMapping) {
  Mapping m(2 * PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);
  ASSERT_TRUE(m.ok());
  m.ptr()[PageSize()] = 'o';
  void* dup = mremap(m.ptr() + PageSize(), 0, PageSize(), MREMAP_MAYMOVE);
  ASSERT_NE(dup, MAP_FAILED) << strerror(errno);
  char* d = static_cast<char*>(dup);
  EXPECT_EQ(d[0], 'o');
  d[0] = 'n';
  EXPECT_EQ(m.ptr()[PageSize()], 'n');
  ASSERT_THAT(munmap(dup, PageSize()), SyscallSucceeds());
  // A private mapping cannot be duplicated.
  Mapping p(PageSize(), PROT_READ | PROT_WRITE);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(mremap(p.ptr(), 0, PageSize(), MREMAP_MAYMOVE), MAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
}

TEST(MsyncTest, ErrorsAndSuccess) {
  Mapping m(3 * PageSize(), PROT_READ | PROT_WRITE);
  ASSERT_TRUE(m.ok());
  EXPECT_THAT(msync(m.ptr(), PageSize(), MS_SYNC), SyscallSucceeds());
  EXPECT_THAT(msync(m.ptr(), 1, MS_ASYNC | MS_INVALIDATE), SyscallSucceeds());
  EXPECT_THAT(msync(m.ptr(), 0, MS_SYNC), SyscallSucceeds());
  EXPECT_THAT(msync(m.ptr(), PageSize(), MS_SYNC | MS_ASYNC),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(msync(m.ptr(), PageSize(), 0x100), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(msync(m.ptr() + 1, PageSize(), MS_SYNC),
              SyscallFailsWithErrno(EINVAL));
  // A hole in the range: ENOMEM.
  ASSERT_THAT(munmap(m.ptr() + PageSize(), PageSize()), SyscallSucceeds());
  EXPECT_THAT(msync(m.ptr(), 3 * PageSize(), MS_SYNC),
              SyscallFailsWithErrno(ENOMEM));
  EXPECT_THAT(msync(m.ptr(), 3 * PageSize(), MS_ASYNC),
              SyscallFailsWithErrno(ENOMEM));
  EXPECT_THAT(msync(m.ptr() + PageSize(), PageSize(), MS_SYNC),
              SyscallFailsWithErrno(ENOMEM));
}

TEST(MsyncTest, SharedFileMappingIsSynced) {
  TempPath file = TempPath::CreateFile();
  FileDescriptor fd = FileOfSize(file, PageSize());
  ASSERT_TRUE(fd.valid());
  Mapping m(PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  ASSERT_TRUE(m.ok());
  m.ptr()[0] = 'm';
  ASSERT_THAT(msync(m.ptr(), PageSize(), MS_SYNC | MS_INVALIDATE),
              SyscallSucceeds());
  char c;
  ASSERT_THAT(pread(fd.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'm');
}

TEST(MincoreTest, ReportsTouchedPagesAndErrors) {
  Mapping m(4 * PageSize(), PROT_READ | PROT_WRITE);
  ASSERT_TRUE(m.ok());
  Touch(m.ptr());
  Touch(m.ptr() + 2 * PageSize());
  unsigned char vec[4];
  ASSERT_THAT(mincore(m.ptr(), 4 * PageSize(), vec), SyscallSucceeds());
  EXPECT_EQ(vec[0] & 1, 1);
  EXPECT_EQ(vec[2] & 1, 1);
  EXPECT_THAT(mincore(m.ptr() + 1, PageSize(), vec),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(mincore(m.ptr(), PageSize(), reinterpret_cast<unsigned char*>(8)),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(mincore(m.ptr(), 0, vec), SyscallSucceeds());
  // Unmapped: ENOMEM.
  ASSERT_THAT(munmap(m.ptr() + 3 * PageSize(), PageSize()), SyscallSucceeds());
  EXPECT_THAT(mincore(m.ptr(), 4 * PageSize(), vec),
              SyscallFailsWithErrno(ENOMEM));
  // Beyond user space.
  EXPECT_THAT(mincore(reinterpret_cast<void*>(0x7ffffffff000), PageSize(), vec),
              SyscallFailsWithErrno(ENOMEM));
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
