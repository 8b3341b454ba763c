#include "sentry/net/cmsg.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <map>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace sandbox::net::cmsg {
namespace {

// Builds a control buffer as a guest would (CMSG_* layout).
class Builder {
 public:
  Builder& Add(int level, int type, const void* data, size_t n,
               size_t len_override = 0) {
    size_t at = buf_.size();
    buf_.resize(at + Space(n));
    uint64_t len = len_override ? len_override : Len(n);
    memcpy(&buf_[at], &len, 8);
    memcpy(&buf_[at + 8], &level, 4);
    memcpy(&buf_[at + 12], &type, 4);
    if (n) memcpy(&buf_[at + kHdrLen], data, n);
    return *this;
  }
  Builder& Rights(std::vector<int32_t> fds) {
    return Add(SOL_SOCKET, SCM_RIGHTS, fds.data(), fds.size() * 4);
  }
  std::vector<uint8_t>& bytes() { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

struct Fixture {
  std::map<int, vfs::FileRef> files;
  SendContext ctx;
  Fixture() {
    for (int fd = 0; fd < 4; ++fd) {
      files[fd] = std::make_shared<vfs::FileDescription>(O_RDWR);
    }
    ctx.family = AF_UNIX;
    ctx.creds = {100, 1000, 1000, 1000, 1000, 1000, 1000};
    ctx.get_file = [this](int fd) -> KResult<vfs::FileRef> {
      auto it = files.find(fd);
      if (it == files.end()) return kEBADF;
      return it->second;
    };
    ctx.pid_exists = [](int32_t pid) { return pid == 100 || pid == 7; };
  }
};

TEST(CmsgParseTest, EmptyAndShortBuffersCarryNothing) {
  Fixture f;
  std::vector<uint8_t> b(15, 0xff);  // shorter than a header: not parsed
  auto r = ParseSend(b, f.ctx);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().empty());
  EXPECT_TRUE(ParseSend({}, f.ctx).ok());
}

TEST(CmsgParseTest, RightsInOrderAcrossMessages) {
  Fixture f;
  Builder b;
  b.Rights({2, 0}).Rights({3});
  auto r = ParseSend(b.bytes(), f.ctx);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.value().rights.size(), 3u);
  EXPECT_EQ(r.value().rights[0], f.files[2]);
  EXPECT_EQ(r.value().rights[1], f.files[0]);
  EXPECT_EQ(r.value().rights[2], f.files[3]);
}

TEST(CmsgParseTest, BadLengthsAreEinval) {
  Fixture f;
  int32_t fd = 0;
  Builder short_len;
  short_len.Add(SOL_SOCKET, SCM_RIGHTS, &fd, 4, /*len=*/15);
  EXPECT_EQ(ParseSend(short_len.bytes(), f.ctx).error(), kEINVAL);
  Builder long_len;
  long_len.Add(SOL_SOCKET, SCM_RIGHTS, &fd, 4, /*len=*/100);
  EXPECT_EQ(ParseSend(long_len.bytes(), f.ctx).error(), kEINVAL);
  // Even for a level nobody parses (CMSG_OK comes first).
  Builder other;
  other.Add(SOL_IP, 1, &fd, 4, /*len=*/~uint64_t{0});
  EXPECT_EQ(ParseSend(other.bytes(), f.ctx).error(), kEINVAL);
  // A header-only message is fine; its data-less rights are nothing.
  Builder empty;
  empty.Add(SOL_SOCKET, SCM_RIGHTS, nullptr, 0);
  auto r = ParseSend(empty.bytes(), f.ctx);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().empty());
}

TEST(CmsgParseTest, TrailingBytesShorterThanAHeaderAreIgnored) {
  Fixture f;
  Builder b;
  b.Rights({1});
  b.bytes().resize(b.bytes().size() + 15, 0xee);
  auto r = ParseSend(b.bytes(), f.ctx);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().rights.size(), 1u);
}

TEST(CmsgParseTest, UnknownSolSocketTypeIsEinvalOtherLevelsCollected) {
  Fixture f;
  int v = 0;
  Builder unknown;
  unknown.Add(SOL_SOCKET, 99, &v, 4);
  EXPECT_EQ(ParseSend(unknown.bytes(), f.ctx).error(), kEINVAL);
  Builder other;
  int ttl = 9;
  other.Add(SOL_IP, 99, &v, 4).Rights({1}).Add(SOL_IPV6, 67, &ttl, 4);
  auto r = ParseSend(other.bytes(), f.ctx);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().rights.size(), 1u);
  // The protocol's, in order, payload as sent.
  ASSERT_EQ(r.value().raw.size(), 2u);
  EXPECT_EQ(r.value().raw[0].level, SOL_IP);
  EXPECT_EQ(r.value().raw[0].type, 99);
  EXPECT_EQ(r.value().raw[1].level, SOL_IPV6);
  EXPECT_EQ(r.value().raw[1].type, 67);
  ASSERT_EQ(r.value().raw[1].data.size(), 4u);
  EXPECT_EQ(r.value().raw[1].data[0], 9);
}

TEST(CmsgParseTest, RightsLimitsAndBadDescriptors) {
  Fixture f;
  std::vector<int32_t> many(kScmMaxFd + 1, 0);
  Builder over;
  over.Rights(many);
  EXPECT_EQ(ParseSend(over.bytes(), f.ctx).error(), kEINVAL);
  many.resize(kScmMaxFd);
  Builder max;
  max.Rights(many);
  auto r = ParseSend(max.bytes(), f.ctx);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().rights.size(), kScmMaxFd);
  Builder split;  // 253 + 1 over two messages
  split.Rights(many).Rights({1});
  EXPECT_EQ(ParseSend(split.bytes(), f.ctx).error(), kEINVAL);
  Builder bad;
  bad.Rights({1, 9});
  EXPECT_EQ(ParseSend(bad.bytes(), f.ctx).error(), kEBADF);
  Builder neg;
  neg.Rights({-1});
  EXPECT_EQ(ParseSend(neg.bytes(), f.ctx).error(), kEBADF);
  // EBADF of an earlier message wins over EINVAL of a later one.
  Builder order;
  order.Rights({9}).Add(SOL_SOCKET, 99, nullptr, 0);
  EXPECT_EQ(ParseSend(order.bytes(), f.ctx).error(), kEBADF);
  f.ctx.family = AF_NETLINK;
  Builder nl;
  nl.Rights({1});
  EXPECT_EQ(ParseSend(nl.bytes(), f.ctx).error(), kEINVAL);
}

TEST(CmsgParseTest, Credentials) {
  Fixture f;
  Ucred own{100, 1000, 1000};
  Builder ok;
  ok.Add(SOL_SOCKET, SCM_CREDENTIALS, &own, sizeof(own));
  auto r = ParseSend(ok.bytes(), f.ctx);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r.value().creds.has_value());
  EXPECT_EQ(*r.value().creds, own);

  Builder badlen;
  badlen.Add(SOL_SOCKET, SCM_CREDENTIALS, &own, sizeof(own) - 1);
  EXPECT_EQ(ParseSend(badlen.bytes(), f.ctx).error(), kEINVAL);

  Ucred other_pid{7, 1000, 1000};
  Builder b1;
  b1.Add(SOL_SOCKET, SCM_CREDENTIALS, &other_pid, sizeof(other_pid));
  EXPECT_EQ(ParseSend(b1.bytes(), f.ctx).error(), kEPERM);
  Ucred other_uid{100, 0, 1000};
  Builder b2;
  b2.Add(SOL_SOCKET, SCM_CREDENTIALS, &other_uid, sizeof(other_uid));
  EXPECT_EQ(ParseSend(b2.bytes(), f.ctx).error(), kEPERM);
  Ucred invalid{100, 0xffffffffu, 1000};
  Builder b3;
  b3.Add(SOL_SOCKET, SCM_CREDENTIALS, &invalid, sizeof(invalid));
  EXPECT_EQ(ParseSend(b3.bytes(), f.ctx).error(), kEINVAL);

  f.ctx.creds.cap_sys_admin = f.ctx.creds.cap_setuid = true;
  EXPECT_TRUE(ParseSend(b1.bytes(), f.ctx).ok());
  EXPECT_TRUE(ParseSend(b2.bytes(), f.ctx).ok());
  Ucred no_such{55, 1000, 1000};
  Builder b4;
  b4.Add(SOL_SOCKET, SCM_CREDENTIALS, &no_such, sizeof(no_such));
  EXPECT_EQ(ParseSend(b4.bytes(), f.ctx).error(), kESRCH);
}

// A sink over a host buffer whose bytes from `fault_at` on fault, and a
// descriptor table with `room` free slots.
class TestSink : public RecvSink {
 public:
  explicit TestSink(size_t size, size_t fault_at = SIZE_MAX)
      : buf(size, 0xaa), fault_at_(fault_at) {}
  bool Write(size_t at, const void* src, size_t n) override {
    if (at + n > buf.size() || at + n > fault_at_) return false;
    memcpy(buf.data() + at, src, n);
    return true;
  }
  KResult<int> InstallFd(const vfs::FileRef& f, bool cloexec) override {
    if (room == 0) return kEMFILE;
    --room;
    installed.push_back({f, cloexec});
    return next_fd++;
  }
  void RemoveFd(int) override {
    installed.pop_back();
    ++room;
  }
  template <typename T>
  T At(size_t off) const {
    T v;
    memcpy(&v, buf.data() + off, sizeof(v));
    return v;
  }
  std::vector<uint8_t> buf;
  size_t room = 1000;
  int next_fd = 10;
  std::vector<std::pair<vfs::FileRef, bool>> installed;

 private:
  size_t fault_at_;
};

ControlMessages Received(int nfds, bool creds) {
  ControlMessages cm;
  for (int i = 0; i < nfds; ++i) {
    cm.rights.push_back(std::make_shared<vfs::FileDescription>(O_RDWR));
  }
  if (creds) cm.creds = Ucred{5, 6, 7};
  return cm;
}

TEST(CmsgRecvTest, CredsThenRightsWhenAllFit) {
  ControlMessages cm = Received(2, true);
  TestSink s(128);
  RecvResult r = PutReceived(cm, true, 128, true, s);
  EXPECT_EQ(r.msg_flags, 0);
  EXPECT_EQ(r.controllen, Space(12) + Space(8));
  EXPECT_EQ(s.At<uint64_t>(0), Len(12));
  EXPECT_EQ(s.At<int32_t>(8), SOL_SOCKET);
  EXPECT_EQ(s.At<int32_t>(12), SCM_CREDENTIALS);
  EXPECT_EQ(s.At<int32_t>(16), 5);
  EXPECT_EQ(s.At<uint64_t>(32), Len(8));
  EXPECT_EQ(s.At<int32_t>(44), SCM_RIGHTS);
  EXPECT_EQ(s.At<int32_t>(48), 10);
  EXPECT_EQ(s.At<int32_t>(52), 11);
  ASSERT_EQ(s.installed.size(), 2u);
  EXPECT_TRUE(s.installed[0].second);
  EXPECT_TRUE(cm.rights.empty());
}

TEST(CmsgRecvTest, NoControlBufferIsCtrunc) {
  ControlMessages cm = Received(1, false);
  TestSink s(0);
  RecvResult r = PutReceived(cm, false, 100, false, s);
  EXPECT_EQ(r.msg_flags, MSG_CTRUNC);
  EXPECT_EQ(r.controllen, 0u);
  EXPECT_TRUE(s.installed.empty());
  ControlMessages none;
  EXPECT_EQ(PutReceived(none, false, 100, false, s).msg_flags, 0);
}

TEST(CmsgRecvTest, RightsTruncatedToWhatFits) {
  ControlMessages cm = Received(3, false);
  TestSink s(64);
  // Room for the header and two descriptors (16 + 8 + 3 spare bytes).
  RecvResult r = PutReceived(cm, true, 27, false, s);
  EXPECT_EQ(r.msg_flags, MSG_CTRUNC);
  EXPECT_EQ(s.installed.size(), 2u);
  EXPECT_EQ(s.At<uint64_t>(0), Len(8));
  EXPECT_EQ(r.controllen, 24u);  // min(CMSG_SPACE(8), 27)
  // Only a header: nothing installed.
  ControlMessages cm2 = Received(1, false);
  TestSink s2(64);
  RecvResult r2 = PutReceived(cm2, true, 16, false, s2);
  EXPECT_EQ(r2.msg_flags, MSG_CTRUNC);
  EXPECT_EQ(r2.controllen, 0u);
  EXPECT_TRUE(s2.installed.empty());
}

TEST(CmsgRecvTest, CredsTruncated) {
  ControlMessages cm = Received(0, true);
  TestSink s(64);
  RecvResult r = PutReceived(cm, true, 20, false, s);
  EXPECT_EQ(r.msg_flags, MSG_CTRUNC);
  EXPECT_EQ(s.At<uint64_t>(0), 20u);  // cmsg_len = what was left
  EXPECT_EQ(r.controllen, 20u);
  ControlMessages cm2 = Received(0, true);
  RecvResult r2 = PutReceived(cm2, true, 15, false, s);
  EXPECT_EQ(r2.msg_flags, MSG_CTRUNC);
  EXPECT_EQ(r2.controllen, 0u);
}

TEST(CmsgRecvTest, FullTableAndFaultsStopInstalling) {
  ControlMessages cm = Received(3, false);
  TestSink s(64);
  s.room = 1;
  RecvResult r = PutReceived(cm, true, 64, false, s);
  EXPECT_EQ(r.msg_flags, MSG_CTRUNC);
  EXPECT_EQ(s.installed.size(), 1u);
  EXPECT_EQ(s.At<uint64_t>(0), Len(4));

  ControlMessages cm2 = Received(3, false);
  TestSink f(64, /*fault_at=*/24);  // the third slot faults
  RecvResult r2 = PutReceived(cm2, true, 64, false, f);
  EXPECT_EQ(r2.msg_flags, MSG_CTRUNC);
  EXPECT_EQ(f.installed.size(), 2u);
}

TEST(CmsgRecvTest, RawMessagesFirstThenTruncated) {
  ControlMessages cm;
  cm.raw.push_back({SOL_IP, IP_TTL, {64, 0, 0, 0}});
  cm.raw.push_back({SOL_IP, IP_PKTINFO, std::vector<uint8_t>(12, 1)});
  TestSink s(128);
  RecvResult r = PutReceived(cm, true, 128, false, s);
  EXPECT_EQ(r.msg_flags, 0);
  EXPECT_EQ(r.controllen, Space(4) + Space(12));
  EXPECT_EQ(s.At<uint64_t>(0), Len(4));
  EXPECT_EQ(s.At<int32_t>(8), SOL_IP);
  EXPECT_EQ(s.At<int32_t>(12), IP_TTL);
  EXPECT_EQ(s.At<int32_t>(16), 64);
  EXPECT_EQ(s.At<uint64_t>(Space(4)), Len(12));
  EXPECT_EQ(s.At<int32_t>(Space(4) + 12), IP_PKTINFO);
  // Room for the first and part of the second: the second is cut (put_cmsg).
  ControlMessages cm2 = cm;
  RecvResult r2 = PutReceived(cm2, true, Space(4) + 20, false, s);
  EXPECT_EQ(r2.msg_flags, MSG_CTRUNC);
  EXPECT_EQ(r2.controllen, Space(4) + 20);
  EXPECT_EQ(s.At<uint64_t>(Space(4)), 20u);
  // No room for even a header.
  ControlMessages cm3 = cm;
  RecvResult r3 = PutReceived(cm3, true, 8, false, s);
  EXPECT_EQ(r3.msg_flags, MSG_CTRUNC);
  EXPECT_EQ(r3.controllen, 0u);
}

}  // namespace
}  // namespace sandbox::net::cmsg
