// The Gofer binary end to end: unconfined under seccomp, confined (needs
// CAP_SYS_ADMIN, else SKIP), and the seccomp filter and capability drop on
// their own.
#include "gofer/gofer.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>

#include "gofer/confine.h"
#include "gofer/protocol/client.h"
#include "gofer/seccomp.h"
#include "gofer/server/node.h"
#include "gofer/server/testing.h"

namespace gofer {
namespace {

using testing::ReadAll;
using testing::TempTree;
using testing::WriteFile;

// A running gofer binary with one client per --serve.
struct Gofer {
  pid_t pid = -1;
  std::vector<std::unique_ptr<GoferClient>> clients;
};

// Starts the binary; serve_args are the PATH[:ro] parts of each --serve,
// or "@SRC[:ro]" for a --volume (one socketpair each, the gofer's end at
// FD 10, 11, ...). pre_exec runs
// in the child before exec (e.g. to set up mounts).
Gofer Start(std::vector<std::string> args,
            const std::vector<std::string>& serve_args,
            const std::function<bool()>& pre_exec = nullptr) {
  Gofer g;
  std::vector<int> theirs;
  for (size_t i = 0; i < serve_args.size(); ++i) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    g.clients.push_back(std::make_unique<GoferClient>(UniqueFd(sv[0])));
    theirs.push_back(sv[1]);
    if (!serve_args[i].empty() && serve_args[i][0] == '@') {  // A volume.
      args.push_back("--volume=" + std::to_string(10 + i) + ":" +
                     serve_args[i].substr(1));
      continue;
    }
    args.push_back("--serve=" + std::to_string(10 + i) +
                   (serve_args[i].empty() ? "" : ":" + serve_args[i]));
  }
  std::vector<char*> argv;
  const char* srcdir = std::getenv("TEST_SRCDIR");
  std::string bin = srcdir ? std::string(srcdir) + "/sandbox/gofer/gofer"
                           : "gofer/gofer";  // Run from the runfiles tree.
  argv.push_back(bin.data());
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  g.pid = fork();
  if (g.pid == 0) {
    for (size_t i = 0; i < theirs.size(); ++i) {
      if (dup2(theirs[i], 10 + static_cast<int>(i)) < 0) _exit(126);
    }
    if (pre_exec && !pre_exec()) _exit(77);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  for (int fd : theirs) close(fd);
  return g;
}

// Closes the clients and returns the gofer's wait status.
int Stop(Gofer& g) {
  g.clients.clear();
  int status = 0;
  EXPECT_EQ(waitpid(g.pid, &status, 0), g.pid);
  return status;
}

std::string ProcStatusField(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      size_t v = line.find_first_not_of(" \t", field.size() + 1);
      return line.substr(v);
    }
  }
  return "";
}

bool CanConfine() {
  pid_t pid = fork();
  if (pid == 0) {
    _exit(unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) == 0
              ? 0
              : 1);
  }
  int status;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Uses every message once on a tree with f (a file) and d (a directory);
// under seccomp a missing syscall kills the gofer and fails here.
void ExerciseEveryMessage(GoferClient& c) {
  AttachResp a;
  ASSERT_EQ(c.Call(AttachReq{}, &a), 0);
  Handle root = a.root.handle;
  WalkResp w;
  ASSERT_EQ(c.Call(WalkReq{root, {"d", "f"}}, &w), 0);
  ASSERT_EQ(w.status, WalkStatus::kOk);
  Handle d = w.inodes[0].handle, f = w.inodes[1].handle;
  WalkStatResp ws;
  ASSERT_EQ(c.Call(WalkStatReq{root, {"d", "f"}}, &ws), 0);
  StatResp st;
  ASSERT_EQ(c.Call(StatReq{f}, &st), 0);
  Empty e;
  UniqueFd fd;
  ASSERT_EQ(c.Call(OpenReq{f, O_RDWR}, &e, &fd), 0);
  EXPECT_EQ(ReadAll(fd.get()), "content");
  InodeResp ir;
  ASSERT_EQ(c.Call(CreateReq{d, "new", O_RDWR, 0600}, &ir, &fd), 0);
  ASSERT_EQ(write(fd.get(), "n", 1), 1);
  ASSERT_EQ(c.Call(MkdirReq{d, "sub", 0700}, &ir), 0);
  ASSERT_EQ(c.Call(MknodReq{d, "fifo", S_IFIFO | 0600}, &ir), 0);
  ASSERT_EQ(c.Call(OpenReq{ir.inode.handle, O_RDONLY}, &e, &fd), 0);
  ASSERT_EQ(c.Call(SymlinkReq{d, "sl", "f"}, &ir), 0);
  ReadlinkResp rl;
  ASSERT_EQ(c.Call(ReadlinkReq{ir.inode.handle}, &rl), 0);
  EXPECT_EQ(rl.target, "f");
  ASSERT_EQ(c.Call(LinkReq{d, "hard", f}, &ir), 0);
  ASSERT_EQ(c.Call(RenameReq{d, "hard", d, "hard2", RENAME_NOREPLACE}, &e), 0);
  // Flags 0: glibc calls renameat, not renameat2.
  ASSERT_EQ(c.Call(RenameReq{d, "hard2", d, "hard3", 0}, &e), 0);
  ASSERT_EQ(c.Call(RenameReq{d, "hard3", d, "hard2", 0}, &e), 0);
  ASSERT_EQ(c.Call(UnlinkReq{d, "hard2", 0}, &e), 0);
  ASSERT_EQ(c.Call(UnlinkReq{d, "sub", AT_REMOVEDIR}, &e), 0);
  SetAttrReq sa;
  sa.handle = f;
  sa.mask = kSetMode | kSetSize | kSetUid | kSetGid | kSetAtimeNow | kSetMtime;
  sa.mode = 0640;
  sa.size = 4;
  sa.uid = getuid();
  sa.gid = getgid();
  sa.mtime = {100, 0};
  ASSERT_EQ(c.Call(sa, &e), 0);
  GetdentsResp gd;
  ASSERT_EQ(c.Call(GetdentsReq{d, 0, 100}, &gd), 0);
  EXPECT_GE(gd.dirents.size(), 4u);
  GetdentsPlusResp gp;
  ASSERT_EQ(c.Call(GetdentsPlusReq{d, 0, 100}, &gp), 0);
  EXPECT_EQ(gp.dirents.size(), gd.dirents.size());
  for (const DirentPlus& de : gp.dirents) EXPECT_EQ(de.has_inode, 1) << de.name;
  StatfsResp sf;
  ASSERT_EQ(c.Call(StatfsReq{root}, &sf), 0);
  ASSERT_EQ(c.Call(FsyncReq{f}, &e), 0);
  int err = c.Call(SetXattrReq{f, "user.x", "v", 0}, &e);
  ASSERT_TRUE(err == 0 || err == EOPNOTSUPP) << err;
  GetXattrResp gx;
  err = c.Call(GetXattrReq{f, "user.x", 10}, &gx);
  ASSERT_TRUE(err == 0 || err == EOPNOTSUPP) << err;
  ListXattrResp lx;
  ASSERT_EQ(c.Call(ListXattrReq{f, 100}, &lx), 0);
  err = c.Call(RemoveXattrReq{f, "user.x"}, &e);
  ASSERT_TRUE(err == 0 || err == EOPNOTSUPP) << err;
  ASSERT_EQ(c.Call(CloseReq{{d, f}}, &e), 0);
  ASSERT_EQ(c.Call(WalkReq{root, {"etc", "passwd"}}, &w), 0);
  EXPECT_EQ(w.status, WalkStatus::kSymlink);
}

class GoferBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directory(tree_.root() + "/d");
    WriteFile(tree_.root() + "/d/f", "content");
    ASSERT_EQ(symlink("/etc", (tree_.root() + "/etc").c_str()), 0);
  }
  TempTree tree_;
};

TEST_F(GoferBinaryTest, UnconfinedUnderSeccompServesEveryMessage) {
  Gofer g = Start({"--root=" + tree_.root(), "--no-confine"}, {""});
  ExerciseEveryMessage(*g.clients[0]);
  EXPECT_EQ(ProcStatusField(g.pid, "Seccomp"), "2");
  EXPECT_EQ(ProcStatusField(g.pid, "NoNewPrivs"), "1");
  int status = Stop(g);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// The binary under seccomp: a connection is nosuid on the host unless
// ":suid" (set-id bits stripped from Create and SetAttr modes, chown to a
// foreign id EINVAL), and the process keeps neither CAP_FSETID nor, without
// ":suid", CAP_CHOWN.
TEST_F(GoferBinaryTest, UnconfinedConnectionsAreNosuidUnlessAsked) {
  Gofer g = Start({"--root=" + tree_.root(), "--no-confine"}, {"", "d:suid"});
  struct Case {
    GoferClient& c;
    std::string dir;
    uint32_t want;  // The host mode after 06755.
  } cases[] = {{*g.clients[0], tree_.root(), 0755},
               {*g.clients[1], tree_.root() + "/d", 06755}};
  for (const Case& k : cases) {
    AttachResp a;
    ASSERT_EQ(k.c.Call(AttachReq{}, &a), 0);
    InodeResp r;
    UniqueFd fd;
    ASSERT_EQ(
        k.c.Call(CreateReq{a.root.handle, "new", O_RDWR, 06755, kNoId, kNoId},
                 &r, &fd),
        0);
    struct stat st;
    ASSERT_EQ(stat((k.dir + "/new").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, k.want) << k.dir;
    Empty e;
    SetAttrReq sa;
    sa.handle = r.inode.handle;
    sa.mask = kSetMode;
    sa.mode = 04711;
    ASSERT_EQ(k.c.Call(sa, &e), 0);
    ASSERT_EQ(stat((k.dir + "/new").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, k.want == 0755 ? 0711u : 04711u) << k.dir;
    // Keeping the owner is allowed; giving the file away is not.
    sa.mask = kSetUid | kSetGid;
    sa.uid = st.st_uid;
    sa.gid = st.st_gid;
    EXPECT_EQ(k.c.Call(sa, &e), 0);
    const uint32_t other = st.st_uid + 12345;
    // ":suid" and CAP_CHOWN: as before, where the id is mapped here.
    const bool can =
        geteuid() == 0 && testing::IdMapped("/proc/self/uid_map", other);
    sa.mask = kSetUid;
    sa.uid = other;
    int err = k.c.Call(sa, &e);
    if (k.want == 0755) {
      EXPECT_EQ(err, EINVAL);
    } else if (can) {
      EXPECT_EQ(err, 0);
    }
    ASSERT_EQ(stat((k.dir + "/new").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, k.want != 0755 && can ? other : geteuid());
  }
  uint64_t eff = std::stoull(ProcStatusField(g.pid, "CapEff"), nullptr, 16);
  EXPECT_EQ(eff & (uint64_t{1} << CAP_FSETID), 0u) << std::hex << eff;
  if (geteuid() == 0) {  // The ":suid" connection needs CAP_CHOWN.
    EXPECT_NE(eff & (uint64_t{1} << CAP_CHOWN), 0u) << std::hex << eff;
  }
  int status = Stop(g);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(GoferBinaryTest, UnconfinedWithoutSuidKeepsNoChownOrFsetid) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIP: not root, no capabilities";
  Gofer g = Start({"--root=" + tree_.root(), "--no-confine"}, {""});
  AttachResp a;  // Served: the capabilities are dropped by now.
  ASSERT_EQ(g.clients[0]->Call(AttachReq{}, &a), 0);
  uint64_t eff = std::stoull(ProcStatusField(g.pid, "CapEff"), nullptr, 16);
  EXPECT_EQ(eff & ((uint64_t{1} << CAP_FSETID) | (uint64_t{1} << CAP_CHOWN)),
            0u)
      << std::hex << eff;
  EXPECT_NE(eff & (uint64_t{1} << CAP_DAC_OVERRIDE), 0u) << std::hex << eff;
  int status = Stop(g);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(GoferBinaryTest, ServesASubdirectoryReadOnly) {
  Gofer g = Start({"--root=" + tree_.root(), "--no-confine"}, {"d:ro"});
  GoferClient& c = *g.clients[0];
  AttachResp a;
  ASSERT_EQ(c.Call(AttachReq{}, &a), 0);
  EXPECT_EQ(a.read_only, 1);
  WalkResp w;
  ASSERT_EQ(c.Call(WalkReq{a.root.handle, {"f"}}, &w), 0);
  EXPECT_EQ(w.status, WalkStatus::kOk);
  InodeResp ir;
  EXPECT_EQ(c.Call(MkdirReq{a.root.handle, "x", 0755}, &ir), EROFS);
  int status = Stop(g);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(GoferBinaryTest, RefusesFdsThatAreNotStreamSockets) {
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  GoferConfig config;
  config.root = tree_.root();
  config.confine = false;
  config.seccomp = false;
  config.mounts.push_back({pipefd[0], "", false});  // RunGofer closes it.
  absl::Status s = RunGofer(config);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  close(pipefd[1]);
  EXPECT_EQ(fcntl(pipefd[0], F_GETFD), -1);  // Owned and closed.
}

TEST_F(GoferBinaryTest, RefusesBadServedPaths) {
  for (const char* path : {"etc", "d/f", "../outside", "missing"}) {
    Gofer g = Start({"--root=" + tree_.root(), "--no-confine"}, {path});
    int status = Stop(g);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << path;
  }
}

// Confined: the root is a non-recursive bind (a submount below it is not
// served), a chosen submount is served on its own connection, and the
// process runs with few capabilities under seccomp.
TEST_F(GoferBinaryTest, ConfinedServesOnlyTheRootAndChosenMounts) {
  if (!CanConfine()) {
    GTEST_SKIP() << "SKIP: cannot create namespaces (needs CAP_SYS_ADMIN)";
  }
  std::filesystem::create_directory(tree_.root() + "/hostmnt");
  std::filesystem::create_directory(tree_.root() + "/data");
  std::filesystem::create_directory(tree_.outside() + "/vol");
  WriteFile(tree_.outside() + "/vol/v", "volume");
  std::string hostmnt = tree_.root() + "/hostmnt";
  WriteFile(hostmnt + "/covered", "under the host mount");
  // In the child, before exec: a private mount namespace where a tmpfs is
  // mounted below the root, as the host's /proc is below "/".
  auto pre = [hostmnt] {
    if (unshare(CLONE_NEWNS) != 0) return false;
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      return false;
    }
    if (mount("tmpfs", hostmnt.c_str(), "tmpfs", 0, nullptr) != 0) {
      return false;
    }
    int fd = open((hostmnt + "/hidden").c_str(), O_CREAT | O_WRONLY, 0644);
    if (fd < 0) return false;
    close(fd);
    return true;
  };
  Gofer g = Start(
      {"--root=" + tree_.root(), "--bind=" + tree_.outside() + "/vol:data:ro"},
      {"", "data"}, pre);
  GoferClient& c = *g.clients[0];
  AttachResp a;
  ASSERT_EQ(c.Call(AttachReq{}, &a), 0) << "gofer failed to start";
  WalkResp w;
  // The host's submount did not come along, nor the directory it covers:
  // an empty stand-in is served there (server/hidden.h).
  for (const char* name : {"hidden", "covered"}) {
    ASSERT_EQ(c.Call(WalkReq{a.root.handle, {"hostmnt", name}}, &w), 0);
    EXPECT_EQ(w.status, WalkStatus::kError) << name;
    EXPECT_EQ(w.error, static_cast<uint32_t>(ENOENT)) << name;
    EXPECT_EQ(w.inodes.size(), 1u);
  }
  ASSERT_EQ(c.Call(WalkReq{a.root.handle, {"hostmnt"}}, &w), 0);
  ASSERT_EQ(w.status, WalkStatus::kOk);
  EXPECT_TRUE(S_ISDIR(w.inodes[0].stat.mode));
  GetdentsResp hd;
  ASSERT_EQ(c.Call(GetdentsReq{w.inodes[0].handle, 0, 10}, &hd), 0);
  for (const auto& d : hd.dirents) {
    EXPECT_TRUE(d.name == "." || d.name == "..") << d.name;
  }
  InodeResp hir;
  EXPECT_NE(c.Call(MkdirReq{w.inodes[0].handle, "x", 0755}, &hir), 0);
  // The chosen submount is not entered from the root's connection (a mount
  // boundary: the same empty stand-in)...
  ASSERT_EQ(c.Call(WalkReq{a.root.handle, {"data", "v"}}, &w), 0);
  EXPECT_EQ(w.error, static_cast<uint32_t>(ENOENT));
  EXPECT_EQ(w.inodes.size(), 1u);
  ExerciseEveryMessage(c);
  // ...but served on its own, read-only by its mount flags.
  GoferClient& v = *g.clients[1];
  AttachResp va;
  ASSERT_EQ(v.Call(AttachReq{}, &va), 0);
  EXPECT_EQ(va.read_only, 0);  // Not asked of the server: the host refuses.
  GetdentsResp gd;             // The root of a mount lists fine.
  ASSERT_EQ(v.Call(GetdentsReq{va.root.handle, 0, 10}, &gd), 0);
  ASSERT_EQ(gd.dirents.size(), 1u);
  EXPECT_EQ(gd.dirents[0].name, "v");
  ASSERT_EQ(v.Call(WalkReq{va.root.handle, {"v"}}, &w), 0);
  ASSERT_EQ(w.status, WalkStatus::kOk);
  Empty e;
  UniqueFd fd;
  ASSERT_EQ(v.Call(OpenReq{w.inodes[0].handle, O_RDONLY}, &e, &fd), 0);
  EXPECT_EQ(ReadAll(fd.get()), "volume");
  EXPECT_EQ(v.Call(OpenReq{w.inodes[0].handle, O_RDWR}, &e, &fd), EROFS);
  InodeResp ir;
  EXPECT_EQ(v.Call(MkdirReq{va.root.handle, "x", 0755}, &ir), EROFS);
  StatfsResp sf;
  ASSERT_EQ(v.Call(StatfsReq{va.root.handle}, &sf), 0);
  EXPECT_NE(sf.flags & ST_RDONLY, 0u);
  EXPECT_NE(sf.flags & ST_NODEV, 0u);
  // The process: seccomp, no_new_privs, only the file-serving capabilities.
  EXPECT_EQ(ProcStatusField(g.pid, "Seccomp"), "2");
  EXPECT_EQ(ProcStatusField(g.pid, "NoNewPrivs"), "1");
  // No connection is ":suid": DAC_OVERRIDE, DAC_READ_SEARCH, FOWNER only
  // (never CAP_FSETID; CAP_CHOWN only for ":suid").
  uint64_t eff = std::stoull(ProcStatusField(g.pid, "CapEff"), nullptr, 16);
  EXPECT_EQ(eff & ~uint64_t{0x0e}, 0u) << std::hex << eff;
  // Its root is the served tree.
  std::set<std::string> names;
  for (auto& e : std::filesystem::directory_iterator(
           "/proc/" + std::to_string(g.pid) + "/root")) {
    names.insert(e.path().filename());
  }
  EXPECT_EQ(names, (std::set<std::string>{"d", "etc", "hostmnt", "data"}));
  int status = Stop(g);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// runsc do over the host root: "/" is served, but not the host's /proc,
// /sys or /dev (submounts of "/" are left out by the non-recursive bind).
TEST(GoferHostRoot, ConfinedOverTheHostRootHidesProcSysDev) {
  if (!CanConfine()) {
    GTEST_SKIP() << "SKIP: cannot create namespaces (needs CAP_SYS_ADMIN)";
  }
  Gofer g = Start({"--root=/", "--root-ro"}, {"ro"});
  GoferClient& c = *g.clients[0];
  AttachResp a;
  ASSERT_EQ(c.Call(AttachReq{}, &a), 0) << "gofer failed to start";
  WalkResp w;
  for (const char* top : {"proc", "sys"}) {
    ASSERT_EQ(c.Call(WalkReq{a.root.handle, {top}}, &w), 0);
    if (w.status != WalkStatus::kOk) continue;  // No such directory at all.
    GetdentsResp gd;
    ASSERT_EQ(c.Call(GetdentsReq{w.inodes[0].handle, 0, 100}, &gd), 0);
    EXPECT_TRUE(gd.dirents.empty())
        << "/" << top << " has " << gd.dirents[0].name;
  }
  ASSERT_EQ(c.Call(WalkReq{a.root.handle, {"dev", "null"}}, &w), 0);
  if (w.status == WalkStatus::kOk) {
    // Only a device node on the root file system itself: never opened.
    Empty e;
    UniqueFd fd;
    EXPECT_EQ(c.Call(OpenReq{w.inodes[1].handle, O_RDONLY}, &e, &fd), EACCES);
  }
  StatfsResp sf;
  ASSERT_EQ(c.Call(StatfsReq{a.root.handle}, &sf), 0);
  EXPECT_NE(sf.flags & ST_NODEV, 0u);
  EXPECT_NE(sf.flags & ST_RDONLY, 0u);
  int status = Stop(g);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// runsc do --bind: a host directory served beside the host root (a
// volume) on its own connection, writable, while the root stays
// read-only; the volume is not reachable from the root connection's tree
// (the staging mount it was bound in is gone).
TEST_F(GoferBinaryTest, ConfinedServesAVolumeBesideTheRoot) {
  if (!CanConfine()) {
    GTEST_SKIP() << "SKIP: cannot create namespaces (needs CAP_SYS_ADMIN)";
  }
  Gofer g = Start({"--root=/", "--root-ro"}, {"ro", "@" + tree_.root()});
  GoferClient& root = *g.clients[0];
  GoferClient& vol = *g.clients[1];
  AttachResp a;
  ASSERT_EQ(vol.Call(AttachReq{}, &a), 0) << "gofer failed to start";
  EXPECT_FALSE(a.read_only);
  WalkResp w;
  ASSERT_EQ(vol.Call(WalkReq{a.root.handle, {"d", "f"}}, &w), 0);
  ASSERT_EQ(w.status, WalkStatus::kOk);
  InodeResp ir;
  UniqueFd fd;
  ASSERT_EQ(vol.Call(CreateReq{a.root.handle, "made", O_RDWR, 0600}, &ir, &fd),
            0);
  ASSERT_EQ(write(fd.get(), "v", 1), 1);
  std::ifstream made(tree_.root() + "/made");
  std::string content;
  made >> content;
  EXPECT_EQ(content, "v");
  AttachResp ra;
  ASSERT_EQ(root.Call(AttachReq{}, &ra), 0);
  EXPECT_TRUE(ra.read_only);
  EXPECT_EQ(root.Call(MkdirReq{ra.root.handle, "x", 0700}, &ir), EROFS);
  int status = Stop(g);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Runs as uid/gid 65534 (after setting up as root): can it make a user
// namespace?
bool DropToNobody() {
  return setgroups(0, nullptr) == 0 && setresgid(65534, 65534, 65534) == 0 &&
         setresuid(65534, 65534, 65534) == 0;
}

// Writes `s` to a /proc/self file; false if it cannot (async-signal-safe).
bool WriteSelfFile(const char* path, const char* s) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, s, strlen(s)) == static_cast<ssize_t>(strlen(s));
  close(fd);
  return ok;
}

// Why uid 65534 cannot make a user namespace here, or "" if it can. As the
// Gofer does (confine.cc): unshare, then map its ids (an LSM or a
// sysctl may allow the one and deny the other).
std::string WhyNoUnprivilegedUserNamespace() {
  pid_t pid = fork();
  if (pid == 0) {
    if (!DropToNobody()) _exit(1);
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) _exit(3);
    if (unshare(CLONE_NEWUSER) != 0) _exit(2);
    if (!WriteSelfFile("/proc/self/setgroups", "deny") ||
        !WriteSelfFile("/proc/self/uid_map", "0 65534 1") ||
        !WriteSelfFile("/proc/self/gid_map", "0 65534 1")) {
      _exit(3);
    }
    _exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "probe crashed";
  switch (WEXITSTATUS(status)) {
    case 0:
      return "";
    case 1:
      return "cannot switch to uid 65534 (not mapped in this sandbox)";
    case 3:
      return "uid 65534 may not map its ids in a new user namespace here";
    default:
      return "unprivileged user namespaces are not allowed here";
  }
}

// A Gofer started without privileges confines itself in a user namespace.
// RunGofer runs in a forked child (the binary and its libraries may not be
// readable by uid 65534).
TEST_F(GoferBinaryTest, ConfinedInAUserNamespaceWithoutRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIP: needs root to set up as nobody";
  std::string why = WhyNoUnprivilegedUserNamespace();
  if (!why.empty()) GTEST_SKIP() << "SKIP: " << why;
  // uid 65534 must reach the tree: open up the test's own directories, and
  // skip if a directory above them is closed (never chmod those).
  for (std::string p = std::filesystem::path(tree_.base()).parent_path();
       p != "/"; p = std::filesystem::path(p).parent_path()) {
    struct stat st;
    ASSERT_EQ(stat(p.c_str(), &st), 0);
    if ((st.st_mode & 0001) == 0) {
      GTEST_SKIP() << "SKIP: " << p << " is not searchable by uid 65534";
    }
  }
  for (const std::string& p : {tree_.base(), tree_.root()}) {
    ASSERT_EQ(chmod(p.c_str(), 0755), 0);
  }
  ASSERT_EQ(chmod((tree_.root() + "/d").c_str(), 0777), 0);
  ASSERT_EQ(chown((tree_.root() + "/d/f").c_str(), 65534, 65534), 0);
  // Two connections to the same tree: the default (nosuid) and ":suid".
  int sv[2], sv2[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv2), 0);
  Gofer g;
  g.clients.push_back(std::make_unique<GoferClient>(UniqueFd(sv[0])));
  g.clients.push_back(std::make_unique<GoferClient>(UniqueFd(sv2[0])));
  g.pid = fork();
  if (g.pid == 0) {
    g.clients.clear();
    if (!DropToNobody()) _exit(3);
    GoferConfig config;
    config.root = tree_.root();
    config.user_namespace = true;
    config.mounts.push_back({sv[1], "", false});
    config.mounts.push_back({sv2[1], "", false, /*suid=*/true});
    absl::Status s = RunGofer(config);
    if (!s.ok()) std::fprintf(stderr, "gofer: %s\n", s.ToString().c_str());
    _exit(s.ok() ? 0 : 1);
  }
  close(sv[1]);
  close(sv2[1]);
  GoferClient& c = *g.clients[0];
  AttachResp a;
  ASSERT_EQ(c.Call(AttachReq{}, &a), 0) << "gofer failed to start";
  WalkResp w;
  ASSERT_EQ(c.Call(WalkReq{a.root.handle, {"d", "f"}}, &w), 0);
  ASSERT_EQ(w.status, WalkStatus::kOk);
  Empty e;
  UniqueFd fd;
  ASSERT_EQ(c.Call(OpenReq{w.inodes[1].handle, O_RDWR}, &e, &fd), 0);
  EXPECT_EQ(ReadAll(fd.get()), "content");
  InodeResp ir;
  ASSERT_EQ(
      c.Call(CreateReq{w.inodes[0].handle, "n", O_RDWR, 0640, 0, 0}, &ir, &fd),
      0);
  struct stat st;
  ASSERT_EQ(stat((tree_.root() + "/d/n").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);  // uid 0 inside is nobody outside.
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  // Nosuid: another owner asked for gives the Gofer's own (nobody).
  ASSERT_EQ(c.Call(MkdirReq{w.inodes[0].handle, "m", 0755, 1000, 1000}, &ir),
            0);
  ASSERT_EQ(stat((tree_.root() + "/d/m").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
  // ":suid": the chown to an unmapped id fails; the half-made file is
  // removed.
  GoferClient& s = *g.clients[1];
  ASSERT_EQ(s.Call(AttachReq{}, &a), 0);
  ASSERT_EQ(s.Call(WalkReq{a.root.handle, {"d"}}, &w), 0);
  EXPECT_EQ(s.Call(MkdirReq{w.inodes[0].handle, "m2", 0755, 1000, 1000}, &ir),
            EINVAL);
  EXPECT_FALSE(std::filesystem::exists(tree_.root() + "/d/m2"));
  EXPECT_EQ(ProcStatusField(g.pid, "Seccomp"), "2");
  int status = Stop(g);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(Seccomp, KillsForbiddenCallsAndAllowsServing) {
  pid_t pid = fork();
  if (pid == 0) {
    if (!InstallSeccomp().ok()) _exit(1);
    socket(AF_INET, SOCK_STREAM, 0);  // Not allowed: SIGSYS.
    _exit(2);
  }
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGSYS);

  pid = fork();
  if (pid == 0) {
    int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (!InstallSeccomp().ok()) _exit(1);
    // openat without O_NOFOLLOW is refused; openat2 beneath a dir FD works.
    int fd = OpenBeneath(dir, "etc", O_PATH | O_NOFOLLOW, 0);
    _exit(fd >= 0 ? 0 : 3);
  }
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);

  pid = fork();
  if (pid == 0) {
    if (!InstallSeccomp().ok()) _exit(1);
    open("/etc/passwd", O_RDONLY);  // A path open that follows symlinks.
    _exit(2);
  }
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

// Host sockets (":uds"): socket(AF_UNIX) with bind/connect/fchdir/umask;
// still no other family, and nothing of it without a ":uds" connection.
TEST(Seccomp, HostSocketsAllowOnlyUnixSockets) {
  struct Case {
    bool host_sockets;
    int family;
    bool killed;
  };
  for (const Case& k :
       {Case{false, AF_UNIX, true}, Case{true, AF_INET, true},
        Case{true, AF_NETLINK, true}, Case{true, AF_UNIX, false}}) {
    pid_t pid = fork();
    if (pid == 0) {
      int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (!InstallSeccomp(k.host_sockets).ok()) _exit(1);
      int s = socket(k.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (s < 0) _exit(3);
      // What BindSocket does: fchdir, umask, bind (fails here: "/" is
      // read-only or not ours, whatever the errno), connect.
      if (fchdir(dir) != 0) _exit(4);
      umask(0);
      sockaddr_un sa = {};
      sa.sun_family = AF_UNIX;
      (void)bind(s, reinterpret_cast<sockaddr*>(&sa), sizeof(sa_family_t));
      (void)connect(s, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
      _exit(0);
    }
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (k.killed) {
      ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
      EXPECT_EQ(WTERMSIG(status), SIGSYS);
    } else {
      ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
      EXPECT_EQ(WEXITSTATUS(status), 0);
    }
  }
}

TEST(Capabilities, DropKeepsOnlyFileServing) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIP: not root, nothing to drop";
  constexpr uint64_t kServing = (uint64_t{1} << CAP_DAC_OVERRIDE) |
                                (uint64_t{1} << CAP_DAC_READ_SEARCH) |
                                (uint64_t{1} << CAP_FOWNER);
  for (bool keep_chown : {false, true}) {
    pid_t pid = fork();
    if (pid == 0) {
      if (!DropCapabilities(keep_chown).ok()) _exit(1);
      // CAP_SYS_ADMIN is gone: unshare fails.
      if (unshare(CLONE_NEWNS) == 0) _exit(2);
      uint64_t eff =
          std::stoull(ProcStatusField(getpid(), "CapEff"), nullptr, 16);
      uint64_t prm =
          std::stoull(ProcStatusField(getpid(), "CapPrm"), nullptr, 16);
      uint64_t want =
          kServing | (keep_chown ? uint64_t{1} << CAP_CHOWN : uint64_t{0});
      // Never CAP_FSETID: the host clears set-id bits as for any user.
      if (eff & (uint64_t{1} << CAP_FSETID)) _exit(3);
      _exit(eff == want && prm == want ? 0 : 4);
    }
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "keep_chown " << keep_chown;
  }
}

}  // namespace
}  // namespace gofer
