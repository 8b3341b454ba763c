// End-to-end: static glibc programs run through the real `runsc do`.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace {

using ::sandbox::e2e::Child;
using ::sandbox::e2e::Program;
using ::sandbox::e2e::Result;
using ::sandbox::e2e::Runfile;
using ::sandbox::e2e::RunRunsc;
using ::sandbox::e2e::Runsc;

using RunscDoTest = ::sandbox::e2e::SandboxTest;

TEST_F(RunscDoTest, HelpExists) {
  Result r = RunRunsc({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("do "), std::string::npos) << r.out;
  r = RunRunsc({"do", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("absolute path"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--strace"), std::string::npos) << r.out;
  r = RunRunsc({"do"});
  EXPECT_EQ(r.status, 2);
  r = RunRunsc({"do", "--bogus", "--", "/bin/true"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown flag"), std::string::npos) << r.err;
}

TEST_F(RunscDoTest, ArgumentsEnvironmentCwdAndStdio) {
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  Result r = RunRunsc({"do", "--", Program("hello"), "one", "two words", ""},
                      "", {"E2E_VALUE=from the caller"});
  EXPECT_EQ(r.status, 0) << r.err;
  std::string want = "hello, world\nargc=4\nargv[0]=" + Program("hello") +
                     "\nargv[1]=one\nargv[2]=two words\nargv[3]=\n"
                     "E2E_VALUE=from the caller\npid=1 ppid=0 uid=0\ncwd=" +
                     std::string(cwd) + "\n";
  EXPECT_EQ(r.out, want);
  EXPECT_EQ(r.err, "to stderr\n");
}

TEST_F(RunscDoTest, ExitStatus) {
  EXPECT_EQ(
      RunRunsc({"do", "--", Program("hello")}, "", {"E2E_EXIT=42"}).status, 42);
  EXPECT_EQ(
      RunRunsc({"do", "--", Program("hello")}, "", {"E2E_EXIT=259"}).status, 3);
  EXPECT_EQ(RunRunsc({"do", Program("true")}).status, 0);
}

TEST_F(RunscDoTest, BadPointersGiveEfault) {
  Result r = RunRunsc({"do", "--warn-unsupported", "--", Program("efault")});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("EFAULT ok"), std::string::npos) << r.out;
  // /proc/self/exe is the file's path with symlinks resolved (the runfile
  // is a symlink), as natively.
  char real[PATH_MAX];
  ASSERT_NE(realpath(Program("efault").c_str(), real), nullptr);
  EXPECT_NE(r.out.find("exe=" + std::string(real)), std::string::npos) << r.out;
  // One note for the unknown number (on stderr with --warn-unsupported).
  EXPECT_NE(r.err.find("unknown syscall 12345"), std::string::npos) << r.err;
}

TEST_F(RunscDoTest, SegfaultEndsGuestWith139) {
  Result r = RunRunsc({"do", "--", Program("segv")});
  EXPECT_EQ(r.status, 139) << r.err;
  EXPECT_EQ(r.out, "about to fault\n");
}

TEST_F(RunscDoTest, MemorySyscalls) {
  Result r = RunRunsc({"do", "--", Program("malloc")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("malloc ok"), std::string::npos);
}

TEST_F(RunscDoTest, Threads) {
  Result r = RunRunsc({"do", "--", Program("threads")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "threads ok counter=80000\n");
}

TEST_F(RunscDoTest, ForkAndWait) {
  Result r = RunRunsc({"do", "--", Program("fork")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "fork ok\n");
}

TEST_F(RunscDoTest, OrphansGoToInit) {
  Result r = RunRunsc({"do", "--", Program("orphan")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "orphan ok\n");
}

TEST_F(RunscDoTest, StdinIsTheCallers) {
  std::string input;
  for (int i = 0; i < 2000; ++i) input += "line " + std::to_string(i) + "\n";
  Result r = RunRunsc({"do", "--", Program("cat")}, input);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, input);
}

class TempDir {
 public:
  TempDir() {
    char t[] = "/tmp/e2eXXXXXX";
    path_ = mkdtemp(t);
  }
  ~TempDir() { (void)!system(("rm -rf " + path_).c_str()); }
  std::string Write(const std::string& name, const std::string& data,
                    int mode = 0755) {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << data;
    chmod(p.c_str(), mode);
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// With --root=tmpfs the program is copied from the host (an absolute path).
TEST_F(RunscDoTest, BadExecutables) {
  TempDir d;
  // A script whose interpreter the tmpfs root lacks: ENOENT, as execve.
  Result r = RunRunsc(
      {"do", "--root=tmpfs", "--", d.Write("text", "#!/bin/sh\necho hi\n")});
  EXPECT_EQ(r.status, 127);
  EXPECT_NE(r.err.find("interpreter /bin/sh"), std::string::npos) << r.err;
  // Not a script, not ELF: ENOEXEC.
  r = RunRunsc({"do", "--root=tmpfs", "--", d.Write("junk", "junk\n")});
  EXPECT_EQ(r.status, 126);
  EXPECT_NE(r.err.find("ENOEXEC"), std::string::npos) << r.err;
  std::string bad_elf(
      "\x7f"
      "ELF\x02\x01\x01",
      7);
  bad_elf.resize(128, '\0');
  r = RunRunsc({"do", "--root=tmpfs", "--", d.Write("badelf", bad_elf)});
  EXPECT_EQ(r.status, 126);
  EXPECT_NE(r.err.find("ENOEXEC"), std::string::npos) << r.err;
  r = RunRunsc({"do", "--root=tmpfs", "--", d.Write("noexec", "x", 0644)});
  EXPECT_EQ(r.status, 126) << r.err;
  r = RunRunsc({"do", "--root=tmpfs", "--", d.path()});
  EXPECT_EQ(r.status, 126) << r.err;
  r = RunRunsc({"do", "--root=tmpfs", "--", d.path() + "/missing"});
  EXPECT_EQ(r.status, 127);
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;
  r = RunRunsc({"do", "--root=tmpfs", "--", "true"});
  EXPECT_EQ(r.status, 127);
  EXPECT_NE(r.err.find("absolute path"), std::string::npos) << r.err;
}

TEST_F(RunscDoTest, Strace) {
  Result r =
      RunRunsc({"do", "--strace", "--strace-summary", "--", Program("hello")});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.err.find("write(1, \"hello, world\\n"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rseq("), std::string::npos);
  EXPECT_NE(r.err.find("= -1 ENOSYS (Function not implemented)"),
            std::string::npos);
  EXPECT_NE(r.err.find("exit_group(0) = 0"), std::string::npos);
  EXPECT_NE(r.err.find("calls     errors syscall"), std::string::npos);
  EXPECT_NE(r.err.find(" total"), std::string::npos);
  // Where time went outside syscalls: the program was loaded from the
  // Gofer (Attach, Walk, Open) and mapped by the stub.
  EXPECT_NE(r.err.find("\nmm: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\ngofer: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Attach 1 in"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nsystrap: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" stub calls "), std::string::npos) << r.err;
  // Without the flags, no strace lines.
  r = RunRunsc({"do", "--", Program("hello")});
  EXPECT_EQ(r.err, "to stderr\n");
}

TEST_F(RunscDoTest, SignalsAreForwarded) {
  for (int sig : {SIGINT, SIGTERM}) {
    Child c({"do", "--", Program("spin")});
    ASSERT_TRUE(c.WaitForOutput("spinning\n"));
    kill(c.pid(), sig);
    EXPECT_EQ(c.Finish(20000).status, 128 + sig);
  }
}

TEST_F(RunscDoTest, WriteToClosedPipeGivesInitEpipe) {
  Child c({"do", "--", Program("cat")});
  c.Write("first\n");
  ASSERT_TRUE(c.WaitForOutput("first\n"));
  c.CloseStdout();
  // The next write gets EPIPE. The SIGPIPE the kernel raises is dropped:
  // cat is the sandbox's init, which (as a PID namespace's init on Linux,
  // SIGNAL_UNKILLABLE) ignores signals it has no handler for; cat exits 2
  // on the failed write. Other processes die of SIGPIPE (read_write_test).
  signal(SIGPIPE, SIG_IGN);
  c.Write("second\n");
  Result r = c.Finish(20000);
  EXPECT_EQ(r.status, 2) << r.err;
}

TEST_F(RunscDoTest, BlockedReadIsInterrupted) {
  Child c({"do", "--", Program("cat")});
  c.Write("ping\n");
  ASSERT_TRUE(c.WaitForOutput("ping\n"));
  // cat now blocks reading stdin, which stays open.
  kill(c.pid(), SIGTERM);
  EXPECT_EQ(c.Finish(20000).status, 128 + SIGTERM);
}

// The processes whose parent is `pid` (any of its threads), from the
// PPid field of every /proc/N/stat: where /proc/PID/task/TID/children is
// missing (it needs CONFIG_PROC_CHILDREN).
std::vector<pid_t> ChildrenByPpid(pid_t pid) {
  std::vector<pid_t> out;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* de = readdir(dir)) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    std::ifstream f(std::string("/proc/") + de->d_name + "/stat");
    std::string s((std::istreambuf_iterator<char>(f)), {});
    size_t close = s.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(s.substr(close + 1));
    std::string state;
    pid_t ppid = 0;
    if (rest >> state >> ppid && ppid == pid) {
      out.push_back(std::atoi(de->d_name));
    }
  }
  closedir(dir);
  return out;
}

bool HaveProcChildren() {
  const std::string self =
      "/proc/self/task/" + std::to_string(getpid()) + "/children";
  return access(self.c_str(), R_OK) == 0;
}

std::vector<pid_t> Children(pid_t pid) {
  if (!HaveProcChildren()) return ChildrenByPpid(pid);
  std::vector<pid_t> out;
  std::ifstream f("/proc/" + std::to_string(pid) + "/task/" +
                  std::to_string(pid) + "/children");
  pid_t p;
  while (f >> p) out.push_back(p);
  return out;
}

std::string Comm(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
  std::string s;
  std::getline(f, s);
  return s;
}

// The CLI's children named `comm` ("runsc-sentry", "runsc-gofer"), waiting
// up to 10 s for them to have set their names.
std::vector<pid_t> ChildrenNamed(pid_t cli, const std::string& comm) {
  std::vector<pid_t> out;
  for (int i = 0; i < 200 && out.empty(); ++i) {
    for (pid_t p : Children(cli)) {
      if (Comm(p) == comm) out.push_back(p);
    }
    if (out.empty()) usleep(50000);
  }
  return out;
}

// The Sentry's children, over all its threads: the stub processes (each is
// a child of the Sentry thread that created it).
std::vector<pid_t> StubPids(pid_t sentry) {
  if (!HaveProcChildren()) return ChildrenByPpid(sentry);
  std::vector<pid_t> out;
  const std::string tasks = "/proc/" + std::to_string(sentry) + "/task";
  DIR* dir = opendir(tasks.c_str());
  if (dir == nullptr) return out;
  while (dirent* de = readdir(dir)) {
    if (de->d_name[0] == '.') continue;
    std::ifstream f(tasks + "/" + de->d_name + "/children");
    pid_t p;
    while (f >> p) out.push_back(p);
  }
  closedir(dir);
  return out;
}

bool GoneOrZombie(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  if (!f) return true;
  std::string s((std::istreambuf_iterator<char>(f)), {});
  size_t close = s.rfind(')');
  return close == std::string::npos || s.size() < close + 3 ||
         s[close + 2] == 'Z' || s[close + 2] == 'X';
}

TEST_F(RunscDoTest, KillingTheCliEndsTheSandbox) {
  Child c({"do", "--", Program("spin")});
  ASSERT_TRUE(c.WaitForOutput("spinning\n"));
  std::vector<pid_t> sentry = ChildrenNamed(c.pid(), "runsc-sentry");
  ASSERT_EQ(sentry.size(), 1u);
  // The Gofer (serving the host root) ends with the sandbox too.
  std::vector<pid_t> gofer = ChildrenNamed(c.pid(), "runsc-gofer");
  ASSERT_EQ(gofer.size(), 1u);
  EXPECT_EQ(Children(c.pid()).size(), 2u);
  std::vector<pid_t> all = sentry;
  all.push_back(gofer[0]);
  for (pid_t p : StubPids(sentry[0])) all.push_back(p);
  EXPECT_GE(all.size(), 2u) << "no stub process found";
  kill(c.pid(), SIGKILL);
  c.Finish();
  for (int i = 0; i < 200; ++i) {
    bool gone = true;
    for (pid_t p : all) gone &= GoneOrZombie(p);
    if (gone) break;
    usleep(50000);
  }
  for (pid_t p : all) EXPECT_TRUE(GoneOrZombie(p)) << "pid " << p << " lives";
}

// A stub killed from outside (say, by the host's OOM killer) takes down only
// the guest process whose address space it held: the sandbox reports that
// process killed by SIGKILL, not a sandbox failure.
TEST_F(RunscDoTest, KilledStubEndsOnlyItsProcess) {
  Child c({"do", "--", Program("spin")});
  ASSERT_TRUE(c.WaitForOutput("spinning\n"));
  std::vector<pid_t> sentry = ChildrenNamed(c.pid(), "runsc-sentry");
  ASSERT_EQ(sentry.size(), 1u);
  // The pristine source stub is made first; the guest's stub is the newest.
  std::vector<pid_t> stubs = StubPids(sentry[0]);
  ASSERT_FALSE(stubs.empty()) << "no stub process found";
  const pid_t guest_stub = *std::max_element(stubs.begin(), stubs.end());
  ASSERT_EQ(kill(guest_stub, SIGKILL), 0);
  EXPECT_EQ(c.Finish(20000).status, 128 + SIGKILL);
}

// Reads from a pty master until `want` appears or 10 s pass.
bool ReadUntil(int fd, const std::string& want, std::string* out) {
  for (int i = 0; i < 100 && out->find(want) == std::string::npos; ++i) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) return false;
    out->append(buf, n);
  }
  return out->find(want) != std::string::npos;
}

TEST_F(RunscDoTest, TerminalStdioAndCtrlC) {
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) GTEST_SKIP() << "no pseudo-terminal here: " << strerror(errno);
  if (pid == 0) {
    execl(Runsc().c_str(), "runsc", "do", "--", Program("cat").c_str(),
          nullptr);
    _exit(111);
  }
  // Line discipline and echo come from the caller's terminal (TCGETS and
  // reads pass through to it).
  ASSERT_EQ(write(master, "typed\n", 6), 6);
  std::string out;
  EXPECT_TRUE(ReadUntil(master, "typed\r\ntyped\r\n", &out)) << out;
  // ^C reaches the sandbox's process group and ends the guest (130).
  ASSERT_EQ(write(master, "\x03", 1), 1);
  int ws = 0;
  for (int i = 0; i < 200 && waitpid(pid, &ws, WNOHANG) == 0; ++i) {
    usleep(50000);
  }
  if (waitpid(pid, &ws, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &ws, 0);
    ADD_FAILURE() << "runsc did not end on ^C";
  }
  EXPECT_TRUE(WIFEXITED(ws));
  EXPECT_EQ(WEXITSTATUS(ws), 130);
  close(master);
}

// `runsc help syscalls` prints the Sentry's syscall table, which the CLI
// reaches through sentry/boot (tools/layers.txt): one line per number.
TEST(RunscHelp, SyscallsPrintsTheTable) {
  Child c({"help", "syscalls"});
  Result r = c.Finish();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("  0 read "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 59 execve "), std::string::npos) << r.out;
}

}  // namespace
