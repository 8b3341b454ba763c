#include "gofer/protocol/transport.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "gofer/protocol/client.h"
#include "gofer/protocol/codec.h"
#include "gtest/gtest.h"

namespace gofer {
namespace {

struct Pair {
  UniqueFd a, b;
};
Pair MakePair() {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

size_t OpenFdCount() {
  size_t n = 0;
  for ([[maybe_unused]] auto& e :
       std::filesystem::directory_iterator("/proc/self/fd")) {
    ++n;
  }
  return n;
}

TEST(Transport, MessageWithFdArrivesWhole) {
  Pair p = MakePair();
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  UniqueFd r(pipefd[0]), w(pipefd[1]);
  Header h;
  h.type = 5;
  h.request_id = 77;
  std::string payload(300000, 'x');  // Larger than one socket buffer write.
  std::thread sender(
      [&] { EXPECT_EQ(SendMessage(p.a.get(), h, payload, {w.get()}), 0); });
  Message m;
  ASSERT_EQ(RecvMessage(p.b.get(), &m), 0);
  sender.join();
  EXPECT_EQ(m.header_error, 0);
  EXPECT_EQ(m.header.request_id, 77u);
  EXPECT_EQ(m.payload, payload);
  ASSERT_EQ(m.fds.size(), 1u);
  ASSERT_EQ(write(m.fds[0].get(), "hi", 2), 2);
  char buf[2];
  ASSERT_EQ(read(r.get(), buf, 2), 2);
  EXPECT_EQ(std::memcmp(buf, "hi", 2), 0);
  EXPECT_TRUE(fcntl(m.fds[0].get(), F_GETFD) & FD_CLOEXEC);
}

TEST(Transport, EndOfStreamAndPartialHeader) {
  Pair p = MakePair();
  Message m;
  ASSERT_EQ(write(p.a.get(), "GOFR\x01", 5), 5);
  p.a.reset();
  EXPECT_EQ(RecvMessage(p.b.get(), &m), ECONNRESET);
}

TEST(Transport, BadMagicAndOversizeLoseFraming) {
  Pair p = MakePair();
  Header h;
  h.magic = 1;
  std::string b = EncodeHeader(h);
  ASSERT_EQ(write(p.a.get(), b.data(), b.size()),
            static_cast<ssize_t>(b.size()));
  Message m;
  EXPECT_EQ(RecvMessage(p.b.get(), &m), EPROTO);
  h = Header();
  h.payload_len = 0xFFFFFFFF;
  h.request_id = 12;
  b = EncodeHeader(h);
  ASSERT_EQ(write(p.a.get(), b.data(), b.size()),
            static_cast<ssize_t>(b.size()));
  EXPECT_EQ(RecvMessage(p.b.get(), &m), EMSGSIZE);
  EXPECT_EQ(m.header.request_id, 12u);
}

TEST(Transport, UndeclaredFdsAreRefusedAndClosed) {
  Pair p = MakePair();
  size_t before = OpenFdCount();
  {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    // Claim no FDs in the header but attach one: the receiver must flag it.
    Header h;
    std::string head = EncodeHeader(h);
    iovec iov{head.data(), head.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
    ASSERT_GT(sendmsg(p.a.get(), &msg, 0), 0);
    close(fd);
    Message m;
    ASSERT_EQ(RecvMessage(p.b.get(), &m), 0);
    EXPECT_EQ(m.header_error, EINVAL);
  }
  EXPECT_EQ(OpenFdCount(), before);
}

// A fake server that answers the next request with the given header fields.
void FakeReply(int sock, uint64_t id_delta, uint16_t type_override,
               std::string payload, int fd) {
  Message m;
  ASSERT_EQ(RecvMessage(sock, &m), 0);
  Header h;
  h.type = type_override ? type_override : m.header.type;
  h.flags = kFlagReply;
  h.request_id = m.header.request_id + id_delta;
  std::vector<int> fds;
  if (fd >= 0) fds.push_back(fd);
  SendMessage(sock, h, payload, fds);
}

TEST(Client, RejectsMismatchedReplies) {
  Pair p = MakePair();
  GoferClient client(std::move(p.a));
  StatResp stat;
  std::thread t([&] { FakeReply(p.b.get(), 1, 0, "", -1); });
  EXPECT_EQ(client.Call(StatReq{1}, &stat), EPROTO);
  t.join();
  // Broken for good afterwards.
  EXPECT_EQ(client.Call(StatReq{1}, &stat), EPIPE);
}

TEST(Client, RejectsUnexpectedFdAndBadPayload) {
  size_t before = OpenFdCount();
  {
    Pair p = MakePair();
    GoferClient client(std::move(p.a));
    Empty e;
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    // Fsync never donates an FD.
    std::thread t([&] { FakeReply(p.b.get(), 0, 0, "", devnull); });
    EXPECT_EQ(client.Call(FsyncReq{1}, &e), EPROTO);
    t.join();
    close(devnull);
  }
  {
    Pair p = MakePair();
    GoferClient client(std::move(p.a));
    StatResp stat;
    std::thread t([&] { FakeReply(p.b.get(), 0, 0, "garbage", -1); });
    EXPECT_EQ(client.Call(StatReq{1}, &stat), EPROTO);
    t.join();
  }
  EXPECT_EQ(OpenFdCount(), before);
}

TEST(Client, RejectsRepliesThatDoNotFitTheRequest) {
  Stat dir;
  dir.mode = 040755;
  Stat file;
  file.mode = 0100644;
  auto expect_broken = [](auto req, std::string payload) {
    Pair p = MakePair();
    GoferClient client(std::move(p.a));
    typename Rpc<decltype(req)>::Reply resp;
    std::thread t([&] { FakeReply(p.b.get(), 0, 0, payload, -1); });
    EXPECT_EQ(client.Call(req, &resp), EPROTO) << payload.size();
    t.join();
  };
  WalkResp two;
  two.inodes = {{5, dir}, {6, file}};
  expect_broken(WalkReq{1, {"a"}}, EncodeToString(two));  // Too many.
  WalkResp zero;
  zero.inodes = {{0, dir}};
  expect_broken(WalkReq{1, {"a"}}, EncodeToString(zero));  // Handle 0.
  WalkResp short_ok;
  short_ok.inodes = {{5, dir}};
  expect_broken(WalkReq{1, {"a", "b"}}, EncodeToString(short_ok));
  WalkResp fake_link;
  fake_link.status = WalkStatus::kSymlink;
  fake_link.inodes = {{5, file}};
  expect_broken(WalkReq{1, {"a", "b"}}, EncodeToString(fake_link));
  expect_broken(AttachReq{}, EncodeToString(AttachResp{{1, file}, 1, 0}));
  expect_broken(MkdirReq{1, "d", 0755}, EncodeToString(InodeResp{{0, dir}}));
  GetdentsResp many;
  many.dirents = {{1, 1, 8, "a"}, {2, 2, 8, "b"}};
  expect_broken(GetdentsReq{1, 0, 1}, EncodeToString(many));
  expect_broken(GetXattrReq{1, "user.a", 2},
                EncodeToString(GetXattrResp{3, "abc"}));
  expect_broken(ReadlinkReq{1}, EncodeToString(ReadlinkResp{""}));
}

TEST(Client, PassesErrnoThrough) {
  Pair p = MakePair();
  GoferClient client(std::move(p.a));
  std::thread t([&] {
    Message m;
    ASSERT_EQ(RecvMessage(p.b.get(), &m), 0);
    Header h;
    h.type = m.header.type;
    h.flags = kFlagReply;
    h.request_id = m.header.request_id;
    h.error = ENOENT;
    SendMessage(p.b.get(), h, "");
  });
  StatResp stat;
  EXPECT_EQ(client.Call(StatReq{1}, &stat), ENOENT);
  t.join();
}

}  // namespace
}  // namespace gofer
