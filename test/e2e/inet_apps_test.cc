// End-to-end: real servers and clients over the sandbox's loopback (issue
// 21's done-when), each run natively and then in `runsc do`, wanting the
// same exit status, stdout and stderr:
//  - Redis: Debian's redis-server on 127.0.0.1 and `redis-benchmark -q -n
//    20000` against it (inet_redis.sh prints each completed test's name,
//    not its figures, so the comparison says that every test line came);
//  - Node: a node http server and client (inet_http.js), v4 and v6, and a
//    server started with listen(0) (dual-stack ::) reached over both;
//  - Go: a net/http server and client (inet_http.go; v4, v6 and a ":0"
//    dual-stack listener) built here with Debian's golang-go,
//    CGO_ENABLED=0, offline (GOCACHE and GOPATH in the test's temporary
//    directory, GOPROXY=off, no modules).
// Only loopback addresses. Each case skips with the reason where its
// package is absent (tools/install-deps.sh installs them all).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

std::string ReadRunfile(const std::string& rel) {
  std::ifstream f(Runfile(rel));
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TEST_TMPDIR");
    std::string t = std::string(base ? base : "/var/tmp") + "/inetXXXXXX";
    path_ = mkdtemp(t.data());
  }
  ~TempDir() { (void)!system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A TCP port on 127.0.0.1 that nobody holds now, below the ephemeral range
// (so that no outgoing connection takes it before the native run's server
// binds it); the sandbox has a loopback of its own. -1 if none was found.
int FreePort() {
  int low = 32768, high = 0;
  if (FILE* f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (fscanf(f, "%d %d", &low, &high) != 2 || low <= 12000) low = 32768;
    fclose(f);
  }
  srand(getpid() ^ time(nullptr));
  for (int i = 0; i < 100; i++) {
    const int port = 10000 + rand() % (low - 10000);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (ok) return port;
  }
  return -1;
}

// Skips unless a sandbox can start and serve the host's root.
#define SKIP_WITHOUT_SANDBOX()                                              \
  do {                                                                      \
    if (!SandboxUnavailableReason().empty()) {                              \
      GTEST_SKIP() << SandboxUnavailableReason();                           \
    }                                                                       \
    if (RunscDo({"/bin/true"}).status != 0) {                               \
      GTEST_SKIP() << "SKIP: runsc do does not serve the host's root file " \
                      "system here";                                        \
    }                                                                       \
  } while (0)

// Runs argv natively, then in `runsc do`, and wants the same results.
// Returns the native output for the case's own checks.
std::string SameAsNative(const std::vector<std::string>& argv, int timeout_ms) {
  Child n(Child::Native{}, argv);
  n.CloseStdin();
  Result native = n.Finish(timeout_ms);
  EXPECT_EQ(native.status, 0) << native.out << native.err;
  if (native.status != 0) return "";
  std::vector<std::string> args = {"do", "--"};
  args.insert(args.end(), argv.begin(), argv.end());
  Child c(args);
  c.CloseStdin();
  Result sandboxed = c.Finish(timeout_ms);
  EXPECT_EQ(sandboxed.status, native.status) << sandboxed.err;
  EXPECT_EQ(sandboxed.out, native.out) << sandboxed.err;
  EXPECT_EQ(sandboxed.err, native.err);
  return native.out;
}

TEST(InetAppsTest, RedisBenchmarkCompletesEveryTest) {
  for (const char* p : {"/usr/bin/redis-server", "/usr/bin/redis-benchmark",
                        "/usr/bin/redis-cli"}) {
    if (access(p, X_OK) != 0) {
      GTEST_SKIP() << "SKIP: no " << p
                   << " (Debian's redis-server and redis-tools: "
                      "tools/install-deps.sh)";
    }
  }
  SKIP_WITHOUT_SANDBOX();
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::string script = ReadRunfile("test/e2e/inet_redis.sh");
  ASSERT_NE(script.find("redis-benchmark"), std::string::npos);
  // bash -c SCRIPT NAME PORT N.
  const std::string out = SameAsNative(
      {"/bin/bash", "-c", script, "inet_redis", std::to_string(port), "20000"},
      /*timeout_ms=*/1000000);  // The script bounds its benchmark at 900 s.
  // What the native transcript must hold (so that equal failures do not
  // pass): the server came up, the benchmark ran its tests to the end.
  for (const char* want :
       {"server up: yes\n", "benchmark exit: 0\n", "PING_INLINE\n", "SET\n",
        "GET\n", "LRANGE_600 (first 600 elements)\n", "MSET (10 keys)\n",
        "OK\nv\n", "server exit: 0\n"}) {
    EXPECT_NE(out.find(want), std::string::npos) << want << " in " << out;
  }
}

TEST(InetAppsTest, NodeHttpServerAndClient) {
  if (access("/usr/bin/node", X_OK) != 0) {
    GTEST_SKIP() << "SKIP: no /usr/bin/node (Debian's nodejs)";
  }
  SKIP_WITHOUT_SANDBOX();
  const std::string script = ReadRunfile("test/e2e/inet_http.js");
  ASSERT_NE(script.find("createServer"), std::string::npos);
  const std::string out =
      SameAsNative({"/usr/bin/node", "-e", script}, /*timeout_ms=*/90000);
  for (const char* want :
       {"127.0.0.1 peer 200 IPv4 127.0.0.1\n", "::1 peer 200 IPv6 ::1\n",
        "127.0.0.1 after close ECONNREFUSED\n",
        "::1 after close ECONNREFUSED\n",
        "default listen, client 127.0.0.1 200 ::ffff:127.0.0.1 "
        "::ffff:127.0.0.1\n"}) {
    EXPECT_NE(out.find(want), std::string::npos) << want << " in " << out;
  }
}

TEST(InetAppsTest, GoNetHttpServerAndClient) {
  if (access("/usr/bin/go", X_OK) != 0) {
    GTEST_SKIP() << "SKIP: no /usr/bin/go (Debian's golang-go: "
                    "tools/install-deps.sh)";
  }
  TempDir dir;
  const std::string src = dir.path() + "/inet_http.go",
                    bin = dir.path() + "/inet_http";
  {
    std::ofstream f(src);
    f << ReadRunfile("test/e2e/inet_http.go");
  }
  // Offline and self-contained: no module, no proxy, caches in the tmpdir.
  Child go(Child::Native{}, {"/usr/bin/env", "CGO_ENABLED=0", "GO111MODULE=off",
                             "GOPROXY=off", "GOFLAGS=", "HOME=" + dir.path(),
                             "GOCACHE=" + dir.path() + "/gocache",
                             "GOPATH=" + dir.path() + "/gopath", "/usr/bin/go",
                             "build", "-o", bin, src});
  go.CloseStdin();
  Result build = go.Finish(/*timeout_ms=*/300000);  // A cold cache: minutes.
  ASSERT_EQ(build.status, 0) << build.out << build.err;
  SKIP_WITHOUT_SANDBOX();
  const std::string out = SameAsNative({bin}, /*timeout_ms=*/90000);
  for (const char* want :
       {"127.0.0.1 peer 200 127.0.0.1\n", "::1 peer 200 ::1\n",
        "127.0.0.1 concurrent 16 200:1048576 200:1048576\n",
        "::1 after close refused true\n",
        "default listen, client 127.0.0.1 200 127.0.0.1\n"}) {
    EXPECT_NE(out.find(want), std::string::npos) << want << " in " << out;
  }
}

}  // namespace
}  // namespace sandbox::e2e
