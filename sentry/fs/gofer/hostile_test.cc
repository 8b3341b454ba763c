// A hostile Gofer: replies of the wrong type, oversized frames, file types
// that do not exist, errnos outside Linux's range, bad directory entries.
// Each must give EIO (or the errno it should) and never crash the Sentry.
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gofer/protocol/client.h"
#include "gofer/protocol/codec.h"
#include "gofer/protocol/transport.h"
#include "gtest/gtest.h"
#include "sentry/fs/gofer/filesystem.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/host_socket.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/operations.h"
#include "sentry/vfs/xattr_ops.h"

namespace sandbox::fs::gofer {
namespace {

using Handler = std::function<void(int sock, const wire::Message& req)>;

wire::Stat DirStat(uint64_t ino) {
  wire::Stat st;
  st.dev = 1;
  st.ino = ino;
  st.mode = S_IFDIR | 0755;
  st.nlink = 2;
  return st;
}

wire::Header ReplyHeader(const wire::Message& req, uint32_t error = 0) {
  wire::Header h;
  h.type = req.header.type;
  h.flags = wire::kFlagReply;
  h.request_id = req.header.request_id;
  h.error = error;
  return h;
}

template <typename Resp>
void Reply(int sock, const wire::Message& req, const Resp& resp) {
  wire::SendMessage(sock, ReplyHeader(req), wire::EncodeToString(resp));
}

void ReplyError(int sock, const wire::Message& req, uint32_t err) {
  wire::SendMessage(sock, ReplyHeader(req, err), "");
}

class HostileGoferTest : public ::testing::Test {
 protected:
  // Serves Attach (a root directory) and Close itself; everything else
  // goes to `handler`.
  KResult<void> Start(
      Handler handler,
      std::function<void(const std::vector<uint64_t>&)> on_close = nullptr,
      Options opts = {}) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    raw_ = sv[0];
    server_ = std::thread([sock = sv[1], handler, on_close] {
      wire::UniqueFd owned(sock);
      wire::Message m;
      while (wire::RecvMessage(sock, &m) == 0) {
        switch (static_cast<wire::MessageType>(m.header.type)) {
          case wire::MessageType::kAttach: {
            wire::AttachResp a;
            a.root = {1, DirStat(1)};
            Reply(sock, m, a);
            break;
          }
          case wire::MessageType::kClose: {
            wire::CloseReq c;
            if (on_close && wire::Decode(m.payload, &c)) on_close(c.handles);
            Reply(sock, m, wire::Empty{});
            break;
          }
          default:
            handler(sock, m);
        }
      }
    });
    auto fs = GoferFilesystem::Create(
        std::make_unique<wire::GoferClient>(wire::UniqueFd(sv[0])), opts);
    if (!fs.ok()) return fs.error();
    fs_ = std::move(fs).value();
    ns_ = vfs::MountNamespace::Create(fs_, 0);
    return OkResult();
  }
  void TearDown() override {
    ns_.reset();
    if (raw_ >= 0) shutdown(raw_, SHUT_RDWR);
    fs_.reset();
    if (server_.joinable()) server_.join();
  }
  vfs::ResolveBase Base() const { return {root_, ns_->Root(), ns_->Root()}; }
  Errno StatErr(std::string_view path) {
    auto st = vfs::StatAt(Base(), path, 0);
    return st.ok() ? Errno(0) : st.error();
  }

  std::thread server_;
  int raw_ = -1;
  std::shared_ptr<GoferFilesystem> fs_;
  std::shared_ptr<vfs::MountNamespace> ns_;
  kernel::Credentials root_ = kernel::Credentials::Root();
};

// Walk replies: `make` builds the reply for the requested name.
Handler WalkWith(std::function<wire::WalkResp(const std::string&)> make) {
  return [make](int sock, const wire::Message& m) {
    wire::WalkReq req;
    if (m.header.type != static_cast<uint16_t>(wire::MessageType::kWalk) ||
        !wire::Decode(m.payload, &req) || req.names.size() != 1) {
      ReplyError(sock, m, EINVAL);
      return;
    }
    Reply(sock, m, make(req.names[0]));
  };
}

wire::WalkResp OneInode(uint64_t handle, wire::Stat st) {
  wire::WalkResp r;
  r.inodes.push_back({handle, st});
  return r;
}

TEST_F(HostileGoferTest, ReplyOfAnotherTypeIsEio) {
  ASSERT_TRUE(Start([](int sock, const wire::Message& m) {
                wire::Header h = ReplyHeader(m);
                h.type = static_cast<uint16_t>(wire::MessageType::kStat);
                wire::SendMessage(sock, h,
                                  wire::EncodeToString(wire::StatResp{}));
              }).ok());
  EXPECT_EQ(StatErr("/x"), kEIO);
  // The connection is broken now: every call fails, nothing crashes.
  EXPECT_EQ(StatErr("/y"), kEIO);
  EXPECT_FALSE(vfs::MkdirAt(Base(), "/d", 0755, 0).ok());
}

TEST_F(HostileGoferTest, HugeFrameIsEio) {
  ASSERT_TRUE(Start([](int sock, const wire::Message& m) {
                // A header announcing a 2 GiB payload.
                uint8_t hdr[32] = {};
                uint32_t magic = wire::kMagic, len = 0x7fffffff;
                uint16_t version = 1, type = m.header.type, flags = 1;
                uint64_t id = m.header.request_id;
                memcpy(hdr, &magic, 4);
                memcpy(hdr + 4, &version, 2);
                memcpy(hdr + 6, &type, 2);
                memcpy(hdr + 8, &flags, 2);
                memcpy(hdr + 16, &id, 8);
                memcpy(hdr + 24, &len, 4);
                ASSERT_EQ(write(sock, hdr, sizeof(hdr)), 32);
              }).ok());
  EXPECT_EQ(StatErr("/x"), kEIO);
  EXPECT_EQ(StatErr("/x"), kEIO);
}

TEST_F(HostileGoferTest, NonexistentFileTypeIsEio) {
  ASSERT_TRUE(Start(WalkWith([](const std::string& name) {
                wire::Stat st = DirStat(7);
                st.mode = 0170000 | 0644;  // no such S_IFMT
                return OneInode(7, st);
              })).ok());
  EXPECT_EQ(StatErr("/x"), kEIO);
  EXPECT_EQ(StatErr("/x"), kEIO);  // nothing was cached
}

TEST_F(HostileGoferTest, KnownInodeChangingTypeIsEio) {
  ASSERT_TRUE(Start(WalkWith([](const std::string& name) {
                wire::Stat st = DirStat(9);  // same dev and ino each time
                if (name == "file") st.mode = S_IFREG | 0644;
                return OneInode(name == "file" ? 11 : 10, st);
              })).ok());
  auto dir = vfs::OpenAt(Base(), "/dir", O_RDONLY | O_DIRECTORY, 0, 0);
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(StatErr("/file"), kEIO);
  EXPECT_EQ(StatErr("/dir"), Errno(0));
}

TEST_F(HostileGoferTest, ErrnosOutsideLinuxAreEio) {
  ASSERT_TRUE(Start([](int sock, const wire::Message& m) {
                wire::WalkReq req;
                ASSERT_TRUE(wire::Decode(m.payload, &req));
                const std::string& n = req.names[0];
                if (n == "restart") return ReplyError(sock, m, 512);
                if (n == "huge") return ReplyError(sock, m, 0xFFFFFFFF);
                wire::WalkResp r;
                r.status = wire::WalkStatus::kError;
                r.error = n == "enoent" ? ENOENT : 4000;
                Reply(sock, m, r);
              }).ok());
  EXPECT_EQ(StatErr("/restart"), kEIO);
  EXPECT_EQ(StatErr("/huge"), kEIO);
  EXPECT_EQ(StatErr("/weird"), kEIO);
  EXPECT_EQ(StatErr("/enoent"), kENOENT);
}

TEST_F(HostileGoferTest, BadDirectoryEntriesAreEio) {
  ASSERT_TRUE(
      Start(
          [](int sock, const wire::Message& m) {
            // An older Gofer: no GetdentsPlus, so Getdents is used.
            if (m.header.type ==
                static_cast<uint16_t>(wire::MessageType::kGetdentsPlus)) {
              return ReplyError(sock, m, EOPNOTSUPP);
            }
            wire::GetdentsReq req;
            if (!wire::Decode(m.payload, &req)) {
              return ReplyError(sock, m, EINVAL);
            }
            // The root's cookie says which hostile listing to send;
            // tests vary it through what they ask for below.
            static int call = 0;
            wire::GetdentsResp r;
            switch (call++) {
              case 0:
                r.dirents.push_back({5, 1, DT_REG, "a/b"});
                break;
              case 1:
                r.dirents.push_back({5, 1, DT_REG, ".."});
                break;
              case 2:
                r.dirents.push_back(
                    {5, std::numeric_limits<uint64_t>::max(), DT_REG, "x"});
                break;
              default:  // a cookie that never moves on
                r.dirents.push_back({5, req.cookie, DT_REG, "loop"});
                break;
            }
            Reply(sock, m, r);
          },
          nullptr, {.listing = ListingMode::kAlwaysPlus})
          .ok());
  for (int i = 0; i < 4; ++i) {
    auto f = vfs::OpenAt(Base(), "/", O_RDONLY | O_DIRECTORY, 0, 0);
    ASSERT_TRUE(f.ok());
    int entries = 0;
    auto r = (*f)->IterDirents([&](const vfs::DirEntry&) {
      ++entries;
      return entries < 100000;
    });
    ASSERT_FALSE(r.ok()) << i;
    EXPECT_EQ(r.error(), kEIO) << i;
  }
  EXPECT_FALSE(fs_->getdents_plus());
}

// GetdentsPlus replies: a bad name among entries with handles is EIO and
// every handle of the reply is closed; an inode of a type that does not
// exist is listed but not cached (its handle closed); an entry that
// claims an inode with handle 0 breaks the connection (EIO).
TEST_F(HostileGoferTest, BadGetdentsPlusRepliesAreEioAndLeakNoHandle) {
  struct Log {
    absl::Mutex mu;
    std::vector<uint64_t> closed;
  };
  auto log = std::make_shared<Log>();
  ASSERT_TRUE(
      Start(
          [](int sock, const wire::Message& m) {
            wire::GetdentsPlusReq req;
            if (m.header.type !=
                    static_cast<uint16_t>(wire::MessageType::kGetdentsPlus) ||
                !wire::Decode(m.payload, &req)) {
              return ReplyError(sock, m, ENOENT);
            }
            static int call = 0;
            wire::GetdentsPlusResp r;
            wire::Stat reg = DirStat(50);
            reg.mode = S_IFREG | 0644;
            switch (call++) {
              case 0:
                r.dirents.push_back({5, 1, DT_REG, "ok", 1, {100, reg}});
                r.dirents.push_back({6, 2, DT_REG, "a/b", 1, {101, reg}});
                break;
              case 1: {
                wire::Stat odd = reg;
                odd.ino = 51;
                odd.mode = 0170000 | 0644;  // no such type
                r.dirents.push_back({5, 1, DT_REG, "odd", 1, {102, odd}});
                break;
              }
              default:
                r.dirents.push_back({5, 1, DT_REG, "zero", 1, {0, reg}});
                break;
            }
            Reply(sock, m, r);
          },
          [log](const std::vector<uint64_t>& handles) {
            absl::MutexLock l(&log->mu);
            log->closed.insert(log->closed.end(), handles.begin(),
                               handles.end());
          },
          {.listing = ListingMode::kAlwaysPlus})
          .ok());
  auto list = [&]() -> KResult<int> {
    auto f = vfs::OpenAt(Base(), "/", O_RDONLY | O_DIRECTORY, 0, 0);
    if (!f.ok()) return f.error();
    int entries = 0;
    KResult<void> r = (*f)->IterDirents([&](const vfs::DirEntry&) {
      ++entries;
      return true;
    });
    if (!r.ok()) return r.error();
    return entries;
  };
  KResult<int> r = list();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kEIO);
  r = list();  // "odd", a short batch: the end
  ASSERT_TRUE(r.ok()) << r.error().name();
  EXPECT_EQ(*r, 3);                     // ".", "..", "odd"
  EXPECT_EQ(StatErr("/odd"), kENOENT);  // not cached: walked (ENOENT here)
  fs_->FlushCloses();
  {
    absl::MutexLock l(&log->mu);
    EXPECT_THAT(log->closed, ::testing::IsSupersetOf({100u, 101u, 102u}));
  }
  r = list();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kEIO);
}

// A name the Gofer will not cross (EXDEV: a host mount point) is an empty
// placeholder directory without a Gofer handle: renaming into it is EXDEV
// (as Linux across mounts), never a call with a made-up handle.
TEST_F(HostileGoferTest, RenameIntoAMountPointPlaceholderIsExdev) {
  ASSERT_TRUE(Start(WalkWith([](const std::string& name) {
                wire::WalkResp r;
                if (name == "mnt") {
                  r.status = wire::WalkStatus::kError;
                  r.error = EXDEV;
                  return r;
                }
                if (name == "f") {
                  wire::Stat st = DirStat(7);
                  st.mode = S_IFREG | 0644;
                  return OneInode(70, st);
                }
                r.status = wire::WalkStatus::kError;
                r.error = ENOENT;
                return r;
              })).ok());
  auto st = vfs::StatAt(Base(), "/mnt", 0);
  ASSERT_TRUE(st.ok()) << st.error().name();
  EXPECT_TRUE(S_ISDIR(st->st_mode));
  const uint64_t before = fs_->rpc_count();
  auto r = vfs::RenameAt(Base(), "/f", Base(), "/mnt/f", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Errno(EXDEV));
  // Walks only (the names), no Rename call.
  EXPECT_LE(fs_->rpc_count() - before, 2u);
}

TEST_F(HostileGoferTest, OpenWithoutFdIsEio) {
  ASSERT_TRUE(Start([](int sock, const wire::Message& m) {
                switch (static_cast<wire::MessageType>(m.header.type)) {
                  case wire::MessageType::kWalk: {
                    wire::Stat st = DirStat(3);
                    st.mode = S_IFREG | 0644;
                    return Reply(sock, m, OneInode(3, st));
                  }
                  default:  // Open: success without the donated FD
                    return Reply(sock, m, wire::Empty{});
                }
              }).ok());
  EXPECT_EQ(vfs::OpenAt(Base(), "/f", O_RDONLY, 0, 0).error(), kEIO);
}

TEST_F(HostileGoferTest, BadSymlinkAndXattrRepliesAreEio) {
  ASSERT_TRUE(Start([](int sock, const wire::Message& m) {
                switch (static_cast<wire::MessageType>(m.header.type)) {
                  case wire::MessageType::kWalk: {
                    wire::WalkReq req;
                    wire::Decode(m.payload, &req);
                    wire::Stat st = DirStat(req.names[0] == "link" ? 20 : 21);
                    if (req.names[0] == "link") {
                      st.mode = S_IFLNK | 0777;
                      wire::WalkResp r = OneInode(20, st);
                      r.status = wire::WalkStatus::kSymlink;
                      return Reply(sock, m, r);
                    }
                    st.mode = S_IFREG | 0644;
                    return Reply(sock, m, OneInode(21, st));
                  }
                  case wire::MessageType::kReadlink:
                    return Reply(sock, m,
                                 wire::ReadlinkResp{std::string("a\0b", 3)});
                  case wire::MessageType::kGetXattr:
                    // A length that is not the value's.
                    return Reply(sock, m, wire::GetXattrResp{2, "abc"});
                  case wire::MessageType::kListXattr:
                    // An empty name between two NULs.
                    return Reply(
                        sock, m,
                        wire::ListXattrResp{9, std::string("user.a\0\0\0", 9)});
                  default:
                    return ReplyError(sock, m, EINVAL);
                }
              }).ok());
  EXPECT_EQ(vfs::ReadlinkAt(Base(), "/link").error(), kEIO);
  EXPECT_EQ(vfs::GetXattrAt(Base(), "/file", true, "user.a").error(), kEIO);
  EXPECT_EQ(vfs::ListXattrAt(Base(), "/file", true).error(), kEIO);
}

// A statfs reply that cannot be a file system's: counts past their totals
// are cut, a block size of 0 shows no sizes, never a crash.
TEST_F(HostileGoferTest, StatfsRepliesAreChecked) {
  wire::StatfsResp bad;
  bad.type = 0xEF53;
  bad.bsize = 4096;
  bad.blocks = 10;
  bad.bfree = 20;
  bad.bavail = 30;
  bad.files = 5;
  bad.ffree = 9;
  bad.namelen = 100000;
  bad.frsize = 0;
  wire::StatfsResp* reply = &bad;
  ASSERT_TRUE(Start([&reply](int sock, const wire::Message& m) {
                if (m.header.type !=
                    static_cast<uint16_t>(wire::MessageType::kStatfs)) {
                  return ReplyError(sock, m, EINVAL);
                }
                if (reply == nullptr) return ReplyError(sock, m, EIO);
                Reply(sock, m, *reply);
              }).ok());
  KResult<vfs::FsStats> st = vfs::StatFsAt(Base(), "/");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->type, kV9fsMagic);
  EXPECT_EQ(st->block_size, 4096u);
  EXPECT_EQ(st->frsize, 4096u);
  EXPECT_EQ(st->blocks, 10u);
  EXPECT_EQ(st->blocks_free, 10u);
  EXPECT_EQ(st->blocks_avail, 10u);
  EXPECT_EQ(st->files, 5u);
  EXPECT_EQ(st->files_free, 5u);
  EXPECT_EQ(st->name_max, 255u);

  wire::StatfsResp no_block_size = bad;
  no_block_size.bsize = 0;
  reply = &no_block_size;
  st = vfs::StatFsAt(Base(), "/");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->blocks, 0u);
  EXPECT_EQ(st->files, 0u);
  EXPECT_NE(st->block_size, 0u);

  reply = nullptr;  // an error reply
  st = vfs::StatFsAt(Base(), "/");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->type, kV9fsMagic);
  EXPECT_EQ(st->blocks, 0u);
}

TEST(HostileAttach, RootThatIsNotADirectoryIsEio) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  std::thread server([sock = sv[1]] {
    wire::UniqueFd owned(sock);
    wire::Message m;
    if (wire::RecvMessage(sock, &m) != 0) return;
    wire::AttachResp a;
    a.root = {1, DirStat(1)};
    a.root.stat.mode = S_IFREG | 0644;
    Reply(sock, m, a);
  });
  auto fs = GoferFilesystem::Create(
      std::make_unique<wire::GoferClient>(wire::UniqueFd(sv[0])), {});
  ASSERT_FALSE(fs.ok());
  EXPECT_EQ(fs.error(), kEIO);
  server.join();
}

// Host sockets: a "socket" the Gofer donates must be one (EIO otherwise),
// and a BindSocket reply whose node is no socket breaks the connection.
TEST_F(HostileGoferTest, DonatedHostSocketsMustBeSockets) {
  Options opts;
  opts.host_sockets = true;
  ASSERT_TRUE(Start(
                  [](int sock, const wire::Message& m) {
                    wire::Stat st;
                    st.dev = 1;
                    st.ino = 7;
                    st.mode = S_IFSOCK | 0755;
                    st.nlink = 1;
                    int p[2];
                    if (pipe2(p, O_CLOEXEC) != 0) return;
                    switch (static_cast<wire::MessageType>(m.header.type)) {
                      case wire::MessageType::kWalk:
                        Reply(sock, m, OneInode(9, st));
                        break;
                      case wire::MessageType::kBindSocket: {
                        wire::BindSocketReq req;
                        (void)wire::Decode(m.payload, &req);
                        // "bad": a node that is no socket.
                        if (req.name == "bad") st.mode = S_IFREG | 0644;
                        wire::SendMessage(
                            sock, ReplyHeader(m),
                            wire::EncodeToString(wire::InodeResp{{8, st}}),
                            {p[0]});
                        break;
                      }
                      case wire::MessageType::kConnectSocket:
                        wire::SendMessage(sock, ReplyHeader(m), "", {p[0]});
                        break;
                      default:
                        ReplyError(sock, m, EINVAL);
                    }
                    close(p[0]);
                    close(p[1]);
                  },
                  nullptr, opts)
                  .ok());
  vfs::HostSockets* hs = fs_->host_sockets();
  ASSERT_NE(hs, nullptr);
  KResult<vfs::VirtualDentry> vd = vfs::Resolve(Base(), "/s", {});
  ASSERT_TRUE(vd.ok());
  EXPECT_EQ(hs->ConnectSocket(vd->dentry->inode(), SOCK_STREAM).error(), kEIO);
  vfs::Inode& root = ns_->Root().dentry->inode();
  {
    absl::MutexLock l(&fs_->tree_mu());
    EXPECT_EQ(hs->BindSocket(root, "x", {S_IFSOCK | 0755, 0, 0, 0}, SOCK_STREAM)
                  .error(),
              kEIO);
    EXPECT_EQ(
        hs->BindSocket(root, "bad", {S_IFSOCK | 0755, 0, 0, 0}, SOCK_STREAM)
            .error(),
        kEIO);
  }
}

}  // namespace
}  // namespace sandbox::fs::gofer
