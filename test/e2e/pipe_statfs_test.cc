// End-to-end: host tools through `runsc do` over the host's root give the
// results they give natively for a 4 MiB write through a pipe, the
// sandbox's or runsc's own stdout (one write larger than any buffer of the
// Sentry) and for df / shutil.disk_usage
// (statfs of the overlay root, a tmpfs, and the host's root via the Gofer).
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace {

using ::sandbox::e2e::Result;
using ::sandbox::e2e::RunNative;
using ::sandbox::e2e::RunRunsc;

class PipeStatfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result r = RunRunsc({"do", "--", "/bin/true"});
    if (r.status == 125 && r.err.find("platform") != std::string::npos) {
      GTEST_SKIP() << "the systrap platform cannot run here: " << r.err;
    }
    ASSERT_EQ(r.status, 0) << r.err;
  }
  static bool Have(const char* path) { return access(path, X_OK) == 0; }
};

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

// Line `n` of `out` (0: df's header).
std::string Line(const std::string& out, int n) {
  std::istringstream in(out);
  std::string line;
  for (int i = 0; i <= n; ++i) {
    if (!std::getline(in, line)) return "";
  }
  return line;
}

// `df -P PATH`'s data line as fields: source, 1K-blocks, used, available,
// capacity, mount point.
std::vector<std::string> DfFields(const std::string& out) {
  return Words(Line(out, 1));
}

// Python's buffered stdout writes the 4 MiB in one write(2): the pipe must
// take all of it (it returned 1 MiB, and the rest was lost).
TEST_F(PipeStatfsTest, FourMiBWriteThroughAPipeToWcIsWhole) {
  if (!Have("/usr/bin/python3") || !Have("/usr/bin/wc")) {
    GTEST_SKIP() << "needs /usr/bin/python3 and /usr/bin/wc on the host";
  }
  const std::string script =
      "python3 -c \"import sys; sys.stdout.write('x'*4194304)\" | wc -c";
  Result native = RunNative({"/bin/sh", "-c", script});
  ASSERT_EQ(native.status, 0) << native.err;
  ASSERT_EQ(native.out, "4194304\n");
  Result r = RunRunsc({"do", "--", "/bin/sh", "-c", script});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, native.out);
  EXPECT_EQ(r.err, "");
}

// The same write to runsc's own stdout (a host pipe, read by this test).
TEST_F(PipeStatfsTest, FourMiBWriteToTheHostStdoutPipeIsWhole) {
  if (!Have("/usr/bin/python3")) GTEST_SKIP() << "needs /usr/bin/python3";
  Result r = RunRunsc({"do", "--", "/usr/bin/python3", "-c",
                       "import os, sys\n"
                       "n = os.write(1, b'x' * 4194304)\n"
                       "print(n, file=sys.stderr)\n"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "4194304\n");
  EXPECT_EQ(r.out.size(), 4194304u);
  EXPECT_EQ(r.out.find_first_not_of('x'), std::string::npos);
}

// df / (the overlay root: its tmpfs upper layer's figures) and df /tmp
// (a tmpfs) show sizes, in the layout of the native df.
TEST_F(PipeStatfsTest, DfOfTheRootAndTmpShowSizes) {
  if (!Have("/usr/bin/df") && !Have("/bin/df")) GTEST_SKIP() << "needs df";
  Result native = RunNative({"/bin/sh", "-c", "df -P /"});
  ASSERT_EQ(native.status, 0) << native.err;
  for (const char* path : {"/", "/tmp"}) {
    Result r =
        RunRunsc({"do", "--", "/bin/sh", "-c", std::string("df -P ") + path});
    ASSERT_EQ(r.status, 0) << path << ": " << r.err;
    EXPECT_EQ(Words(Line(r.out, 0)), Words(Line(native.out, 0)));
    std::vector<std::string> f = DfFields(r.out);
    ASSERT_EQ(f.size(), 6u) << r.out;
    EXPECT_EQ(f[0], path == std::string("/") ? "overlay" : "tmpfs");
    EXPECT_GT(std::stoull(f[1]), 0u) << r.out;
    EXPECT_LE(std::stoull(f[2]), std::stoull(f[1])) << r.out;
    EXPECT_LE(std::stoull(f[3]), std::stoull(f[1])) << r.out;
    EXPECT_EQ(f[5], path);
  }
}

// Over the host's root without the overlay, df / is the host file
// system's (the Gofer's fstatfs): the same size as natively.
TEST_F(PipeStatfsTest, DfOfTheHostRootIsTheHosts) {
  if (!Have("/usr/bin/df") && !Have("/bin/df")) GTEST_SKIP() << "needs df";
  Result native = RunNative({"/bin/sh", "-c", "df -P /"});
  ASSERT_EQ(native.status, 0) << native.err;
  Result r =
      RunRunsc({"do", "--root=host-ro", "--", "/bin/sh", "-c", "df -P /"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> nf = DfFields(native.out), f = DfFields(r.out);
  ASSERT_EQ(nf.size(), 6u) << native.out;
  ASSERT_EQ(f.size(), 6u) << r.out;
  EXPECT_EQ(f[1], nf[1]) << "sandbox:\n" << r.out << "native:\n" << native.out;
}

TEST_F(PipeStatfsTest, ShutilDiskUsageIsNotZero) {
  if (!Have("/usr/bin/python3")) GTEST_SKIP() << "needs /usr/bin/python3";
  Result r = RunRunsc({"do", "--", "/usr/bin/python3", "-c",
                       "import shutil\n"
                       "for p in ('/', '/tmp'):\n"
                       "    u = shutil.disk_usage(p)\n"
                       "    print(p, u.total > 0, 0 <= u.free <= u.total)\n"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "/ True True\n/tmp True True\n");
}

}  // namespace
