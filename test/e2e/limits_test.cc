// End-to-end: the sandbox's resource limits (runsc do --memory,
// --pids-limit, tmpfs sizes) and what a guest can read of the stub memory,
// each written as the attack: a hostile guest tries, the test asserts that
// it fails, that the Sentry survives and that nothing is left on the host.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace {

using ::sandbox::e2e::Child;
using ::sandbox::e2e::Program;
using ::sandbox::e2e::Result;
using ::sandbox::e2e::RunRunsc;

std::string Probe() { return Program("limits_probe"); }

class LimitsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Result r = RunRunsc({"do", "--", Program("true")});
    if (r.status != 0) {
      skip_reason_ = new std::string("the sandbox cannot run here: " + r.err);
    }
  }
  void SetUp() override {
    if (skip_reason_ != nullptr) GTEST_SKIP() << *skip_reason_;
  }
  static std::string* skip_reason_;
};
std::string* LimitsTest::skip_reason_ = nullptr;

// The text of a /proc file, "" when it cannot be read. Not an ifstream: a
// process that exits between the open and the read makes read(2) fail with
// ESRCH, which libstdc++'s filebuf throws as an exception.
std::string ReadProcFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// The PIDs of the processes whose parent is `ppid` (from /proc/*/stat).
std::vector<pid_t> ChildrenOf(pid_t ppid, const std::string& comm = "") {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    char* end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    const std::string stat =
        ReadProcFile(std::string("/proc/") + e->d_name + "/stat");
    size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos ||
        close + 2 > stat.size()) {
      continue;
    }
    std::istringstream rest(stat.substr(close + 2));
    char state;
    long parent;
    if (!(rest >> state >> parent) || parent != ppid) continue;
    if (!comm.empty() && stat.substr(open + 1, close - open - 1) != comm) {
      continue;
    }
    out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

// Running or stopped (a zombie is gone for this purpose: it holds nothing).
bool Alive(pid_t pid) {
  const std::string stat =
      ReadProcFile("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() &&
         stat[close + 2] != 'Z';
}

TEST_F(LimitsTest, HelpShowsTheLimitsAndTheirDefaults) {
  Result r = RunRunsc({"do", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--memory=BYTES"), std::string::npos);
  EXPECT_NE(r.out.find("--pids-limit=N"), std::string::npos);
  EXPECT_NE(r.out.find("Default 4096"), std::string::npos);
  EXPECT_NE(r.out.find("half the host's"), std::string::npos);
}

TEST_F(LimitsTest, BadLimitFlagsAreUsageErrors) {
  for (const char* flag : {"--memory=lots", "--memory=1m", "--memory=12q",
                           "--pids-limit=-5", "--pids-limit=x"}) {
    Result r = RunRunsc({"do", flag, "--", Program("true")});
    EXPECT_EQ(r.status, 2) << flag << ": " << r.err;
  }
  Result r = RunRunsc(
      {"do", "--memory=1.5g", "--pids-limit=-1", "--", Program("true")});
  EXPECT_EQ(r.status, 0) << r.err;
}

// The attack: a child of init allocates and touches twice the sandbox's
// memory. The OOM killer ends it with SIGKILL; init, the Sentry and runsc
// go on (init can even allocate again).
TEST_F(LimitsTest, MemoryHogChildIsKilledAndInitSurvives) {
  const char* tmp = getenv("TEST_TMPDIR");
  const std::string log = std::string(tmp ? tmp : "/tmp") + "/oom.log";
  Result r = RunRunsc(
      {"do", "--memory=256m", "--log=" + log, "--", Probe(), "hog", "512"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("child killed by signal 9"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("init survived"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("hog survived"), std::string::npos) << r.out;
  // The OOM report goes to the sandbox's log (as Linux's to the kernel
  // log), never into the program's stderr.
  std::ifstream f(log);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_NE(text.str().find("out of memory: Killed process"), std::string::npos)
      << text.str();
  EXPECT_EQ(r.err.find("out of memory"), std::string::npos) << r.err;
}

// init itself is the hog: the sandbox ends as a container whose init the
// OOM killer took (137), and runsc reports it as the program's status.
TEST_F(LimitsTest, MemoryHogInitEndsTheSandboxWith137) {
  Result r =
      RunRunsc({"do", "--memory=256m", "--", Probe(), "hogself", "1024"});
  EXPECT_EQ(r.status, 137) << r.out << r.err;
  EXPECT_EQ(r.out.find("hog survived"), std::string::npos);
}

TEST_F(LimitsTest, MeminfoShowsTheMemoryLimit) {
  Result r = RunRunsc(
      {"do", "--memory=300m", "--", "/bin/sh", "-c",
       "grep -E '^Mem(Total|Free|Available):' /proc/meminfo; df -k /tmp"});
  if (r.status == 127) GTEST_SKIP() << "no /bin/sh on the host root";
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("MemTotal:         307200 kB"), std::string::npos)
      << r.out;
  std::istringstream in(r.out);
  std::string line;
  uint64_t free_kb = 0, avail_kb = 0;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string key;
    uint64_t v;
    l >> key >> v;
    if (key == "MemFree:") free_kb = v;
    if (key == "MemAvailable:") avail_kb = v;
  }
  EXPECT_GT(free_kb, 0u);
  EXPECT_LE(free_kb, 307200u);
  EXPECT_LE(avail_kb, 307200u);
  // /tmp is a tmpfs of half the sandbox's memory, as Linux's default.
  EXPECT_NE(r.out.find("153600"), std::string::npos) << r.out;
}

TEST_F(LimitsTest, CpuModelIsNotTheHosts) {
  Result r =
      RunRunsc({"do", "--", "/bin/grep", "-m1", "model name", "/proc/cpuinfo"});
  if (r.status == 127) GTEST_SKIP() << "no /bin/grep on the host root";
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Virtual CPU"), std::string::npos) << r.out;
  std::ifstream host("/proc/cpuinfo");
  std::string line;
  while (std::getline(host, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::string model = line.substr(line.find(':') + 2);
    if (!model.empty()) EXPECT_EQ(r.out.find(model), std::string::npos);
    break;
  }
}

// The attack: fork until it fails. With --pids-limit=64 the 64th task is
// refused with EAGAIN (init is the first), and the sandbox ends normally.
TEST_F(LimitsTest, ForkBombGetsEagainAtThePidsLimit) {
  Result r = RunRunsc({"do", "--pids-limit=64", "--", Probe(), "forks"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("forked 63, then errno 11"), std::string::npos) << r.out;
}

// Threads count as tasks, as in a pids cgroup.
TEST_F(LimitsTest, ThreadsCountAgainstThePidsLimit) {
  Result r = RunRunsc({"do", "--pids-limit=40", "--", Probe(), "threads"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("threads 39, then error 11"), std::string::npos)
      << r.out;
}

// The attack: threads until it fails, with no pids limit. One address
// space runs at most 1024 threads on the host (the stub's thread regions):
// the 1024th thread is refused with EAGAIN, and the process lives on.
TEST_F(LimitsTest, ThreadBombGetsEagainNotDeath) {
  Result r = RunRunsc({"do", "--pids-limit=0", "--", Probe(), "threads"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("threads 1023, then error 11"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.err.find("died"), std::string::npos) << r.err;
}

// A shell fork bomb under the pids limit, then SIGKILL to runsc: within
// 2 s the Sentry and every stub (its children) are gone from the host.
TEST_F(LimitsTest, ForkBombEndsCleanlyWhenRunscIsKilled) {
  Child c({"do", "--pids-limit=64", "--", "/bin/sh", "-c",
           "echo started; b() { b | b & }; b; sleep 100"});
  if (!c.WaitForOutput("started", 20000)) {
    GTEST_SKIP() << "no /bin/sh on the host root";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::vector<pid_t> sentry = ChildrenOf(c.pid(), "runsc-sentry");
  ASSERT_EQ(sentry.size(), 1u);
  std::vector<pid_t> stubs = ChildrenOf(sentry[0]);
  size_t live = 0;
  for (pid_t s : stubs) live += Alive(s);
  // The bomb's processes are stubs: one per guest process (at most the
  // limit), the source, and those an exec or a refused fork is replacing or
  // tearing down right now (killed, not yet reaped): bounded, not exact.
  EXPECT_GT(live, 1u);
  EXPECT_LE(live, 2 * 64u + 1);
  // Everything of the sandbox: the Sentry, the Gofer, the stubs.
  for (pid_t p : ChildrenOf(c.pid())) stubs.push_back(p);
  ASSERT_EQ(kill(c.pid(), SIGKILL), 0);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(2);
  bool gone = false;
  while (!gone && std::chrono::steady_clock::now() < deadline) {
    gone = true;
    for (pid_t s : stubs) gone = gone && !Alive(s);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "sandbox processes left on the host 2 s after "
                       "SIGKILL to runsc";
  c.Finish(2000);
}

// The attack: a guest reads the stub memory above its own mappings (the
// params block, code, request and result pages, its thread's region) and
// looks for what names the host: the Sentry's host PID and the BPF
// programs. The test knows the Sentry's PID from the host side.
TEST_F(LimitsTest, StubMemoryHoldsNoHostPidNorFilters) {
  Child c({"do", "--", Probe(), "stubscan"});
  ASSERT_TRUE(c.WaitForOutput("END-OF-STUB-DUMP", 20000));
  std::vector<pid_t> sentry = ChildrenOf(c.pid(), "runsc-sentry");
  ASSERT_EQ(sentry.size(), 1u);
  c.CloseStdin();
  Result r = c.Finish();
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string& dump = r.out;
  ASSERT_GT(dump.size(), 3 * 4096u) << r.err;  // params, code, request...
  const uint64_t pid = static_cast<uint64_t>(sentry[0]);
  size_t pid_hits = 0, filter_hits = 0;
  for (size_t off = 0; off + 8 <= dump.size(); off += 8) {
    uint64_t v;
    memcpy(&v, dump.data() + off, 8);
    if (v == pid) ++pid_hits;
    // A BPF "jeq #AUDIT_ARCH_X86_64" (code 0x15, k 0xc000003e), as both
    // stub filters start with.
    if ((v & 0xffff) == 0x15 && (v >> 32) == 0xc000003eu) ++filter_hits;
  }
  EXPECT_EQ(pid_hits, 0u) << "the Sentry's PID " << pid
                          << " is readable by the guest";
  EXPECT_EQ(filter_hits, 0u) << "seccomp programs are readable by the guest";
}

}  // namespace
