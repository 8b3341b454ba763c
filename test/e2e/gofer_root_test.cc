// End-to-end: `runsc do` over the host's root served by the Gofer. Host
// programs print what they print natively; the root is read-only; --bind
// writes reach the host; PATH lookup follows execvp.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

extern char** environ;

namespace {

std::string Runfile(const std::string& rel) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (ws ? ws : "sandbox") +
         "/" + rel;
}

std::string Runsc() { return Runfile("runsc-compat/runsc"); }

struct Result {
  int status = -1;  // exit code, or 128+signal
  std::string out, err;
};

// Runs argv[0] (a path) with `env` (the caller's if null), stdin from
// /dev/null; collects stdout and stderr. `pid_out` gets the child's pid as
// soon as it is started; `on_start` (if set) runs then.
Result RunProgram(const std::vector<std::string>& args,
                  const std::vector<std::string>* env = nullptr,
                  const std::string& cwd = "") {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) abort();
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  if (env != nullptr) {
    for (const auto& e : *env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(112);
    execve(argv[0], argv.data(), env ? envp.data() : environ);
    _exit(111);
  }
  close(out[1]);
  close(err[1]);
  Result r;
  pollfd p[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    if (poll(p, 2, 120000) <= 0) {
      kill(pid, SIGKILL);
      ADD_FAILURE() << "timed out: " << args[0];
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (p[i].fd < 0 || p[i].revents == 0) continue;
      char buf[65536];
      ssize_t n = read(p[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        close(p[i].fd);
        p[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, n);
      }
    }
  }
  for (auto& q : p) {
    if (q.fd >= 0) close(q.fd);
  }
  int ws = 0;
  waitpid(pid, &ws, 0);
  r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  return r;
}

// `runsc do FLAGS... -- ARGS...`.
Result Do(const std::vector<std::string>& flags,
          const std::vector<std::string>& args,
          const std::vector<std::string>* env = nullptr,
          const std::string& cwd = "") {
  std::vector<std::string> v = {Runsc(), "do"};
  v.insert(v.end(), flags.begin(), flags.end());
  v.push_back("--");
  v.insert(v.end(), args.begin(), args.end());
  return RunProgram(v, env, cwd);
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

constexpr char kBusybox[] = "/usr/bin/busybox";

// A host directory for --bind tests (under TEST_TMPDIR: the sandbox's /tmp
// is its own tmpfs).
class HostDir {
 public:
  HostDir() {
    const char* base = getenv("TEST_TMPDIR");
    std::string t = std::string(base ? base : "/var/tmp") + "/goferXXXXXX";
    path_ = mkdtemp(t.data());
  }
  ~HostDir() { (void)!system(("rm -rf '" + path_ + "'").c_str()); }
  std::string Write(const std::string& name, const std::string& data,
                    int mode) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << data;
    chmod(p.c_str(), mode);
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class GoferRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Exists(kBusybox)) GTEST_SKIP() << "SKIP: no " << kBusybox;
  }
  // Skips when a dynamically linked program cannot start yet (PT_INTERP:
  // sentry/loader); any other failure is the test's.
  void SkipIfNoDynamicLoading(const Result& r) {
    if (r.status == 126 && r.err.find("ENOEXEC") != std::string::npos &&
        r.err.find("INTERP") != std::string::npos) {
      GTEST_SKIP() << "SKIP: dynamically linked programs need PT_INTERP: "
                   << r.err;
    }
  }
};

// The mount points directly below "/" here (the sandbox has its own /dev,
// /proc, /sys, /tmp: their lines in `ls -la /` differ by design).
std::set<std::string> TopLevelMountPoints() {
  std::set<std::string> names;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point;
    f >> id >> parent >> dev >> root >> point;
    if (point.size() > 1 && point.find('/', 1) == std::string::npos) {
      names.insert(point.substr(1));
    }
  }
  return names;
}

// `ls -l` lines minus "total N" and the lines naming `skip`.
std::string LsLinesWithout(const std::string& out,
                           const std::set<std::string>& skip) {
  std::istringstream in(out);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.rfind("total ", 0) == 0) continue;
    size_t sp = line.rfind(' ');
    std::string name = sp == std::string::npos ? line : line.substr(sp + 1);
    // "name -> target" for symlinks: the name is before the arrow.
    size_t arrow = line.find(" -> ");
    if (arrow != std::string::npos) {
      size_t start = line.rfind(' ', arrow - 1);
      name = line.substr(start + 1, arrow - start - 1);
    }
    if (skip.count(name) != 0) continue;
    kept += line + "\n";
  }
  return kept;
}

// Runs of spaces as one (ls pads columns to the widest entry, and the
// skipped mount-point lines change the widths).
std::string SqueezeSpaces(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out.push_back(c);
  }
  return out;
}

// "" if equal, else the first differing line of each.
std::string FirstDifference(const std::string& got, const std::string& want) {
  if (got == want) return "";
  std::istringstream g(got), w(want);
  std::string gl, wl;
  for (int line = 1;; ++line) {
    bool gok = static_cast<bool>(std::getline(g, gl));
    bool wok = static_cast<bool>(std::getline(w, wl));
    if (!gok && !wok) return "differ only in the final newline";
    if (gl != wl || gok != wok) {
      return "line " + std::to_string(line) + ": sandbox '" +
             (gok ? gl : "<end>") + "' native '" + (wok ? wl : "<end>") + "'";
    }
  }
}

TEST_F(GoferRootTest, StaticBusyboxSeesTheHostFiles) {
  for (const std::vector<std::string>& cmd :
       std::vector<std::vector<std::string>>{
           {kBusybox, "cat", "/etc/os-release"},
           {kBusybox, "ls", "-la", "/etc"},
           {kBusybox, "ls", "-laR", "/usr/share/doc/busybox-static"},
           {kBusybox, "find", "/usr/lib/python3.11", "-name", "*.py"},
           {kBusybox, "md5sum", kBusybox},
       }) {
    if (!Exists(cmd[2]) && !Exists(cmd.back())) continue;
    Result native = RunProgram(cmd);
    ASSERT_EQ(native.status, 0) << native.err;
    // --root=host-ro: the Gofer's view itself (the default overlay shows a
    // merged "/" with its upper layer's size and nlink 1, as Linux's).
    Result sandbox = Do({"--root=host-ro"}, cmd);
    EXPECT_EQ(sandbox.status, 0) << cmd[1] << ": " << sandbox.err;
    EXPECT_EQ(FirstDifference(sandbox.out, native.out), "")
        << cmd[1] << " " << cmd.back();
  }
}

TEST_F(GoferRootTest, LsLaRootMatchesNative) {
  Result native = RunProgram({"/bin/ls", "-la", "/"});
  ASSERT_EQ(native.status, 0) << native.err;
  Result sandbox = Do({"--root=host-ro"}, {"/bin/ls", "-la", "/"});
  SkipIfNoDynamicLoading(sandbox);
  ASSERT_EQ(sandbox.status, 0) << sandbox.err;
  std::set<std::string> mounts = TopLevelMountPoints();
  // /run: the Gofer serves an empty stand-in there (gofer/server/hidden.h).
  mounts.insert({"dev", "proc", "sys", "tmp", "run"});
  EXPECT_EQ(FirstDifference(SqueezeSpaces(LsLinesWithout(sandbox.out, mounts)),
                            SqueezeSpaces(LsLinesWithout(native.out, mounts))),
            "");
  // Byte for byte: directories without mount points. Another program (a
  // neighbour's apt-get) may change them meanwhile: the sandbox's listing
  // counts only when the native ones before and after it agree.
  for (const char* dir : {"/usr", "/etc"}) {
    for (int i = 0; i < 5; ++i) {
      native = RunProgram({"/bin/ls", "-la", dir});
      sandbox = Do({"--root=host-ro"}, {"/bin/ls", "-la", dir});
      if (RunProgram({"/bin/ls", "-la", dir}).out == native.out) break;
    }
    EXPECT_EQ(sandbox.status, 0) << sandbox.err;
    EXPECT_EQ(FirstDifference(sandbox.out, native.out), "") << dir;
  }
}

TEST_F(GoferRootTest, CatOsReleaseMatchesNative) {
  Result native = RunProgram({"/bin/cat", "/etc/os-release"});
  ASSERT_EQ(native.status, 0) << native.err;
  Result sandbox = Do({}, {"/bin/cat", "/etc/os-release"});
  SkipIfNoDynamicLoading(sandbox);
  EXPECT_EQ(sandbox.status, 0) << sandbox.err;
  EXPECT_EQ(sandbox.out, native.out);
}

// getdents order comes from the host, so find's order matches unsorted.
TEST_F(GoferRootTest, FindPythonMatchesNative) {
  if (!Exists("/usr/lib/python3.11")) GTEST_SKIP() << "SKIP: no python3.11";
  std::vector<std::string> cmd = {"/usr/bin/find", "/usr/lib/python3.11",
                                  "-name", "*.py"};
  Result native = RunProgram(cmd);
  ASSERT_EQ(native.status, 0) << native.err;
  Result sandbox = Do({}, cmd);
  SkipIfNoDynamicLoading(sandbox);
  EXPECT_EQ(sandbox.status, 0) << sandbox.err;
  EXPECT_EQ(FirstDifference(sandbox.out, native.out), "");
}

TEST_F(GoferRootTest, RootIsReadOnly) {
  const std::string probe = "/etc/runsc-gofer-e2e-probe";
  ASSERT_FALSE(Exists(probe));
  // --root=host-ro: without the overlay (overlay_test covers the default).
  Result r = Do({"--root=host-ro"}, {kBusybox, "touch", probe});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("Read-only file system"), std::string::npos) << r.err;
  r = Do({"--root=host-ro"}, {kBusybox, "mkdir", "/runsc-gofer-e2e-dir"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("Read-only file system"), std::string::npos) << r.err;
  r = Do({"--root=host-ro"}, {kBusybox, "rm", "-f", "/etc/hostname"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("Read-only file system"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(probe));
  EXPECT_FALSE(Exists("/runsc-gofer-e2e-dir"));
  // The sandbox's /tmp is its own tmpfs: writable, and not the host's.
  r = Do({}, {kBusybox, "sh", "-c",
              "echo x > /tmp/runsc-e2e && cat /tmp/runsc-e2e"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "x\n");
  EXPECT_FALSE(Exists("/tmp/runsc-e2e"));
}

TEST_F(GoferRootTest, BindWritesReachTheHost) {
  HostDir d;
  d.Write("in", "from the host\n", 0644);
  // At the same path (the default GUEST).
  Result r = Do({"--bind=" + d.path()},
                {kBusybox, "sh", "-c",
                 "cat " + d.path() + "/in && echo written > " + d.path() +
                     "/out && mkdir " + d.path() + "/sub && mv " + d.path() +
                     "/in " + d.path() + "/sub/moved"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "from the host\n");
  EXPECT_EQ(ReadFile(d.path() + "/out"), "written\n");
  EXPECT_EQ(ReadFile(d.path() + "/sub/moved"), "from the host\n");
  EXPECT_FALSE(Exists(d.path() + "/in"));
  // Elsewhere: GUEST below /tmp is made in the sandbox's tmpfs.
  r = Do({"--bind=" + d.path() + ":/tmp/data/here"},
         {kBusybox, "sh", "-c", "echo second > /tmp/data/here/out2"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ReadFile(d.path() + "/out2"), "second\n");
  // Read-only: EROFS, the host file untouched.
  r = Do({"--bind=" + d.path() + ":/tmp/ro:ro"},
         {kBusybox, "sh", "-c", "cat /tmp/ro/out; echo changed > /tmp/ro/out"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "written\n");
  EXPECT_NE(r.err.find("Read-only file system"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(d.path() + "/out"), "written\n");
}

TEST_F(GoferRootTest, BadBindFlagsAreUsageErrors) {
  HostDir d;
  d.Write("file", "x", 0644);
  struct Case {
    std::string flag, message;
  } cases[] = {
      {"--bind=", "HOST[:GUEST][:ro]"},
      {"--bind=" + d.path() + ":rel", "GUEST must be an absolute path"},
      {"--bind=" + d.path() + ":/", "cannot bind over the root"},
      {"--bind=" + d.path() + "/missing", "No such file"},
      {"--bind=" + d.path() + "/file", "not a directory"},
      {"--bind=a:/b:/c:ro", "HOST[:GUEST][:ro]"},
      {"--root=nfs", "--root=host or --root=tmpfs"},
  };
  for (const Case& c : cases) {
    Result r = Do({c.flag}, {kBusybox, "true"});
    EXPECT_EQ(r.status, 2) << c.flag;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.flag << r.err;
  }
  // A mount point that cannot be made on the read-only root: the sandbox
  // fails (125) and says why.
  Result r = Do({"--root=host-ro", "--bind=" + d.path() + ":/no-such-dir/x"},
                {kBusybox, "true"});
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("/no-such-dir/x"), std::string::npos) << r.err;
}

std::vector<std::string> EnvWithPath(const std::string* path) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (strncmp(*e, "PATH=", 5) != 0) env.push_back(*e);
  }
  if (path != nullptr) env.push_back("PATH=" + *path);
  return env;
}

TEST_F(GoferRootTest, PathLookup) {
  HostDir d;
  // Found in PATH (and in the default PATH, "/bin:/usr/bin").
  std::string usr_bin = "/usr/bin";
  std::vector<std::string> env = EnvWithPath(&usr_bin);
  Result r = Do({}, {"busybox", "echo", "found"}, &env);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "found\n");
  env = EnvWithPath(nullptr);
  r = Do({}, {"busybox", "echo", "default"}, &env);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "default\n");
  // Not found: 127.
  env = EnvWithPath(&usr_bin);
  r = Do({}, {"no-such-program-anywhere"}, &env);
  EXPECT_EQ(r.status, 127) << r.err;
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
  // Found but not executable (a 0644 file): 126.
  d.Write("tool", "data", 0644);
  std::string dir_only = "/sandbox-bin";
  env = EnvWithPath(&dir_only);
  r = Do({"--bind=" + d.path() + ":/tmp/sandbox-bin:ro"}, {"tool"}, &env);
  EXPECT_EQ(r.status, 127) << "not in PATH yet: " << r.err;
  std::string bound = "/tmp/sandbox-bin";
  env = EnvWithPath(&bound);
  r = Do({"--bind=" + d.path() + ":/tmp/sandbox-bin:ro"}, {"tool"}, &env);
  EXPECT_EQ(r.status, 126) << r.err;
  // The search goes on past EACCES: a non-executable "busybox" first.
  d.Write("busybox", "not a program", 0644);
  std::string both = "/tmp/sandbox-bin:/usr/bin";
  env = EnvWithPath(&both);
  r = Do({"--bind=" + d.path() + ":/tmp/sandbox-bin:ro"},
         {"busybox", "echo", "second"}, &env);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "second\n");
  // The lookup is in the sandbox, not on the host: a host-only PATH entry
  // (the bind's host path, not bound) does not find it.
  std::string host_dir = d.path() + "-nowhere:" + "/tmp/sandbox-bin";
  env = EnvWithPath(&host_dir);
  r = Do({}, {"busybox", "true"}, &env);
  EXPECT_EQ(r.status, 127) << r.err;
  // A name with a slash is used as is, relative to the (sandbox) cwd.
  r = Do({}, {"./busybox", "echo", "relative"}, nullptr, "/usr/bin");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "relative\n");
  r = Do({}, {"./no-such"}, nullptr, "/usr/bin");
  EXPECT_EQ(r.status, 127) << r.err;
}

}  // namespace
