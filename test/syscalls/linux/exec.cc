// execve(2), execveat(2): the new image's argv/envp/auxv, what survives
// and what is reset, errors in Linux's order, "#!" scripts, execve from a
// non-leader thread, and failures past the point of no return.
//
// The helper program is this binary itself: run with EXEC_TEST_HELPER=MODE
// in its environment, a constructor does MODE's job, prints to stdout and
// exits before gtest starts.
#include <elf.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr char kHelperVar[] = "EXEC_TEST_HELPER";
constexpr int kHelperExit = 42;

// ---- The helper (runs in the new image). ----

void Out(const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = write(1, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += n;
  }
}

const char* Disposition(int sig) {
  struct sigaction sa = {};
  if (sigaction(sig, nullptr, &sa) != 0) return "error";
  if (sa.sa_handler == SIG_DFL) return "dfl";
  if (sa.sa_handler == SIG_IGN) return "ign";
  return "handler";
}

void Helper(const char* mode, int argc, char** argv, char** envp) {
  std::string m = mode;
  std::string out;
  if (m == "args") {
    out += "argc=" + std::to_string(argc) + "\n";
    for (int i = 0; i < argc; ++i) out += std::string("argv=") + argv[i] + "\n";
    for (char** e = envp; *e != nullptr; ++e) {
      out += std::string("envp=") + *e + "\n";
    }
    const char* execfn = reinterpret_cast<const char*>(getauxval(AT_EXECFN));
    out += std::string("execfn=") + (execfn ? execfn : "(null)") + "\n";
    out += "secure=" + std::to_string(getauxval(AT_SECURE)) + "\n";
    out += "pagesz=" + std::to_string(getauxval(AT_PAGESZ)) + "\n";
  } else if (m == "fds") {
    // Which of fds 3..19 are open.
    for (int fd = 3; fd < 20; ++fd) {
      if (fcntl(fd, F_GETFD) >= 0) out += "open=" + std::to_string(fd) + "\n";
    }
  } else if (m == "signals") {
    out += std::string("usr1=") + Disposition(SIGUSR1) + "\n";
    out += std::string("usr2=") + Disposition(SIGUSR2) + "\n";
    sigset_t set;
    sigprocmask(SIG_BLOCK, nullptr, &set);
    out += "int_blocked=" + std::to_string(sigismember(&set, SIGINT)) + "\n";
    stack_t ss = {};
    sigaltstack(nullptr, &ss);
    out +=
        "altstack_disabled=" + std::to_string((ss.ss_flags & SS_DISABLE) != 0) +
        "\n";
  } else if (m == "sigflags") {
    // The flags and mask of SIGUSR1 and SIGUSR2 (flush_signal_handlers
    // clears them for every action, ignored ones too).
    for (int sig : {SIGUSR1, SIGUSR2}) {
      struct sigaction sa = {};
      sigaction(sig, nullptr, &sa);
      out += std::string(Disposition(sig)) +
             " flags=" + std::to_string(sa.sa_flags) +
             " mask_empty=" + std::to_string(sigisemptyset(&sa.sa_mask)) + "\n";
    }
  } else if (m == "caps") {
    __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct d[2] = {};
    if (syscall(SYS_capget, &h, d) != 0) {
      out += "capget failed\n";
    } else {
      out += "eff=" + std::to_string(d[0].effective) + "," +
             std::to_string(d[1].effective) + "\n";
      out += "perm=" + std::to_string(d[0].permitted) + "," +
             std::to_string(d[1].permitted) + "\n";
    }
    out += "secure=" + std::to_string(getauxval(AT_SECURE)) + "\n";
  } else if (m == "wait" || m == "fork-wait") {
    // Says "ready", then runs until stdin reaches EOF; "fork-wait" forks
    // first and leaves the waiting to the child, the parent exiting at once.
    if (m == "fork-wait") {
      pid_t pid = fork();
      if (pid < 0) _exit(1);
      if (pid > 0) {
        Out("ready\n");
        _exit(kHelperExit);
      }
      close(1);
    } else {
      Out("ready\n");
    }
    char c;
    while (read(0, &c, 1) > 0) {
    }
    _exit(kHelperExit);
  } else if (m == "ids") {
    out += "pid=" + std::to_string(getpid()) + "\n";
    out += "tid=" + std::to_string(syscall(SYS_gettid)) + "\n";
    char comm[17] = {};
    prctl(PR_GET_NAME, comm);
    out += std::string("comm=") + comm + "\n";
    char exe[4096] = {};
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    out += std::string("exe=") + (n > 0 ? exe : "(error)") + "\n";
  }
  Out(out);
  _exit(kHelperExit);
}

__attribute__((constructor)) void MaybeHelper(int argc, char** argv,
                                              char** envp) {
  const char* mode = getenv(kHelperVar);
  if (mode != nullptr) Helper(mode, argc, argv, envp);
}

// ---- Test utilities. ----

std::string SelfPath() {
  char buf[4096] = {};
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "";
}

std::string HelperEnv(const char* mode) {
  return std::string(kHelperVar) + "=" + mode;
}

// A NULL-terminated char* array over `v` (valid while v lives).
std::vector<char*> CArray(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (std::string& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

struct ChildRun {
  int status = -1;
  std::string out;
};

// Forks; the child runs `fn` (which normally execs) with stdout on a pipe;
// returns the child's wait status and output. A child whose exec failed
// exits with 100 + errno.
ChildRun RunChild(const std::function<void()>& fn) {
  ChildRun r;
  int p[2];
  if (pipe(p) != 0) return r;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    dup2(p[1], 1);
    close(p[1]);
    fn();
    _exit(100 + errno);
  }
  close(p[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof(buf))) > 0) r.out.append(buf, n);
  close(p[0]);
  if (pid > 0) waitpid(pid, &r.status, 0);
  return r;
}

// execve in a child; the errno it failed with (0 if it ran the helper,
// -1 for anything else).
int ExecErrno(const char* path, char* const argv[], char* const envp[]) {
  ChildRun r = RunChild([&] { execve(path, argv, envp); });
  if (!WIFEXITED(r.status)) return -1;
  int code = WEXITSTATUS(r.status);
  if (code == kHelperExit) return 0;
  return code >= 100 ? code - 100 : -1;
}

int ExecErrno(const std::string& path) {
  std::vector<std::string> argv = {"x"};
  std::vector<std::string> envp = {HelperEnv("args")};
  auto a = CArray(argv);
  auto e = CArray(envp);
  return ExecErrno(path.c_str(), a.data(), e.data());
}

void WriteFile(const std::string& path, const std::string& data, mode_t mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  ASSERT_GE(fd, 0) << path << ": " << strerror(errno);
  ASSERT_EQ(write(fd, data.data(), data.size()),
            static_cast<ssize_t>(data.size()));
  ASSERT_EQ(fchmod(fd, mode), 0);
  close(fd);
}

// A minimal x86-64 ELF: one PT_LOAD (file 0..0x1000 at 0x400000, entry
// 0x400100), optionally a PT_INTERP naming `interp`.
std::string TinyElf(const std::string& interp, uint64_t filesz = 0x1000,
                    uint64_t memsz = 0x1000) {
  std::string f(0x1000, '\0');
  Elf64_Ehdr eh = {};
  memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_entry = 0x400100;
  eh.e_phoff = sizeof(eh);
  eh.e_ehsize = sizeof(eh);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  std::vector<Elf64_Phdr> ph;
  if (!interp.empty()) {
    Elf64_Phdr i = {};
    i.p_type = PT_INTERP;
    i.p_flags = PF_R;
    i.p_offset = 0x200;
    i.p_vaddr = 0x400200;
    i.p_filesz = i.p_memsz = interp.size() + 1;
    i.p_align = 1;
    ph.push_back(i);
    memcpy(f.data() + 0x200, interp.c_str(), interp.size() + 1);
  }
  Elf64_Phdr l = {};
  l.p_type = PT_LOAD;
  l.p_flags = PF_R | PF_X;
  l.p_vaddr = 0x400000;
  l.p_filesz = filesz;
  l.p_memsz = memsz;
  l.p_align = 0x1000;
  ph.push_back(l);
  eh.e_phnum = ph.size();
  memcpy(f.data(), &eh, sizeof(eh));
  memcpy(f.data() + sizeof(eh), ph.data(), ph.size() * sizeof(Elf64_Phdr));
  f[0x100] = '\xf4';  // hlt: never reached in these tests
  return f;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i; (i = s.find('\n', start)) != std::string::npos;
       start = i + 1) {
    out.push_back(s.substr(start, i - start));
  }
  return out;
}

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;

// ---- Success: the new image. ----

TEST(ExecTest, ArgvEnvpAndAuxv) {
  std::string self = SelfPath();
  ASSERT_FALSE(self.empty());
  std::vector<std::string> argv = {"zero", "one", "", "three"};
  std::vector<std::string> envp = {HelperEnv("args"), "A=1", "EMPTY="};
  auto a = CArray(argv);
  auto e = CArray(envp);
  ChildRun r = RunChild([&] { execve(self.c_str(), a.data(), e.data()); });
  EXPECT_THAT(r.status, ExitedWithCode(kHelperExit));
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre("argc=4", "argv=zero", "argv=one", "argv=", "argv=three",
                  "envp=EXEC_TEST_HELPER=args", "envp=A=1",
                  "envp=EMPTY=", "execfn=" + self, "secure=0", "pagesz=4096"));
}

// Linux >= 5.18: an empty argv becomes {""}.
TEST(ExecTest, NullArgvGivesOneEmptyArgument) {
  std::string self = SelfPath();
  std::vector<std::string> envp = {HelperEnv("args")};
  auto e = CArray(envp);
  ChildRun r = RunChild([&] { execve(self.c_str(), nullptr, e.data()); });
  EXPECT_THAT(r.status, ExitedWithCode(kHelperExit));
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0], "argc=1");
  EXPECT_EQ(lines[1], "argv=");
}

TEST(ExecTest, CloseOnExecDescriptorsAreClosed) {
  std::string self = SelfPath();
  std::vector<std::string> argv = {"fds"};
  std::vector<std::string> envp = {HelperEnv("fds")};
  auto a = CArray(argv);
  auto e = CArray(envp);
  ChildRun r = RunChild([&] {
    // Only the two descriptors below exist above 2.
    for (int fd = 3; fd < 20; ++fd) close(fd);
    int keep = open("/", O_RDONLY | O_DIRECTORY);
    int gone = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (keep != 3 || gone != 4) _exit(99);
    int keep_dup = fcntl(gone, F_DUPFD, 10);  // dups are not close-on-exec
    if (keep_dup != 10) _exit(98);
    execve(self.c_str(), a.data(), e.data());
  });
  EXPECT_THAT(r.status, ExitedWithCode(kHelperExit));
  EXPECT_THAT(Lines(r.out), ElementsAre("open=3", "open=10"));
}

void Handler(int) {}

TEST(ExecTest, HandlersResetIgnoredStayMaskAndAltStack) {
  std::string self = SelfPath();
  std::vector<std::string> argv = {"signals"};
  std::vector<std::string> envp = {HelperEnv("signals")};
  auto a = CArray(argv);
  auto e = CArray(envp);
  ChildRun r = RunChild([&] {
    signal(SIGUSR1, Handler);
    signal(SIGUSR2, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, nullptr);
    static char stack[1 << 16];
    stack_t ss = {};
    ss.ss_sp = stack;
    ss.ss_size = sizeof(stack);
    if (sigaltstack(&ss, nullptr) != 0) _exit(97);
    execve(self.c_str(), a.data(), e.data());
  });
  EXPECT_THAT(r.status, ExitedWithCode(kHelperExit));
  EXPECT_THAT(Lines(r.out), ElementsAre("usr1=dfl", "usr2=ign", "int_blocked=1",
                                        "altstack_disabled=1"));
}

// flush_signal_handlers(): every action loses its flags and mask, an
// ignored one too; a caught one becomes SIG_DFL.
TEST(ExecTest, FlushClearsFlagsAndMaskOfIgnoredToo) {
  std::string self = SelfPath();
  std::vector<std::string> argv = {"sigflags"};
  std::vector<std::string> envp = {HelperEnv("sigflags")};
  auto a = CArray(argv);
  auto e = CArray(envp);
  ChildRun r = RunChild([&] {
    struct sigaction sa = {};
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sa.sa_flags = SA_RESTART | SA_ONSTACK;
    sa.sa_handler = Handler;
    if (sigaction(SIGUSR1, &sa, nullptr) != 0) _exit(96);
    sa.sa_flags = SA_RESTART | SA_NODEFER;
    sa.sa_handler = SIG_IGN;
    if (sigaction(SIGUSR2, &sa, nullptr) != 0) _exit(95);
    execve(self.c_str(), a.data(), e.data());
  });
  EXPECT_THAT(r.status, ExitedWithCode(kHelperExit));
  EXPECT_THAT(Lines(r.out), ElementsAre("dfl flags=0 mask_empty=1",
                                        "ign flags=0 mask_empty=1"));
}

TEST(ExecTest, CommIsTheBasenameAndExeTheFile) {
  std::string self = SelfPath();
  std::string link = NewTempPath() + "-linkname-longer-than-15";
  ASSERT_THAT(symlink(self.c_str(), link.c_str()), SyscallSucceeds());
  std::vector<std::string> argv = {"ids"};
  std::vector<std::string> envp = {HelperEnv("ids")};
  auto a = CArray(argv);
  auto e = CArray(envp);
  ChildRun r = RunChild([&] { execve(link.c_str(), a.data(), e.data()); });
  std::vector<std::string> lines = Lines(r.out);
  EXPECT_THAT(r.status, ExitedWithCode(kHelperExit));
  ASSERT_EQ(lines.size(), 4u) << r.out;
  std::string base = link.substr(link.rfind('/') + 1).substr(0, 15);
  EXPECT_EQ(lines[2], "comm=" + base);
  EXPECT_EQ(lines[3], "exe=" + self);
  unlink(link.c_str());
}

// An execve from a non-leader thread: the other threads go, and the
// exec'ing thread takes the process's PID as its TID.
TEST(ExecTest, FromAThreadTakesTheLeadersTid) {
  std::string self = SelfPath();
  static std::vector<std::string> argv = {"ids"};
  static std::vector<std::string> envp = {HelperEnv("ids")};
  static std::vector<char*> a, e;
  a = CArray(argv);
  e = CArray(envp);
  static std::string path;
  path = self;
  int p[2];
  ASSERT_THAT(pipe(p), SyscallSucceeds());
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    dup2(p[1], 1);
    close(p[1]);
    pthread_t th;
    pthread_create(
        &th, nullptr,
        [](void*) -> void* {
          execve(path.c_str(), a.data(), e.data());
          _exit(100 + errno);
        },
        nullptr);
    // The leader waits to be killed by the exec.
    for (;;) usleep(100000);
  }
  close(p[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof(buf))) > 0) out.append(buf, n);
  close(p[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_THAT(status, ExitedWithCode(kHelperExit));
  std::vector<std::string> lines = Lines(out);
  ASSERT_GE(lines.size(), 2u) << out;
  EXPECT_EQ(lines[0], "pid=" + std::to_string(pid));
  EXPECT_EQ(lines[1], "tid=" + std::to_string(pid));
}

// Files have no capabilities and set-id bits are not in play: an exec by
// root (euid 0) gets the bounding set back after dropping its capabilities
// (cap_bprm_creds_from_file's "privileged root"), and it is not a secure
// exec.
TEST(ExecTest, RootRegainsCapabilitiesOnExec) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIP: needs euid 0";
  std::string self = SelfPath();
  std::vector<std::string> argv = {"caps"};
  std::vector<std::string> envp = {HelperEnv("caps")};
  auto a = CArray(argv);
  auto e = CArray(envp);
  ChildRun before = RunChild([&] { execve(self.c_str(), a.data(), e.data()); });
  ChildRun after = RunChild([&] {
    if (!DropCapabilities(/*keep_permitted=*/false)) _exit(95);
    execve(self.c_str(), a.data(), e.data());
  });
  if (WIFEXITED(after.status) && WEXITSTATUS(after.status) == 95) {
    GTEST_SKIP() << "SKIP: cannot drop capabilities (capget/capset)";
  }
  EXPECT_THAT(before.status, ExitedWithCode(kHelperExit));
  EXPECT_THAT(after.status, ExitedWithCode(kHelperExit));
  std::vector<std::string> b = Lines(before.out), l = Lines(after.out);
  ASSERT_EQ(l.size(), 3u) << after.out;
  EXPECT_EQ(l, b);  // the same sets as a process that never dropped them
  EXPECT_NE(l[0], "eff=0,0");
  EXPECT_EQ(l[0].substr(4), l[1].substr(5));  // effective == permitted
  EXPECT_EQ(l[2], "secure=0");
}

// ---- execveat. ----

TEST(ExecTest, ExecveatEmptyPathAndDirfd) {
  std::string self = SelfPath();
  std::vector<std::string> argv = {"x"};
  std::vector<std::string> envp = {HelperEnv("args")};
  auto a = CArray(argv);
  auto e = CArray(envp);
  int fd = open(self.c_str(), O_PATH | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ChildRun r = RunChild([&] {
    syscall(SYS_execveat, fd, "", a.data(), e.data(), AT_EMPTY_PATH);
  });
  EXPECT_THAT(r.status, ExitedWithCode(kHelperExit));
  // AT_EXECFN is bprm->filename: "/dev/fd/N".
  EXPECT_THAT(Lines(r.out), Contains("execfn=/dev/fd/" + std::to_string(fd)));

  // Relative to a directory descriptor.
  std::string dir = self.substr(0, self.rfind('/'));
  std::string name = self.substr(self.rfind('/') + 1);
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dfd, 0);
  r = RunChild(
      [&] { syscall(SYS_execveat, dfd, name.c_str(), a.data(), e.data(), 0); });
  EXPECT_THAT(r.status, ExitedWithCode(kHelperExit));
  EXPECT_THAT(Lines(r.out),
              Contains("execfn=/dev/fd/" + std::to_string(dfd) + "/" + name));

  // Errors: "" without AT_EMPTY_PATH, unknown flags, a symlink with
  // AT_SYMLINK_NOFOLLOW.
  r = RunChild([&] { syscall(SYS_execveat, fd, "", a.data(), e.data(), 0); });
  EXPECT_THAT(r.status, ExitedWithCode(100 + ENOENT));
  r = RunChild([&] {
    syscall(SYS_execveat, dfd, name.c_str(), a.data(), e.data(), 0x4000000);
  });
  EXPECT_THAT(r.status, ExitedWithCode(100 + EINVAL));
  std::string link = NewTempPath();
  ASSERT_THAT(symlink(self.c_str(), link.c_str()), SyscallSucceeds());
  r = RunChild([&] {
    syscall(SYS_execveat, AT_FDCWD, link.c_str(), a.data(), e.data(),
            AT_SYMLINK_NOFOLLOW);
  });
  EXPECT_THAT(r.status, ExitedWithCode(100 + ELOOP));
  unlink(link.c_str());
  close(fd);
  close(dfd);
}

// ---- Errors. ----

TEST(ExecTest, FileErrors) {
  EXPECT_EQ(ExecErrno("/no/such/file"), ENOENT);
  EXPECT_EQ(ExecErrno(""), ENOENT);
  EXPECT_EQ(ExecErrno(TempDir()), EACCES);  // a directory
  std::string f = NewTempPath();
  WriteFile(f, "#!/bin/sh\n", 0644);
  EXPECT_EQ(ExecErrno(f), EACCES);  // no execute permission
  EXPECT_EQ(ExecErrno(f + "/x"), ENOTDIR);
  WriteFile(f, "garbage that is neither ELF nor a script\n", 0755);
  EXPECT_EQ(ExecErrno(f), ENOEXEC);
  WriteFile(f, "", 0755);
  EXPECT_EQ(ExecErrno(f), ENOEXEC);
  WriteFile(f,
            "\x7f"
            "ELF",
            0755);
  EXPECT_EQ(ExecErrno(f), ENOEXEC);
  EXPECT_EQ(ExecErrno(std::string(5000, 'a')), ENAMETOOLONG);
  unlink(f.c_str());
}

TEST(ExecTest, BadPointersAreEfault) {
  std::string self = SelfPath();
  std::vector<std::string> envp = {HelperEnv("args")};
  auto e = CArray(envp);
  char* argv_bad_string[] = {const_cast<char*>("x"), reinterpret_cast<char*>(1),
                             nullptr};
  EXPECT_EQ(ExecErrno(reinterpret_cast<const char*>(1), nullptr, e.data()),
            EFAULT);
  EXPECT_EQ(ExecErrno(self.c_str(), reinterpret_cast<char**>(1), e.data()),
            EFAULT);
  EXPECT_EQ(ExecErrno(self.c_str(), argv_bad_string, e.data()), EFAULT);
  EXPECT_EQ(ExecErrno(self.c_str(), nullptr, reinterpret_cast<char**>(8)),
            EFAULT);
  // Since Linux 6.8 the file's errors come before the arguments' (alloc_bprm
  // opens the file first); before, copying argv came first (EFAULT). The
  // test cannot tell a sandbox from a host kernel, so either passes.
  EXPECT_THAT(ExecErrno("/no/such/file", reinterpret_cast<char**>(1), e.data()),
              ::testing::AnyOf(ENOENT, EFAULT));
}

TEST(ExecTest, ArgumentLimitsAreE2big) {
  std::string self = SelfPath();
  // The room is a quarter of RLIMIT_STACK: pin it to 8 MiB (2 MiB room).
  auto exec_with = [&](std::vector<std::string> argv) {
    std::vector<std::string> envp = {HelperEnv("exit")};
    auto a = CArray(argv);
    auto e = CArray(envp);
    ChildRun r = RunChild([&] {
      struct rlimit rl = {8 << 20, 8 << 20};
      if (setrlimit(RLIMIT_STACK, &rl) != 0) _exit(96);
      execve(self.c_str(), a.data(), e.data());
    });
    if (!WIFEXITED(r.status)) return -1;
    int code = WEXITSTATUS(r.status);
    return code == kHelperExit ? 0 : code >= 100 ? code - 100 : -1;
  };
  // MAX_ARG_STRLEN (32 pages) includes the NUL.
  EXPECT_EQ(exec_with({"x", std::string(32 * 4096 - 1, 'a')}), 0);
  EXPECT_EQ(exec_with({"x", std::string(32 * 4096, 'a')}), E2BIG);
  // 3 MB of strings over a 2 MiB room.
  std::vector<std::string> many(30, std::string(100000, 'b'));
  EXPECT_EQ(exec_with(many), E2BIG);
  // 1 MB fits.
  many.resize(10);
  EXPECT_EQ(exec_with(many), 0);
  // Pointers alone: 300000 empty strings need 2.4 MB of pointers.
  std::vector<std::string> empties(300000);
  EXPECT_EQ(exec_with(empties), E2BIG);
}

// PT_INTERP: a missing interpreter is ENOENT, one that is not ELF ELIBBAD,
// one without execute permission EACCES.
TEST(ExecTest, InterpreterErrors) {
  std::string prog = NewTempPath();
  std::string interp = NewTempPath();
  WriteFile(prog, TinyElf(interp), 0755);
  EXPECT_EQ(ExecErrno(prog), ENOENT);
  WriteFile(interp, std::string(200, 'x'), 0755);
  EXPECT_EQ(ExecErrno(prog), ELIBBAD);
  WriteFile(interp, TinyElf(""), 0644);
  EXPECT_EQ(ExecErrno(prog), EACCES);
  unlink(prog.c_str());
  unlink(interp.c_str());
}

// A segment error after the point of no return kills the process with
// SIGSEGV instead of returning.
TEST(ExecTest, FailureAfterThePointOfNoReturnIsSigsegv) {
  std::string prog = NewTempPath();
  WriteFile(prog, TinyElf("", /*filesz=*/0x1000, /*memsz=*/0x800), 0755);
  ChildRun r = RunChild([&] {
    char* argv[] = {const_cast<char*>("x"), nullptr};
    char* envp[] = {nullptr};
    execve(prog.c_str(), argv, envp);
  });
  EXPECT_THAT(r.status, KilledBySignal(SIGSEGV));
  unlink(prog.c_str());
}

// Whether this kernel keeps a running program's file from writers (and a
// file open for writing from execve): Linux 6.11 did not (it dropped
// exec's deny_write_access; later kernels restored it). Where the test
// binary's file system is read-only (EROFS) this cannot tell: assume so.
bool KernelDeniesWritesToRunningPrograms() {
  int fd = open("/proc/self/exe", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return true;
  close(fd);
  return false;
}

constexpr char kNoEtxtbsy[] =
    "this kernel lets running programs' files be written (as 6.11 did)";

// ETXTBSY: the file is open for writing.
TEST(ExecTest, FileOpenForWritingIsEtxtbsy) {
  if (!KernelDeniesWritesToRunningPrograms()) GTEST_SKIP() << kNoEtxtbsy;
  std::string f = NewTempPath();
  int fd = open(f.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
  ASSERT_GE(fd, 0);
  std::string elf = TinyElf("");
  ASSERT_EQ(write(fd, elf.data(), elf.size()),
            static_cast<ssize_t>(elf.size()));
  EXPECT_EQ(ExecErrno(f), ETXTBSY);
  close(fd);
  unlink(f.c_str());
}

// A program started by RunUntilEof: stdin and stdout are pipes; closing
// `in` ends it.
struct Running {
  pid_t pid = -1;
  int in = -1;
  int out = -1;
};

// Starts `path` with EXEC_TEST_HELPER=mode ("wait", "fork-wait") and
// waits for its "ready" line. pid -1 if it did not say it.
Running RunUntilEof(const std::string& path, const char* mode) {
  Running r;
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return r;
  if (pipe2(out, O_CLOEXEC) != 0) return r;
  std::vector<std::string> argv = {"x"};
  std::vector<std::string> envp = {HelperEnv(mode)};
  auto a = CArray(argv);
  auto e = CArray(envp);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    execve(path.c_str(), a.data(), e.data());
    _exit(100 + errno);
  }
  close(in[0]);
  close(out[1]);
  r.in = in[1];
  r.out = out[0];
  std::string got;
  char buf[64];
  ssize_t n;
  while (got.find('\n') == std::string::npos &&
         (n = read(r.out, buf, sizeof(buf))) > 0) {
    got.append(buf, n);
  }
  if (got == "ready\n") r.pid = pid;
  if (r.pid < 0 && pid > 0) waitpid(pid, nullptr, 0);
  return r;
}

// Closes its stdin and reaps it; its wait status.
int Finish(Running& r) {
  close(r.in);
  int status = -1;
  if (r.pid > 0) waitpid(r.pid, &status, 0);
  close(r.out);
  return status;
}

// A copy of this binary at a new path, executable.
std::string CopyOfSelf() {
  std::string copy = NewTempPath();
  int src = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (src < 0) return "";
  std::string data;
  char buf[65536];
  ssize_t n;
  while ((n = read(src, buf, sizeof(buf))) > 0) data.append(buf, n);
  close(src);
  int fd = open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
  if (fd < 0) return "";
  // write(2) may stop short of a large count: loop.
  for (size_t done = 0; done < data.size();) {
    ssize_t w = write(fd, data.data() + done, data.size() - done);
    if (w <= 0) {
      close(fd);
      return "";
    }
    done += w;
  }
  close(fd);
  return copy;
}

// The errno of open(path, flags), 0 if it opened.
int OpenErrno(const std::string& path, int flags) {
  int fd = open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

// A running program's file cannot be opened for writing or truncated
// (ETXTBSY) until the program is gone; reading it is fine.
TEST(ExecTest, RunningExecutableIsEtxtbsyForWriters) {
  if (!KernelDeniesWritesToRunningPrograms()) GTEST_SKIP() << kNoEtxtbsy;
  std::string prog = CopyOfSelf();
  ASSERT_FALSE(prog.empty());
  Running r = RunUntilEof(prog, "wait");
  ASSERT_GT(r.pid, 0);
  EXPECT_EQ(OpenErrno(prog, O_WRONLY), ETXTBSY);
  EXPECT_EQ(OpenErrno(prog, O_RDWR), ETXTBSY);
  EXPECT_EQ(OpenErrno(prog, O_WRONLY | O_TRUNC), ETXTBSY);
  EXPECT_THAT(truncate(prog.c_str(), 0), SyscallFailsWithErrno(ETXTBSY));
  EXPECT_EQ(OpenErrno(prog, O_RDONLY), 0);
  // A second run of the same file is fine.
  EXPECT_EQ(ExecErrno(prog), 0);
  EXPECT_THAT(Finish(r), ExitedWithCode(kHelperExit));
  EXPECT_EQ(OpenErrno(prog, O_WRONLY), 0);
  unlink(prog.c_str());
}

// fork's copy of the address space keeps the executable busy after the
// process that ran it has exited.
TEST(ExecTest, ForkedChildKeepsTheExecutableBusy) {
  if (!KernelDeniesWritesToRunningPrograms()) GTEST_SKIP() << kNoEtxtbsy;
  std::string prog = CopyOfSelf();
  ASSERT_FALSE(prog.empty());
  Running r = RunUntilEof(prog, "fork-wait");
  ASSERT_GT(r.pid, 0);
  int status = -1;
  ASSERT_EQ(waitpid(r.pid, &status, 0), r.pid);
  EXPECT_THAT(status, ExitedWithCode(kHelperExit));
  r.pid = -1;
  EXPECT_EQ(OpenErrno(prog, O_WRONLY), ETXTBSY);
  Finish(r);  // the grandchild sees EOF and exits (reaped by init)
  int err = ETXTBSY;
  for (int i = 0; i < 1000 && err == ETXTBSY; ++i) {
    err = OpenErrno(prog, O_WRONLY);
    if (err == ETXTBSY) usleep(10000);
  }
  EXPECT_EQ(err, 0);
  unlink(prog.c_str());
}

// ---- Scripts. ----

// The program running a script is its interpreter: the interpreter is busy,
// the script itself can be written.
TEST(ExecTest, RunningScriptsInterpreterIsBusyTheScriptIsNot) {
  if (!KernelDeniesWritesToRunningPrograms()) GTEST_SKIP() << kNoEtxtbsy;
  std::string interp = CopyOfSelf();
  ASSERT_FALSE(interp.empty());
  std::string script = NewTempPath();
  WriteFile(script, "#!" + interp + "\n", 0755);
  Running r = RunUntilEof(script, "wait");
  ASSERT_GT(r.pid, 0);
  EXPECT_EQ(OpenErrno(interp, O_WRONLY), ETXTBSY);
  EXPECT_EQ(OpenErrno(script, O_WRONLY), 0);
  EXPECT_THAT(Finish(r), ExitedWithCode(kHelperExit));
  unlink(script.c_str());
  unlink(interp.c_str());
}

// A script whose interpreter is open for writing: ETXTBSY (open_exec).
TEST(ExecTest, ScriptInterpreterOpenForWritingIsEtxtbsy) {
  if (!KernelDeniesWritesToRunningPrograms()) GTEST_SKIP() << kNoEtxtbsy;
  std::string interp = CopyOfSelf();
  ASSERT_FALSE(interp.empty());
  std::string script = NewTempPath();
  WriteFile(script, "#!" + interp + "\n", 0755);
  int fd = open(interp.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(ExecErrno(script), ETXTBSY);
  close(fd);
  EXPECT_EQ(ExecErrno(script), 0);
  unlink(script.c_str());
  unlink(interp.c_str());
}

TEST(ExecTest, ScriptGetsInterpreterArgumentAndPath) {
  std::string self = SelfPath();
  std::string script = NewTempPath();
  WriteFile(script, "#!" + self + "  one arg  \nrest\n", 0755);
  std::vector<std::string> argv = {"argv0", "x", "y"};
  std::vector<std::string> envp = {HelperEnv("args")};
  auto a = CArray(argv);
  auto e = CArray(envp);
  ChildRun r = RunChild([&] { execve(script.c_str(), a.data(), e.data()); });
  EXPECT_THAT(r.status, ExitedWithCode(kHelperExit));
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_GE(lines.size(), 6u) << r.out;
  EXPECT_THAT(std::vector<std::string>(lines.begin(), lines.begin() + 6),
              ElementsAre("argc=5", "argv=" + self, "argv=one arg",
                          "argv=" + script, "argv=x", "argv=y"));
  EXPECT_THAT(lines, Contains("execfn=" + script));
  unlink(script.c_str());
}

TEST(ExecTest, ScriptErrors) {
  std::string script = NewTempPath();
  WriteFile(script, "#!/no/such/interpreter\n", 0755);
  EXPECT_EQ(ExecErrno(script), ENOENT);
  WriteFile(script, "#!\n", 0755);
  EXPECT_EQ(ExecErrno(script), ENOEXEC);
  WriteFile(script, "#!" + TempDir() + "\n", 0755);
  EXPECT_EQ(ExecErrno(script), EACCES);
  unlink(script.c_str());
}

// Linux follows at most 5 levels of "#!" (exec_binprm's depth > 5).
TEST(ExecTest, ScriptChainDepth) {
  std::string self = SelfPath();
  std::vector<std::string> chain;
  std::string prev = self;
  for (int i = 0; i < 6; ++i) {
    std::string s = NewTempPath();
    WriteFile(s, "#!" + prev + "\n", 0755);
    chain.push_back(s);
    prev = s;
  }
  EXPECT_EQ(ExecErrno(chain[4]), 0);      // 5 scripts, then the ELF
  EXPECT_EQ(ExecErrno(chain[5]), ELOOP);  // 6
  for (const std::string& s : chain) unlink(s.c_str());
}

}  // namespace
}  // namespace sandbox::testutil
