// Ping sockets (SOCK_DGRAM with IPPROTO_ICMP / IPPROTO_ICMPV6) over
// loopback: net.ipv4.ping_group_range decides who may make one (EACCES
// otherwise), bind sets the echo identifier (the "port"), an echo request
// sent to a loopback address comes back as a reply with the socket's id,
// the caller's sequence number and data and a valid checksum, recvmsg gives
// the ICMP header and payload (no IP header), non-echo messages are EINVAL.
//
// The kernel's built-in ping_group_range is "1 0" (nobody); when the
// caller's gid is outside it and the file is writable (root natively), the
// test widens it for the run and restores it at the end.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr char kRange[] = "/proc/sys/net/ipv4/ping_group_range";

bool ReadRange(long* lo, long* hi) {
  FILE* f = fopen(kRange, "r");
  if (f == nullptr) return false;
  bool ok = fscanf(f, "%ld %ld", lo, hi) == 2;
  fclose(f);
  return ok;
}
bool WriteRange(const std::string& v) {
  FILE* f = fopen(kRange, "w");
  if (f == nullptr) return false;
  bool ok = fputs(v.c_str(), f) >= 0;
  ok = (fclose(f) == 0) && ok;
  return ok;
}

// Widens ping_group_range for the run if needed (and possible).
class PingRangeEnv : public ::testing::Environment {
 public:
  void SetUp() override {
    long lo, hi;
    if (!ReadRange(&lo, &hi)) return;
    old_ = std::to_string(lo) + " " + std::to_string(hi);
    const long gid = getegid();
    if (gid >= lo && gid <= hi) return;
    changed_ = WriteRange("0 2147483647");
  }
  void TearDown() override {
    if (changed_) WriteRange(old_);
  }

 private:
  std::string old_;
  bool changed_ = false;
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new PingRangeEnv);

class PingTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    int fd = socket(F(), SOCK_DGRAM | SOCK_CLOEXEC, Proto());
    if (fd < 0 && errno == EACCES) {
      GTEST_SKIP() << "ping sockets not allowed for gid " << getegid();
    }
    ASSERT_GE(fd, 0) << strerror(errno);
    fd_.reset(fd);
  }
  int F() const { return GetParam(); }
  bool V6() const { return GetParam() == AF_INET6; }
  int Proto() const {
    return V6() ? static_cast<int>(IPPROTO_ICMPV6)
                : static_cast<int>(IPPROTO_ICMP);
  }
  uint8_t EchoType() const { return V6() ? 128 : 8; }
  uint8_t ReplyType() const { return V6() ? 129 : 0; }

  sockaddr_storage Loopback(uint16_t port = 0, socklen_t* len = nullptr) {
    sockaddr_storage ss = {};
    if (V6()) {
      auto* s = reinterpret_cast<sockaddr_in6*>(&ss);
      s->sin6_family = AF_INET6;
      s->sin6_addr = in6addr_loopback;
      s->sin6_port = htons(port);
      if (len) *len = sizeof(*s);
    } else {
      auto* s = reinterpret_cast<sockaddr_in*>(&ss);
      s->sin_family = AF_INET;
      s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      s->sin_port = htons(port);
      if (len) *len = sizeof(*s);
    }
    return ss;
  }
  uint16_t PortOf(const sockaddr_storage& ss) {
    return V6() ? ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port)
                : ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  }
  // An echo request (type, code 0, id, seq) + payload.
  std::string Echo(uint16_t seq, const std::string& payload,
                   uint8_t type = 0xff) {
    std::string m(8, '\0');
    m[0] = static_cast<char>(type == 0xff ? EchoType() : type);
    m[1] = 0;
    m[4] = 0x12;  // the id the caller writes: replaced by the socket's
    m[5] = 0x34;
    m[6] = static_cast<char>(seq >> 8);
    m[7] = static_cast<char>(seq & 0xff);
    return m + payload;
  }
  ssize_t SendTo(const std::string& m) {
    socklen_t len;
    sockaddr_storage to = Loopback(0, &len);
    return sendto(fd_.get(), m.data(), m.size(), 0,
                  reinterpret_cast<sockaddr*>(&to), len);
  }

  FileDescriptor fd_;
};

// The Internet checksum of `d` (ones' complement sum).
uint16_t Checksum(const std::string& d) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < d.size(); i += 2) {
    sum += (static_cast<uint8_t>(d[i]) << 8) | static_cast<uint8_t>(d[i + 1]);
  }
  if (d.size() & 1) sum += static_cast<uint8_t>(d.back()) << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

TEST_P(PingTest, SocketOptionsNameThePingProtocol) {
  int v = 0;
  socklen_t l = sizeof(v);
  ASSERT_THAT(getsockopt(fd_.get(), SOL_SOCKET, SO_PROTOCOL, &v, &l),
              SyscallSucceeds());
  EXPECT_EQ(v, Proto());
  ASSERT_THAT(getsockopt(fd_.get(), SOL_SOCKET, SO_TYPE, &v, &l),
              SyscallSucceeds());
  EXPECT_EQ(v, SOCK_DGRAM);
}

TEST_P(PingTest, EchoToLoopbackGetsReply) {
  ASSERT_THAT(SendTo(Echo(7, "hello ping")), SyscallSucceedsWithValue(18));
  pollfd p = {fd_.get(), POLLIN, 0};
  ASSERT_THAT(poll(&p, 1, 10000), SyscallSucceedsWithValue(1));
  char buf[128] = {};
  sockaddr_storage from = {};
  socklen_t flen = sizeof(from);
  ssize_t n = recvfrom(fd_.get(), buf, sizeof(buf), 0,
                       reinterpret_cast<sockaddr*>(&from), &flen);
  ASSERT_EQ(n, 18) << strerror(errno);
  std::string r(buf, n);
  EXPECT_EQ(static_cast<uint8_t>(r[0]), ReplyType());
  EXPECT_EQ(r[1], 0);
  // The id is the socket's "port" (getsockname after the autobind).
  sockaddr_storage me = {};
  socklen_t mlen = sizeof(me);
  ASSERT_THAT(getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&me), &mlen),
              SyscallSucceeds());
  const uint16_t id =
      (static_cast<uint8_t>(r[4]) << 8) | static_cast<uint8_t>(r[5]);
  EXPECT_EQ(id, PortOf(me));
  EXPECT_NE(id, 0);
  EXPECT_EQ(r[6], 0);
  EXPECT_EQ(r[7], 7);
  EXPECT_EQ(r.substr(8), "hello ping");
  if (!V6()) {
    EXPECT_EQ(Checksum(r), 0) << "ICMP checksum";
  }
  // The sender's address, port 0.
  EXPECT_EQ(from.ss_family, F());
  EXPECT_EQ(PortOf(from), 0);
  if (V6()) {
    EXPECT_TRUE(IN6_IS_ADDR_LOOPBACK(
        &reinterpret_cast<sockaddr_in6*>(&from)->sin6_addr));
  } else {
    EXPECT_EQ(ntohl(reinterpret_cast<sockaddr_in*>(&from)->sin_addr.s_addr),
              INADDR_LOOPBACK);
  }
}

TEST_P(PingTest, BindSetsEchoId) {
  socklen_t len;
  sockaddr_storage a = Loopback(4242, &len);
  ASSERT_THAT(bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), len),
              SyscallSucceeds());
  sockaddr_storage me = {};
  socklen_t mlen = sizeof(me);
  ASSERT_THAT(getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&me), &mlen),
              SyscallSucceeds());
  EXPECT_EQ(PortOf(me), 4242);
  ASSERT_THAT(SendTo(Echo(1, "x")), SyscallSucceeds());
  pollfd p = {fd_.get(), POLLIN, 0};
  ASSERT_THAT(poll(&p, 1, 10000), SyscallSucceedsWithValue(1));
  unsigned char buf[64];
  ASSERT_THAT(recv(fd_.get(), buf, sizeof(buf), 0),
              SyscallSucceedsWithValue(9));
  EXPECT_EQ((buf[4] << 8) | buf[5], 4242);
  // Bound twice: EINVAL.
  EXPECT_THAT(bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), len),
              SyscallFailsWithErrno(EINVAL));
}

TEST_P(PingTest, ConnectedSocketSendsWithoutAddress) {
  socklen_t len;
  sockaddr_storage a = Loopback(0, &len);
  std::string m = Echo(3, "abc");
  // The message is checked first (EINVAL), then the destination.
  EXPECT_THAT(send(fd_.get(), "x", 1, 0), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(send(fd_.get(), m.data(), m.size(), 0),
              SyscallFailsWithErrno(EDESTADDRREQ));
  ASSERT_THAT(connect(fd_.get(), reinterpret_cast<sockaddr*>(&a), len),
              SyscallSucceeds());
  ASSERT_THAT(send(fd_.get(), m.data(), m.size(), 0),
              SyscallSucceedsWithValue(m.size()));
  pollfd p = {fd_.get(), POLLIN, 0};
  ASSERT_THAT(poll(&p, 1, 10000), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents & (POLLIN | POLLERR), POLLIN);
  unsigned char buf[64];
  ASSERT_THAT(read(fd_.get(), buf, sizeof(buf)), SyscallSucceedsWithValue(11));
  EXPECT_EQ(buf[0], ReplyType());
  EXPECT_EQ(buf[7], 3);
}

TEST_P(PingTest, NonEchoAndShortMessagesAreEinval) {
  EXPECT_THAT(SendTo(Echo(1, "x", V6() ? 129 : 0)),
              SyscallFailsWithErrno(EINVAL));
  std::string bad_code = Echo(1, "x");
  bad_code[1] = 1;
  EXPECT_THAT(SendTo(bad_code), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(SendTo(std::string(4, '\0')), SyscallFailsWithErrno(EINVAL));
  pollfd p = {fd_.get(), POLLIN, 0};
  EXPECT_THAT(poll(&p, 1, 100), SyscallSucceedsWithValue(0));
}

TEST_P(PingTest, TruncatedReply) {
  ASSERT_THAT(SendTo(Echo(9, std::string(100, 'p'))),
              SyscallSucceedsWithValue(108));
  pollfd p = {fd_.get(), POLLIN, 0};
  ASSERT_THAT(poll(&p, 1, 10000), SyscallSucceedsWithValue(1));
  char buf[16];
  iovec iov = {buf, sizeof(buf)};
  msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  ASSERT_THAT(recvmsg(fd_.get(), &m, 0), SyscallSucceedsWithValue(16));
  EXPECT_EQ(m.msg_flags & MSG_TRUNC, MSG_TRUNC);
}

TEST_P(PingTest, GidOutsideRangeIsEacces) {
  long lo, hi;
  if (!ReadRange(&lo, &hi)) GTEST_SKIP() << "no " << kRange;
  const std::string old = std::to_string(lo) + " " + std::to_string(hi);
  if (!WriteRange("1 0")) GTEST_SKIP() << kRange << " not writable";
  int fd = socket(F(), SOCK_DGRAM | SOCK_CLOEXEC, Proto());
  int err = errno;
  if (fd >= 0) close(fd);
  WriteRange(old);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(err, EACCES);
  // The existing socket keeps working.
  EXPECT_THAT(SendTo(Echo(1, "x")), SyscallSucceeds());
}

INSTANTIATE_TEST_SUITE_P(Families, PingTest,
                         ::testing::Values(AF_INET, AF_INET6),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return i.param == AF_INET ? "V4" : "V6";
                         });

}  // namespace
}  // namespace sandbox::testutil
