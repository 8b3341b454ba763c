// Escape tests: a hostile tree and a hostile client must never reach, read,
// change or create anything outside the served root, nor crash the server.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <random>
#include <set>

#include "gofer/server/testing.h"

namespace gofer {
namespace {

using testing::Harness;
using testing::ReadAll;
using testing::TempTree;
using testing::WriteFile;

// Everything under dir: relative path -> (mode, size, content).
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    struct stat st;
    lstat(e.path().c_str(), &st);
    std::string v =
        std::to_string(st.st_mode) + ":" + std::to_string(st.st_uid) + ":" +
        std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec);
    if (S_ISREG(st.st_mode)) {
      int fd = open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
      v += ":" + ReadAll(fd);
      close(fd);
    }
    out[e.path().lexically_relative(dir).string()] = v;
  }
  return out;
}

size_t OpenFdCount() {
  size_t n = 0;
  for ([[maybe_unused]] auto& e :
       std::filesystem::directory_iterator("/proc/self/fd")) {
    ++n;
  }
  return n;
}

class EscapeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(tree_.outside() + "/secret", "outside");
    WriteFile(tree_.outside() + "/outside_only", "outside");
    std::filesystem::create_directory(Root("d"));
    WriteFile(Root("d/secret"), "inside");
    ASSERT_EQ(symlink("/etc", Root("etc").c_str()), 0);
    ASSERT_EQ(symlink(tree_.outside().c_str(), Root("abs").c_str()), 0);
    ASSERT_EQ(symlink("../outside", Root("rel").c_str()), 0);
    ASSERT_EQ(symlink("../../../../../../../..", Root("up").c_str()), 0);
    ASSERT_EQ(symlink((tree_.outside() + "/created").c_str(),
                      Root("dangling").c_str()),
              0);
    before_ = Snapshot(tree_.outside());
  }
  void TearDown() override {
    EXPECT_EQ(Snapshot(tree_.outside()), before_) << "outside was changed";
  }
  std::string Root(const std::string& rel) { return tree_.root() + "/" + rel; }

  TempTree tree_;
  std::map<std::string, std::string> before_;
};

TEST_F(EscapeTest, SymlinksOutOfTheRootAreNeverFollowed) {
  Harness h(tree_.root());
  for (const char* link : {"etc", "abs", "rel", "up"}) {
    int err;
    WalkResp r = h.Walk(h.root(), {link, "secret"}, &err);
    ASSERT_EQ(err, 0);
    EXPECT_EQ(r.status, WalkStatus::kSymlink) << link;
    ASSERT_EQ(r.inodes.size(), 1u) << link;
    Handle l = r.inodes[0].handle;
    EXPECT_TRUE(S_ISLNK(r.inodes[0].stat.mode));
    Empty e;
    UniqueFd fd;
    EXPECT_EQ(h.client().Call(OpenReq{l, O_RDONLY}, &e, &fd), ELOOP);
    EXPECT_EQ(h.client().Call(OpenReq{l, O_RDONLY | O_DIRECTORY}, &e, &fd),
              ELOOP);
    GetdentsResp gd;
    EXPECT_EQ(h.client().Call(GetdentsReq{l, 0, 10}, &gd), ENOTDIR);
    InodeResp ir;
    EXPECT_EQ(h.client().Call(CreateReq{l, "x", O_RDWR, 0644}, &ir, &fd),
              ENOTDIR);
    EXPECT_EQ(h.client().Call(MkdirReq{l, "x", 0755}, &ir), ENOTDIR);
    EXPECT_EQ(h.client().Call(UnlinkReq{l, "secret", 0}, &e), ENOTDIR);
    r = h.Walk(l, {"secret"}, &err);
    EXPECT_EQ(r.status, WalkStatus::kError);
    EXPECT_EQ(r.error, static_cast<uint32_t>(ENOTDIR));
    GetXattrResp gx;
    EXPECT_EQ(h.client().Call(GetXattrReq{l, "user.a", 10}, &gx), EPERM);
    SetAttrReq sa;
    sa.handle = l;
    sa.mask = kSetSize;
    EXPECT_EQ(h.client().Call(sa, &e), EINVAL);
    sa.mask = kSetMode;
    EXPECT_EQ(h.client().Call(sa, &e), EOPNOTSUPP);
    WalkStatResp ws;
    ASSERT_EQ(h.client().Call(WalkStatReq{h.root(), {link, "secret"}}, &ws), 0);
    EXPECT_EQ(ws.status, WalkStatus::kSymlink);
    EXPECT_EQ(ws.stats.size(), 1u);
  }
}

TEST_F(EscapeTest, DotDotIsNeverAName) {
  Harness h(tree_.root());
  Handle d = h.MustWalk({"d"});
  int err;
  for (const std::vector<std::string>& walk :
       std::vector<std::vector<std::string>>{{".."},
                                             {"d", ".."},
                                             {"d", "..", "..", "outside"},
                                             {"."},
                                             {"../outside"},
                                             {"d/../../outside"}}) {
    WalkResp r = h.Walk(h.root(), walk, &err);
    ASSERT_EQ(err, 0);
    EXPECT_EQ(r.status, WalkStatus::kError);
    EXPECT_EQ(r.error, static_cast<uint32_t>(EINVAL));
  }
  WalkResp r = h.Walk(d, {"..", "outside"}, &err);
  EXPECT_EQ(r.error, static_cast<uint32_t>(EINVAL));
  EXPECT_TRUE(r.inodes.empty());
  Empty e;
  EXPECT_EQ(h.client().Call(RenameReq{d, "secret", d, "../escaped", 0}, &e),
            EINVAL);
  EXPECT_EQ(h.client().Call(RenameReq{d, "..", h.root(), "x", 0}, &e), EINVAL);
  EXPECT_EQ(h.client().Call(UnlinkReq{d, "..", AT_REMOVEDIR}, &e), EINVAL);
  EXPECT_EQ(h.client().Call(UnlinkReq{h.root(), "../outside/secret", 0}, &e),
            EINVAL);
  InodeResp ir;
  EXPECT_EQ(
      h.client().Call(
          LinkReq{h.root(), "../outside/l", h.MustWalk({"d", "secret"})}, &ir),
      EINVAL);
  // Names with '/' or NUL are refused whole, never cut at the separator.
  UniqueFd fd;
  EXPECT_EQ(
      h.client().Call(CreateReq{h.root(), std::string("x\0y", 3), O_RDWR, 0644},
                      &ir, &fd),
      EINVAL);
  EXPECT_EQ(h.client().Call(SymlinkReq{h.root(), "d/evil", "/etc"}, &ir),
            EINVAL);
  EXPECT_EQ(h.client().Call(MkdirReq{h.root(), "d/../../outside/m", 0755}, &ir),
            EINVAL);
  EXPECT_FALSE(std::filesystem::exists(Root("x")));
  EXPECT_FALSE(std::filesystem::exists(Root("d/evil")));
  // A symlink whose target climbs out is only data: stored, never followed.
  ASSERT_EQ(
      h.client().Call(SymlinkReq{d, "climb", "../../outside/secret"}, &ir), 0);
  r = h.Walk(d, {"climb"}, &err);
  EXPECT_EQ(r.status, WalkStatus::kSymlink);
}

TEST_F(EscapeTest, CreationNeverGoesThroughASymlink) {
  Harness h(tree_.root());
  InodeResp ir;
  UniqueFd fd;
  EXPECT_EQ(
      h.client().Call(CreateReq{h.root(), "dangling", O_RDWR, 0644}, &ir, &fd),
      EEXIST);
  EXPECT_EQ(h.client().Call(MkdirReq{h.root(), "dangling", 0755}, &ir), EEXIST);
  EXPECT_EQ(
      h.client().Call(MknodReq{h.root(), "dangling", S_IFIFO | 0644}, &ir),
      EEXIST);
  EXPECT_EQ(h.client().Call(SymlinkReq{h.root(), "dangling", "x"}, &ir),
            EEXIST);
  Empty e;
  // Unlinking a symlink removes the link, not its target.
  ASSERT_EQ(h.client().Call(UnlinkReq{h.root(), "abs", 0}, &e), 0);
  EXPECT_TRUE(std::filesystem::exists(tree_.outside() + "/secret"));
  // Rename over a symlink replaces the link only.
  ASSERT_EQ(h.client().Call(RenameReq{h.root(), "d", h.root(), "rel", 0}, &e),
            ENOTDIR);
  Handle sec = h.MustWalk({"d", "secret"});
  ASSERT_EQ(h.client().Call(
                RenameReq{h.MustWalk({"d"}), "secret", h.root(), "rel", 0}, &e),
            0);
  ASSERT_EQ(h.client().Call(OpenReq{sec, O_RDWR | O_TRUNC}, &e, &fd), 0);
  EXPECT_EQ(std::filesystem::file_size(tree_.outside() + "/secret"), 7u);
  EXPECT_FALSE(std::filesystem::exists(tree_.outside() + "/created"));
}

// A racing thread atomically swaps "d" (a real directory) with "d_swap" (a
// symlink to outside) while the client walks, opens, lists and creates
// under d. The client must only ever see inside content.
TEST_F(EscapeTest, SymlinkSwappedInDuringWalks) {
  ASSERT_EQ(symlink(tree_.outside().c_str(), Root("d_swap").c_str()), 0);
  WriteFile(Root("plain"), "inside");
  ASSERT_EQ(symlink((tree_.outside() + "/secret").c_str(),
                    Root("plain_swap").c_str()),
            0);
  Harness h(tree_.root());
  std::atomic<bool> stop{false};
  std::atomic<int> swaps{0};
  std::thread racer([&] {
    int dir = open(tree_.root().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    while (!stop.load()) {
      renameat2(dir, "d", dir, "d_swap", RENAME_EXCHANGE);
      renameat2(dir, "plain", dir, "plain_swap", RENAME_EXCHANGE);
      swaps.fetch_add(1);
    }
    close(dir);
  });
  int reads = 0, symlinks = 0;
  for (int i = 0; i < 3000; ++i) {
    int err;
    WalkResp r = h.Walk(h.root(), {(i & 1) ? "d" : "plain", "secret"}, &err);
    ASSERT_EQ(err, 0);
    std::vector<Handle> to_close;
    for (auto& in : r.inodes) to_close.push_back(in.handle);
    if (r.status == WalkStatus::kSymlink) ++symlinks;
    if (!r.inodes.empty() && !S_ISLNK(r.inodes.back().stat.mode)) {
      Handle last = r.inodes.back().handle;
      Empty e;
      UniqueFd fd;
      if (S_ISREG(r.inodes.back().stat.mode) &&
          h.client().Call(OpenReq{last, O_RDONLY}, &e, &fd) == 0) {
        EXPECT_EQ(ReadAll(fd.get()), "inside");
        ++reads;
      }
      if (S_ISDIR(r.inodes[0].stat.mode)) {
        Handle d = r.inodes[0].handle;
        GetdentsResp gd;
        if (h.client().Call(GetdentsReq{d, 0, 100}, &gd) == 0) {
          for (auto& de : gd.dirents) EXPECT_NE(de.name, "outside_only");
        }
        InodeResp ir;
        if (h.client().Call(
                CreateReq{d, "made" + std::to_string(i), O_RDWR, 0600}, &ir,
                &fd) == 0) {
          to_close.push_back(ir.inode.handle);
        }
        SetAttrReq sa;
        sa.handle = last;
        sa.mask = kSetMode | kSetMtime;
        sa.mode = 0600;
        h.client().Call(sa, &e);
      }
    }
    Empty e;
    h.client().Call(CloseReq{to_close}, &e);
  }
  stop = true;
  racer.join();
  EXPECT_GT(swaps.load(), 10);
  EXPECT_GT(reads, 0);
  EXPECT_GT(symlinks, 0);
  // TearDown checks that nothing outside changed or appeared.
}

TEST_F(EscapeTest, HardLinkToAFileOutsideIsJustAFile) {
  ASSERT_EQ(link((tree_.outside() + "/secret").c_str(), Root("hl").c_str()), 0);
  Harness h(tree_.root());
  int err;
  WalkResp r = h.Walk(h.root(), {"hl"}, &err);
  ASSERT_EQ(r.status, WalkStatus::kOk);
  EXPECT_EQ(r.inodes[0].stat.nlink, 2u);
  Handle hl = r.inodes[0].handle;
  // The host put this inode in the tree: it is served, but leads nowhere.
  r = h.Walk(hl, {"x"}, &err);
  EXPECT_EQ(r.error, static_cast<uint32_t>(ENOTDIR));
  r = h.Walk(h.root(), {"hl", ".."}, &err);
  EXPECT_EQ(r.error, static_cast<uint32_t>(EINVAL));
  EXPECT_EQ(r.inodes.size(), 1u);
  // Link targets are handles of this connection only.
  InodeResp ir;
  EXPECT_EQ(h.client().Call(LinkReq{h.root(), "l2", 0}, &ir), EBADF);
  EXPECT_EQ(h.client().Call(LinkReq{h.root(), "l2", hl + 1000}, &ir), EBADF);
}

TEST_F(EscapeTest, DeviceNodesAreNeverOpened) {
  // A real device (1,3 = /dev/null) needs CAP_MKNOD; the whiteout device
  // (0,0) may be made without it and is just as much a character device.
  if (mknod(Root("null").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 &&
      mknod(Root("null").c_str(), S_IFCHR | 0666, makedev(0, 0)) != 0) {
    GTEST_SKIP() << "SKIP: mknod of a character device needs CAP_MKNOD ("
                 << strerror(errno) << ")";
  }
  Harness h(tree_.root());
  int err;
  WalkResp r = h.Walk(h.root(), {"null"}, &err);
  ASSERT_EQ(r.status, WalkStatus::kOk);
  EXPECT_TRUE(S_ISCHR(r.inodes[0].stat.mode));
  Handle n = r.inodes[0].handle;
  Empty e;
  UniqueFd fd;
  EXPECT_EQ(h.client().Call(OpenReq{n, O_RDONLY}, &e, &fd), EACCES);
  EXPECT_EQ(h.client().Call(OpenReq{n, O_WRONLY}, &e, &fd), EACCES);
  EXPECT_EQ(h.client().Call(FsyncReq{n}, &e), EINVAL);
  GetXattrResp gx;
  EXPECT_EQ(h.client().Call(GetXattrReq{n, "user.a", 10}, &gx), EPERM);
  SetAttrReq sa;
  sa.handle = n;
  sa.mask = kSetSize;
  EXPECT_EQ(h.client().Call(sa, &e), EINVAL);
}

TEST_F(EscapeTest, MountPointsInsideTheTreeAreNotCrossed) {
  std::filesystem::create_directory(Root("mnt"));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (unshare(CLONE_NEWNS) != 0 ||
        mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("tmpfs", Root("mnt").c_str(), "tmpfs", 0, nullptr) != 0) {
      _exit(77);
    }
    WriteFile(Root("mnt/file"), "mounted");
    Session s(UniqueFd(open(tree_.root().c_str(), O_PATH | O_CLOEXEC)), {});
    AttachResp a;
    if (s.Attach({}, &a) != 0) _exit(1);
    WalkResp r;
    if (s.Walk(WalkReq{a.root.handle, {"mnt", "file"}}, &r) != 0) _exit(2);
    bool ok =
        r.status == WalkStatus::kError && r.error == EXDEV && r.inodes.empty();
    _exit(ok ? 0 : 3);
  }
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    GTEST_SKIP() << "SKIP: cannot make a mount namespace (needs CAP_SYS_ADMIN)";
  }
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A hostile client: every message type with random fields, mutated valid
// encodings and random bytes. The server must answer each one, stay
// usable, keep everything inside, and release every FD at the end.
TEST_F(EscapeTest, HostileClientSendsEveryMessageWithRandomFields) {
  ASSERT_EQ(mkfifo(Root("fifo").c_str(), 0644), 0);
  size_t fds_before = OpenFdCount();
  {
    Harness h(tree_.root());
    std::mt19937_64 rng(12345);
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    std::vector<Handle> handles{h.root(), 0, 1, ~Handle{0}};
    const std::vector<std::string> names = {"d",
                                            "secret",
                                            "etc",
                                            "abs",
                                            "rel",
                                            "up",
                                            "dangling",
                                            "fifo",
                                            "new",
                                            "..",
                                            ".",
                                            "",
                                            "a/b",
                                            "/etc",
                                            "x",
                                            "y",
                                            std::string("n\0m", 3),
                                            std::string(256, 'L'),
                                            std::string(255, 'M')};
    auto name = [&] {
      if (pick(8) == 0) {
        std::string s(pick(20), '\0');
        for (char& c : s) c = static_cast<char>(rng());
        return s;
      }
      return names[pick(names.size())];
    };
    auto handle = [&] { return handles[pick(handles.size())]; };
    auto u32 = [&]() -> uint32_t {
      switch (pick(4)) {
        case 0:
          return static_cast<uint32_t>(rng());
        case 1:
          return static_cast<uint32_t>(pick(8));
        case 2:
          return kNoId;
        default:
          return static_cast<uint32_t>(pick(0x10000));
      }
    };
    auto keep = [&](Handle hd) {
      if (handles.size() < 256) handles.push_back(hd);
    };
    for (int i = 0; i < 6000; ++i) {
      std::string payload;
      uint16_t type = static_cast<uint16_t>(1 + pick(kMaxMessageType));
      switch (static_cast<MessageType>(type)) {
        case MessageType::kAttach:
          break;
        case MessageType::kWalk:
        case MessageType::kWalkStat: {
          WalkReq w{handle(), {}};
          for (size_t n = pick(5); n > 0; --n) w.names.push_back(name());
          payload = EncodeToString(w);
          break;
        }
        case MessageType::kStat:
          payload = EncodeToString(StatReq{handle()});
          break;
        case MessageType::kOpen:
          payload = EncodeToString(OpenReq{handle(), u32()});
          break;
        case MessageType::kCreate:
          payload = EncodeToString(
              CreateReq{handle(), name(), u32(), u32(), kNoId, kNoId});
          break;
        case MessageType::kMkdir:
          payload =
              EncodeToString(MkdirReq{handle(), name(), u32(), kNoId, kNoId});
          break;
        case MessageType::kMknod:
          payload =
              EncodeToString(MknodReq{handle(), name(), u32(), kNoId, kNoId});
          break;
        case MessageType::kSymlink:
          payload = EncodeToString(
              SymlinkReq{handle(), name(), name(), kNoId, kNoId});
          break;
        case MessageType::kLink:
          payload = EncodeToString(LinkReq{handle(), name(), handle()});
          break;
        case MessageType::kReadlink:
          payload = EncodeToString(ReadlinkReq{handle()});
          break;
        case MessageType::kUnlink:
          payload = EncodeToString(UnlinkReq{handle(), name(), u32()});
          break;
        case MessageType::kRename:
          payload = EncodeToString(
              RenameReq{handle(), name(), handle(), name(), u32()});
          break;
        case MessageType::kSetAttr: {
          SetAttrReq s{handle(),          u32(), u32(), u32(), u32(),
                       rng() % (1 << 20), {},    {}};
          s.atime = {static_cast<int64_t>(rng()),
                     static_cast<uint32_t>(pick(1000000000))};
          s.mtime = {static_cast<int64_t>(pick(1 << 30)), 0};
          payload = EncodeToString(s);
          break;
        }
        case MessageType::kGetdents:
          payload = EncodeToString(
              GetdentsReq{handle(), rng() % 4 ? 0 : rng(), u32()});
          break;
        case MessageType::kGetdentsPlus:
          payload = EncodeToString(GetdentsPlusReq{
              handle(), rng() % 4 ? 0 : rng(),
              pick(2) ? static_cast<uint32_t>(pick(kMaxDirentsPlus + 2))
                      : u32()});
          break;
        case MessageType::kStatfs:
          payload = EncodeToString(StatfsReq{handle()});
          break;
        case MessageType::kFsync:
          payload = EncodeToString(FsyncReq{handle()});
          break;
        case MessageType::kGetXattr:
          payload =
              EncodeToString(GetXattrReq{handle(), "user." + name(), u32()});
          break;
        case MessageType::kSetXattr:
          payload = EncodeToString(SetXattrReq{
              handle(), pick(2) ? "user.k" : name(), name(), u32()});
          break;
        case MessageType::kListXattr:
          payload = EncodeToString(ListXattrReq{handle(), u32()});
          break;
        case MessageType::kRemoveXattr:
          payload = EncodeToString(RemoveXattrReq{handle(), "user." + name()});
          break;
        case MessageType::kClose: {
          CloseReq c;
          for (size_t n = pick(3); n > 0; --n) c.handles.push_back(handle());
          payload = EncodeToString(c);
          break;
        }
        case MessageType::kBindSocket:
          payload = EncodeToString(BindSocketReq{
              handle(), name(), pick(2) ? 1u : u32(), u32(), kNoId, kNoId});
          break;
        case MessageType::kConnectSocket:
          payload =
              EncodeToString(ConnectSocketReq{handle(), pick(2) ? 1u : u32()});
          break;
      }
      // Mutate some: flip bytes, truncate, extend, or replace the type.
      switch (pick(6)) {
        case 0:
          if (!payload.empty())
            payload[pick(payload.size())] ^= static_cast<char>(1 + pick(255));
          break;
        case 1:
          payload.resize(pick(payload.size() + 1));
          break;
        case 2:
          payload.append(pick(4) + 1, static_cast<char>(rng()));
          break;
        case 3:
          if (pick(4) == 0) type = static_cast<uint16_t>(rng());
          break;
        default:
          break;
      }
      Message reply;
      int err = h.client().CallRaw(type, payload, &reply);
      ASSERT_NE(err, EPIPE) << "connection broken at message " << i;
      if (err == EPROTO) {
        ASSERT_EQ(reply.header.error, static_cast<uint32_t>(EPROTO)) << i;
      }
      ASSERT_LE(reply.fds.size(), 1u);
      if (err == 0 && (type == static_cast<uint16_t>(MessageType::kWalk))) {
        WalkResp w;
        ASSERT_TRUE(Decode(reply.payload, &w)) << i;
        for (auto& in : w.inodes) keep(in.handle);
      }
      if (err == 0 &&
          type == static_cast<uint16_t>(MessageType::kGetdentsPlus)) {
        GetdentsPlusResp g;
        ASSERT_TRUE(Decode(reply.payload, &g)) << i;
        for (auto& d : g.dirents) {
          if (d.has_inode) keep(d.inode.handle);
        }
      }
      if (err == 0 && (type == static_cast<uint16_t>(MessageType::kCreate) ||
                       type == static_cast<uint16_t>(MessageType::kMkdir) ||
                       type == static_cast<uint16_t>(MessageType::kSymlink))) {
        InodeResp ir;
        ASSERT_TRUE(Decode(reply.payload, &ir)) << i;
        keep(ir.inode.handle);
      }
    }
    // Still serving.
    AttachResp a;
    ASSERT_EQ(h.client().Call(AttachReq{}, &a), 0);
    StatResp s;
    EXPECT_EQ(h.client().Call(StatReq{a.root.handle}, &s), 0);
  }
  EXPECT_EQ(OpenFdCount(), fds_before) << "FDs leaked";
}

// Raw byte streams (valid headers with random payloads and fields, or
// plain garbage) straight onto the socket: the server answers what it can
// frame, every answer is a well-formed reply, and it ends at the garbage
// or at end of stream without crashing.
TEST_F(EscapeTest, RandomByteStreamsNeverCrashTheServer) {
  std::mt19937_64 rng(777);
  for (int round = 0; round < 200; ++round) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    UniqueFd client(sv[0]);
    std::thread server([fd = sv[1], root = tree_.root()] {
      ServeConnection(UniqueFd(fd),
                      UniqueFd(open(root.c_str(), O_PATH | O_CLOEXEC)), {});
    });
    std::string stream;
    for (int n = static_cast<int>(rng() % 8); n > 0; --n) {
      std::string payload(rng() % 64, '\0');
      for (char& c : payload) c = static_cast<char>(rng());
      Header h;
      h.type = static_cast<uint16_t>(rng() % 24);
      h.request_id = rng();
      h.payload_len = static_cast<uint32_t>(payload.size());
      switch (rng() % 8) {
        case 0:
          h.version = static_cast<uint16_t>(rng());
          break;
        case 1:
          h.flags = static_cast<uint16_t>(rng());
          break;
        case 2:
          h.num_fds = static_cast<uint16_t>(rng() % 3);
          break;
        case 3:
          h.error = static_cast<uint32_t>(rng());
          break;
        case 4:
          h.payload_len = static_cast<uint32_t>(rng());
          break;
        case 5:
          h.magic = static_cast<uint32_t>(rng());
          break;
        default:
          break;
      }
      stream += EncodeHeader(h) + payload;
    }
    if (rng() % 2) stream.resize(rng() % (stream.size() + 1));
    // The server may close early (bad magic): EPIPE then, never SIGPIPE.
    ssize_t sent =
        send(client.get(), stream.data(), stream.size(), MSG_NOSIGNAL);
    ASSERT_TRUE(sent == static_cast<ssize_t>(stream.size()) ||
                (sent < 0 && errno == EPIPE));
    shutdown(client.get(), SHUT_WR);
    for (;;) {
      Message m;
      int err = RecvMessage(client.get(), &m);
      if (err == ECONNRESET) break;
      ASSERT_EQ(err, 0) << "round " << round;
      EXPECT_EQ(m.header_error, 0);
      EXPECT_EQ(m.header.flags, kFlagReply);
      if (m.header.error != 0) {
        EXPECT_TRUE(m.payload.empty());
        EXPECT_TRUE(m.fds.empty());
      } else {  // A random request that happened to be valid.
        EXPECT_GE(m.header.type, 1);
        EXPECT_LE(m.header.type, kMaxMessageType);
      }
    }
    server.join();
  }
}

}  // namespace
}  // namespace gofer
