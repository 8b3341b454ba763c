// mount(2), umount2(2) and /proc/self/mountinfo.
//
// Native runs need CAP_SYS_ADMIN in a private mount namespace: the first
// case to run unshares one and makes / private (recursively), so nothing
// leaks to the host; cases skip with the reason when that fails. A kernel
// without unshare (ENOSYS: the sandbox, which is a mount namespace of its
// own) runs them in place.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr long kTmpfsMagic = 0x01021994;

// Empty if this process may mount; else why not.
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

#define SKIP_UNLESS_MOUNT() \
  if (!MountUnavailable().empty()) GTEST_SKIP() << MountUnavailable()

std::string RealPath(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

struct MountLine {
  int id = -1, parent = -1;
  std::string root, point, options, optional, type, source, super;
};

// The last /proc/self/mountinfo line whose mount point is `point` (the top
// of the stack there), or id -1.
MountLine FindMount(const std::string& point) {
  std::ifstream f("/proc/self/mountinfo");
  std::string line;
  MountLine found;
  std::string want = RealPath(point);
  while (std::getline(f, line)) {
    std::istringstream in(line);
    MountLine m;
    std::string dev, word;
    in >> m.id >> m.parent >> dev >> m.root >> m.point >> m.options;
    while (in >> word && word != "-") {
      m.optional += (m.optional.empty() ? "" : " ") + word;
    }
    in >> m.type >> m.source >> m.super;
    if (m.point == want) found = m;
  }
  return found;
}

bool Exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

std::string ReadFile(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool WriteFile(const std::string& p, const std::string& s) {
  int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  bool ok = write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size());
  close(fd);
  return ok;
}

// A directory with a tmpfs on it for the test's duration.
class MountTest : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_UNLESS_MOUNT(); }
};

TEST_F(MountTest, TmpfsMountShowsOptionsAndUmountRestores) {
  TempPath dir = TempPath::CreateDir();
  ASSERT_TRUE(WriteFile(dir.path() + "/under", "x"));
  ASSERT_THAT(
      mount("mysrc", dir.path().c_str(), "tmpfs", 0, "size=1m,mode=700"),
      SyscallSucceeds());
  struct stat st;
  ASSERT_THAT(stat(dir.path().c_str(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_mode, S_IFDIR | 0700u);
  EXPECT_FALSE(Exists(dir.path() + "/under"));
  struct statfs sf;
  ASSERT_THAT(statfs(dir.path().c_str(), &sf), SyscallSucceeds());
  EXPECT_EQ(sf.f_type, kTmpfsMagic);
  MountLine m = FindMount(dir.path());
  ASSERT_NE(m.id, -1);
  EXPECT_EQ(m.type, "tmpfs");
  EXPECT_EQ(m.source, "mysrc");
  EXPECT_EQ(m.root, "/");
  EXPECT_EQ(m.options, "rw,relatime");
  // Without the options a kernel adds by its configuration: inode64 or
  // inode32 (CONFIG_TMPFS_INODE64), huge= (transparent_hugepage_tmpfs=),
  // noswap.
  std::string super;
  std::istringstream opts(m.super);
  for (std::string o; std::getline(opts, o, ',');) {
    if (o == "inode64" || o == "inode32" || o == "noswap" ||
        o.rfind("huge=", 0) == 0) {
      continue;
    }
    super += (super.empty() ? "" : ",") + o;
  }
  EXPECT_EQ(super, "rw,size=1024k,mode=700") << m.super;
  ASSERT_TRUE(WriteFile(dir.path() + "/f", "data"));
  ASSERT_THAT(umount2(dir.path().c_str(), 0), SyscallSucceeds());
  EXPECT_FALSE(Exists(dir.path() + "/f"));
  EXPECT_TRUE(Exists(dir.path() + "/under"));
  EXPECT_EQ(FindMount(dir.path()).id, -1);
}

TEST_F(MountTest, TmpfsSizeLimit) {
  TempPath dir = TempPath::CreateDir();
  ASSERT_THAT(mount("none", dir.path().c_str(), "tmpfs", 0, "size=8k"),
              SyscallSucceeds());
  std::string f = dir.path() + "/f";
  int fd = open(f.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  std::string page(4096, 'a');
  int err = 0;
  for (int i = 0; i < 4 && err == 0; ++i) {
    if (write(fd, page.data(), page.size()) < 0) err = errno;
  }
  EXPECT_EQ(err, ENOSPC);
  close(fd);
  EXPECT_THAT(umount2(dir.path().c_str(), 0), SyscallSucceeds());
}

// The attack: fill a small tmpfs past its size. size=1m holds exactly 1 MiB
// of data; a 2 MiB write stops there (short), the next fails with ENOSPC,
// and so does an fallocate past the size.
TEST_F(MountTest, TmpfsSizeOneMegabyteRefusesTwo) {
  TempPath dir = TempPath::CreateDir();
  ASSERT_THAT(mount("none", dir.path().c_str(), "tmpfs", 0, "size=1m"),
              SyscallSucceeds());
  struct statfs sf;
  ASSERT_THAT(statfs(dir.path().c_str(), &sf), SyscallSucceeds());
  EXPECT_EQ(static_cast<uint64_t>(sf.f_blocks) * sf.f_bsize, 1u << 20);
  std::string f = dir.path() + "/f";
  int fd = open(f.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  std::string two(2 << 20, 'a');
  size_t total = 0;
  int err = 0;
  while (total < two.size()) {
    ssize_t n = write(fd, two.data() + total, two.size() - total);
    if (n < 0) {
      err = errno;
      break;
    }
    total += static_cast<size_t>(n);
  }
  EXPECT_EQ(err, ENOSPC);
  EXPECT_EQ(total, 1u << 20);
  int g = open((dir.path() + "/g").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(g, 0);
  EXPECT_THAT(fallocate(g, 0, 0, 2 << 20), SyscallFailsWithErrno(ENOSPC));
  close(g);
  close(fd);
  EXPECT_THAT(umount2(dir.path().c_str(), 0), SyscallSucceeds());
}

// nr_inodes= bounds the inodes (the root directory is one): ENOSPC beyond,
// and statfs shows it.
TEST_F(MountTest, TmpfsNrInodesLimit) {
  TempPath dir = TempPath::CreateDir();
  ASSERT_THAT(mount("none", dir.path().c_str(), "tmpfs", 0, "nr_inodes=4"),
              SyscallSucceeds());
  struct statfs sf;
  ASSERT_THAT(statfs(dir.path().c_str(), &sf), SyscallSucceeds());
  EXPECT_EQ(sf.f_files, 4u);
  EXPECT_EQ(sf.f_ffree, 3u);
  EXPECT_NE(FindMount(dir.path()).super.find("nr_inodes=4"), std::string::npos);
  int made = 0, err = 0;
  for (int i = 0; i < 10; ++i) {
    std::string p = dir.path() + "/f" + std::to_string(i);
    int fd = open(p.c_str(), O_WRONLY | O_CREAT, 0644);
    if (fd < 0) {
      err = errno;
      break;
    }
    close(fd);
    ++made;
  }
  EXPECT_EQ(made, 3);
  EXPECT_EQ(err, ENOSPC);
  EXPECT_THAT(mkdir((dir.path() + "/d").c_str(), 0755),
              SyscallFailsWithErrno(ENOSPC));
  // An unlinked file gives its inode back.
  ASSERT_THAT(unlink((dir.path() + "/f0").c_str()), SyscallSucceeds());
  EXPECT_THAT(mkdir((dir.path() + "/d").c_str(), 0755), SyscallSucceeds());
  EXPECT_THAT(umount2(dir.path().c_str(), 0), SyscallSucceeds());
}

TEST_F(MountTest, BadOptionsAndTypes) {
  TempPath dir = TempPath::CreateDir();
  const char* d = dir.path().c_str();
  for (const char* opts : {"size=abc", "bogus=1", "mode=9", "nosuid",
                           "uid=4294967295", "size=1x"}) {
    EXPECT_THAT(mount("none", d, "tmpfs", 0, opts),
                SyscallFailsWithErrno(EINVAL))
        << opts;
  }
  EXPECT_THAT(mount("none", d, "nosuchfs", 0, nullptr),
              SyscallFailsWithErrno(ENODEV));
  EXPECT_THAT(mount("none", d, nullptr, 0, nullptr),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_EQ(FindMount(d).id, -1);
}

TEST_F(MountTest, PathErrors) {
  TempPath file = TempPath::CreateFile();
  EXPECT_THAT(mount("none", NewTempPath().c_str(), "tmpfs", 0, nullptr),
              SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(mount("none", (file.path() + "/x").c_str(), "tmpfs", 0, nullptr),
              SyscallFailsWithErrno(ENOTDIR));
  // A new tmpfs (a directory) cannot go on a file.
  EXPECT_THAT(mount("none", file.path().c_str(), "tmpfs", 0, nullptr),
              SyscallFailsWithErrno(ENOTDIR));
  EXPECT_THAT(syscall(SYS_mount, "none", 8, "tmpfs", 0, 0),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(syscall(SYS_umount2, 8, 0), SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(umount2(NewTempPath().c_str(), 0), SyscallFailsWithErrno(ENOENT));
  TempPath dir = TempPath::CreateDir();
  EXPECT_THAT(umount2(dir.path().c_str(), 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(umount2(dir.path().c_str(), 0x100),
              SyscallFailsWithErrno(EINVAL));
}

TEST_F(MountTest, NeedsCapSysAdmin) {
  TempPath dir = TempPath::CreateDir();
  ASSERT_THAT(mount("none", dir.path().c_str(), "tmpfs", 0, nullptr),
              SyscallSucceeds());
  std::string d = dir.path();
  EXPECT_THAT(InForkedChild([&] {
                if (!DropCapabilities(false)) _exit(2);
                if (mount("none", d.c_str(), "tmpfs", 0, nullptr) == 0 ||
                    errno != EPERM) {
                  _exit(3);
                }
                if (umount2(d.c_str(), 0) == 0 || errno != EPERM) _exit(4);
              }),
              ExitedWithCode(0));
  EXPECT_THAT(umount2(d.c_str(), 0), SyscallSucceeds());
}

TEST_F(MountTest, BusyUnlessDetached) {
  TempPath dir = TempPath::CreateDir();
  ASSERT_THAT(mount("none", dir.path().c_str(), "tmpfs", 0, nullptr),
              SyscallSucceeds());
  std::string f = dir.path() + "/f";
  int fd = open(f.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  EXPECT_THAT(umount2(dir.path().c_str(), 0), SyscallFailsWithErrno(EBUSY));
  EXPECT_THAT(umount2(dir.path().c_str(), MNT_FORCE),
              SyscallFailsWithErrno(EBUSY));
  EXPECT_THAT(umount2(dir.path().c_str(), MNT_EXPIRE),
              SyscallFailsWithErrno(EBUSY));
  EXPECT_THAT(umount2(dir.path().c_str(), MNT_EXPIRE | MNT_DETACH),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(umount2(dir.path().c_str(), MNT_DETACH), SyscallSucceeds());
  EXPECT_FALSE(Exists(f));
  EXPECT_EQ(FindMount(dir.path()).id, -1);
  // The open file still works after the lazy umount.
  EXPECT_THAT(write(fd, "abc", 3), SyscallSucceedsWithValue(3));
  char buf[3] = {};
  EXPECT_THAT(pread(fd, buf, 3, 0), SyscallSucceedsWithValue(3));
  EXPECT_EQ(std::string(buf, 3), "abc");
  close(fd);
}

TEST_F(MountTest, BusyWithSubmounts) {
  TempPath dir = TempPath::CreateDir();
  std::string d = dir.path();
  ASSERT_THAT(mount("none", d.c_str(), "tmpfs", 0, nullptr), SyscallSucceeds());
  ASSERT_THAT(mkdir((d + "/sub").c_str(), 0755), SyscallSucceeds());
  ASSERT_THAT(mount("none", (d + "/sub").c_str(), "tmpfs", 0, nullptr),
              SyscallSucceeds());
  MountLine outer = FindMount(d), inner = FindMount(d + "/sub");
  ASSERT_NE(inner.id, -1);
  EXPECT_EQ(inner.parent, outer.id);
  EXPECT_THAT(umount2(d.c_str(), 0), SyscallFailsWithErrno(EBUSY));
  EXPECT_THAT(umount2(d.c_str(), MNT_DETACH), SyscallSucceeds());
  EXPECT_EQ(FindMount(d).id, -1);
  EXPECT_EQ(FindMount(d + "/sub").id, -1);
}

TEST_F(MountTest, Expire) {
  TempPath dir = TempPath::CreateDir();
  ASSERT_THAT(mount("none", dir.path().c_str(), "tmpfs", 0, nullptr),
              SyscallSucceeds());
  EXPECT_THAT(umount2(dir.path().c_str(), MNT_EXPIRE | MNT_FORCE),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(umount2(dir.path().c_str(), MNT_EXPIRE),
              SyscallFailsWithErrno(EAGAIN));
  EXPECT_THAT(umount2(dir.path().c_str(), MNT_EXPIRE), SyscallSucceeds());
  EXPECT_EQ(FindMount(dir.path()).id, -1);
}

TEST_F(MountTest, UmountNoFollow) {
  TempPath dir = TempPath::CreateDir();
  ASSERT_THAT(mount("none", dir.path().c_str(), "tmpfs", 0, nullptr),
              SyscallSucceeds());
  std::string link = NewTempPath();
  ASSERT_THAT(symlink(dir.path().c_str(), link.c_str()), SyscallSucceeds());
  EXPECT_THAT(umount2(link.c_str(), UMOUNT_NOFOLLOW),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(umount2(link.c_str(), 0), SyscallSucceeds());
  EXPECT_EQ(FindMount(dir.path()).id, -1);
  unlink(link.c_str());
}

TEST_F(MountTest, BindDirectoryAndSubdirectory) {
  TempPath a = TempPath::CreateDir(), b = TempPath::CreateDir(),
           c = TempPath::CreateDir();
  ASSERT_THAT(mount("src", a.path().c_str(), "tmpfs", 0, nullptr),
              SyscallSucceeds());
  ASSERT_THAT(mkdir((a.path() + "/sub").c_str(), 0755), SyscallSucceeds());
  ASSERT_TRUE(WriteFile(a.path() + "/sub/f", "hello"));
  ASSERT_THAT(
      mount(a.path().c_str(), b.path().c_str(), nullptr, MS_BIND, nullptr),
      SyscallSucceeds());
  EXPECT_EQ(ReadFile(b.path() + "/sub/f"), "hello");
  ASSERT_TRUE(WriteFile(b.path() + "/g", "via b"));
  EXPECT_EQ(ReadFile(a.path() + "/g"), "via b");
  ASSERT_THAT(mount((a.path() + "/sub").c_str(), c.path().c_str(), nullptr,
                    MS_BIND, nullptr),
              SyscallSucceeds());
  EXPECT_EQ(ReadFile(c.path() + "/f"), "hello");
  MountLine mb = FindMount(b.path()), mc = FindMount(c.path());
  EXPECT_EQ(mb.root, "/");
  EXPECT_EQ(mc.root, "/sub");
  EXPECT_EQ(mc.type, "tmpfs");
  EXPECT_EQ(mc.source, "src");
  EXPECT_NE(mb.id, mc.id);
  EXPECT_THAT(umount2(c.path().c_str(), 0), SyscallSucceeds());
  EXPECT_THAT(umount2(b.path().c_str(), 0), SyscallSucceeds());
  EXPECT_THAT(umount2(a.path().c_str(), 0), SyscallSucceeds());
  // A missing source, and a bind without one.
  EXPECT_THAT(
      mount(NewTempPath().c_str(), b.path().c_str(), nullptr, MS_BIND, nullptr),
      SyscallFailsWithErrno(ENOENT));
  EXPECT_THAT(mount("", b.path().c_str(), nullptr, MS_BIND, nullptr),
              SyscallFailsWithErrno(EINVAL));
}

TEST_F(MountTest, BindFile) {
  TempPath dir = TempPath::CreateDir();
  std::string f1 = dir.path() + "/one", f2 = dir.path() + "/two";
  ASSERT_TRUE(WriteFile(f1, "one"));
  ASSERT_TRUE(WriteFile(f2, "two"));
  ASSERT_THAT(mount(f1.c_str(), f2.c_str(), nullptr, MS_BIND, nullptr),
              SyscallSucceeds());
  EXPECT_EQ(ReadFile(f2), "one");
  MountLine m = FindMount(f2);
  ASSERT_NE(m.id, -1);
  // A file onto a directory (or back) is ENOTDIR.
  EXPECT_THAT(mount(f1.c_str(), dir.path().c_str(), nullptr, MS_BIND, nullptr),
              SyscallFailsWithErrno(ENOTDIR));
  EXPECT_THAT(umount2(f2.c_str(), 0), SyscallSucceeds());
  EXPECT_EQ(ReadFile(f2), "two");
}

TEST_F(MountTest, RecursiveBind) {
  TempPath a = TempPath::CreateDir(), b = TempPath::CreateDir(),
           c = TempPath::CreateDir();
  std::string sub = a.path() + "/sub";
  ASSERT_THAT(mount("none", a.path().c_str(), "tmpfs", 0, nullptr),
              SyscallSucceeds());
  ASSERT_THAT(mkdir(sub.c_str(), 0755), SyscallSucceeds());
  ASSERT_THAT(mount("none", sub.c_str(), "tmpfs", 0, nullptr),
              SyscallSucceeds());
  ASSERT_TRUE(WriteFile(sub + "/inner", "in"));
  ASSERT_THAT(
      mount(a.path().c_str(), b.path().c_str(), nullptr, MS_BIND, nullptr),
      SyscallSucceeds());
  EXPECT_TRUE(Exists(b.path() + "/sub"));
  EXPECT_FALSE(Exists(b.path() + "/sub/inner"));
  ASSERT_THAT(mount(a.path().c_str(), c.path().c_str(), nullptr,
                    MS_BIND | MS_REC, nullptr),
              SyscallSucceeds());
  EXPECT_EQ(ReadFile(c.path() + "/sub/inner"), "in");
  EXPECT_NE(FindMount(c.path() + "/sub").id, -1);
  EXPECT_THAT(umount2(c.path().c_str(), MNT_DETACH), SyscallSucceeds());
  EXPECT_THAT(umount2(b.path().c_str(), 0), SyscallSucceeds());
  EXPECT_THAT(umount2(a.path().c_str(), MNT_DETACH), SyscallSucceeds());
}

TEST_F(MountTest, ReadOnlyBindAndRemount) {
  TempPath a = TempPath::CreateDir(), b = TempPath::CreateDir();
  ASSERT_THAT(mount("none", a.path().c_str(), "tmpfs", 0, nullptr),
              SyscallSucceeds());
  ASSERT_THAT(mount(a.path().c_str(), b.path().c_str(), nullptr,
                    MS_BIND | MS_RDONLY, nullptr),
              SyscallSucceeds());
  // MS_RDONLY with a plain MS_BIND is ignored.
  EXPECT_TRUE(WriteFile(b.path() + "/f", "x"));
  ASSERT_THAT(mount(nullptr, b.path().c_str(), nullptr,
                    MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr),
              SyscallSucceeds());
  EXPECT_THAT(open((b.path() + "/g").c_str(), O_WRONLY | O_CREAT, 0644),
              SyscallFailsWithErrno(EROFS));
  EXPECT_THAT(open((b.path() + "/f").c_str(), O_WRONLY),
              SyscallFailsWithErrno(EROFS));
  EXPECT_TRUE(WriteFile(a.path() + "/g", "y"));  // the other mount is rw
  EXPECT_EQ(FindMount(b.path()).options.substr(0, 3), "ro,");
  EXPECT_EQ(FindMount(a.path()).options.substr(0, 3), "rw,");
  // Only at a mount's root.
  ASSERT_THAT(mkdir((a.path() + "/d").c_str(), 0755), SyscallSucceeds());
  EXPECT_THAT(mount(nullptr, (a.path() + "/d").c_str(), nullptr,
                    MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr),
              SyscallFailsWithErrno(EINVAL));
  // A plain remount of the whole tmpfs.
  ASSERT_THAT(mount(nullptr, a.path().c_str(), nullptr, MS_REMOUNT | MS_RDONLY,
                    nullptr),
              SyscallSucceeds());
  EXPECT_THAT(mkdir((a.path() + "/e").c_str(), 0755),
              SyscallFailsWithErrno(EROFS));
  ASSERT_THAT(mount(nullptr, a.path().c_str(), nullptr, MS_REMOUNT, nullptr),
              SyscallSucceeds());
  EXPECT_THAT(mkdir((a.path() + "/e").c_str(), 0755), SyscallSucceeds());
  EXPECT_THAT(umount2(b.path().c_str(), 0), SyscallSucceeds());
  EXPECT_THAT(umount2(a.path().c_str(), 0), SyscallSucceeds());
}

TEST_F(MountTest, PerMountFlags) {
  TempPath a = TempPath::CreateDir();
  ASSERT_THAT(mount("none", a.path().c_str(), "tmpfs",
                    MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME, nullptr),
              SyscallSucceeds());
  EXPECT_EQ(FindMount(a.path()).options, "rw,nosuid,nodev,noexec,noatime");
  // noexec: no executable mappings of its files.
  std::string f = a.path() + "/f";
  ASSERT_TRUE(WriteFile(f, std::string(4096, 'x')));
  int fd = open(f.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
  EXPECT_EQ(p, MAP_FAILED);
  EXPECT_EQ(errno, EPERM);
  close(fd);
  // Remount keeps the atime mode unless one is given.
  ASSERT_THAT(mount(nullptr, a.path().c_str(), nullptr, MS_REMOUNT | MS_NOSUID,
                    nullptr),
              SyscallSucceeds());
  EXPECT_EQ(FindMount(a.path()).options, "rw,nosuid,noatime");
  ASSERT_THAT(mount(nullptr, a.path().c_str(), nullptr,
                    MS_REMOUNT | MS_STRICTATIME, nullptr),
              SyscallSucceeds());
  EXPECT_EQ(FindMount(a.path()).options, "rw");
  EXPECT_THAT(umount2(a.path().c_str(), 0), SyscallSucceeds());
  ASSERT_THAT(mount("none", a.path().c_str(), "tmpfs", MS_RDONLY, nullptr),
              SyscallSucceeds());
  EXPECT_EQ(FindMount(a.path()).options, "ro,relatime");
  EXPECT_THAT(mkdir((a.path() + "/x").c_str(), 0755),
              SyscallFailsWithErrno(EROFS));
  EXPECT_THAT(umount2(a.path().c_str(), 0), SyscallSucceeds());
}

TEST_F(MountTest, Propagation) {
  TempPath a = TempPath::CreateDir(), b = TempPath::CreateDir();
  const char* d = a.path().c_str();
  ASSERT_THAT(mount("none", d, "tmpfs", 0, nullptr), SyscallSucceeds());
  EXPECT_EQ(FindMount(d).optional, "");
  ASSERT_THAT(mount(nullptr, d, nullptr, MS_SHARED, nullptr),
              SyscallSucceeds());
  std::string shared = FindMount(d).optional;
  EXPECT_EQ(shared.rfind("shared:", 0), 0u) << shared;
  // A bind of a shared mount is its peer.
  ASSERT_THAT(mount(d, b.path().c_str(), nullptr, MS_BIND, nullptr),
              SyscallSucceeds());
  EXPECT_EQ(FindMount(b.path()).optional, shared);
  // With a peer left, a slave of the group; the peer stays shared.
  ASSERT_THAT(mount(nullptr, d, nullptr, MS_SLAVE, nullptr), SyscallSucceeds());
  EXPECT_EQ(FindMount(d).optional,
            "master:" + shared.substr(strlen("shared:")));
  EXPECT_EQ(FindMount(b.path()).optional, shared);
  ASSERT_THAT(umount2(b.path().c_str(), 0), SyscallSucceeds());
  // A shared mount without peers has no master: MS_SLAVE makes it private.
  ASSERT_THAT(mount(nullptr, d, nullptr, MS_SHARED, nullptr),
              SyscallSucceeds());
  ASSERT_THAT(mount(nullptr, d, nullptr, MS_SLAVE, nullptr), SyscallSucceeds());
  EXPECT_EQ(FindMount(d).optional, "");
  ASSERT_THAT(mount(nullptr, d, nullptr, MS_PRIVATE, nullptr),
              SyscallSucceeds());
  EXPECT_EQ(FindMount(d).optional, "");
  ASSERT_THAT(mount(nullptr, d, nullptr, MS_UNBINDABLE, nullptr),
              SyscallSucceeds());
  EXPECT_EQ(FindMount(d).optional, "unbindable");
  EXPECT_THAT(mount(d, b.path().c_str(), nullptr, MS_BIND, nullptr),
              SyscallFailsWithErrno(EINVAL));
  // Exactly one type, nothing else but MS_REC; at a mount root only.
  EXPECT_THAT(mount(nullptr, d, nullptr, MS_SHARED | MS_PRIVATE, nullptr),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(mount(nullptr, d, nullptr, MS_PRIVATE | MS_NOSUID, nullptr),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(mkdir((a.path() + "/sub").c_str(), 0755), SyscallSucceeds());
  EXPECT_THAT(
      mount(nullptr, (a.path() + "/sub").c_str(), nullptr, MS_PRIVATE, nullptr),
      SyscallFailsWithErrno(EINVAL));
  // MS_REC reaches the mounts below.
  ASSERT_THAT(mount("none", (a.path() + "/sub").c_str(), "tmpfs", 0, nullptr),
              SyscallSucceeds());
  ASSERT_THAT(mount(nullptr, d, nullptr, MS_REC | MS_SHARED, nullptr),
              SyscallSucceeds());
  EXPECT_EQ(FindMount(a.path() + "/sub").optional.rfind("shared:", 0), 0u);
  EXPECT_THAT(umount2(d, MNT_DETACH), SyscallSucceeds());
}

TEST_F(MountTest, Move) {
  TempPath a = TempPath::CreateDir(), b = TempPath::CreateDir();
  ASSERT_THAT(mount("none", a.path().c_str(), "tmpfs", 0, nullptr),
              SyscallSucceeds());
  ASSERT_TRUE(WriteFile(a.path() + "/f", "moved"));
  int id = FindMount(a.path()).id;
  ASSERT_THAT(mkdir((a.path() + "/x").c_str(), 0755), SyscallSucceeds());
  EXPECT_THAT(mount(a.path().c_str(), (a.path() + "/x").c_str(), nullptr,
                    MS_MOVE, nullptr),
              SyscallFailsWithErrno(ELOOP));
  EXPECT_THAT(mount((a.path() + "/x").c_str(), b.path().c_str(), nullptr,
                    MS_MOVE, nullptr),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(
      mount(a.path().c_str(), b.path().c_str(), nullptr, MS_MOVE, nullptr),
      SyscallSucceeds());
  EXPECT_EQ(ReadFile(b.path() + "/f"), "moved");
  EXPECT_FALSE(Exists(a.path() + "/f"));
  EXPECT_EQ(FindMount(a.path()).id, -1);
  EXPECT_EQ(FindMount(b.path()).id, id);
  EXPECT_THAT(umount2(b.path().c_str(), 0), SyscallSucceeds());
}

TEST_F(MountTest, ProcAndSysfs) {
  TempPath a = TempPath::CreateDir();
  if (mount("proc", a.path().c_str(), "proc", 0, nullptr) != 0) {
    // In a user namespace proc needs its own PID namespace.
    ASSERT_EQ(errno, EPERM);
    GTEST_SKIP() << "mounting proc: EPERM (a user namespace without its own "
                    "PID namespace)";
  }
  EXPECT_TRUE(Exists(a.path() + "/self/status"));
  EXPECT_EQ(FindMount(a.path()).type, "proc");
  EXPECT_THAT(umount2(a.path().c_str(), 0), SyscallSucceeds());
  if (mount("sysfs", a.path().c_str(), "sysfs", MS_RDONLY, nullptr) != 0) {
    ASSERT_EQ(errno, EPERM);
    GTEST_SKIP() << "mounting sysfs: EPERM (a user namespace without its own "
                    "network namespace)";
  }
  EXPECT_TRUE(Exists(a.path() + "/fs"));
  EXPECT_EQ(FindMount(a.path()).type, "sysfs");
  EXPECT_THAT(umount2(a.path().c_str(), 0), SyscallSucceeds());
}

// A devpts instance: its root (ino 1, 0755) holds ptmx (c 5:2, ino 2,
// mode ptmxmode, default 0000), and mountinfo shows the options as
// devpts_show_options.
TEST_F(MountTest, Devpts) {
  TempPath a = TempPath::CreateDir();
  ASSERT_THAT(mount("devpts", a.path().c_str(), "devpts", 0, "newinstance"),
              SyscallSucceeds());
  EXPECT_TRUE(Exists(a.path() + "/ptmx"));
  struct stat root = {}, ptmx = {};
  ASSERT_THAT(stat(a.path().c_str(), &root), SyscallSucceeds());
  EXPECT_EQ(root.st_mode, S_IFDIR | 0755u);
  EXPECT_EQ(root.st_ino, 1u);
  ASSERT_THAT(stat((a.path() + "/ptmx").c_str(), &ptmx), SyscallSucceeds());
  EXPECT_EQ(ptmx.st_mode, S_IFCHR | 0000u);
  EXPECT_EQ(ptmx.st_rdev, makedev(5, 2));
  EXPECT_EQ(ptmx.st_ino, 2u);
  EXPECT_EQ(ptmx.st_uid, 0u);
  EXPECT_EQ(ptmx.st_dev, root.st_dev);
  struct statfs sfs = {};
  ASSERT_THAT(statfs(a.path().c_str(), &sfs), SyscallSucceeds());
  EXPECT_EQ(sfs.f_type, 0x1cd1);  // DEVPTS_SUPER_MAGIC
  MountLine m = FindMount(a.path());
  EXPECT_EQ(m.type, "devpts");
  EXPECT_EQ(m.source, "devpts");
  EXPECT_EQ(m.super, "rw,mode=600,ptmxmode=000");
  EXPECT_THAT(umount2(a.path().c_str(), 0), SyscallSucceeds());
}

// `mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts DIR`, as a
// container's init does (with our own gid: a native run may be in a user
// namespace that maps no other); every mount is a new instance.
TEST_F(MountTest, DevptsOptions) {
  TempPath a = TempPath::CreateDir();
  TempPath b = TempPath::CreateDir();
  const std::string gid = std::to_string(getgid());
  const std::string opts =
      "newinstance,gid=" + gid + ",mode=0620,ptmxmode=0666,max=100";
  ASSERT_THAT(mount("devpts", a.path().c_str(), "devpts", MS_NOSUID | MS_NOEXEC,
                    opts.c_str()),
              SyscallSucceeds());
  struct stat ptmx = {};
  ASSERT_THAT(stat((a.path() + "/ptmx").c_str(), &ptmx), SyscallSucceeds());
  EXPECT_EQ(ptmx.st_mode, S_IFCHR | 0666u);
  MountLine m = FindMount(a.path());
  EXPECT_EQ(m.options, "rw,nosuid,noexec,relatime");
  EXPECT_EQ(m.super, "rw,gid=" + gid + ",mode=620,ptmxmode=666,max=100");
  char uid_hex[32];
  snprintf(uid_hex, sizeof(uid_hex), "uid=0x%x", getuid());  // base 0
  ASSERT_THAT(mount("none", b.path().c_str(), "devpts", 0, uid_hex),
              SyscallSucceeds());
  struct stat other = {};
  ASSERT_THAT(stat((b.path() + "/ptmx").c_str(), &other), SyscallSucceeds());
  EXPECT_NE(other.st_dev, ptmx.st_dev);
  EXPECT_EQ(other.st_mode, S_IFCHR | 0000u);
  m = FindMount(b.path());
  EXPECT_EQ(m.source, "none");
  EXPECT_EQ(m.super,
            "rw,uid=" + std::to_string(getuid()) + ",mode=600,ptmxmode=000");
  EXPECT_THAT(umount2(b.path().c_str(), 0), SyscallSucceeds());
  EXPECT_THAT(umount2(a.path().c_str(), 0), SyscallSucceeds());
}

TEST_F(MountTest, DevptsBadOptionsAreEinval) {
  TempPath a = TempPath::CreateDir();
  for (const char* opts :
       {"bogus", "mode", "mode=", "mode=8", "ptmxmode=abc", "uid=x",
        "gid=4294967295", "max=1048577", "newinstance=1"}) {
    EXPECT_THAT(mount("devpts", a.path().c_str(), "devpts", 0, opts),
                SyscallFailsWithErrno(EINVAL))
        << opts;
  }
  EXPECT_EQ(FindMount(a.path()).type, "");  // nothing was mounted
}

// MS_REMOUNT of devpts (devpts_reconfigure): the options are checked
// (EINVAL) and replace the old ones; ptmx takes the new ptmxmode.
TEST_F(MountTest, DevptsRemount) {
  TempPath a = TempPath::CreateDir();
  ASSERT_THAT(mount("devpts", a.path().c_str(), "devpts", 0, "ptmxmode=600"),
              SyscallSucceeds());
  EXPECT_THAT(mount(nullptr, a.path().c_str(), nullptr, MS_REMOUNT, "bogus"),
              SyscallFailsWithErrno(EINVAL));
  ASSERT_THAT(
      mount(nullptr, a.path().c_str(), nullptr, MS_REMOUNT, "ptmxmode=0640"),
      SyscallSucceeds());
  struct stat ptmx = {};
  ASSERT_THAT(stat((a.path() + "/ptmx").c_str(), &ptmx), SyscallSucceeds());
  EXPECT_EQ(ptmx.st_mode, S_IFCHR | 0640u);
  EXPECT_THAT(umount2(a.path().c_str(), 0), SyscallSucceeds());
}

// mountinfo shows the options of the last remount. (The sandbox keeps
// showing those of the mount: listed in the expected failures.)
TEST_F(MountTest, DevptsRemountShowsTheNewOptions) {
  TempPath a = TempPath::CreateDir();
  ASSERT_THAT(mount("devpts", a.path().c_str(), "devpts", 0, "ptmxmode=600"),
              SyscallSucceeds());
  ASSERT_THAT(
      mount(nullptr, a.path().c_str(), nullptr, MS_REMOUNT, "mode=0620"),
      SyscallSucceeds());
  EXPECT_EQ(FindMount(a.path()).super, "rw,mode=620,ptmxmode=000");
  EXPECT_THAT(umount2(a.path().c_str(), 0), SyscallSucceeds());
}

// Opening ptmx allocates a terminal pair: its number is 0 in a new
// instance. (The sandbox has no terminals yet: listed in the expected
// failures.)
TEST_F(MountTest, DevptsPtmxOpensTerminalZero) {
  TempPath a = TempPath::CreateDir();
  ASSERT_THAT(mount("devpts", a.path().c_str(), "devpts", 0, "ptmxmode=666"),
              SyscallSucceeds());
  int fd = open((a.path() + "/ptmx").c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << strerror(errno);
  if (fd >= 0) {
    unsigned n = 99;
    EXPECT_THAT(ioctl(fd, TIOCGPTN, &n), SyscallSucceeds());
    EXPECT_EQ(n, 0u);
    EXPECT_TRUE(Exists(a.path() + "/0"));
    close(fd);
  }
  EXPECT_THAT(umount2(a.path().c_str(), 0), SyscallSucceeds());
}

// ---- Locked mounts (Linux MNT_LOCKED). ----
// Natively, mounts become locked when a user namespace copies them into a
// new mount namespace (unshare(CLONE_NEWUSER | CLONE_NEWNS)); in the
// sandbox its own set-up mounts (/, /proc, /dev, /tmp, ...) are locked
// (unshare is ENOSYS there). Either way /proc is a locked child of "/".

// In a forked child: enters the locked namespace (natively) and runs
// `checks`, which return 0 or the number of the failed check (the exit
// code; the check also prints why). Returns the child's exit code, or -1
// with *skip set when unprivileged user namespaces are unavailable.
int InLockedNamespace(const std::function<int()>& checks, std::string* skip) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return -2;
  pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      if (errno != ENOSYS) {
        std::string why = std::string("unshare(CLONE_NEWUSER|CLONE_NEWNS): ") +
                          strerror(errno);
        (void)!write(pipefd[1], why.data(), why.size());
        _exit(100);
      }
    } else {
      // Map the caller's ids to themselves (root stays root, so the test's
      // directories stay writable).
      bool ok =
          WriteFile("/proc/self/setgroups", "deny") &&
          WriteFile("/proc/self/uid_map",
                    std::to_string(uid) + " " + std::to_string(uid) + " 1") &&
          WriteFile("/proc/self/gid_map",
                    std::to_string(gid) + " " + std::to_string(gid) + " 1");
      if (!ok) {
        std::string why = std::string("id maps: ") + strerror(errno);
        (void)!write(pipefd[1], why.data(), why.size());
        _exit(100);
      }
    }
    _exit(checks());
  }
  close(pipefd[1]);
  char buf[256];
  ssize_t n = read(pipefd[0], buf, sizeof buf);
  close(pipefd[0]);
  int ws = 0;
  waitpid(pid, &ws, 0);
  if (!WIFEXITED(ws)) return -3;
  if (WEXITSTATUS(ws) == 100) {
    *skip = n > 0 ? std::string(buf, n) : "cannot enter a user namespace";
    return -1;
  }
  return WEXITSTATUS(ws);
}

#define LOCKED_CHECK(n, cond)                                       \
  do {                                                              \
    if (!(cond)) {                                                  \
      fprintf(stderr, "check %d failed: %s (errno %s)\n", n, #cond, \
              strerror(errno));                                     \
      return n;                                                     \
    }                                                               \
  } while (0)

#define RUN_LOCKED(...)                               \
  do {                                                \
    std::string skip;                                 \
    int code = InLockedNamespace(__VA_ARGS__, &skip); \
    if (code == -1) GTEST_SKIP() << "SKIP: " << skip; \
    EXPECT_EQ(code, 0) << "see the child's stderr";   \
  } while (0)

// A tmpfs of the child's own, with the directories `names` in it.
std::string ScratchTmpfs(const std::string& where,
                         const std::vector<std::string>& names) {
  if (mount("none", where.c_str(), "tmpfs", 0, nullptr) != 0) return "";
  for (const auto& n : names) mkdir((where + "/" + n).c_str(), 0755);
  return where;
}

TEST(LockedMountTest, UmountIsEinval) {
  RUN_LOCKED([] {
    LOCKED_CHECK(1, umount2("/proc", 0) != 0 && errno == EINVAL);
    LOCKED_CHECK(2, umount2("/proc", MNT_DETACH) != 0 && errno == EINVAL);
    LOCKED_CHECK(3, umount2("/proc", MNT_FORCE) != 0 && errno == EINVAL);
    LOCKED_CHECK(4, Exists("/proc/self/status"));
    return 0;
  });
}

TEST(LockedMountTest, PlainBindOverLockedChildrenIsEinval) {
  TempPath dir = TempPath::CreateDir();
  std::string d = dir.path();
  RUN_LOCKED([d] {
    LOCKED_CHECK(1, ScratchTmpfs(d, {"x", "y"}) == d);
    LOCKED_CHECK(
        2, mount("/", (d + "/x").c_str(), nullptr, MS_BIND, nullptr) != 0 &&
               errno == EINVAL);
    // A directory with no locked mount below it binds as usual.
    LOCKED_CHECK(4, mount((d).c_str(), (d + "/y").c_str(), nullptr, MS_BIND,
                          nullptr) == 0);
    LOCKED_CHECK(5, umount2((d + "/y").c_str(), 0) == 0);
    return 0;
  });
}

TEST(LockedMountTest, RecursiveBindCarriesLockedChildren) {
  TempPath dir = TempPath::CreateDir();
  std::string d = dir.path();
  RUN_LOCKED([d] {
    LOCKED_CHECK(1, ScratchTmpfs(d, {"y"}) == d);
    std::string y = d + "/y";
    LOCKED_CHECK(
        2, mount("/", y.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == 0);
    LOCKED_CHECK(3, Exists(y + "/proc/self/status"));
    // The copies below the new top are locked; the top is not.
    LOCKED_CHECK(4, umount2((y + "/proc").c_str(), 0) != 0 && errno == EINVAL);
    LOCKED_CHECK(
        5, umount2((y + "/proc").c_str(), MNT_DETACH) != 0 && errno == EINVAL);
    // Busy with its (locked) children: EBUSY, as any parent.
    LOCKED_CHECK(10, umount2(y.c_str(), 0) != 0 && errno == EBUSY);
    // Held, then lazily unmounted: the locked copies stay connected.
    int held = open(y.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    LOCKED_CHECK(6, held >= 0);
    LOCKED_CHECK(7, umount2(y.c_str(), MNT_DETACH) == 0);
    struct stat st;
    LOCKED_CHECK(8, fstatat(held, "proc/self/status", &st, 0) == 0);
    LOCKED_CHECK(9, !Exists(y + "/proc/self/status"));
    close(held);
    return 0;
  });
}

TEST(LockedMountTest, MoveIsEinval) {
  TempPath dir = TempPath::CreateDir();
  std::string d = dir.path();
  RUN_LOCKED([d] {
    LOCKED_CHECK(1, ScratchTmpfs(d, {"z"}) == d);
    LOCKED_CHECK(
        2, mount("/proc", (d + "/z").c_str(), nullptr, MS_MOVE, nullptr) != 0 &&
               errno == EINVAL);
    LOCKED_CHECK(3, Exists("/proc/self/status"));
    return 0;
  });
}

TEST(LockedMountTest, RemountCannotClearLockedFlags) {
  RUN_LOCKED([] {
    struct statfs sf;
    LOCKED_CHECK(1, statfs("/proc", &sf) == 0);
    // statfs's ST_* flags have the MS_* values for these.
    const unsigned long kLockable[] = {MS_RDONLY, MS_NOSUID, MS_NODEV,
                                       MS_NOEXEC};
    unsigned long keep = 0;
    for (unsigned long f : kLockable) {
      if (sf.f_flags & f) keep |= f;  // ST_* == MS_* for these
    }
    const unsigned long base = MS_REMOUNT | MS_BIND;
    // The same flags (atime mode kept when none is given): allowed.
    LOCKED_CHECK(2,
                 mount(nullptr, "/proc", nullptr, base | keep, nullptr) == 0);
    // Another atime mode: EPERM (MNT_LOCK_ATIME).
    unsigned long other =
        (sf.f_flags & MS_NOATIME) ? MS_STRICTATIME : MS_NOATIME;
    LOCKED_CHECK(3, mount(nullptr, "/proc", nullptr, base | keep | other,
                          nullptr) != 0 &&
                        errno == EPERM);
    // Each locked flag cleared: EPERM.
    int n = 4;
    for (unsigned long f : kLockable) {
      if (!(keep & f)) continue;
      LOCKED_CHECK(n, mount(nullptr, "/proc", nullptr, base | (keep & ~f),
                            nullptr) != 0 &&
                          errno == EPERM);
      ++n;
    }
    struct statfs after;
    LOCKED_CHECK(
        9, statfs("/proc", &after) == 0 && (after.f_flags & keep) == keep);
    return 0;
  });
}

TEST(LockedMountTest, UnbindableLockedChildIsEperm) {
  TempPath dir = TempPath::CreateDir();
  std::string d = dir.path();
  RUN_LOCKED([d] {
    LOCKED_CHECK(1, ScratchTmpfs(d, {"y"}) == d);
    LOCKED_CHECK(2,
                 mount(nullptr, "/proc", nullptr, MS_UNBINDABLE, nullptr) == 0);
    int r = mount("/", (d + "/y").c_str(), nullptr, MS_BIND | MS_REC, nullptr);
    int e = errno;
    mount(nullptr, "/proc", nullptr, MS_PRIVATE, nullptr);
    errno = e;
    LOCKED_CHECK(3, r != 0 && errno == EPERM);
    return 0;
  });
}

}  // namespace
}  // namespace sandbox::testutil
