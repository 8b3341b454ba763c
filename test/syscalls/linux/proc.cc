// /proc: formats as Linux shows them, and contents that must agree with
// what the process can learn through syscalls (PIDs, credentials, mappings,
// limits, CPUID, uname).
#include <cpuid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

std::string ReadFile(const std::string& path) {
  FileDescriptor fd(open(path.c_str(), O_RDONLY));
  if (!fd.valid()) {
    ADD_FAILURE() << path << ": " << strerror(errno);
    return "";
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, n);
  }
  return out;
}

std::string Readlink(const std::string& path) {
  char buf[4096];
  ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, n);
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> Fields(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

// The value after "Key:" in a status-like file, whitespace-trimmed.
std::string StatusValue(const std::string& text, const std::string& key) {
  for (const std::string& line : Lines(text)) {
    if (line.rfind(key + ":", 0) == 0) {
      std::string v = line.substr(key.size() + 1);
      size_t b = v.find_first_not_of(" \t");
      return b == std::string::npos ? "" : v.substr(b);
    }
  }
  return "<missing>";
}

std::vector<std::string> DirNames(const std::string& path) {
  std::vector<std::string> names;
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return names;
  while (struct dirent* e = readdir(d)) names.push_back(e->d_name);
  closedir(d);
  return names;
}

TEST(ProcTest, SelfAndThreadSelf) {
  EXPECT_EQ(Readlink("/proc/self"), std::to_string(getpid()));
  EXPECT_EQ(Readlink("/proc/thread-self"),
            std::to_string(getpid()) + "/task/" +
                std::to_string(syscall(SYS_gettid)));
  EXPECT_THAT(DirNames("/proc"), ::testing::Contains(std::to_string(getpid())));
  struct stat st;
  ASSERT_THAT(stat("/proc/self", &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISDIR(st.st_mode));
}

TEST(ProcTest, StatFields) {
  std::string stat = ReadFile("/proc/self/stat");
  ASSERT_FALSE(stat.empty());
  EXPECT_EQ(stat.back(), '\n');
  // comm may contain spaces: split after the last ')'.
  size_t open_paren = stat.find('(');
  size_t close_paren = stat.rfind(')');
  ASSERT_NE(open_paren, std::string::npos);
  ASSERT_NE(close_paren, std::string::npos);
  EXPECT_EQ(stat.substr(0, open_paren - 1), std::to_string(getpid()));
  std::vector<std::string> rest = Fields(stat.substr(close_paren + 1));
  EXPECT_EQ(rest.size() + 2, 52u);  // pid and comm, then 50 fields
  ASSERT_GE(rest.size(), 20u);
  EXPECT_EQ(rest[0], "R");  // the reader itself is running
  EXPECT_EQ(rest[1], std::to_string(getppid()));
  EXPECT_EQ(rest[2], std::to_string(getpgrp()));
  EXPECT_EQ(rest[3], std::to_string(getsid(0)));
  EXPECT_EQ(rest[17], "1");  // num_threads
}

TEST(ProcTest, StatusIdentity) {
  std::string s = ReadFile("/proc/self/status");
  EXPECT_EQ(StatusValue(s, "Pid"), std::to_string(getpid()));
  EXPECT_EQ(StatusValue(s, "Tgid"), std::to_string(getpid()));
  EXPECT_EQ(StatusValue(s, "PPid"), std::to_string(getppid()));
  std::string uid = std::to_string(getuid());
  EXPECT_EQ(StatusValue(s, "Uid"),
            uid + "\t" + std::to_string(geteuid()) + "\t" + uid + "\t" + uid);
  EXPECT_EQ(StatusValue(s, "Threads"), "1");
  EXPECT_EQ(StatusValue(s, "State"), "R (running)");
  EXPECT_EQ(StatusValue(s, "Name"),
            ReadFile("/proc/self/comm")
                .substr(0, ReadFile("/proc/self/comm").size() - 1));
  std::regex kb("\\d+ kB");
  EXPECT_TRUE(std::regex_match(StatusValue(s, "VmSize"), kb));
  EXPECT_TRUE(
      std::regex_match(StatusValue(s, "SigBlk"), std::regex("[0-9a-f]{16}")));
}

TEST(ProcTest, CommIsTheExecutableBaseName) {
  std::string exe = Readlink("/proc/self/exe");
  ASSERT_FALSE(exe.empty());
  std::string base = exe.substr(exe.rfind('/') + 1).substr(0, 15);
  EXPECT_EQ(ReadFile("/proc/self/comm"), base + "\n");
  ASSERT_THAT(prctl(PR_SET_NAME, "renamed"), SyscallSucceeds());
  EXPECT_EQ(ReadFile("/proc/self/comm"), "renamed\n");
  // Writing comm renames the task: 15 bytes at most, a newline kept.
  {
    FileDescriptor fd(open("/proc/self/comm", O_WRONLY));
    ASSERT_TRUE(fd.valid());
    EXPECT_THAT(write(fd.get(), "byproc", 6), SyscallSucceedsWithValue(6));
  }
  char name[17] = {};
  ASSERT_THAT(prctl(PR_GET_NAME, name), SyscallSucceeds());
  EXPECT_STREQ(name, "byproc");
  {
    FileDescriptor fd(open("/proc/self/comm", O_WRONLY));
    ASSERT_TRUE(fd.valid());
    EXPECT_THAT(write(fd.get(), "a-very-long-name-indeed", 23),
                SyscallSucceedsWithValue(23));
  }
  EXPECT_EQ(ReadFile("/proc/self/comm"), "a-very-long-nam\n");
  ASSERT_THAT(prctl(PR_SET_NAME, base.c_str()), SyscallSucceeds());
}

// PR_GET_NAME starts as the executable's base name (15 bytes at most), and
// fork copies the name the parent set.
TEST(ProcTest, PrGetNameStartsAsTheExecutableAndIsInherited) {
  std::string exe = Readlink("/proc/self/exe");
  ASSERT_FALSE(exe.empty());
  std::string base = exe.substr(exe.rfind('/') + 1).substr(0, 15);
  char name[17] = {};
  ASSERT_THAT(prctl(PR_GET_NAME, name), SyscallSucceeds());
  EXPECT_STREQ(name, base.c_str());

  ASSERT_THAT(prctl(PR_SET_NAME, "parent-name"), SyscallSucceeds());
  int status = InForkedChild([] {
    char child[17] = {};
    if (prctl(PR_GET_NAME, child) != 0) _exit(2);
    if (strcmp(child, "parent-name") != 0) _exit(3);
  });
  EXPECT_THAT(status, ExitedWithCode(0));
  ASSERT_THAT(prctl(PR_SET_NAME, base.c_str()), SyscallSucceeds());
}

TEST(ProcTest, StatmHasSevenFields) {
  std::vector<std::string> f = Fields(ReadFile("/proc/self/statm"));
  ASSERT_EQ(f.size(), 7u);
  EXPECT_GT(std::stoul(f[0]), 0u);
}

TEST(ProcTest, MapsShowsAFreshMapping) {
  size_t len = 3 * PageSize();
  void* p = mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  char range[64];
  snprintf(range, sizeof(range), "%lx-%lx ", reinterpret_cast<unsigned long>(p),
           reinterpret_cast<unsigned long>(p) + len);
  auto line_of = [&]() -> std::string {
    for (const std::string& l : Lines(ReadFile("/proc/self/maps"))) {
      if (l.rfind(range, 0) == 0) return l;
    }
    return "";
  };
  std::string line = line_of();
  ASSERT_FALSE(line.empty()) << range;
  std::vector<std::string> f = Fields(line);
  ASSERT_GE(f.size(), 5u);
  EXPECT_EQ(f[1], "r--p");
  EXPECT_EQ(f[2], "00000000");
  EXPECT_EQ(f[3], "00:00");
  EXPECT_EQ(f[4], "0");
  ASSERT_THAT(mprotect(p, len, PROT_READ | PROT_WRITE), SyscallSucceeds());
  f = Fields(line_of());
  ASSERT_GE(f.size(), 2u);
  EXPECT_EQ(f[1], "rw-p");
  munmap(p, len);
  EXPECT_EQ(line_of(), "");
  // The stack is named.
  EXPECT_NE(ReadFile("/proc/self/maps").find("[stack]"), std::string::npos);
}

TEST(ProcTest, AnotherProcessesDirectory) {
  int p[2];
  ASSERT_THAT(pipe(p), SyscallSucceeds());
  pid_t child = fork();
  if (child == 0) {
    close(p[1]);
    char c;
    (void)!read(p[0], &c, 1);  // sleeps until the parent closes its end
    _exit(0);
  }
  ASSERT_GT(child, 0);
  close(p[0]);
  std::string dir = "/proc/" + std::to_string(child);
  EXPECT_THAT(DirNames("/proc"), ::testing::Contains(std::to_string(child)));
  std::string status = ReadFile(dir + "/status");
  EXPECT_EQ(StatusValue(status, "Pid"), std::to_string(child));
  EXPECT_EQ(StatusValue(status, "PPid"), std::to_string(getpid()));
  std::string text = ReadFile(dir + "/stat");
  EXPECT_EQ(text.rfind(std::to_string(child) + " (", 0), 0u) << text;
  close(p[1]);
  int ws;
  ASSERT_THAT(waitpid(child, &ws, 0), SyscallSucceedsWithValue(child));
  struct stat st;
  EXPECT_THAT(stat(dir.c_str(), &st), SyscallFailsWithErrno(ENOENT));
}

TEST(ProcTest, CmdlineEnvironAuxv) {
  std::string cmdline = ReadFile("/proc/self/cmdline");
  ASSERT_FALSE(cmdline.empty());
  EXPECT_EQ(cmdline.back(), '\0');
  // argv[0], as glibc saw it.
  EXPECT_EQ(std::string(cmdline.c_str()), program_invocation_name);
  std::string env = ReadFile("/proc/self/environ");
  if (!env.empty()) {
    EXPECT_EQ(env.back(), '\0');
    for (size_t pos = 0; pos < env.size();) {
      std::string entry(env.c_str() + pos);
      EXPECT_NE(entry.find('='), std::string::npos) << entry;
      pos += entry.size() + 1;
    }
  }
  std::string auxv = ReadFile("/proc/self/auxv");
  ASSERT_EQ(auxv.size() % 16, 0u);
  ASSERT_GE(auxv.size(), 32u);
  std::vector<std::pair<uint64_t, uint64_t>> pairs(auxv.size() / 16);
  memcpy(pairs.data(), auxv.data(), auxv.size());
  EXPECT_EQ(pairs.back().first, uint64_t{AT_NULL});
  bool saw_pagesz = false, saw_entry = false;
  for (const auto& [type, value] : pairs) {
    if (type == AT_PAGESZ) {
      saw_pagesz = true;
      EXPECT_EQ(value, getauxval(AT_PAGESZ));
    }
    if (type == AT_ENTRY) {
      saw_entry = true;
      EXPECT_EQ(value, getauxval(AT_ENTRY));
    }
  }
  EXPECT_TRUE(saw_pagesz);
  EXPECT_TRUE(saw_entry);
  // Every entry is what the process was given (glibc keeps the vector;
  // on x86 it rewrites its AT_HWCAP/AT_HWCAP2 copies).
  for (const auto& [type, value] : pairs) {
    if (type == AT_NULL || type == AT_IGNORE || type == AT_HWCAP ||
        type == AT_HWCAP2) {
      continue;
    }
    EXPECT_EQ(value, getauxval(type)) << "type " << type;
  }
}

TEST(ProcTest, SmapsCountsResidentPages) {
  size_t page = PageSize();
  char* p = static_cast<char*>(mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_THAT(madvise(p, 3 * page, MADV_NOHUGEPAGE), SyscallSucceeds());
  p[0] = 1;
  p[2 * page] = 1;
  char range[64];
  snprintf(range, sizeof(range), "%lx-%lx ", reinterpret_cast<unsigned long>(p),
           reinterpret_cast<unsigned long>(p) + 3 * page);
  std::vector<std::string> lines = Lines(ReadFile("/proc/self/smaps"));
  size_t i = 0;
  while (i < lines.size() && lines[i].rfind(range, 0) != 0) ++i;
  ASSERT_LT(i, lines.size()) << range;
  std::string block;
  for (size_t j = i + 1; j < lines.size(); ++j) {
    if (lines[j].rfind("VmFlags:", 0) == 0) {
      block += lines[j] + "\n";
      break;
    }
    block += lines[j] + "\n";
  }
  EXPECT_EQ(StatusValue(block, "Size"),
            std::to_string(3 * page / 1024) + " kB");
  // Rss is what mincore(2) reports resident (2 pages on Linux; the sandbox
  // may back neighbours of a faulting page too).
  unsigned char vec[3];
  ASSERT_THAT(mincore(p, 3 * page, vec), SyscallSucceeds());
  size_t resident = (vec[0] & 1) + (vec[1] & 1) + (vec[2] & 1);
  EXPECT_GE(resident, 2u);
  std::string rss = std::to_string(resident * page / 1024) + " kB";
  EXPECT_EQ(StatusValue(block, "Rss"), rss);
  EXPECT_EQ(StatusValue(block, "Anonymous"), rss);
  EXPECT_EQ(StatusValue(block, "Swap"), "0 kB");
  std::string flags = StatusValue(block, "VmFlags");
  EXPECT_EQ(flags.rfind("rd wr mr mw me", 0), 0u) << flags;
  munmap(p, 3 * page);
}

TEST(ProcTest, CwdAndRootLinks) {
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  EXPECT_EQ(Readlink("/proc/self/cwd"), cwd);
  EXPECT_EQ(Readlink("/proc/self/root"), "/");
}

TEST(ProcTest, FdAndFdinfo) {
  TempPath p = TempPath::CreateFile();
  FileDescriptor fd(open(p.path().c_str(), O_RDWR | O_APPEND));
  ASSERT_TRUE(fd.valid());
  ASSERT_THAT(write(fd.get(), "abc", 3), SyscallSucceedsWithValue(3));
  std::string n = std::to_string(fd.get());
  EXPECT_EQ(Readlink("/proc/self/fd/" + n), p.path());
  EXPECT_THAT(DirNames("/proc/self/fd"), ::testing::Contains(n));
  std::string info = ReadFile("/proc/self/fdinfo/" + n);
  EXPECT_EQ(StatusValue(info, "pos"), "3");
  unsigned flags = std::stoul(StatusValue(info, "flags"), nullptr, 8);
  EXPECT_EQ(flags & O_ACCMODE, unsigned{O_RDWR});
  EXPECT_NE(flags & O_APPEND, 0u);
  EXPECT_TRUE(
      std::regex_match(StatusValue(info, "mnt_id"), std::regex("\\d+")));
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_EQ(StatusValue(info, "ino"), std::to_string(st.st_ino));
  EXPECT_EQ(Readlink("/proc/self/fd/99999"), "");
  EXPECT_EQ(errno, ENOENT);
}

TEST(ProcTest, FdLinksOfUnlinkedFilesAndMemfds) {
  std::string path = NewTempPath();
  FileDescriptor fd(open(path.c_str(), O_CREAT | O_RDWR, 0600));
  ASSERT_TRUE(fd.valid());
  ASSERT_THAT(unlink(path.c_str()), SyscallSucceeds());
  EXPECT_EQ(Readlink("/proc/self/fd/" + std::to_string(fd.get())),
            path + " (deleted)");
  FileDescriptor m(static_cast<int>(syscall(SYS_memfd_create, "procfs", 0)));
  ASSERT_TRUE(m.valid());
  EXPECT_EQ(Readlink("/proc/self/fd/" + std::to_string(m.get())),
            "/memfd:procfs (deleted)");
}

// /proc/self/fd/N is a magic link: opening it opens the same file again, a
// new description with the new flags and the usual permission checks, even
// where no name reaches the file any more.
TEST(ProcTest, FdLinkReopensTheSameFileWithNewFlags) {
  TempPath p = TempPath::CreateFile();
  FileDescriptor rw(open(p.path().c_str(), O_RDWR));
  ASSERT_TRUE(rw.valid());
  ASSERT_THAT(write(rw.get(), "hello", 5), SyscallSucceedsWithValue(5));
  std::string link = "/proc/self/fd/" + std::to_string(rw.get());
  FileDescriptor ro(open(link.c_str(), O_RDONLY));
  ASSERT_TRUE(ro.valid()) << strerror(errno);
  struct stat a, b;
  ASSERT_THAT(fstat(rw.get(), &a), SyscallSucceeds());
  ASSERT_THAT(fstat(ro.get(), &b), SyscallSucceeds());
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(a.st_dev, b.st_dev);
  // A new description: its own offset (0) and its own flags.
  char buf[8] = {};
  EXPECT_THAT(read(ro.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(5));
  EXPECT_EQ(std::string(buf, 5), "hello");
  EXPECT_THAT(fcntl(ro.get(), F_GETFL) & O_ACCMODE,
              SyscallSucceedsWithValue(O_RDONLY));
  EXPECT_THAT(write(ro.get(), "x", 1), SyscallFailsWithErrno(EBADF));
  // The file was renamed away: the link still reaches it.
  std::string moved = p.path() + ".moved";
  ASSERT_THAT(rename(p.path().c_str(), moved.c_str()), SyscallSucceeds());
  FileDescriptor again(open(link.c_str(), O_RDONLY));
  EXPECT_TRUE(again.valid()) << strerror(errno);
  ASSERT_THAT(rename(moved.c_str(), p.path().c_str()), SyscallSucceeds());
  // O_TRUNC through the link truncates the file.
  FileDescriptor trunc(open(link.c_str(), O_WRONLY | O_TRUNC));
  ASSERT_TRUE(trunc.valid()) << strerror(errno);
  ASSERT_THAT(fstat(rw.get(), &a), SyscallSucceeds());
  EXPECT_EQ(a.st_size, 0);
}

TEST(ProcTest, FdLinkReopensAnUnlinkedFileAndAReadOnlyMemfdForWriting) {
  std::string path = NewTempPath();
  FileDescriptor fd(open(path.c_str(), O_CREAT | O_RDWR, 0600));
  ASSERT_TRUE(fd.valid());
  ASSERT_THAT(write(fd.get(), "data", 4), SyscallSucceedsWithValue(4));
  ASSERT_THAT(unlink(path.c_str()), SyscallSucceeds());
  FileDescriptor re(
      open(("/proc/self/fd/" + std::to_string(fd.get())).c_str(), O_RDONLY));
  ASSERT_TRUE(re.valid()) << strerror(errno);
  char buf[8];
  EXPECT_THAT(read(re.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(4));

  FileDescriptor m(static_cast<int>(syscall(SYS_memfd_create, "reopen", 0)));
  ASSERT_TRUE(m.valid());
  std::string mlink = "/proc/self/fd/" + std::to_string(m.get());
  FileDescriptor ro(open(mlink.c_str(), O_RDONLY));
  ASSERT_TRUE(ro.valid()) << strerror(errno);
  // The read-only description reopened read-write (a memfd is 0777).
  FileDescriptor w(
      open(("/proc/self/fd/" + std::to_string(ro.get())).c_str(), O_RDWR));
  ASSERT_TRUE(w.valid()) << strerror(errno);
  EXPECT_THAT(write(w.get(), "xyz", 3), SyscallSucceedsWithValue(3));
  struct stat st;
  ASSERT_THAT(fstat(m.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_size, 3);
  // readlink still gives the text.
  EXPECT_EQ(Readlink(mlink), "/memfd:reopen (deleted)");
}

TEST(ProcTest, FdLinkRefusalsAreLinux) {
  TempPath p = TempPath::CreateFile();
  FileDescriptor fd(open(p.path().c_str(), O_RDONLY));
  ASSERT_TRUE(fd.valid());
  std::string link = "/proc/self/fd/" + std::to_string(fd.get());
  // O_NOFOLLOW on a final magic link: ELOOP, as for any symlink.
  EXPECT_THAT(open(link.c_str(), O_RDONLY | O_NOFOLLOW),
              SyscallFailsWithErrno(ELOOP));
  // O_PATH|O_NOFOLLOW opens the link itself.
  FileDescriptor lp(open(link.c_str(), O_PATH | O_NOFOLLOW));
  ASSERT_TRUE(lp.valid()) << strerror(errno);
  struct stat st;
  ASSERT_THAT(fstat(lp.get(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  // lstat sees the link, stat the file.
  ASSERT_THAT(lstat(link.c_str(), &st), SyscallSucceeds());
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  struct stat target, via;
  ASSERT_THAT(fstat(fd.get(), &target), SyscallSucceeds());
  ASSERT_THAT(stat(link.c_str(), &via), SyscallSucceeds());
  EXPECT_EQ(via.st_ino, target.st_ino);
  EXPECT_EQ(via.st_dev, target.st_dev);
  // A regular file is not a directory.
  EXPECT_THAT(open((link + "/").c_str(), O_RDONLY),
              SyscallFailsWithErrno(ENOTDIR));
  EXPECT_THAT(open((link + "/x").c_str(), O_RDONLY),
              SyscallFailsWithErrno(ENOTDIR));
  // openat2's RESOLVE_NO_MAGICLINKS: ELOOP; RESOLVE_NO_SYMLINKS too.
  struct OpenHow {
    uint64_t flags, mode, resolve;
  };
  OpenHow how = {O_RDONLY, 0, 0x02 /* RESOLVE_NO_MAGICLINKS */};
  long r = syscall(SYS_openat2, AT_FDCWD, link.c_str(), &how, sizeof(how));
  if (r < 0 && errno == ENOSYS) GTEST_SKIP() << "no openat2";
  EXPECT_EQ(r, -1);
  EXPECT_EQ(errno, ELOOP);
  how.resolve = 0x04;  // RESOLVE_NO_SYMLINKS
  EXPECT_THAT(syscall(SYS_openat2, AT_FDCWD, link.c_str(), &how, sizeof(how)),
              SyscallFailsWithErrno(ELOOP));
  // RESOLVE_NO_MAGICLINKS with O_PATH|O_NOFOLLOW: the link itself is fine.
  how = {O_PATH | O_NOFOLLOW, 0, 0x02};
  FileDescriptor lp2(static_cast<int>(
      syscall(SYS_openat2, AT_FDCWD, link.c_str(), &how, sizeof(how))));
  EXPECT_TRUE(lp2.valid()) << strerror(errno);
  // Scoped lookups may not jump: EXDEV (nd_jump_link).
  FileDescriptor proc(open("/proc/self/fd", O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(proc.valid());
  how = {O_RDONLY, 0, 0x08 /* RESOLVE_BENEATH */};
  std::string name = std::to_string(fd.get());
  EXPECT_THAT(syscall(SYS_openat2, proc.get(), name.c_str(), &how, sizeof(how)),
              SyscallFailsWithErrno(EXDEV));
  how.resolve = 0x10;  // RESOLVE_IN_ROOT
  EXPECT_THAT(syscall(SYS_openat2, proc.get(), name.c_str(), &how, sizeof(how)),
              SyscallFailsWithErrno(EXDEV));
}

TEST(ProcTest, CwdAndRootAreMagicLinks) {
  TempPath dir = TempPath::CreateDir();
  FileDescriptor d(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(d.valid());
  // Walking through cwd lands in the cwd, whatever its text says.
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  struct stat a, b;
  ASSERT_THAT(stat(cwd, &a), SyscallSucceeds());
  ASSERT_THAT(stat("/proc/self/cwd/.", &b), SyscallSucceeds());
  EXPECT_EQ(a.st_ino, b.st_ino);
  // A directory fd's link works as a directory in the middle of a path.
  std::string inside = dir.path() + "/f";
  FileDescriptor f(open(inside.c_str(), O_CREAT | O_RDWR, 0644));
  ASSERT_TRUE(f.valid());
  std::string via = "/proc/self/fd/" + std::to_string(d.get()) + "/f";
  ASSERT_THAT(stat(via.c_str(), &b), SyscallSucceeds());
  ASSERT_THAT(fstat(f.get(), &a), SyscallSucceeds());
  EXPECT_EQ(a.st_ino, b.st_ino);
  ASSERT_THAT(stat("/proc/self/root/proc/self/root", &b), SyscallSucceeds());
  EXPECT_TRUE(S_ISDIR(b.st_mode));
}

TEST(ProcTest, FdLinkToAPipeReopensThePipe) {
  int fds[2];
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  FileDescriptor r(fds[0]), w(fds[1]);
  FileDescriptor w2(
      open(("/proc/self/fd/" + std::to_string(w.get())).c_str(), O_WRONLY));
  ASSERT_TRUE(w2.valid()) << strerror(errno);
  ASSERT_THAT(write(w2.get(), "p", 1), SyscallSucceedsWithValue(1));
  char c = 0;
  ASSERT_THAT(read(r.get(), &c, 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'p');
}

TEST(ProcTest, MountinfoShape) {
  // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw"
  std::regex line_re(
      "(\\d+) (\\d+) (\\d+):(\\d+) (/\\S*) (/\\S*) (\\S+)( \\S+)* - (\\S+) "
      "(\\S+) (\\S+)");
  bool saw_proc = false;
  std::vector<std::string> lines = Lines(ReadFile("/proc/self/mountinfo"));
  ASSERT_FALSE(lines.empty());
  for (const std::string& l : lines) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line_re)) << l;
    std::string opts = m[7];
    EXPECT_TRUE(opts.rfind("rw", 0) == 0 || opts.rfind("ro", 0) == 0) << l;
    if (m[6] == "/proc" && m[9] == "proc") saw_proc = true;
  }
  EXPECT_TRUE(saw_proc);
  bool saw_proc_mount = false;
  for (const std::string& l : Lines(ReadFile("/proc/self/mounts"))) {
    std::vector<std::string> f = Fields(l);
    ASSERT_EQ(f.size(), 6u) << l;
    EXPECT_EQ(f[4], "0");
    EXPECT_EQ(f[5], "0");
    if (f[1] == "/proc" && f[2] == "proc") saw_proc_mount = true;
  }
  EXPECT_TRUE(saw_proc_mount);
  EXPECT_EQ(ReadFile("/proc/mounts"), ReadFile("/proc/self/mounts"));
}

TEST(ProcTest, LimitsMatchGetrlimit) {
  std::vector<std::string> lines = Lines(ReadFile("/proc/self/limits"));
  ASSERT_EQ(lines.size(), 17u);
  EXPECT_EQ(
      lines[0],
      "Limit                     Soft Limit           Hard Limit           "
      "Units     ");
  struct rlimit rl;
  ASSERT_THAT(getrlimit(RLIMIT_NOFILE, &rl), SyscallSucceeds());
  std::vector<std::string> f = Fields(lines[1 + RLIMIT_NOFILE]);
  ASSERT_EQ(f.size(), 6u);
  EXPECT_EQ(f[0] + " " + f[1] + " " + f[2], "Max open files");
  EXPECT_EQ(f[3], std::to_string(rl.rlim_cur));
  EXPECT_EQ(f[4], std::to_string(rl.rlim_max));
  EXPECT_EQ(f[5], "files");
}

TEST(ProcTest, CpuinfoFlagsFollowCpuid) {
  std::string info = ReadFile("/proc/cpuinfo");
  std::vector<std::string> flags;
  int processors = 0;
  for (const std::string& l : Lines(info)) {
    if (l.rfind("processor\t:", 0) == 0) ++processors;
    if (l.rfind("flags\t\t:", 0) == 0 && flags.empty()) {
      flags = Fields(l.substr(l.find(':') + 1));
    }
  }
  EXPECT_GE(processors, 1);
  ASSERT_FALSE(flags.empty());
  auto has = [&](const char* f) {
    return std::find(flags.begin(), flags.end(), f) != flags.end();
  };
  unsigned a, b, c, d;
  ASSERT_TRUE(__get_cpuid(1, &a, &b, &c, &d));
  struct {
    const char* name;
    unsigned reg, bit;
  } leaf1[] = {{"fpu", d, 0},     {"tsc", d, 4},     {"cx8", d, 8},
               {"cmov", d, 15},   {"mmx", d, 23},    {"fxsr", d, 24},
               {"sse", d, 25},    {"sse2", d, 26},   {"pni", c, 0},
               {"ssse3", c, 9},   {"sse4_1", c, 19}, {"sse4_2", c, 20},
               {"popcnt", c, 23}, {"aes", c, 25}};
  // A flag shown means CPUID has it; a kernel may hide one CPUID reports
  // (see CpuinfoFlagsFollowCpuidAndXcr0), so only this direction holds.
  for (const auto& f : leaf1) {
    if (has(f.name)) EXPECT_TRUE((f.reg >> f.bit) & 1) << f.name;
  }
  ASSERT_TRUE(__get_cpuid(0x80000001, &a, &b, &c, &d));
  if (has("lm")) EXPECT_TRUE((d >> 29) & 1);
  if (has("nx")) EXPECT_TRUE((d >> 20) & 1);
}

TEST(ProcTest, GlobalFileFormats) {
  std::vector<std::string> mem = Lines(ReadFile("/proc/meminfo"));
  ASSERT_FALSE(mem.empty());
  EXPECT_TRUE(std::regex_match(mem[0], std::regex("MemTotal: +\\d+ kB")))
      << mem[0];
  EXPECT_TRUE(std::regex_match(ReadFile("/proc/uptime"),
                               std::regex("\\d+\\.\\d\\d \\d+\\.\\d\\d\n")));
  EXPECT_TRUE(std::regex_match(
      ReadFile("/proc/loadavg"),
      std::regex(
          "\\d+\\.\\d\\d \\d+\\.\\d\\d \\d+\\.\\d\\d \\d+/\\d+ \\d+\n")));
  EXPECT_EQ(ReadFile("/proc/version").rfind("Linux version ", 0), 0u);
  std::string fs = ReadFile("/proc/filesystems");
  EXPECT_NE(fs.find("nodev\tproc\n"), std::string::npos);
  EXPECT_NE(fs.find("nodev\ttmpfs\n"), std::string::npos);
  std::string stat = ReadFile("/proc/stat");
  EXPECT_EQ(stat.rfind("cpu  ", 0), 0u);
  EXPECT_TRUE(std::regex_search(stat, std::regex("\nbtime \\d+\n")));
}

TEST(ProcTest, SysKernelMatchesUnameAndPrctl) {
  struct utsname u;
  ASSERT_THAT(uname(&u), SyscallSucceeds());
  EXPECT_EQ(ReadFile("/proc/sys/kernel/ostype"), std::string(u.sysname) + "\n");
  EXPECT_EQ(ReadFile("/proc/sys/kernel/osrelease"),
            std::string(u.release) + "\n");
  EXPECT_EQ(ReadFile("/proc/sys/kernel/hostname"),
            std::string(u.nodename) + "\n");
  int last = std::stoi(ReadFile("/proc/sys/kernel/cap_last_cap"));
  EXPECT_THAT(prctl(PR_CAPBSET_READ, last), SyscallSucceeds());
  EXPECT_THAT(prctl(PR_CAPBSET_READ, last + 1), SyscallFailsWithErrno(EINVAL));
  EXPECT_GT(std::stol(ReadFile("/proc/sys/kernel/pid_max")), 0);
  EXPECT_GE(std::stol(ReadFile("/proc/sys/kernel/ngroups_max")), 65536);
  std::regex uuid(
      "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
      "[0-9a-f]{12}\n");
  std::string boot = ReadFile("/proc/sys/kernel/random/boot_id");
  EXPECT_TRUE(std::regex_match(boot, uuid)) << boot;
  EXPECT_EQ(ReadFile("/proc/sys/kernel/random/boot_id"), boot);
  std::string u1 = ReadFile("/proc/sys/kernel/random/uuid");
  EXPECT_TRUE(std::regex_match(u1, uuid)) << u1;
  EXPECT_NE(ReadFile("/proc/sys/kernel/random/uuid"), u1);
}

TEST(ProcTest, SysVmAndFs) {
  int oc = std::stoi(ReadFile("/proc/sys/vm/overcommit_memory"));
  EXPECT_TRUE(oc >= 0 && oc <= 2);
  EXPECT_GT(std::stol(ReadFile("/proc/sys/vm/max_map_count")), 0);
  long nr_open = std::stol(ReadFile("/proc/sys/fs/nr_open"));
  EXPECT_GE(nr_open, 1024);
  // Raising RLIMIT_NOFILE past fs.nr_open fails (EPERM), as the sysctl says.
  struct rlimit rl;
  ASSERT_THAT(getrlimit(RLIMIT_NOFILE, &rl), SyscallSucceeds());
  struct rlimit too_big = {static_cast<rlim_t>(nr_open) + 1,
                           static_cast<rlim_t>(nr_open) + 1};
  EXPECT_THAT(setrlimit(RLIMIT_NOFILE, &too_big), SyscallFailsWithErrno(EPERM));
  long pipe_max = std::stol(ReadFile("/proc/sys/fs/pipe-max-size"));
  EXPECT_GE(pipe_max, 4096);
}

TEST(ProcTest, ProcFilesAreReadOnlyAndSeqLike) {
  FileDescriptor fd(open("/proc/self/status", O_RDONLY));
  ASSERT_TRUE(fd.valid());
  EXPECT_THAT(lseek(fd.get(), 0, SEEK_END), SyscallFailsWithErrno(EINVAL));
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  EXPECT_EQ(st.st_size, 0);
  EXPECT_EQ(st.st_mode, S_IFREG | 0444u);
  EXPECT_EQ(mkdir("/proc/newdir", 0755), -1);
}

// ---------------------------------------------------------------------------
// One mountinfo parser (proc(5), Documentation/filesystems/proc.rst 3.5):
// "ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER",
// fields separated by single spaces, ' ', '\t', '\n' and '\\' in paths
// escaped as \ooo.

struct MountinfoEntry {
  int id = 0, parent = 0;
  unsigned maj = 0, min = 0;
  std::string root, point, opts;
  std::vector<std::string> optional;
  std::string fstype, source, super_opts;
};

// Undoes seq_path's escapes; false on a malformed escape.
bool Unescape(const std::string& in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\') {
      *out += in[i];
      continue;
    }
    if (i + 3 >= in.size()) return false;  // \ooo: three digits
    int v = 0;
    for (int k = 1; k <= 3; ++k) {
      char c = in[i + k];
      if (c < '0' || c > '7') return false;
      v = v * 8 + (c - '0');
    }
    // Only the characters seq_path escapes.
    if (v != ' ' && v != '\t' && v != '\n' && v != '\\') return false;
    *out += static_cast<char>(v);
    i += 3;
  }
  return true;
}

bool ParseMountinfoLine(const std::string& line, MountinfoEntry* e,
                        std::string* why) {
  std::vector<std::string> f;
  size_t pos = 0;
  for (;;) {
    size_t sp = line.find(' ', pos);
    f.push_back(line.substr(pos, sp == std::string::npos ? sp : sp - pos));
    if (sp == std::string::npos) break;
    pos = sp + 1;
  }
  for (const std::string& x : f) {
    if (x.empty()) {
      *why = "empty field (double space)";
      return false;
    }
  }
  if (f.size() < 10) {
    *why = "fewer than 10 fields";
    return false;
  }
  size_t sep = 6;
  while (sep < f.size() && f[sep] != "-") ++sep;
  if (sep == f.size() || f.size() - sep != 4) {
    *why = "no \" - \" separator followed by 3 fields";
    return false;
  }
  std::smatch m;
  std::regex num("\\d+"), dev("(\\d+):(\\d+)");
  if (!std::regex_match(f[0], num) || !std::regex_match(f[1], num) ||
      !std::regex_match(f[2], m, dev)) {
    *why = "bad id, parent or device";
    return false;
  }
  e->id = std::stoi(f[0]);
  e->parent = std::stoi(f[1]);
  e->maj = std::stoul(m[1]);
  e->min = std::stoul(m[2]);
  if (!Unescape(f[3], &e->root) || !Unescape(f[4], &e->point) ||
      !Unescape(f[sep + 2], &e->source)) {
    *why = "bad octal escape";
    return false;
  }
  e->opts = f[5];
  e->optional.assign(f.begin() + 6, f.begin() + sep);
  e->fstype = f[sep + 1];
  e->super_opts = f[sep + 3];
  return true;
}

std::vector<MountinfoEntry> ParseMountinfo(const std::string& text) {
  std::vector<MountinfoEntry> out;
  for (const std::string& l : Lines(text)) {
    MountinfoEntry e;
    std::string why;
    EXPECT_TRUE(ParseMountinfoLine(l, &e, &why)) << why << ": " << l;
    out.push_back(e);
  }
  return out;
}

TEST(ProcTest, MountinfoParsesAndAgreesWithStat) {
  std::string text = ReadFile("/proc/self/mountinfo");
  ASSERT_EQ(text.back(), '\n');
  std::vector<MountinfoEntry> mounts = ParseMountinfo(text);
  ASSERT_FALSE(mounts.empty());
  std::set<int> ids;
  for (const MountinfoEntry& e : mounts) {
    EXPECT_TRUE(ids.insert(e.id).second) << "duplicate id " << e.id;
  }
  // Option names are the file system's own (tmpfs's inode64, vfat's utf8).
  std::regex opts("(rw|ro)(,[A-Za-z0-9_.-]+(=[^,]*)?)*");
  std::regex optional("shared:\\d+|master:\\d+|propagate_from:\\d+|unbindable");
  // The last mount listed at each point (mountinfo lists mounts in the
  // order they were made) and its position.
  std::map<std::string, std::pair<size_t, const MountinfoEntry*>> top;
  bool saw_root = false;
  for (size_t i = 0; i < mounts.size(); ++i) {
    const MountinfoEntry& e = mounts[i];
    EXPECT_EQ(e.point[0], '/') << e.point;
    EXPECT_EQ(e.root[0], '/') << e.root;
    EXPECT_TRUE(std::regex_match(e.opts, opts)) << e.opts;
    EXPECT_TRUE(std::regex_match(e.super_opts, opts)) << e.super_opts;
    for (const std::string& o : e.optional) {
      EXPECT_TRUE(std::regex_match(o, optional)) << o;
    }
    if (e.point == "/") saw_root = true;
    top[e.point] = {i, &e};
  }
  EXPECT_TRUE(saw_root);
  ASSERT_TRUE(top.count("/proc"));
  EXPECT_EQ(top["/proc"].second->fstype, "proc");
  // The device of each visible directory mount is what stat reports there
  // (a file's st_dev may be its lower file system's, as on overlayfs).
  for (const auto& [point, at] : top) {
    const MountinfoEntry* e = at.second;
    struct stat st;
    if (stat(point.c_str(), &st) != 0) continue;  // e.g. hidden under another
    if (!S_ISDIR(st.st_mode)) continue;
    bool shadowed = false;
    for (const auto& [other, o] : top) {
      // A mount under a later mount of one of its parents is hidden.
      if (other != point &&
          (other == "/" || point.rfind(other + "/", 0) == 0) &&
          o.first > at.first) {
        shadowed = true;
      }
    }
    if (shadowed) continue;
    EXPECT_EQ(major(st.st_dev), e->maj) << point;
    EXPECT_EQ(minor(st.st_dev), e->min) << point;
  }
}

// /proc/filesystems: "[nodev]\tTYPE" lines, listing every type mounted.
TEST(ProcTest, FilesystemsListsEveryMountedType) {
  std::set<std::string> types;
  for (const std::string& l : Lines(ReadFile("/proc/filesystems"))) {
    ASSERT_TRUE(std::regex_match(l, std::regex("(nodev)?\t[a-z0-9_.-]+"))) << l;
    types.insert(l.substr(l.find('\t') + 1));
  }
  for (const MountinfoEntry& e :
       ParseMountinfo(ReadFile("/proc/self/mountinfo"))) {
    // FUSE shows "fuse.SUBTYPE".
    std::string type = e.fstype.substr(0, e.fstype.find('.'));
    EXPECT_TRUE(types.count(type)) << type;
  }
}

// A mount point with a space, a tab and a backslash is escaped as octal in
// both mountinfo and mounts.
TEST(ProcTest, MountinfoEscapesPaths) {
  std::string dir = NewTempPath() + " a\tb\\c";
  ASSERT_THAT(mkdir(dir.c_str(), 0755), SyscallSucceeds());
  if (mount("none", dir.c_str(), "tmpfs", 0, "size=64k") != 0) {
    int e = errno;
    rmdir(dir.c_str());
    if (e == EPERM) GTEST_SKIP() << "mount needs CAP_SYS_ADMIN";
    FAIL() << "mount: " << strerror(e);
  }
  // mountinfo shows the path as seen from the reader's root, which is
  // where the test runs (its temporary directory may be a symlink: use
  // the resolved path).
  char real[4096];
  ASSERT_NE(realpath(dir.c_str(), real), nullptr);
  std::string want = real;
  bool found = false;
  for (const MountinfoEntry& e :
       ParseMountinfo(ReadFile("/proc/self/mountinfo"))) {
    if (e.point == want) {
      found = true;
      EXPECT_EQ(e.fstype, "tmpfs");
      EXPECT_EQ(e.source, "none");
    }
  }
  EXPECT_TRUE(found) << want;
  std::string mounts = ReadFile("/proc/self/mounts");
  std::string esc_real;  // seq_path's escapes
  for (char c : want) {
    if (c == ' ' || c == '\t' || c == '\\') {
      char o[8];
      snprintf(o, sizeof(o), "\\%03o", c);
      esc_real += o;
    } else {
      esc_real += c;
    }
  }
  EXPECT_NE(mounts.find("none " + esc_real + " tmpfs rw"), std::string::npos)
      << mounts;
  EXPECT_THAT(umount(dir.c_str()), SyscallSucceeds());
  EXPECT_THAT(rmdir(dir.c_str()), SyscallSucceeds());
}

// ---------------------------------------------------------------------------
// Memory figures: stat, statm, status and maps describe one address space.

// Reads `path` into `buf` without allocating (so the heap does not move
// between reads of several files).
size_t ReadInto(const char* path, char* buf, size_t size) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  size_t n = 0;
  for (;;) {
    ssize_t r = read(fd, buf + n, size - 1 - n);
    if (r <= 0) break;
    n += r;
  }
  close(fd);
  buf[n] = '\0';
  return n;
}

TEST(ProcTest, StatStatmStatusAndMapsAgree) {
  static char maps[1 << 18], statm[256], status[8192], stat[2048];
  // Retry: a concurrent change (none expected here) would make one
  // snapshot inconsistent.
  bool ok = false;
  std::string why;
  for (int attempt = 0; attempt < 3 && !ok; ++attempt) {
    ReadInto("/proc/self/maps", maps, sizeof(maps));
    ReadInto("/proc/self/statm", statm, sizeof(statm));
    ReadInto("/proc/self/status", status, sizeof(status));
    ReadInto("/proc/self/stat", stat, sizeof(stat));
    uint64_t mapped = 0;
    for (const std::string& l : Lines(maps)) {
      unsigned long a, b;
      ASSERT_EQ(sscanf(l.c_str(), "%lx-%lx", &a, &b), 2) << l;
      // [vsyscall] is a fixed page outside the mm's VMAs (total_vm).
      if (l.find("[vsyscall]") != std::string::npos) continue;
      mapped += b - a;
    }
    std::vector<std::string> m = Fields(statm);
    ASSERT_EQ(m.size(), 7u);
    uint64_t page = PageSize();
    std::string st(stat);
    std::vector<std::string> rest = Fields(st.substr(st.rfind(')') + 1));
    ASSERT_EQ(rest.size(), 50u);
    auto kb = [&](const char* key) {
      std::string v = StatusValue(status, key);
      return std::stoull(v) * 1024;
    };
    why.clear();
    if (std::stoull(m[0]) * page != mapped) why += " statm size != maps;";
    if (kb("VmSize") != mapped) why += " VmSize != maps;";
    if (std::stoull(rest[20]) != mapped) why += " stat vsize != maps;";
    if (std::stoull(m[1]) * page != kb("VmRSS")) why += " statm rss != VmRSS;";
    // (stat's rss reads the per-CPU RSS counters without summing them on
    // Linux 6.x, so it may lag statm and status: not compared.)
    if (std::stoull(m[5]) * page != kb("VmData") + kb("VmStk")) {
      why += " statm data != VmData + VmStk;";
    }
    ok = why.empty();
  }
  EXPECT_TRUE(ok) << why << "\nstatm: " << statm << "\nstatus:\n" << status;
  std::string s(status);
  EXPECT_GE(std::stoull(StatusValue(s, "VmPeak")),
            std::stoull(StatusValue(s, "VmSize")));
  EXPECT_GE(std::stoull(StatusValue(s, "VmHWM")),
            std::stoull(StatusValue(s, "VmRSS")));
}

// Every maps line: "START-END PERMS OFFSET MAJ:MIN INODE", then the name
// (if any) from column 74.
TEST(ProcTest, MapsLinesAndTheExecutable) {
  std::regex line_re(
      "([0-9a-f]{8,16})-([0-9a-f]{8,16}) ([r-][w-][x-][ps]) ([0-9a-f]{8,}) "
      "([0-9a-f]{2,}):([0-9a-f]{2,}) (\\d+) ?( +(\\S.*))?");
  std::string exe = Readlink("/proc/self/exe");
  struct stat exe_st;
  ASSERT_THAT(stat(exe.c_str(), &exe_st), SyscallSucceeds());
  bool saw_stack = false, saw_exe_text = false;
  unsigned long prev_end = 0;
  for (const std::string& l : Lines(ReadFile("/proc/self/maps"))) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line_re)) << l;
    unsigned long a = std::stoul(m[1], nullptr, 16);
    unsigned long b = std::stoul(m[2], nullptr, 16);
    EXPECT_LT(a, b) << l;
    EXPECT_GE(a, prev_end) << "not sorted: " << l;
    prev_end = b;
    EXPECT_EQ(a % PageSize(), 0u) << l;
    if (m[8].matched) {
      size_t name_at = l.size() - m[9].length();
      size_t prefix = l.find_last_not_of(' ', name_at - 1) + 1;
      // seq_pad: the name starts at column 74 (index 73) unless the
      // fields before it are longer.
      if (prefix < 73) EXPECT_EQ(name_at, 73u) << l;
    }
    std::string name = m[9];
    if (name == "[stack]") {
      saw_stack = true;
      EXPECT_EQ(m[3].str().substr(0, 2), "rw") << l;
      char here;
      EXPECT_LE(a, reinterpret_cast<unsigned long>(&here)) << l;
      EXPECT_GT(b, reinterpret_cast<unsigned long>(&here)) << l;
    }
    if (name == exe && m[3].str()[2] == 'x') {
      saw_exe_text = true;
      // The executable's mapping names its file: device and inode.
      EXPECT_EQ(std::stoul(m[5], nullptr, 16), major(exe_st.st_dev)) << l;
      EXPECT_EQ(std::stoul(m[6], nullptr, 16), minor(exe_st.st_dev)) << l;
      EXPECT_EQ(std::stoul(m[7]), exe_st.st_ino) << l;
      // And contains this code.
      auto code = reinterpret_cast<unsigned long>(&ReadInto);
      EXPECT_TRUE(code >= a && code < b) << l;
    }
  }
  EXPECT_TRUE(saw_stack);
  EXPECT_TRUE(saw_exe_text) << exe;
}

// A fresh file mapping shows the file's path, offset, device and inode.
TEST(ProcTest, MapsShowsAFileMapping) {
  TempPath p = TempPath::CreateFile();
  FileDescriptor fd(open(p.path().c_str(), O_RDWR));
  ASSERT_TRUE(fd.valid());
  size_t page = PageSize();
  ASSERT_THAT(ftruncate(fd.get(), 3 * page), SyscallSucceeds());
  void* addr =
      mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), page);
  ASSERT_NE(addr, MAP_FAILED);
  struct stat st;
  ASSERT_THAT(fstat(fd.get(), &st), SyscallSucceeds());
  char want[256];
  snprintf(want, sizeof(want), "%lx-%lx rw-s %08lx %02x:%02x %lu",
           reinterpret_cast<unsigned long>(addr),
           reinterpret_cast<unsigned long>(addr) + page,
           static_cast<unsigned long>(page), major(st.st_dev), minor(st.st_dev),
           static_cast<unsigned long>(st.st_ino));
  char real[4096];
  ASSERT_NE(realpath(p.path().c_str(), real), nullptr);
  std::string line;
  for (const std::string& l : Lines(ReadFile("/proc/self/maps"))) {
    if (l.rfind(want, 0) == 0) line = l;
  }
  EXPECT_FALSE(line.empty()) << want << "\n" << ReadFile("/proc/self/maps");
  if (!line.empty()) {
    EXPECT_EQ(Fields(line).back(), real) << line;
  }
  munmap(addr, page);
}

// smaps: each VMA's counters, in Linux's order and layout.
TEST(ProcTest, SmapsKeysAndLayout) {
  // Linux 4.x to 6.x keys in their order (newer kernels add some between
  // them: Pss_Dirty, KSM, Pss_Anon...; ProtectionKey with pkeys).
  const std::vector<std::string> keys = {
      "Size",          "KernelPageSize", "MMUPageSize",    "Rss",
      "Pss",           "Shared_Clean",   "Shared_Dirty",   "Private_Clean",
      "Private_Dirty", "Referenced",     "Anonymous",      "LazyFree",
      "AnonHugePages", "ShmemPmdMapped", "Shared_Hugetlb", "Private_Hugetlb",
      "Swap",          "SwapPss",        "Locked",         "THPeligible",
      "VmFlags"};
  std::regex header("[0-9a-f]+-[0-9a-f]+ .*");
  std::regex kb_line("([A-Za-z_]+): +(\\d+) kB");
  std::vector<std::string> lines = Lines(ReadFile("/proc/self/smaps"));
  ASSERT_FALSE(lines.empty());
  int blocks = 0;
  for (size_t i = 0; i < lines.size();) {
    ASSERT_TRUE(std::regex_match(lines[i], header)) << lines[i];
    ++blocks;
    std::vector<std::string> seen;
    std::map<std::string, uint64_t> v;
    for (++i; i < lines.size() && !std::regex_match(lines[i], header); ++i) {
      const std::string& l = lines[i];
      std::string key = l.substr(0, l.find(':'));
      seen.push_back(key);
      std::smatch m;
      if (std::regex_match(l, m, kb_line)) {
        v[key] = std::stoull(m[2]);
        // SEQ_PUT_DEC: "Key:" padded to 16 columns, the value in 8.
        if (v[key] < 100000000) EXPECT_EQ(l.size(), 27u) << l;
      } else if (key == "VmFlags") {
        EXPECT_TRUE(std::regex_match(l, std::regex("VmFlags:( [a-z0-9]{2})+ ")))
            << l;
      } else if (key == "THPeligible") {
        EXPECT_TRUE(std::regex_match(l, std::regex("THPeligible: +[01]"))) << l;
        // "THPeligible:    %8u" in newer kernels, "THPeligible:    %d" in 6.1.
        EXPECT_TRUE(l.size() == 24u || l.size() == 17u) << l;
      }
    }
    size_t at = 0;
    for (const std::string& k : keys) {
      auto it = std::find(seen.begin() + at, seen.end(), k);
      ASSERT_NE(it, seen.end()) << "missing or out of order: " << k;
      at = it - seen.begin() + 1;
    }
    EXPECT_EQ(seen.back(), "VmFlags");
    EXPECT_LE(v["Rss"], v["Size"]);
    EXPECT_LE(v["Pss"], v["Rss"]);
    EXPECT_EQ(v["Shared_Clean"] + v["Shared_Dirty"] + v["Private_Clean"] +
                  v["Private_Dirty"],
              v["Rss"]);
    EXPECT_EQ(v["KernelPageSize"], PageSize() / 1024);
  }
  EXPECT_GT(blocks, 2);
}

// status: the keys Linux prints, in its order, each value as the syscalls
// report it.
TEST(ProcTest, StatusKeysAndValues) {
  const std::vector<std::string> keys = {"Name",
                                         "Umask",
                                         "State",
                                         "Tgid",
                                         "Ngid",
                                         "Pid",
                                         "PPid",
                                         "TracerPid",
                                         "Uid",
                                         "Gid",
                                         "FDSize",
                                         "Groups",
                                         "NStgid",
                                         "NSpid",
                                         "NSpgid",
                                         "NSsid",
                                         "VmPeak",
                                         "VmSize",
                                         "VmLck",
                                         "VmPin",
                                         "VmHWM",
                                         "VmRSS",
                                         "RssAnon",
                                         "RssFile",
                                         "RssShmem",
                                         "VmData",
                                         "VmStk",
                                         "VmExe",
                                         "VmLib",
                                         "VmPTE",
                                         "VmSwap",
                                         "Threads",
                                         "SigQ",
                                         "SigPnd",
                                         "ShdPnd",
                                         "SigBlk",
                                         "SigIgn",
                                         "SigCgt",
                                         "CapInh",
                                         "CapPrm",
                                         "CapEff",
                                         "CapBnd",
                                         "CapAmb",
                                         "NoNewPrivs",
                                         "Seccomp",
                                         "Cpus_allowed",
                                         "Cpus_allowed_list",
                                         "Mems_allowed",
                                         "Mems_allowed_list",
                                         "voluntary_ctxt_switches",
                                         "nonvoluntary_ctxt_switches"};
  // Set up state the file must reflect: an ignored and a caught signal, a
  // blocked one, a high descriptor.
  struct sigaction ign = {}, cgt = {}, old_ign, old_cgt;
  ign.sa_handler = SIG_IGN;
  cgt.sa_handler = +[](int) {};
  ASSERT_THAT(sigaction(SIGUSR1, &ign, &old_ign), SyscallSucceeds());
  ASSERT_THAT(sigaction(SIGUSR2, &cgt, &old_cgt), SyscallSucceeds());
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGWINCH);
  ASSERT_THAT(sigprocmask(SIG_BLOCK, &block, &old_mask), SyscallSucceeds());
  FileDescriptor high(dup2(0, 200));
  ASSERT_TRUE(high.valid());
  std::string s = ReadFile("/proc/self/status");
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGUSR1, &old_ign, nullptr);
  sigaction(SIGUSR2, &old_cgt, nullptr);

  std::vector<std::string> seen;
  for (const std::string& l : Lines(s)) {
    size_t colon = l.find(':');
    ASSERT_NE(colon, std::string::npos) << l;
    ASSERT_EQ(l[colon + 1], '\t') << l;
    seen.push_back(l.substr(0, colon));
  }
  size_t at = 0;
  for (const std::string& k : keys) {
    auto it = std::find(seen.begin() + at, seen.end(), k);
    ASSERT_NE(it, seen.end()) << "missing or out of order: " << k;
    at = it - seen.begin() + 1;
  }
  // Umask: 4 octal digits.
  mode_t mask = umask(022);
  umask(mask);
  char want[16];
  snprintf(want, sizeof(want), "%04o", mask);
  EXPECT_EQ(StatusValue(s, "Umask"), want);
  // Credentials: real, effective, saved, filesystem.
  uid_t ru, eu, su;
  gid_t rg, eg, sg;
  ASSERT_THAT(getresuid(&ru, &eu, &su), SyscallSucceeds());
  ASSERT_THAT(getresgid(&rg, &eg, &sg), SyscallSucceeds());
  uid_t fsu = setfsuid(-1);
  gid_t fsg = setfsgid(-1);
  EXPECT_EQ(StatusValue(s, "Uid"),
            std::to_string(ru) + "\t" + std::to_string(eu) + "\t" +
                std::to_string(su) + "\t" + std::to_string(fsu));
  EXPECT_EQ(StatusValue(s, "Gid"),
            std::to_string(rg) + "\t" + std::to_string(eg) + "\t" +
                std::to_string(sg) + "\t" + std::to_string(fsg));
  // Groups: each followed by one space (a lone space with none).
  gid_t groups[256];
  int ng = getgroups(256, groups);
  ASSERT_GE(ng, 0);
  std::string g;
  for (int i = 0; i < ng; ++i) g += (i ? " " : "") + std::to_string(groups[i]);
  g += " ";
  for (const std::string& l : Lines(s)) {
    if (l.rfind("Groups:", 0) == 0) EXPECT_EQ(l, "Groups:\t" + g);
  }
  // FDSize: the descriptor table's size, room for fd 200 at least.
  int fdsize = std::stoi(StatusValue(s, "FDSize"));
  EXPECT_GT(fdsize, 200);
  EXPECT_TRUE(fdsize == 64 || fdsize % 128 == 0) << fdsize;
  // Signal masks: bit (sig - 1).
  auto mask_of = [&](const char* key) {
    std::string v = StatusValue(s, key);
    EXPECT_TRUE(std::regex_match(v, std::regex("[0-9a-f]{16}"))) << key << v;
    return std::stoull(v, nullptr, 16);
  };
  EXPECT_TRUE(mask_of("SigIgn") & (1ull << (SIGUSR1 - 1)));
  EXPECT_TRUE(mask_of("SigCgt") & (1ull << (SIGUSR2 - 1)));
  EXPECT_TRUE(mask_of("SigBlk") & (1ull << (SIGWINCH - 1)));
  EXPECT_FALSE(mask_of("SigIgn") & (1ull << (SIGUSR2 - 1)));
  // Capabilities as capget reports them.
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2] = {};
  ASSERT_THAT(syscall(SYS_capget, &hdr, data), SyscallSucceeds());
  auto cap64 = [&](uint32_t lo, uint32_t hi) {
    return (static_cast<uint64_t>(hi) << 32) | lo;
  };
  EXPECT_EQ(mask_of("CapEff"), cap64(data[0].effective, data[1].effective));
  EXPECT_EQ(mask_of("CapPrm"), cap64(data[0].permitted, data[1].permitted));
  EXPECT_EQ(mask_of("CapInh"), cap64(data[0].inheritable, data[1].inheritable));
  EXPECT_EQ(StatusValue(s, "NoNewPrivs"),
            std::to_string(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)));
  // The CPUs this thread may run on.
  cpu_set_t set;
  ASSERT_THAT(sched_getaffinity(0, sizeof(set), &set), SyscallSucceeds());
  std::string list;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) ++e;
    if (!list.empty()) list += ",";
    list += std::to_string(c);
    if (e > c) list += "-" + std::to_string(e);
    c = e;
  }
  EXPECT_EQ(StatusValue(s, "Cpus_allowed_list"), list);
  // Memory lines: "%8lu kB".
  for (const std::string& l : Lines(s)) {
    if (l.rfind("Vm", 0) == 0 || l.rfind("Rss", 0) == 0) {
      EXPECT_TRUE(std::regex_match(l, std::regex("[A-Za-z]+:\\t[ \\d]{8} kB")))
          << l;
    }
  }
  EXPECT_TRUE(
      std::regex_match(StatusValue(s, "SigQ"), std::regex("\\d+/\\d+")));
  struct rlimit rl;
  ASSERT_THAT(getrlimit(RLIMIT_SIGPENDING, &rl), SyscallSucceeds());
  std::string q = StatusValue(s, "SigQ");
  EXPECT_EQ(q.substr(q.find('/') + 1), std::to_string(rl.rlim_cur));
}

// stat's code, data, stack and brk addresses (fields 26-28, 45-47) for a
// reader allowed to see them (itself).
TEST(ProcTest, StatAddresses) {
  std::string st = ReadFile("/proc/self/stat");
  std::vector<std::string> rest = Fields(st.substr(st.rfind(')') + 1));
  ASSERT_EQ(rest.size(), 50u);
  // rest[i] is field i + 3.
  auto field = [&](int n) { return std::stoull(rest[n - 3]); };
  uint64_t code = reinterpret_cast<uint64_t>(&ReadInto);
  EXPECT_LE(field(26), code);
  EXPECT_GT(field(27), code);
  static int data_var = 1;
  uint64_t data = reinterpret_cast<uint64_t>(&data_var);
  EXPECT_LE(field(45), data);
  EXPECT_GT(field(46), data);
  // start_stack: where argc lies, above this frame.
  char here;
  EXPECT_GT(field(28), reinterpret_cast<uint64_t>(&here));
  EXPECT_LE(field(28), field(48));  // below argv's strings
  // start_brk: at or below the current break.
  EXPECT_LE(field(47), reinterpret_cast<uint64_t>(sbrk(0)));
  EXPECT_GT(field(47), 0u);
}

TEST(ProcTest, LimitsTableIsLinux) {
  const char* names[] = {
      "Max cpu time",        "Max file size",      "Max data size",
      "Max stack size",      "Max core file size", "Max resident set",
      "Max processes",       "Max open files",     "Max locked memory",
      "Max address space",   "Max file locks",     "Max pending signals",
      "Max msgqueue size",   "Max nice priority",  "Max realtime priority",
      "Max realtime timeout"};
  const char* units[] = {"seconds", "bytes", "bytes",     "bytes",
                         "bytes",   "bytes", "processes", "files",
                         "bytes",   "bytes", "locks",     "signals",
                         "bytes",   "",      "",          "us"};
  std::vector<std::string> lines = Lines(ReadFile("/proc/self/limits"));
  ASSERT_EQ(lines.size(), 17u);
  for (int i = 0; i < 16; ++i) {
    struct rlimit rl;
    ASSERT_THAT(getrlimit(static_cast<__rlimit_resource_t>(i), &rl),
                SyscallSucceeds());
    auto v = [](rlim_t x) {
      return x == RLIM_INFINITY ? std::string("unlimited") : std::to_string(x);
    };
    char want[256];
    snprintf(want, sizeof(want), "%-25s %-20s %-20s ", names[i],
             v(rl.rlim_cur).c_str(), v(rl.rlim_max).c_str());
    std::string w = want;
    if (units[i][0] != '\0') {
      char u[16];
      snprintf(u, sizeof(u), "%-10s", units[i]);
      w += u;
    }
    EXPECT_EQ(lines[i + 1], w);
  }
}

TEST(ProcTest, MeminfoKeysAndValues) {
  const std::vector<std::string> keys = {
      "MemTotal",     "MemFree",        "MemAvailable", "Buffers",
      "Cached",       "SwapCached",     "Active",       "Inactive",
      "Active(anon)", "Inactive(anon)", "Active(file)", "Inactive(file)",
      "Unevictable",  "Mlocked",        "SwapTotal",    "SwapFree",
      "Dirty",        "Writeback",      "AnonPages",    "Mapped",
      "Shmem",        "KReclaimable",   "Slab",         "SReclaimable",
      "SUnreclaim",   "KernelStack",    "PageTables",   "Bounce",
      "WritebackTmp", "CommitLimit",    "Committed_AS", "VmallocTotal",
      "VmallocUsed",  "VmallocChunk"};
  std::vector<std::string> seen;
  std::map<std::string, uint64_t> v;
  std::regex line_re("([A-Za-z0-9_()]+): +(\\d+)( kB)?");
  for (const std::string& l : Lines(ReadFile("/proc/meminfo"))) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line_re)) << l;
    seen.push_back(m[1]);
    v[m[1]] = std::stoull(m[2]);
    if (m[3].matched && v[m[1]] < 100000000) {
      EXPECT_EQ(l.size(), 27u) << l;  // "%-16s%8lu kB"
    }
  }
  size_t at = 0;
  for (const std::string& k : keys) {
    auto it = std::find(seen.begin() + at, seen.end(), k);
    ASSERT_NE(it, seen.end()) << "missing or out of order: " << k;
    at = it - seen.begin() + 1;
  }
  struct sysinfo si;
  ASSERT_THAT(sysinfo(&si), SyscallSucceeds());
  EXPECT_EQ(v["MemTotal"],
            static_cast<uint64_t>(si.totalram) * si.mem_unit / 1024);
  EXPECT_LE(v["MemFree"], v["MemTotal"]);
  EXPECT_LE(v["MemAvailable"], v["MemTotal"]);
  EXPECT_EQ(v["SwapTotal"],
            static_cast<uint64_t>(si.totalswap) * si.mem_unit / 1024);
}

// ---------------------------------------------------------------------------
// CPUID: the flags must be what the CPUID instruction tells this process,
// after the OS's own masking (AVX and later need their XCR0 state enabled).

uint64_t Xcr0() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) return 0;
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

TEST(ProcTest, CpuinfoFlagsFollowCpuidAndXcr0) {
  std::vector<std::vector<std::string>> per_cpu;
  for (const std::string& l : Lines(ReadFile("/proc/cpuinfo"))) {
    if (l.rfind("flags\t\t:", 0) == 0) {
      per_cpu.push_back(Fields(l.substr(l.find(':') + 1)));
    }
  }
  ASSERT_FALSE(per_cpu.empty());
  EXPECT_EQ(static_cast<long>(per_cpu.size()), sysconf(_SC_NPROCESSORS_ONLN));
  for (const auto& f : per_cpu) EXPECT_EQ(f, per_cpu[0]);
  const std::vector<std::string>& flags = per_cpu[0];
  auto has = [&](const char* f) {
    return std::find(flags.begin(), flags.end(), f) != flags.end();
  };
  bool ymm = (Xcr0() & 6) == 6;
  unsigned a, b, c, d;
  ASSERT_TRUE(__get_cpuid(1, &a, &b, &c, &d));
  struct Bit {
    const char* name;
    unsigned reg, bit;
    bool needs_ymm;
  };
  std::vector<Bit> bits = {{"pclmulqdq", c, 1, false}, {"fma", c, 12, true},
                           {"cx16", c, 13, false},     {"movbe", c, 22, false},
                           {"xsave", c, 26, false},    {"avx", c, 28, true},
                           {"f16c", c, 29, true},      {"rdrand", c, 30, false},
                           {"pse", d, 3, false},       {"msr", d, 5, false},
                           {"pae", d, 6, false},       {"apic", d, 9, false},
                           {"sep", d, 11, false},      {"pat", d, 16, false},
                           {"clflush", d, 19, false}};
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf >= 7) {
    unsigned a7, b7, c7, d7;
    __cpuid_count(7, 0, a7, b7, c7, d7);
    std::vector<Bit> leaf7 = {
        {"bmi1", b7, 3, false},        {"avx2", b7, 5, true},
        {"bmi2", b7, 8, false},        {"erms", b7, 9, false},
        {"rdseed", b7, 18, false},     {"adx", b7, 19, false},
        {"clflushopt", b7, 23, false}, {"sha_ni", b7, 29, false}};
    bits.insert(bits.end(), leaf7.begin(), leaf7.end());
  }
  // Linux shows a flag only for a feature CPUID reports (and the OS enabled:
  // the AVX family needs YMM state in XCR0), but it may clear one CPUID
  // reports (a host kernel hides RDSEED on CPUs where it is broken), so only
  // this direction holds on every machine. The sandbox's file against the
  // host's own is checked end to end (test/e2e/proc_cpuinfo_test.cc).
  for (const Bit& bit : bits) {
    bool cpuid_has = ((bit.reg >> bit.bit) & 1) && (!bit.needs_ymm || ymm);
    if (has(bit.name)) EXPECT_TRUE(cpuid_has) << bit.name;
  }
  // The vendor string.
  unsigned v[4];
  __cpuid(0, v[0], v[1], v[2], v[3]);
  char vendor[13] = {};
  memcpy(vendor, &v[1], 4);
  memcpy(vendor + 4, &v[3], 4);
  memcpy(vendor + 8, &v[2], 4);
  std::string info = ReadFile("/proc/cpuinfo");
  EXPECT_NE(info.find(std::string("vendor_id\t: ") + vendor + "\n"),
            std::string::npos);
  unsigned family = (a >> 8) & 0xf;
  if (family == 0xf) family += (a >> 20) & 0xff;
  EXPECT_NE(info.find("cpu family\t: " + std::to_string(family) + "\n"),
            std::string::npos);
}

// /proc/sys values: one decimal line each, in their ranges, and what the
// kernel enforces.
TEST(ProcTest, SysctlValuesParseAndAreEnforced) {
  auto value = [](const char* path) -> long {
    std::string s = ReadFile(path);
    EXPECT_TRUE(std::regex_match(s, std::regex("\\d+\n"))) << path << ": " << s;
    return s.empty() ? -1 : std::stol(s);
  };
  long pid_max = value("/proc/sys/kernel/pid_max");
  EXPECT_GE(pid_max, 301);      // RESERVED_PIDS + 1
  EXPECT_LE(pid_max, 4194304);  // PID_MAX_LIMIT
  EXPECT_LT(getpid(), pid_max);
  EXPECT_EQ(value("/proc/sys/kernel/ngroups_max"), 65536);  // NGROUPS_MAX
  long cap_last = value("/proc/sys/kernel/cap_last_cap");
  EXPECT_GE(cap_last, 37);  // CAP_AUDIT_READ (Linux 3.16)
  long oc = value("/proc/sys/vm/overcommit_memory");
  EXPECT_TRUE(oc >= 0 && oc <= 2) << oc;
  EXPECT_GT(value("/proc/sys/vm/max_map_count"), 0);
  long nr_open = value("/proc/sys/fs/nr_open");
  EXPECT_GE(nr_open, 1024);
  EXPECT_LE(nr_open, 1073741816);  // sysctl_nr_open_max on 64-bit
  struct rlimit rl;
  ASSERT_THAT(getrlimit(RLIMIT_NOFILE, &rl), SyscallSucceeds());
  EXPECT_LE(static_cast<long>(rl.rlim_max), nr_open);
  long pipe_max = value("/proc/sys/fs/pipe-max-size");
  EXPECT_GE(pipe_max, 4096);
  // Modes: tunables 0644, read-only values 0444.
  struct {
    const char* path;
    mode_t mode;
  } modes[] = {{"/proc/sys/kernel/pid_max", 0644},
               {"/proc/sys/kernel/hostname", 0644},
               {"/proc/sys/kernel/ostype", 0444},
               {"/proc/sys/kernel/osrelease", 0444},
               {"/proc/sys/kernel/cap_last_cap", 0444},
               {"/proc/sys/kernel/ngroups_max", 0444},
               {"/proc/sys/kernel/random/boot_id", 0444},
               {"/proc/sys/kernel/random/uuid", 0444},
               {"/proc/sys/vm/overcommit_memory", 0644},
               {"/proc/sys/vm/max_map_count", 0644},
               {"/proc/sys/fs/nr_open", 0644},
               {"/proc/sys/fs/pipe-max-size", 0644}};
  for (const auto& m : modes) {
    struct stat st;
    ASSERT_THAT(stat(m.path, &st), SyscallSucceeds()) << m.path;
    EXPECT_EQ(st.st_mode, S_IFREG | m.mode) << m.path;
  }
}

// ---------------------------------------------------------------------------
// /proc/self/exe is a magic link to the running executable.

TEST(ProcTest, ExeIsAMagicLink) {
  std::string exe = Readlink("/proc/self/exe");
  ASSERT_FALSE(exe.empty());
  EXPECT_EQ(exe[0], '/');
  struct stat by_path, via, link;
  ASSERT_THAT(stat(exe.c_str(), &by_path), SyscallSucceeds());
  ASSERT_THAT(stat("/proc/self/exe", &via), SyscallSucceeds());
  EXPECT_EQ(via.st_ino, by_path.st_ino);
  EXPECT_EQ(via.st_dev, by_path.st_dev);
  ASSERT_THAT(lstat("/proc/self/exe", &link), SyscallSucceeds());
  EXPECT_TRUE(S_ISLNK(link.st_mode));
  FileDescriptor fd(open("/proc/self/exe", O_RDONLY));
  ASSERT_TRUE(fd.valid()) << strerror(errno);
  char magic[4] = {};
  ASSERT_THAT(read(fd.get(), magic, 4), SyscallSucceedsWithValue(4));
  EXPECT_EQ(std::string(magic, 4), "\177ELF");
  struct stat opened;
  ASSERT_THAT(fstat(fd.get(), &opened), SyscallSucceeds());
  EXPECT_EQ(opened.st_ino, by_path.st_ino);
  EXPECT_THAT(open("/proc/self/exe", O_RDONLY | O_NOFOLLOW),
              SyscallFailsWithErrno(ELOOP));
  // Not a directory.
  EXPECT_THAT(open("/proc/self/exe/x", O_RDONLY),
              SyscallFailsWithErrno(ENOTDIR));
  // A child has the same executable.
  int p[2] = {-1, -1};
  ASSERT_THAT(pipe(p), SyscallSucceeds());
  pid_t child = fork();
  if (child == 0) {
    close(p[1]);
    char c;
    (void)!read(p[0], &c, 1);  // until the parent closes its end
    _exit(0);
  }
  ASSERT_GT(child, 0);
  close(p[0]);
  std::string dir = "/proc/" + std::to_string(child);
  EXPECT_EQ(Readlink(dir + "/exe"), exe);
  struct stat child_exe;
  EXPECT_THAT(stat((dir + "/exe").c_str(), &child_exe), SyscallSucceeds());
  EXPECT_EQ(child_exe.st_ino, by_path.st_ino);
  close(p[1]);
  int ws;
  ASSERT_THAT(waitpid(child, &ws, 0), SyscallSucceedsWithValue(child));
}

// The file is being executed: opening it for writing is ETXTBSY, through
// the link as by its path.
TEST(ProcTest, ExeOpenForWritingIsEtxtbsy) {
  std::string exe = Readlink("/proc/self/exe");
  ASSERT_FALSE(exe.empty());
  // On a read-only super block may_open's EROFS comes first; a read-only
  // mount of a writable one gives ETXTBSY first (do_dentry_open takes the
  // write access before mnt_want_write). The mount is the last one listed
  // at the longest mount point above the file.
  const MountinfoEntry* at = nullptr;
  std::vector<MountinfoEntry> mounts =
      ParseMountinfo(ReadFile("/proc/self/mountinfo"));
  for (const MountinfoEntry& e : mounts) {
    bool above = e.point == "/" || exe.rfind(e.point + "/", 0) == 0;
    if (above && (at == nullptr || e.point.size() >= at->point.size())) {
      at = &e;
    }
  }
  ASSERT_NE(at, nullptr);
  int want = at->super_opts.rfind("ro", 0) == 0 ? EROFS : ETXTBSY;
  // Linux 6.11 let running programs' files be opened for writing (it
  // dropped exec's deny_write_access; later kernels restored it).
  int fd = open("/proc/self/exe", O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    GTEST_SKIP() << "this kernel lets running programs' files be written";
  }
  EXPECT_THAT(open("/proc/self/exe", O_WRONLY), SyscallFailsWithErrno(want));
  EXPECT_THAT(open(exe.c_str(), O_WRONLY), SyscallFailsWithErrno(want));
}

// ---------------------------------------------------------------------------
// Pipes: /proc/self/fd/N reads "pipe:[INO]" and reopens the pipe with the
// new access mode (fifo_open).

TEST(ProcTest, PipeFdLinkTextAndModes) {
  int fds[2] = {-1, -1};
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  FileDescriptor r(fds[0]), w(fds[1]);
  struct stat st;
  ASSERT_THAT(fstat(r.get(), &st), SyscallSucceeds());
  std::string rlink = "/proc/self/fd/" + std::to_string(r.get());
  std::string wlink = "/proc/self/fd/" + std::to_string(w.get());
  std::string text = "pipe:[" + std::to_string(st.st_ino) + "]";
  EXPECT_EQ(Readlink(rlink), text);
  EXPECT_EQ(Readlink(wlink), text);
  // The write end's link opened for reading: another reader of the pipe.
  FileDescriptor r2(open(wlink.c_str(), O_RDONLY));
  ASSERT_TRUE(r2.valid()) << strerror(errno);
  EXPECT_EQ(fcntl(r2.get(), F_GETFL) & O_ACCMODE, O_RDONLY);
  struct stat st2;
  ASSERT_THAT(fstat(r2.get(), &st2), SyscallSucceeds());
  EXPECT_EQ(st2.st_ino, st.st_ino);
  EXPECT_EQ(st2.st_dev, st.st_dev);
  EXPECT_TRUE(S_ISFIFO(st2.st_mode));
  EXPECT_EQ(Readlink("/proc/self/fd/" + std::to_string(r2.get())), text);
  ASSERT_THAT(write(w.get(), "ab", 2), SyscallSucceedsWithValue(2));
  char buf[4] = {};
  ASSERT_THAT(read(r2.get(), buf, 1), SyscallSucceedsWithValue(1));
  ASSERT_THAT(read(r.get(), buf + 1, 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(std::string(buf, 2), "ab");
  // O_RDWR never waits.
  FileDescriptor rw(open(rlink.c_str(), O_RDWR));
  ASSERT_TRUE(rw.valid()) << strerror(errno);
  ASSERT_THAT(write(rw.get(), "c", 1), SyscallSucceedsWithValue(1));
  ASSERT_THAT(read(r.get(), buf, 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(buf[0], 'c');
  rw.reset();
  // Without readers, O_WRONLY|O_NONBLOCK still opens: a pipe is not a
  // FIFO (fifo_open's ENXIO and waits are for FIFOs only).
  r.reset();
  r2.reset();
  FileDescriptor w3(open(wlink.c_str(), O_WRONLY | O_NONBLOCK));
  EXPECT_TRUE(w3.valid()) << strerror(errno);
  w3.reset();
  // O_RDONLY|O_NONBLOCK: a reader again; empty, with a writer: EAGAIN.
  FileDescriptor r3(open(wlink.c_str(), O_RDONLY | O_NONBLOCK));
  ASSERT_TRUE(r3.valid()) << strerror(errno);
  EXPECT_THAT(read(r3.get(), buf, 1), SyscallFailsWithErrno(EAGAIN));
  // The fdinfo of a pipe end.
  std::string info = ReadFile("/proc/self/fdinfo/" + std::to_string(w.get()));
  EXPECT_EQ(StatusValue(info, "pos"), "0");
  EXPECT_EQ(StatusValue(info, "ino"), std::to_string(st.st_ino));
}

// Reopening a pipe end never waits for a partner (a FIFO's O_RDONLY waits
// for a writer, its O_WRONLY for a reader): both run in a child that an
// alarm kills if it blocks.
TEST(ProcTest, PipeFdLinkNeverWaitsForAPartner) {
  {
    int fds[2] = {-1, -1};
    ASSERT_THAT(pipe(fds), SyscallSucceeds());
    FileDescriptor r(fds[0]);
    close(fds[1]);  // no writer
    std::string rlink = "/proc/self/fd/" + std::to_string(r.get());
    EXPECT_THAT(InForkedChild([&] {
                  alarm(5);
                  int fd = open(rlink.c_str(), O_RDONLY);
                  if (fd < 0) _exit(2);
                  char c;
                  if (read(fd, &c, 1) != 0) _exit(3);  // EOF: no writer
                }),
                ExitedWithCode(0));
    // EINVAL for access mode 3 (neither read nor write).
    EXPECT_THAT(open(rlink.c_str(), O_RDWR | O_WRONLY),
                SyscallFailsWithErrno(EINVAL));
  }
  {
    int fds[2] = {-1, -1};
    ASSERT_THAT(pipe(fds), SyscallSucceeds());
    FileDescriptor w(fds[1]);
    close(fds[0]);  // no reader
    std::string wlink = "/proc/self/fd/" + std::to_string(w.get());
    EXPECT_THAT(InForkedChild([&] {
                  alarm(5);
                  signal(SIGPIPE, SIG_IGN);
                  int fd = open(wlink.c_str(), O_WRONLY);
                  if (fd < 0) _exit(2);
                  if (write(fd, "x", 1) != -1 || errno != EPIPE) _exit(3);
                }),
                ExitedWithCode(0));
  }
}

// /proc/PID/fd of a pipe end seen from another process.
TEST(ProcTest, AnotherProcessesPipeCanBeReopened) {
  int fds[2] = {-1, -1};
  ASSERT_THAT(pipe(fds), SyscallSucceeds());
  FileDescriptor r(fds[0]), w(fds[1]);
  int go[2] = {-1, -1};
  ASSERT_THAT(pipe(go), SyscallSucceeds());
  pid_t child = fork();
  if (child == 0) {
    close(go[1]);
    char c;
    (void)!read(go[0], &c, 1);
    _exit(0);
  }
  ASSERT_GT(child, 0);
  close(go[0]);
  std::string link =
      "/proc/" + std::to_string(child) + "/fd/" + std::to_string(w.get());
  FileDescriptor w2(open(link.c_str(), O_WRONLY));
  ASSERT_TRUE(w2.valid()) << strerror(errno);
  ASSERT_THAT(write(w2.get(), "y", 1), SyscallSucceedsWithValue(1));
  char c = 0;
  ASSERT_THAT(read(r.get(), &c, 1), SyscallSucceedsWithValue(1));
  EXPECT_EQ(c, 'y');
  close(go[1]);
  int ws;
  ASSERT_THAT(waitpid(child, &ws, 0), SyscallSucceedsWithValue(child));
}

// ---- Directory offsets of /proc that stay put when entries go away. ----

// Lists `dir_fd` with getdents64 in `buf_size`-byte calls, handing every
// name to `each` after each call (so `each` may make entries go away
// before the next call, as Python's close_fds loop does).
void ListInSmallCalls(int dir_fd, size_t buf_size,
                      const std::function<void(const std::string&)>& each) {
  std::vector<char> buf(buf_size);
  for (int calls = 0; calls < 100000; ++calls) {
    long n = syscall(SYS_getdents64, dir_fd, buf.data(), buf.size());
    ASSERT_GE(n, 0) << strerror(errno);
    if (n == 0) return;
    std::vector<std::string> names;
    for (long off = 0; off < n;) {
      auto* e = reinterpret_cast<struct dirent64*>(buf.data() + off);
      names.push_back(e->d_name);
      off += e->d_reclen;
    }
    for (const std::string& name : names) each(name);
  }
  ADD_FAILURE() << "the listing never ended";
}

// What subprocess's close_fds does: list /proc/self/fd (or fdinfo) and
// close every listed descriptor while listing. Every one of 80 closes.
void CloseEachListedFd(const char* dir) {
  std::set<int> mine;
  for (int i = 0; i < 80; ++i) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    mine.insert(fd);
  }
  FileDescriptor d(open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(d.valid());
  ListInSmallCalls(d.get(), 64, [&](const std::string& name) {
    if (name.empty() || name.size() > 9 ||
        name.find_first_not_of("0123456789") != std::string::npos) {
      return;  // ".", ".."
    }
    int fd = std::stoi(name);
    if (mine.count(fd)) close(fd);
  });
  std::vector<int> open_still;
  for (int fd : mine) {
    if (fcntl(fd, F_GETFD) != -1) {
      open_still.push_back(fd);
      close(fd);
    }
  }
  EXPECT_THAT(open_still, ::testing::IsEmpty())
      << open_still.size() << " of 80 were not listed";
}

TEST(ProcTest, ClosingEachListedFdWhileListingClosesThemAll) {
  CloseEachListedFd("/proc/self/fd");
}

TEST(ProcTest, ClosingEachListedFdinfoWhileListingClosesThemAll) {
  CloseEachListedFd("/proc/self/fdinfo");
}

// A process that goes away after /proc listed it does not hide the next.
TEST(ProcTest, PidListingSkipsNoneWhenAListedProcessIsReaped) {
  std::vector<pid_t> kids;
  for (int i = 0; i < 3; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (;;) pause();
    }
    kids.push_back(pid);
  }
  std::sort(kids.begin(), kids.end());
  FileDescriptor d(open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(d.valid());
  std::set<std::string> seen;
  bool reaped = false;
  ListInSmallCalls(d.get(), 48, [&](const std::string& name) {
    seen.insert(name);
    if (!reaped && name == std::to_string(kids[0])) {
      kill(kids[0], SIGKILL);
      waitpid(kids[0], nullptr, 0);
      reaped = true;
    }
  });
  for (pid_t pid : kids) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  EXPECT_TRUE(reaped);
  EXPECT_TRUE(seen.count(std::to_string(kids[1])));
  EXPECT_TRUE(seen.count(std::to_string(kids[2])));
}

// The same for a thread that exits after task/ listed it.
TEST(ProcTest, TaskListingSkipsNoneWhenAListedThreadExits) {
  struct Worker {
    std::thread thread;
    std::atomic<pid_t> tid{0};
    std::atomic<bool> stop{false};
  };
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < 3; ++i) {
    auto w = std::make_unique<Worker>();
    Worker* wp = w.get();
    w->thread = std::thread([wp] {
      wp->tid = static_cast<pid_t>(syscall(SYS_gettid));
      while (!wp->stop) usleep(1000);
    });
    workers.push_back(std::move(w));
  }
  std::vector<pid_t> tids;
  for (auto& w : workers) {
    while (w->tid == 0) usleep(1000);
    tids.push_back(w->tid);
  }
  std::sort(tids.begin(), tids.end());
  auto worker_of = [&](pid_t tid) -> Worker& {
    for (auto& w : workers) {
      if (w->tid == tid) return *w;
    }
    return *workers[0];
  };
  FileDescriptor d(open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(d.valid());
  std::set<std::string> seen;
  bool gone = false;
  ListInSmallCalls(d.get(), 48, [&](const std::string& name) {
    seen.insert(name);
    if (!gone && name == std::to_string(tids[0])) {
      Worker& w = worker_of(tids[0]);
      w.stop = true;
      w.thread.join();
      // The entry goes once the thread is released (soon after the join).
      std::string path = "/proc/self/task/" + name;
      struct stat st;
      for (int i = 0; i < 10000 && stat(path.c_str(), &st) == 0; ++i) {
        usleep(1000);
      }
      gone = stat(path.c_str(), &st) != 0;
    }
  });
  for (auto& w : workers) {
    w->stop = true;
    if (w->thread.joinable()) w->thread.join();
  }
  EXPECT_TRUE(gone);
  EXPECT_TRUE(seen.count(std::to_string(tids[1])));
  EXPECT_TRUE(seen.count(std::to_string(tids[2])));
}

// proc_lookup and proc_sys_lookup fail for an absent name, so creating one
// fails with ENOENT whatever the call; unlinking a real entry is EPERM
// (no unlink operation).
TEST(ProcTest, CreatingInProcIsEnoent) {
  for (const char* dir : {"/proc", "/proc/self", "/proc/sys/kernel"}) {
    std::string path = std::string(dir) + "/no-such-entry";
    errno = 0;
    EXPECT_EQ(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), -1);
    EXPECT_EQ(errno, ENOENT) << path;
    errno = 0;
    EXPECT_EQ(mkdir(path.c_str(), 0755), -1);
    EXPECT_EQ(errno, ENOENT) << path;
    errno = 0;
    EXPECT_EQ(symlink("/", path.c_str()), -1);
    EXPECT_EQ(errno, ENOENT) << path;
  }
  errno = 0;
  EXPECT_EQ(unlink("/proc/self/status"), -1);
  EXPECT_EQ(errno, EPERM);
}

// sysfs looks absent names up as negative dentries and has no create
// operations: vfs_create's EACCES, vfs_mkdir's EPERM (EROFS before both
// where /sys is mounted read-only, as in many containers).
TEST(ProcTest, CreatingInSysfs) {
  struct statfs sf;
  if (statfs("/sys/kernel", &sf) != 0 || sf.f_type != 0x62656572) {
    GTEST_SKIP() << "no sysfs at /sys";
  }
  bool ro = (sf.f_flags & ST_RDONLY) != 0;
  errno = 0;
  EXPECT_EQ(open("/sys/kernel/no-such-entry", O_WRONLY | O_CREAT, 0644), -1);
  EXPECT_EQ(errno, ro ? EROFS : EACCES);
  errno = 0;
  EXPECT_EQ(mkdir("/sys/kernel/no-such-entry", 0755), -1);
  EXPECT_EQ(errno, ro ? EROFS : EPERM);
}

// A shell's `echo NAME > /proc/self/comm` opens with O_TRUNC: proc_setattr
// accepts the size change (nothing to truncate) and the write goes through.
TEST(ProcTest, TruncatingOpenOfAWritableEntry) {
  std::string before = ReadFile("/proc/self/comm");
  int fd = open("/proc/self/comm", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  EXPECT_EQ(write(fd, "truncated", 9), 9);
  close(fd);
  EXPECT_EQ(ReadFile("/proc/self/comm"), "truncated\n");
  EXPECT_EQ(truncate("/proc/self/comm", 0), 0) << strerror(errno);
  EXPECT_EQ(ReadFile("/proc/self/comm"), "truncated\n");
  // Restore the name (the runner's messages show it), without its "\n".
  fd = open("/proc/self/comm", O_WRONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(write(fd, before.data(), before.size() - 1),
            static_cast<ssize_t>(before.size() - 1));
  close(fd);
}

}  // namespace
}  // namespace sandbox::testutil
