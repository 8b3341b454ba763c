// memfd_create(2) and file seals (fcntl F_ADD_SEALS/F_GET_SEALS): flags,
// names, I/O, mappings, and how each seal restricts write, truncate,
// fallocate, mmap and mprotect.
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#define MFD_ALLOW_SEALING 0x0002U
#define MFD_HUGETLB 0x0004U
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#define MFD_EXEC 0x0010U
#endif
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif

namespace sandbox::testutil {
namespace {

int MemfdCreate(const char* name, unsigned flags) {
  return static_cast<int>(syscall(SYS_memfd_create, name, flags));
}

// A new memfd, closed when the test ends.
FileDescriptor NewMemfd(unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING) {
  int fd = MemfdCreate("test", flags);
  EXPECT_GE(fd, 0) << strerror(errno);
  return FileDescriptor(fd);
}

// A mapping unmapped when destroyed.
class Map {
 public:
  Map(size_t len, int prot, int flags, int fd, off_t off = 0) : len_(len) {
    addr_ = mmap(nullptr, len, prot, flags, fd, off);
  }
  ~Map() {
    if (addr_ != MAP_FAILED) munmap(addr_, len_);
  }
  Map(const Map&) = delete;
  Map& operator=(const Map&) = delete;
  bool ok() const { return addr_ != MAP_FAILED; }
  char* ptr() const { return static_cast<char*>(addr_); }
  void Unmap() {
    if (addr_ != MAP_FAILED) munmap(addr_, len_);
    addr_ = MAP_FAILED;
  }

 private:
  void* addr_;
  size_t len_;
};

TEST(MemfdTest, CreatesAnEmptyReadWriteFile) {
  FileDescriptor fd = NewMemfd();
  ASSERT_TRUE(fd.valid());
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0777u);  // no umask
  EXPECT_EQ(st.st_size, 0);
  EXPECT_EQ(st.st_nlink, 0u);
  EXPECT_EQ(st.st_uid, geteuid());
  int fl = fcntl(fd.get(), F_GETFL);
  EXPECT_EQ(fl & O_ACCMODE, O_RDWR);
  EXPECT_THAT(fcntl(fd.get(), F_GETFD), SyscallSucceedsWithValue(FD_CLOEXEC));
}

// Every memfd lives on the one internal shm mount (shm_mnt), which stays
// when no memfd is open: one created after all others were closed has the
// same st_dev.
TEST(MemfdTest, OneShmMountForAll) {
  struct stat first = {};
  {
    FileDescriptor fd = NewMemfd();
    ASSERT_THAT(fstat(fd.get(), &first), SyscallSucceeds());
  }
  FileDescriptor fd = NewMemfd();
  struct stat second = {};
  ASSERT_THAT(fstat(fd.get(), &second), SyscallSucceeds());
  EXPECT_EQ(first.st_dev, second.st_dev);
  EXPECT_NE(first.st_ino, 0u);
}

TEST(MemfdTest, CloexecOnlyWhenAsked) {
  FileDescriptor fd(MemfdCreate("x", 0));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  EXPECT_THAT(fcntl(fd.get(), F_GETFD), SyscallSucceedsWithValue(0));
}

TEST(MemfdTest, WriteSeekReadAndTruncate) {
  FileDescriptor fd = NewMemfd();
  ASSERT_THAT(write(fd.get(), "hello memfd", 11), SyscallSucceedsWithValue(11));
  ASSERT_THAT(lseek(fd.get(), 6, SEEK_SET), SyscallSucceedsWithValue(6));
  char buf[16] = {};
  ASSERT_THAT(read(fd.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(5));
  EXPECT_STREQ(buf, "memfd");
  ASSERT_THAT(ftruncate(fd.get(), 3 * PageSize()), SyscallSucceeds());
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_size, static_cast<off_t>(3 * PageSize()));
  ASSERT_THAT(pread(fd.get(), buf, 2, 2 * PageSize()),
              SyscallSucceedsWithValue(2));
  EXPECT_EQ(buf[0], 0);
}

TEST(MemfdTest, BadFlagsAreEinval) {
  EXPECT_THAT(MemfdCreate("x", 0x100), SyscallFailsWithErrno(EINVAL));
  // Huge page size bits without MFD_HUGETLB.
  EXPECT_THAT(MemfdCreate("x", 21u << 26), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(MemfdCreate("x", MFD_EXEC | MFD_NOEXEC_SEAL),
              SyscallFailsWithErrno(EINVAL));
}

TEST(MemfdTest, NameLengthLimit) {
  // 249 bytes is the longest name ("memfd:" + name fits NAME_MAX).
  std::string name(249, 'n');
  FileDescriptor fd(MemfdCreate(name.c_str(), MFD_CLOEXEC));
  EXPECT_TRUE(fd.valid()) << strerror(errno);
  name += 'n';
  EXPECT_THAT(MemfdCreate(name.c_str(), MFD_CLOEXEC),
              SyscallFailsWithErrno(EINVAL));
  FileDescriptor empty(MemfdCreate("", MFD_CLOEXEC));
  EXPECT_TRUE(empty.valid()) << strerror(errno);
}

TEST(MemfdTest, BadNamePointerIsEfault) {
  EXPECT_THAT(MemfdCreate(reinterpret_cast<const char*>(8), MFD_CLOEXEC),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(MemfdCreate(nullptr, MFD_CLOEXEC), SyscallFailsWithErrno(EFAULT));
  // A name that runs into an unmapped page before its NUL.
  void* p = mmap(nullptr, 2 * PageSize(), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_THAT(munmap(static_cast<char*>(p) + PageSize(), PageSize()),
              SyscallSucceeds());
  char* name = static_cast<char*>(p) + PageSize() - 10;
  memset(name, 'a', 10);
  EXPECT_THAT(MemfdCreate(name, MFD_CLOEXEC), SyscallFailsWithErrno(EFAULT));
  munmap(p, PageSize());
}

TEST(MemfdTest, SealingNotAllowedWithoutFlag) {
  FileDescriptor fd(MemfdCreate("x", MFD_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  EXPECT_THAT(fcntl(fd.get(), F_GET_SEALS),
              SyscallSucceedsWithValue(F_SEAL_SEAL));
  EXPECT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK),
              SyscallFailsWithErrno(EPERM));
}

TEST(MemfdTest, AddAndGetSeals) {
  FileDescriptor fd = NewMemfd();
  EXPECT_THAT(fcntl(fd.get(), F_GET_SEALS), SyscallSucceedsWithValue(0));
  ASSERT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK), SyscallSucceeds());
  ASSERT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_GROW), SyscallSucceeds());
  EXPECT_THAT(fcntl(fd.get(), F_GET_SEALS),
              SyscallSucceedsWithValue(F_SEAL_SHRINK | F_SEAL_GROW));
  // Unknown bits.
  EXPECT_THAT(fcntl(fd.get(), F_ADD_SEALS, 0x40),
              SyscallFailsWithErrno(EINVAL));
  // F_SEAL_SEAL stops further seals, even ones already present.
  ASSERT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SEAL), SyscallSucceeds());
  EXPECT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE),
              SyscallFailsWithErrno(EPERM));
  EXPECT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK),
              SyscallFailsWithErrno(EPERM));
  EXPECT_THAT(
      fcntl(fd.get(), F_GET_SEALS),
      SyscallSucceedsWithValue(F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW));
}

TEST(MemfdTest, AddSealsNeedsAWritableDescription) {
  FileDescriptor fd = NewMemfd();
  // Another, read-only description of the same memfd.
  std::string path = "/proc/self/fd/" + std::to_string(fd.get());
  FileDescriptor ro(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ro.valid()) GTEST_SKIP() << "no /proc: " << strerror(errno);
  EXPECT_THAT(fcntl(ro.get(), F_ADD_SEALS, F_SEAL_GROW),
              SyscallFailsWithErrno(EPERM));
  EXPECT_THAT(fcntl(ro.get(), F_GET_SEALS), SyscallSucceedsWithValue(0));
}

TEST(MemfdTest, SealsOnStdinAreEinvalOrEperm) {
  // The runner's stdin is /dev/null, read-only: not sealable, and not
  // writable, which F_ADD_SEALS checks first.
  EXPECT_THAT(fcntl(0, F_GET_SEALS), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(fcntl(0, F_ADD_SEALS, F_SEAL_GROW), SyscallFailsWithErrno(EPERM));
}

TEST(MemfdTest, SealsOnAPipeAreEinval) {
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  FileDescriptor r(fds[0]), w(fds[1]);
  EXPECT_THAT(fcntl(w.get(), F_GET_SEALS), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(fcntl(w.get(), F_ADD_SEALS, F_SEAL_GROW),
              SyscallFailsWithErrno(EINVAL));
  // A read-only description is EPERM before the file's kind is looked at.
  EXPECT_THAT(fcntl(r.get(), F_ADD_SEALS, F_SEAL_GROW),
              SyscallFailsWithErrno(EPERM));
}

TEST(MemfdTest, ShrinkAndGrowSealsStopTruncate) {
  FileDescriptor fd = NewMemfd();
  ASSERT_THAT(ftruncate(fd.get(), 2 * PageSize()), SyscallSucceeds());
  ASSERT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK), SyscallSucceeds());
  EXPECT_THAT(ftruncate(fd.get(), PageSize()), SyscallFailsWithErrno(EPERM));
  ASSERT_THAT(ftruncate(fd.get(), 3 * PageSize()), SyscallSucceeds());
  ASSERT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_GROW), SyscallSucceeds());
  EXPECT_THAT(ftruncate(fd.get(), 4 * PageSize()),
              SyscallFailsWithErrno(EPERM));
  // The same size is no change.
  EXPECT_THAT(ftruncate(fd.get(), 3 * PageSize()), SyscallSucceeds());
}

TEST(MemfdTest, GrowSealShortensWritesAtTheEnd) {
  FileDescriptor fd = NewMemfd();
  const size_t size = 2 * PageSize();
  ASSERT_THAT(ftruncate(fd.get(), size), SyscallSucceeds());
  ASSERT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_GROW), SyscallSucceeds());
  // Inside the file: fine.
  EXPECT_THAT(pwrite(fd.get(), "abc", 3, 0), SyscallSucceedsWithValue(3));
  // Starting at the end: EPERM.
  EXPECT_THAT(pwrite(fd.get(), "abc", 3, size), SyscallFailsWithErrno(EPERM));
  // Crossing the end: the part before it is written.
  EXPECT_THAT(pwrite(fd.get(), "abcd", 4, size - 2),
              SyscallSucceedsWithValue(2));
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_size, static_cast<off_t>(size));
  // fallocate past the end, even keeping the size.
  EXPECT_THAT(fallocate(fd.get(), FALLOC_FL_KEEP_SIZE, 0, size + 1),
              SyscallFailsWithErrno(EPERM));
  EXPECT_THAT(fallocate(fd.get(), 0, 0, size), SyscallSucceeds());
}

TEST(MemfdTest, WriteSealStopsWritesTruncatePunchAndSharedWritableMaps) {
  FileDescriptor fd = NewMemfd();
  ASSERT_THAT(write(fd.get(), "data", 4), SyscallSucceedsWithValue(4));
  ASSERT_THAT(ftruncate(fd.get(), PageSize()), SyscallSucceeds());
  ASSERT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE), SyscallSucceeds());
  EXPECT_THAT(write(fd.get(), "x", 1), SyscallFailsWithErrno(EPERM));
  EXPECT_THAT(pwrite(fd.get(), "x", 1, 0), SyscallFailsWithErrno(EPERM));
  EXPECT_THAT(write(fd.get(), "", 0), SyscallSucceedsWithValue(0));
  EXPECT_THAT(fallocate(fd.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                        PageSize()),
              SyscallFailsWithErrno(EPERM));
  // Truncation is the shrink/grow seals' business, not the write seal's.
  EXPECT_THAT(ftruncate(fd.get(), 2 * PageSize()), SyscallSucceeds());
  // Shared writable mappings are refused; read-only and private ones work.
  Map shared_rw(PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  EXPECT_FALSE(shared_rw.ok());
  EXPECT_EQ(errno, EPERM);
  Map shared_ro(PageSize(), PROT_READ, MAP_SHARED, fd.get());
  ASSERT_TRUE(shared_ro.ok()) << strerror(errno);
  EXPECT_EQ(std::string(shared_ro.ptr(), 4), "data");
  // ...and may never become writable.
  EXPECT_THAT(mprotect(shared_ro.ptr(), PageSize(), PROT_READ | PROT_WRITE),
              SyscallFailsWithErrno(EACCES));
  Map priv(PageSize(), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get());
  ASSERT_TRUE(priv.ok()) << strerror(errno);
  priv.ptr()[0] = 'D';  // a private copy
  char c;
  ASSERT_THAT(pread(fd.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'd');
}

TEST(MemfdTest, WriteSealIsBusyWhileASharedWritableMappingExists) {
  FileDescriptor fd = NewMemfd();
  ASSERT_THAT(ftruncate(fd.get(), PageSize()), SyscallSucceeds());
  Map m(PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  ASSERT_TRUE(m.ok()) << strerror(errno);
  EXPECT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE),
              SyscallFailsWithErrno(EBUSY));
  // Other seals are fine meanwhile.
  EXPECT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_GROW), SyscallSucceeds());
  // Even a read-only shared mapping counts while it could be made writable.
  m.Unmap();
  Map ro(PageSize(), PROT_READ, MAP_SHARED, fd.get());
  ASSERT_TRUE(ro.ok());
  EXPECT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE),
              SyscallFailsWithErrno(EBUSY));
  ro.Unmap();
  // A private writable mapping does not.
  Map priv(PageSize(), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get());
  ASSERT_TRUE(priv.ok());
  EXPECT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE), SyscallSucceeds());
  EXPECT_THAT(fcntl(fd.get(), F_GET_SEALS),
              SyscallSucceedsWithValue(F_SEAL_GROW | F_SEAL_WRITE));
}

TEST(MemfdTest, FutureWriteSealKeepsExistingMappingsWritable) {
  FileDescriptor fd = NewMemfd();
  ASSERT_THAT(ftruncate(fd.get(), PageSize()), SyscallSucceeds());
  Map m(PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  ASSERT_TRUE(m.ok());
  ASSERT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_FUTURE_WRITE),
              SyscallSucceeds());
  EXPECT_THAT(write(fd.get(), "x", 1), SyscallFailsWithErrno(EPERM));
  m.ptr()[0] = 'm';  // the old mapping still writes
  char c;
  ASSERT_THAT(pread(fd.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'm');
  Map m2(PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  EXPECT_FALSE(m2.ok());
  EXPECT_EQ(errno, EPERM);
  Map ro(PageSize(), PROT_READ, MAP_SHARED, fd.get());
  ASSERT_TRUE(ro.ok());
  EXPECT_THAT(mprotect(ro.ptr(), PageSize(), PROT_READ | PROT_WRITE),
              SyscallFailsWithErrno(EACCES));
}

TEST(MemfdTest, SharedMappingSeesWritesBothWays) {
  FileDescriptor fd = NewMemfd();
  ASSERT_THAT(ftruncate(fd.get(), 2 * PageSize()), SyscallSucceeds());
  Map a(2 * PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  Map b(2 * PageSize(), PROT_READ, MAP_SHARED, fd.get());
  ASSERT_TRUE(a.ok() && b.ok()) << strerror(errno);
  ASSERT_THAT(pwrite(fd.get(), "written", 7, PageSize()),
              SyscallSucceedsWithValue(7));
  EXPECT_EQ(std::string(a.ptr() + PageSize(), 7), "written");
  memcpy(a.ptr() + 100, "stored", 6);
  EXPECT_EQ(std::string(b.ptr() + 100, 6), "stored");
  char buf[6];
  ASSERT_THAT(pread(fd.get(), buf, 6, 100), SyscallSucceedsWithValue(6));
  EXPECT_EQ(std::string(buf, 6), "stored");
}

TEST(MemfdTest, NoexecSealMakesTheFileNonExecutableForGood) {
  FileDescriptor fd(MemfdCreate("x", MFD_CLOEXEC | MFD_NOEXEC_SEAL));
  if (!fd.valid() && errno == EINVAL) {
    GTEST_SKIP() << "no MFD_NOEXEC_SEAL (new in Linux 6.3)";
  }
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_mode & 07777, 0666u);
  // Sealing is allowed, and F_SEAL_EXEC is there from the start.
  EXPECT_THAT(fcntl(fd.get(), F_GET_SEALS),
              SyscallSucceedsWithValue(F_SEAL_EXEC));
  EXPECT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_GROW), SyscallSucceeds());
  // The exec bits may never change; the others may.
  EXPECT_THAT(fchmod(fd.get(), 0766), SyscallFailsWithErrno(EPERM));
  EXPECT_THAT(fchmod(fd.get(), 0600), SyscallSucceeds());
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST(MemfdTest, ExecSealOnAnExecutableFileImpliesWriteSeals) {
  FileDescriptor fd(
      MemfdCreate("x", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC));
  if (!fd.valid() && errno == EINVAL) {
    GTEST_SKIP() << "no MFD_EXEC (new in Linux 6.3)";
  }
  if (!fd.valid() && errno == EACCES) {
    GTEST_SKIP() << "vm.memfd_noexec=2 refuses MFD_EXEC here";
  }
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  ASSERT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_EXEC), SyscallSucceeds());
  EXPECT_THAT(
      fcntl(fd.get(), F_GET_SEALS),
      SyscallSucceedsWithValue(F_SEAL_EXEC | F_SEAL_SHRINK | F_SEAL_GROW |
                               F_SEAL_WRITE | F_SEAL_FUTURE_WRITE));
  EXPECT_THAT(write(fd.get(), "x", 1), SyscallFailsWithErrno(EPERM));
}

TEST(MemfdTest, TruncatedSharedMappingIsSigbusPastTheEnd) {
  FileDescriptor fd = NewMemfd();
  ASSERT_THAT(ftruncate(fd.get(), 2 * PageSize()), SyscallSucceeds());
  Map m(2 * PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  ASSERT_TRUE(m.ok());
  m.ptr()[PageSize()] = 'x';
  ASSERT_THAT(ftruncate(fd.get(), PageSize()), SyscallSucceeds());
  char* p = m.ptr() + PageSize();
  EXPECT_THAT(InForkedChild([p] { *reinterpret_cast<volatile char*>(p) = 1; }),
              KilledBySignal(SIGBUS));
  // Growing again gives zeros, not the old data.
  ASSERT_THAT(ftruncate(fd.get(), 2 * PageSize()), SyscallSucceeds());
  EXPECT_EQ(m.ptr()[PageSize()], 0);
}

TEST(MemfdTest, MadviseRemovePunchesAHole) {
  FileDescriptor fd = NewMemfd();
  ASSERT_THAT(ftruncate(fd.get(), 2 * PageSize()), SyscallSucceeds());
  Map m(2 * PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  ASSERT_TRUE(m.ok());
  m.ptr()[0] = 'a';
  m.ptr()[PageSize()] = 'b';
  ASSERT_THAT(madvise(m.ptr(), PageSize(), MADV_REMOVE), SyscallSucceeds());
  EXPECT_EQ(m.ptr()[0], 0);
  EXPECT_EQ(m.ptr()[PageSize()], 'b');
  char c = 1;
  ASSERT_THAT(pread(fd.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 0);
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_size, static_cast<off_t>(2 * PageSize()));
  // A private mapping cannot remove the file's pages.
  Map priv(PageSize(), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get());
  ASSERT_TRUE(priv.ok());
  EXPECT_THAT(madvise(priv.ptr(), PageSize(), MADV_REMOVE),
              SyscallFailsWithErrno(EACCES));
  // A write-sealed file keeps its data.
  ASSERT_THAT(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_FUTURE_WRITE),
              SyscallSucceeds());
  EXPECT_THAT(madvise(m.ptr() + PageSize(), PageSize(), MADV_REMOVE),
              SyscallFailsWithErrno(EPERM));
  EXPECT_EQ(m.ptr()[PageSize()], 'b');
}

TEST(MemfdTest, MincoreSeesThePageCache) {
  FileDescriptor fd = NewMemfd();
  ASSERT_THAT(ftruncate(fd.get(), 2 * PageSize()), SyscallSucceeds());
  ASSERT_THAT(pwrite(fd.get(), "x", 1, 0), SyscallSucceedsWithValue(1));
  Map m(2 * PageSize(), PROT_READ, MAP_SHARED, fd.get());
  ASSERT_TRUE(m.ok());
  unsigned char vec[2] = {7, 7};
  ASSERT_THAT(mincore(m.ptr(), 2 * PageSize(), vec), SyscallSucceeds());
  EXPECT_EQ(vec[0] & 1, 1);  // written by pwrite, never touched here
  EXPECT_EQ(vec[1] & 1, 0);  // a hole
}

TEST(MemfdTest, ForkedChildSharesTheMemfdMapping) {
  FileDescriptor fd = NewMemfd();
  ASSERT_THAT(ftruncate(fd.get(), PageSize()), SyscallSucceeds());
  Map m(PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  ASSERT_TRUE(m.ok());
  char* p = m.ptr();
  EXPECT_THAT(InForkedChild([p] { p[0] = 'c'; }), ExitedWithCode(0));
  EXPECT_EQ(m.ptr()[0], 'c');
  char c;
  ASSERT_THAT(pread(fd.get(), &c, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'c');
}

// A mapping holds the file as an open descriptor does (Linux's vm_file):
// closing the last descriptor of a memfd leaves the mapping usable, and
// unmapping it afterwards frees the file (here the Sentry once crashed:
// the memfd's private mount went with the descriptor, the file outlived
// it).
TEST(MemfdTest, MappingOutlivesTheLastDescriptor) {
  int fd = NewMemfd().release();
  ASSERT_THAT(ftruncate(fd, 2 * PageSize()), SyscallSucceeds());
  char* p = static_cast<char*>(
      mmap(nullptr, 2 * PageSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(p, MAP_FAILED);
  p[0] = 'a';
  ASSERT_THAT(close(fd), SyscallSucceeds());
  p[PageSize()] = 'b';  // a page first touched after the close
  EXPECT_EQ(p[0], 'a');
  EXPECT_THAT(InForkedChild([p] { p[1] = 'c'; }), ExitedWithCode(0));
  EXPECT_EQ(p[1], 'c');
  EXPECT_THAT(munmap(p, 2 * PageSize()), SyscallSucceeds());
}

}  // namespace
}  // namespace sandbox::testutil
