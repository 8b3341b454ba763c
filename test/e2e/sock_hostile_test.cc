// End-to-end: a hostile AF_UNIX guest (programs/sock_hostile.c) under
// `runsc do`, at scale: descriptors sent around cycles of sockets and all
// closed, datagram floods with blocked senders killed, 10,000 connects to a
// listener with backlog 1 (and blocking ones from threads, interrupted and
// refused), garbage msghdr/cmsg/address lengths, and threads racing to
// pass, receive, dup and close a shared pool of sockets. The sandbox must
// survive, exit cleanly, answer as Linux does (the program checks), and
// hold nothing afterwards: the program compares /proc/net/unix and
// /proc/self/fd inside, and the Sentry's own counters (the debug log's
// "unix sockets at exit" line, written after every task is gone) must all
// be zero. The same program runs natively first, so a check that Linux
// itself fails is seen as such.
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
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
using ::sandbox::e2e::RunRunsc;

std::string TmpDir() {
  const char* d = getenv("TEST_TMPDIR");
  return d != nullptr ? d : "/tmp";
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The text of the only file in `dir` (the debug log --debug-log=DIR
// makes), or "".
std::string OnlyFileIn(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return "";
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  }
  closedir(d);
  if (names.size() != 1) return "";
  return ReadFile(dir + "/" + names[0]);
}

// A fresh empty directory for one run's debug log.
std::string FreshDir(const std::string& tag) {
  static int n = 0;
  std::string dir = TmpDir() + "/sock_hostile." + tag + "." +
                    std::to_string(getpid()) + "." + std::to_string(n++);
  EXPECT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  return dir;
}

constexpr char kCleanExit[] =
    "unix sockets at exit: open=0 endpoints=0 inflight_files=0 "
    "inflight_sockets=0";

class SockHostileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Result r = RunRunsc({"do", "--root=tmpfs", "--", Program("true")});
    if (r.status != 0) {
      skip_reason_ = new std::string("the sandbox cannot run here: " + r.err);
    }
  }
  void SetUp() override {
    if (skip_reason_ != nullptr) GTEST_SKIP() << *skip_reason_;
  }
  static std::string* skip_reason_;
};
std::string* SockHostileTest::skip_reason_ = nullptr;

// Natively first: every check the program makes holds on Linux.
TEST_F(SockHostileTest, NativeRunPasses) {
  Child c(Child::Native{}, {Program("sock_hostile"), "all", "1", "--no-proc"});
  Result r = c.Finish(120000);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("sock_hostile ok"), std::string::npos) << r.out;
}

// All four attacks at three times the conformance test's scale, then the
// leak checks inside and the Sentry's counters after the last task.
TEST_F(SockHostileTest, SandboxSurvivesAndLeaksNothing) {
  const std::string dir = FreshDir("all");
  const auto start = std::chrono::steady_clock::now();
  Result r = RunRunsc({"do", "--root=tmpfs", "--debug-log=" + dir, "--",
                       Program("sock_hostile"), "all", "3"});
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("sock_hostile ok"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unix sockets before=0 after=0"), std::string::npos)
      << r.out;
  // The sandbox's diagnostics stay off the guest's stderr.
  EXPECT_EQ(r.err, "");
  const std::string log = OnlyFileIn(dir);
  EXPECT_NE(log.find(kCleanExit), std::string::npos)
      << "the Sentry's unix counters after the last task:\n"
      << log.substr(log.find("unix sockets at exit") == std::string::npos
                        ? (log.size() > 2000 ? log.size() - 2000 : 0)
                        : log.find("unix sockets at exit"));
  EXPECT_LT(secs, 240) << "took " << secs << " s";
}

// The guest exits with cycles in flight, sockets open, datagram senders
// and connectors blocked in threads: exit_group and the kernel's teardown
// must release everything, and the sandbox still exits 0.
TEST_F(SockHostileTest, AbandonedStateIsReleasedAtExit) {
  const std::string dir = FreshDir("abandon");
  Result r = RunRunsc({"do", "--root=tmpfs", "--debug-log=" + dir, "--",
                       Program("sock_hostile"), "abandon"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("abandoning"), std::string::npos) << r.out;
  const std::string log = OnlyFileIn(dir);
  EXPECT_NE(log.find(kCleanExit), std::string::npos)
      << log.substr(log.size() > 2000 ? log.size() - 2000 : 0);
}

// Each attack alone in its own sandbox: each leaves the counters at zero.
TEST_F(SockHostileTest, EachAttackAlone) {
  for (const char* what : {"cycles", "flood", "storm", "garbage", "race"}) {
    const std::string dir = FreshDir(what);
    const std::string prog = Program("sock_hostile");
    Result r = RunRunsc(
        {"do", "--root=tmpfs", "--debug-log=" + dir, "--", prog, what, "1"});
    EXPECT_EQ(r.status, 0) << what << ": " << r.out << r.err;
    EXPECT_NE(r.out.find("sock_hostile ok"), std::string::npos)
        << what << ": " << r.out;
    EXPECT_NE(OnlyFileIn(dir).find(kCleanExit), std::string::npos) << what;
  }
}

}  // namespace
