// End-to-end: host Unix sockets through a bind mount marked ":uds" (issue
// 20 item 6). A guest client reaches a host server's socket in the bound
// directory, a host client reaches a server the guest bound there; and
// nothing else of the host is reachable by a socket: without ":uds" the
// host's socket refuses the guest, a symlink in the bound directory that
// points outside leads to no host socket, and abstract names are the
// sandbox's own.
//
// Host-side sockets are bound and connected through /proc/self/fd/N/NAME
// (the test's temporary directory is too long for sun_path); the guest
// uses /h/NAME. Needs the host's /usr/bin/python3 and `runsc do` serving
// the host's root; skips otherwise.
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

// Connects to argv[1] ('@' first: an abstract name), sends "ping", prints
// the reply, or the exception's class name.
constexpr char kClient[] = R"(
import socket, sys
name = sys.argv[1]
if name.startswith('@'):
    name = '\0' + name[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(name)
except OSError as e:
    print(type(e).__name__)
    sys.exit(0)
s.sendall(b'ping')
print(s.recv(100).decode())
print('peer', repr(s.getpeername()))
)";

// Binds argv[1], listens, prints "ready", answers one connection with
// "pong:" and what it got, and reports the names it sees.
constexpr char kServer[] = R"(
import os, socket, stat, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(1)
st = os.stat(sys.argv[1])
print('socket node', stat.S_ISSOCK(st.st_mode), oct(stat.S_IMODE(st.st_mode)))
print('ready', flush=True)
c, peer = s.accept()
data = c.recv(100)
c.sendall(b'pong:' + data)
print('got', data.decode(), 'name', repr(c.getsockname()), 'peer', repr(peer))
c.close()
s.close()
)";

// Both ends in the sandbox through a host socket in /h: a forked client
// connects to the parent's listener there (the connection goes through the
// host); stream and seqpacket; then SCM_RIGHTS over it is refused
// (the sandbox's descriptors never reach the host).
constexpr char kBothInside[] = R"(
import os, socket, sys
for kind, name in ((socket.SOCK_STREAM, 'stream'),
                   (socket.SOCK_SEQPACKET, 'seqpacket')):
    path = '/h/both-%s.sock' % name
    srv = socket.socket(socket.AF_UNIX, kind)
    srv.bind(path)
    srv.listen(1)
    pid = os.fork()
    if pid == 0:
        c = socket.socket(socket.AF_UNIX, kind)
        c.connect(path)
        c.sendall(b'from child')
        c.recv(10)
        os._exit(0)
    conn, _ = srv.accept()
    print(name, conn.recv(100).decode())
    try:
        socket.send_fds(conn, [b'x'], [sys.stdout.fileno()])
        print('fds sent')
    except OSError as e:
        print('send_fds:', type(e).__name__)
    conn.sendall(b'bye')
    os.waitpid(pid, 0)
)";

// A fresh host directory with a short /proc/self/fd path to it.
class HostDir {
 public:
  explicit HostDir(const char* tag) {
    const char* base = getenv("TEST_TMPDIR");
    std::string t =
        std::string(base ? base : "/var/tmp") + "/" + tag + "XXXXXX";
    path_ = mkdtemp(t.data());
    chmod(path_.c_str(), 0755);
    fd_ = open(path_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  }
  ~HostDir() {
    close(fd_);
    (void)!system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }
  // A sun_path for `name` in this directory.
  std::string Sock(const std::string& name) const {
    return "/proc/self/fd/" + std::to_string(fd_) + "/" + name;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

sockaddr_un Addr(const std::string& path, socklen_t* len, bool abstract) {
  sockaddr_un sa = {};
  sa.sun_family = AF_UNIX;
  size_t off = abstract ? 1 : 0;
  std::memcpy(sa.sun_path + off, path.data(), path.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + off +
                                path.size() + (abstract ? 0 : 1));
  return sa;
}

// A host server: listens on `path` and answers one connection with
// "echo:" and the bytes received.
class HostServer {
 public:
  explicit HostServer(const std::string& path, bool abstract = false) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t len;
    sockaddr_un sa = Addr(path, &len, abstract);
    ok_ = bind(fd_, reinterpret_cast<sockaddr*>(&sa), len) == 0 &&
          listen(fd_, 4) == 0;
  }
  ~HostServer() {
    if (thread_.joinable()) thread_.join();
    close(fd_);
  }
  bool ok() const { return ok_; }
  // Answers (in a thread) the first connection within `ms`.
  void Serve(int ms = 30000) {
    thread_ = std::thread([this, ms] {
      pollfd p = {fd_, POLLIN, 0};
      if (poll(&p, 1, ms) != 1) return;
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      connections_++;
      char buf[100];
      ssize_t n = read(c, buf, sizeof(buf));
      if (n > 0) {
        std::string reply = "echo:" + std::string(buf, n);
        (void)!write(c, reply.data(), reply.size());
      }
      close(c);
    });
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // Whether a connection is waiting (not yet accepted).
  bool Pending() const {
    pollfd p = {fd_, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
  }
  int connections() const { return connections_; }

 private:
  int fd_ = -1;
  bool ok_ = false;
  std::thread thread_;
  int connections_ = 0;
};

class HostUdsTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (IsSkipped()) return;
    if (access(kPython, X_OK) != 0) {
      GTEST_SKIP() << "SKIP: no " << kPython << " on this host";
    }
    if (RunscDo({"/bin/true"}).status != 0) {
      GTEST_SKIP() << "SKIP: runsc do does not serve the host's root file "
                      "system here (needed for python3)";
    }
    Result unix = RunscDo(
        {kPython, "-c", "import socket; socket.socket(socket.AF_UNIX)"});
    if (unix.status != 0) {
      GTEST_SKIP() << "SKIP: the Sentry has no AF_UNIX sockets: " << unix.err;
    }
  }
  HostDir dir_{"uds"};
  HostDir outside_{"udsout"};
};

TEST_F(HostUdsTest, GuestClientReachesHostServer) {
  HostServer server(dir_.Sock("s.sock"));
  ASSERT_TRUE(server.ok());
  server.Serve();
  Result r = RunRunsc({"do", "--bind=" + dir_.path() + ":/h:uds", "--", kPython,
                       "-c", kClient, "/h/s.sock"});
  server.Join();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "echo:ping\npeer '/h/s.sock'\n") << r.err;
  EXPECT_EQ(server.connections(), 1);
}

TEST_F(HostUdsTest, HostClientReachesGuestServer) {
  Child c({"do", "--bind=" + dir_.path() + ":/h:uds", "--", kPython, "-c",
           kServer, "/h/srv.sock"});
  c.CloseStdin();
  ASSERT_TRUE(c.WaitForOutput("ready\n", 30000));
  // The node is a host socket in the host directory.
  struct stat st;
  ASSERT_EQ(lstat((dir_.path() + "/srv.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode)) << std::oct << st.st_mode;
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t len;
  sockaddr_un sa = Addr(dir_.Sock("srv.sock"), &len, false);
  ASSERT_EQ(connect(s, reinterpret_cast<sockaddr*>(&sa), len), 0)
      << strerror(errno);
  ASSERT_EQ(write(s, "hi", 2), 2);
  char buf[64] = {};
  pollfd p = {s, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 30000), 1);
  EXPECT_EQ(read(s, buf, sizeof(buf)), 7);
  EXPECT_STREQ(buf, "pong:hi");
  close(s);
  Result r = c.Finish(30000);
  EXPECT_EQ(r.status, 0) << r.err;
  // The umask (022) applies as to any bind; the names are the guest's.
  EXPECT_EQ(r.out,
            "socket node True 0o755\nready\n"
            "got hi name '/h/srv.sock' peer ''\n")
      << r.err;
}

TEST_F(HostUdsTest, BothEndsInTheSandboxThroughTheHost) {
  Result r = RunRunsc({"do", "--bind=" + dir_.path() + ":/h:uds", "--", kPython,
                       "-c", kBothInside});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "stream from child\nsend_fds: PermissionError\n"
            "seqpacket from child\nsend_fds: PermissionError\n")
      << r.err;
  struct stat st;
  ASSERT_EQ(lstat((dir_.path() + "/both-stream.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
}

TEST_F(HostUdsTest, WithoutUdsTheHostSocketRefuses) {
  HostServer server(dir_.Sock("s.sock"));
  ASSERT_TRUE(server.ok());
  Result r = RunRunsc({"do", "--bind=" + dir_.path() + ":/h", "--", kPython,
                       "-c", kClient, "/h/s.sock"});
  EXPECT_EQ(r.status, 0) << r.err;
  // As for a socket file with nobody bound in this kernel.
  EXPECT_EQ(r.out, "ConnectionRefusedError\n") << r.err;
  EXPECT_FALSE(server.Pending());
}

TEST_F(HostUdsTest, SymlinkOutOfTheBoundDirectoryReachesNoHostSocket) {
  HostServer victim(outside_.Sock("victim.sock"));
  ASSERT_TRUE(victim.ok());
  // Absolute and relative symlinks to the socket outside.
  ASSERT_EQ(symlink((outside_.path() + "/victim.sock").c_str(),
                    (dir_.path() + "/abs").c_str()),
            0);
  std::string rel = "../" +
                    outside_.path().substr(outside_.path().rfind('/') + 1) +
                    "/victim.sock";
  ASSERT_EQ(symlink(rel.c_str(), (dir_.path() + "/rel").c_str()), 0);
  for (const char* name : {"/h/abs", "/h/rel"}) {
    SCOPED_TRACE(name);
    Result r = RunRunsc({"do", "--bind=" + dir_.path() + ":/h:uds", "--",
                         kPython, "-c", kClient, name});
    EXPECT_EQ(r.status, 0) << r.err;
    // The guest follows the link in its own tree: either nothing there, or
    // the host root's node, which is not a ":uds" mount.
    EXPECT_TRUE(r.out == "ConnectionRefusedError\n" ||
                r.out == "FileNotFoundError\n")
        << r.out << r.err;
    EXPECT_FALSE(victim.Pending());
  }
}

TEST_F(HostUdsTest, AbstractNamesNeverReachTheHost) {
  const std::string name = "hostuds-e2e-" + std::to_string(getpid());
  HostServer host(name, /*abstract=*/true);
  ASSERT_TRUE(host.ok());
  Result r = RunRunsc({"do", "--bind=" + dir_.path() + ":/h:uds", "--", kPython,
                       "-c", kClient, "@" + name});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "ConnectionRefusedError\n") << r.err;
  EXPECT_FALSE(host.Pending());
}

}  // namespace
}  // namespace sandbox::e2e
