// End-to-end: a Jupyter kernel in `runsc do` (issue 20's done-when). Debian's
// ipykernel starts from a kernelspec under `runsc do --bind=DIR:uds`, with a
// connection file on the "ipc" transport in DIR: its five ZeroMQ sockets
// are host Unix sockets there (sentry/net/hostunix), and ZeroMQ's own
// signalling inside the kernel uses the Sentry's AF_UNIX sockets and
// eventfds. A jupyter_client on the host (test/e2e/jupyter_driver.py) runs
// cells: a print, an exception with its traceback, a numpy computation, a
// file written and read back, input() answered on the stdin channel, then
// a clean shutdown. The transcript must be the native run's; the times to
// kernel ready and to the first result are reported against native.
// The second case does the same on the "tcp" transport: the kernel listens
// on the sandbox's own loopback and `runsc do --publish=127.0.0.1:P:P`
// (one per ZeroMQ port) lets the client on the host reach it (issue 21).
//
// Needs /usr/bin/python3 with python3-ipykernel, python3-jupyter-client and
// python3-numpy (tools/install-deps.sh installs them); skips otherwise.
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TEST_TMPDIR");
    std::string t = std::string(base ? base : "/var/tmp") + "/jupyterXXXXXX";
    path_ = mkdtemp(t.data());
  }
  ~TempDir() { (void)!system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The value after "KEY " on a line of `text`, or -1.
double Timing(const std::string& text, const std::string& key) {
  size_t at = text.find("\n" + key + " ");
  if (at == std::string::npos) {
    if (text.rfind(key + " ", 0) != 0) return -1;
    at = 0;
  } else {
    at += 1;
  }
  return atof(text.c_str() + at + key.size() + 1);
}

// Why the kernel cannot run here, or "".
std::string SkipReason() {
  if (access(kPython, X_OK) != 0) {
    return std::string("SKIP: no ") + kPython + " on this host";
  }
  Result probe = RunNative(
      {kPython, "-c", "import ipykernel, jupyter_client, numpy, zmq"});
  if (probe.status != 0) {
    return std::string("SKIP: ") + kPython +
           " lacks ipykernel, jupyter_client or numpy (Debian's "
           "python3-ipykernel, python3-jupyter-client, python3-numpy: "
           "tools/install-deps.sh): " +
           probe.err;
  }
  if (!SandboxUnavailableReason().empty()) return SandboxUnavailableReason();
  Result unix =
      RunscDo({kPython, "-c", "import socket; socket.socket(socket.AF_UNIX)"});
  if (unix.status != 0) {
    return "SKIP: the Sentry has no AF_UNIX sockets: " + unix.err;
  }
  return "";
}

// Runs the driver natively and under runsc do, `flags` first (e.g.
// "--tcp"), and compares the transcripts; reports the timings as `what`.
void RunCellsAsNatively(const std::vector<std::string>& flags,
                        const char* what) {
  const std::string driver = Runfile("test/e2e/jupyter_driver.py");
  TempDir native_dir, sandbox_dir;
  std::vector<std::string> native_argv = {kPython, driver};
  native_argv.insert(native_argv.end(), flags.begin(), flags.end());
  std::vector<std::string> sandbox_argv = native_argv;
  native_argv.push_back(native_dir.path());
  sandbox_argv.push_back(sandbox_dir.path());
  sandbox_argv.push_back(Runsc());
  Result native = RunNative(native_argv);
  ASSERT_EQ(native.status, 0) << native.out << native.err;
  Result sandboxed = RunNative(sandbox_argv);
  EXPECT_EQ(sandboxed.status, 0) << sandboxed.err;
  EXPECT_EQ(sandboxed.out, native.out) << sandboxed.err;
  // What the transcript must hold (so that equal failures do not pass).
  for (const char* want :
       {"stdout: 'hello from the kernel\\n'",
        "error: ZeroDivisionError division by zero "
        "traceback-mentions-it=True",
        "stdout: '[12 15 18 21] 506\\n'", "stdout: 'written in a cell\\n'",
        "input_request: 'who? '", "stdout: 'hello, host\\n'",
        "host reads: 'written in a cell'", "alive after shutdown: False"}) {
    EXPECT_NE(native.out.find(want), std::string::npos) << want;
  }
  const double nr = Timing(native.err, "ready"),
               nf = Timing(native.err, "first"),
               sr = Timing(sandboxed.err, "ready"),
               sf = Timing(sandboxed.err, "first");
  std::printf(
      "jupyter kernel (%s): ready %.2f s native, %.2f s in "
      "runsc do (%.1fx); first result %.2f s native, %.2f s (%.1fx)\n",
      what, nr, sr, nr > 0 ? sr / nr : 0.0, nf, sf, nf > 0 ? sf / nf : 0.0);
  ::testing::Test::RecordProperty("ready_native_s", std::to_string(nr));
  ::testing::Test::RecordProperty("ready_sandbox_s", std::to_string(sr));
  ::testing::Test::RecordProperty("first_native_s", std::to_string(nf));
  ::testing::Test::RecordProperty("first_sandbox_s", std::to_string(sf));
}

TEST(JupyterE2eTest, IpcKernelInTheSandboxRunsCellsAsNatively) {
  std::string why = SkipReason();
  if (!why.empty()) GTEST_SKIP() << why;
  RunCellsAsNatively({}, "ipc transport, :uds bind");
}

TEST(JupyterE2eTest, TcpKernelBehindPublishedPortsRunsCellsAsNatively) {
  std::string why = SkipReason();
  if (!why.empty()) GTEST_SKIP() << why;
  RunCellsAsNatively({"--tcp"}, "tcp transport, --publish");
}

}  // namespace
}  // namespace sandbox::e2e
