// /proc: formats as Linux shows them, and contents that must agree with
// what the process can learn through syscalls (PIDs, credentials, mappings,
// limits, CPUID, uname).
#include <cpuid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <sstream>
#include <string>
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
  for (const auto& f : leaf1) {
    EXPECT_EQ(has(f.name), ((f.reg >> f.bit) & 1) != 0) << f.name;
  }
  ASSERT_TRUE(__get_cpuid(0x80000001, &a, &b, &c, &d));
  EXPECT_EQ(has("lm"), ((d >> 29) & 1) != 0);
  EXPECT_EQ(has("nx"), ((d >> 20) & 1) != 0);
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

}  // namespace
}  // namespace sandbox::testutil
