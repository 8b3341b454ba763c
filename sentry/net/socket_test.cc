// The SOL_SOCKET options of the base Socket (sk_setsockopt/sk_getsockopt).
#include "sentry/net/socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <vector>

#include "gtest/gtest.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/net/namespace.h"

namespace sandbox::net {
namespace {

class TestSocket : public Socket {
 public:
  explicit TestSocket(int family = AF_UNIX, int type = SOCK_STREAM)
      : Socket(family, type, 0, O_RDWR, Ucred{}) {}
  using Socket::set_listening;
};

KResult<void> SetInt(Socket& s, Caller& c, int name, int v) {
  return s.SetSockOpt(c, SOL_SOCKET, name,
                      {reinterpret_cast<const uint8_t*>(&v), sizeof(v)});
}
KResult<int> GetInt(Socket& s, Caller& c, int name) {
  int v = -12345;
  TRY(size_t n, s.GetSockOpt(c, SOL_SOCKET, name,
                             {reinterpret_cast<uint8_t*>(&v), sizeof(v)}));
  EXPECT_EQ(n, sizeof(int));
  return v;
}

TEST(SocketOptTest, Identity) {
  TestSocket s(AF_UNIX, SOCK_DGRAM);
  Caller c;
  EXPECT_EQ(GetInt(s, c, SO_TYPE).value(), SOCK_DGRAM);
  EXPECT_EQ(GetInt(s, c, SO_DOMAIN).value(), AF_UNIX);
  EXPECT_EQ(GetInt(s, c, SO_PROTOCOL).value(), 0);
  EXPECT_EQ(GetInt(s, c, SO_ACCEPTCONN).value(), 0);
  s.set_listening(true);
  EXPECT_EQ(GetInt(s, c, SO_ACCEPTCONN).value(), 1);
  EXPECT_EQ(SetInt(s, c, SO_TYPE, 1).error(), kENOPROTOOPT);
  EXPECT_EQ(SetInt(s, c, 9999, 1).error(), kENOPROTOOPT);
  EXPECT_EQ(GetInt(s, c, 9999).error(), kENOPROTOOPT);
  EXPECT_EQ(s.SetSockOpt(c, SOL_IP, 1, {}).error(), kEOPNOTSUPP);
}

TEST(SocketOptTest, ShortValueIsEinvalGetTruncates) {
  TestSocket s;
  Caller c;
  uint8_t two[2] = {1, 0};
  EXPECT_EQ(s.SetSockOpt(c, SOL_SOCKET, SO_KEEPALIVE, two).error(), kEINVAL);
  uint8_t out[2] = {0xff, 0xff};
  auto n = s.GetSockOpt(c, SOL_SOCKET, SO_TYPE, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 2u);
  EXPECT_EQ(out[0], SOCK_STREAM);
}

TEST(SocketOptTest, SoErrorIsTakenOnce) {
  TestSocket s;
  Caller c;
  s.SetSoError(ECONNRESET);
  EXPECT_EQ(GetInt(s, c, SO_ERROR).value(), ECONNRESET);
  EXPECT_EQ(GetInt(s, c, SO_ERROR).value(), 0);
}

TEST(SocketOptTest, BuffersDoubleAndClamp) {
  TestSocket s;
  Caller c;
  NetSysctls& sys = NetNamespace::Root().sysctl();
  ASSERT_TRUE(SetInt(s, c, SO_RCVBUF, 10000).ok());
  EXPECT_EQ(GetInt(s, c, SO_RCVBUF).value(), 20000);
  EXPECT_EQ(s.rcvbuf(), 20000);
  ASSERT_TRUE(SetInt(s, c, SO_RCVBUF, 1).ok());
  EXPECT_EQ(GetInt(s, c, SO_RCVBUF).value(), 2304);
  ASSERT_TRUE(SetInt(s, c, SO_SNDBUF, 0).ok());
  EXPECT_EQ(GetInt(s, c, SO_SNDBUF).value(), 4608);
  ASSERT_TRUE(SetInt(s, c, SO_SNDBUF, -1).ok());  // as u32: the maximum
  EXPECT_EQ(GetInt(s, c, SO_SNDBUF).value(), 2 * sys.wmem_max.load());
  // FORCE needs CAP_NET_ADMIN and goes past the maximum.
  kernel::Credentials user = kernel::Credentials::User(1000, 1000);
  Caller u;
  u.io.creds = &user;
  EXPECT_EQ(SetInt(s, u, SO_RCVBUFFORCE, 1 << 24).error(), kEPERM);
  ASSERT_TRUE(SetInt(s, c, SO_RCVBUFFORCE, 1 << 24).ok());
  EXPECT_EQ(GetInt(s, c, SO_RCVBUF).value(), 1 << 25);
  ASSERT_TRUE(SetInt(s, c, SO_RCVBUFFORCE, -5).ok());
  EXPECT_EQ(GetInt(s, c, SO_RCVBUF).value(), 2304);
}

struct Tv {
  int64_t sec, usec;
};

TEST(SocketOptTest, Timeouts) {
  TestSocket s;
  Caller c;
  EXPECT_EQ(s.RecvDeadline(), -1);
  EXPECT_EQ(s.IntrErrno(false), kERestartSys);
  Tv tv{1, 500000};
  auto set = [&](int name, Tv v, size_t len = sizeof(Tv)) {
    return s.SetSockOpt(c, SOL_SOCKET, name,
                        {reinterpret_cast<const uint8_t*>(&v), len});
  };
  ASSERT_TRUE(set(SO_RCVTIMEO, tv).ok());
  Tv got{};
  auto n = s.GetSockOpt(c, SOL_SOCKET, SO_RCVTIMEO,
                        {reinterpret_cast<uint8_t*>(&got), sizeof(got)});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), sizeof(Tv));
  EXPECT_EQ(got.sec, 1);
  EXPECT_EQ(got.usec, 500000);
  EXPECT_GT(s.RecvDeadline(), 0);
  EXPECT_EQ(s.IntrErrno(false), kEINTR);
  EXPECT_EQ(s.IntrErrno(true), kERestartSys);
  EXPECT_EQ(set(SO_SNDTIMEO, Tv{0, 1000000}).error(), kEDOM);
  EXPECT_EQ(set(SO_SNDTIMEO, Tv{0, -1}).error(), kEDOM);
  EXPECT_EQ(set(SO_SNDTIMEO, tv, 8).error(), kEINVAL);
  // A negative tv_sec: never wait (a deadline of now), read back as 0.
  ASSERT_TRUE(set(SO_SNDTIMEO, Tv{-1, 0}).ok());
  EXPECT_GE(s.SendDeadline(), 0);
  EXPECT_EQ(s.IntrErrno(true), kEINTR);
  // Zero: no timeout.
  ASSERT_TRUE(set(SO_RCVTIMEO, Tv{0, 0}).ok());
  EXPECT_EQ(s.RecvDeadline(), -1);
}

TEST(SocketOptTest, LingerAndPrivileged) {
  TestSocket s;
  Caller c;
  struct linger lg = {1, 7};
  ASSERT_TRUE(s.SetSockOpt(c, SOL_SOCKET, SO_LINGER,
                           {reinterpret_cast<const uint8_t*>(&lg), 8})
                  .ok());
  struct linger out = {};
  ASSERT_TRUE(s.GetSockOpt(c, SOL_SOCKET, SO_LINGER,
                           {reinterpret_cast<uint8_t*>(&out), 8})
                  .ok());
  EXPECT_EQ(out.l_onoff, 1);
  EXPECT_EQ(out.l_linger, 7);
  EXPECT_EQ(s.SetSockOpt(c, SOL_SOCKET, SO_LINGER,
                         {reinterpret_cast<const uint8_t*>(&lg), 4})
                .error(),
            kEINVAL);
  kernel::Credentials user = kernel::Credentials::User(1000, 1000);
  Caller u;
  u.io.creds = &user;
  EXPECT_EQ(SetInt(s, u, SO_MARK, 1).error(), kEPERM);
  EXPECT_EQ(SetInt(s, u, SO_PRIORITY, 7).error(), kEPERM);
  EXPECT_TRUE(SetInt(s, u, SO_PRIORITY, 6).ok());
  EXPECT_EQ(GetInt(s, u, SO_PRIORITY).value(), 6);
  EXPECT_EQ(SetInt(s, u, SO_DEBUG, 1).error(), kEACCES);
  EXPECT_EQ(GetInt(s, c, SO_SNDLOWAT).value(), 1);
  EXPECT_EQ(SetInt(s, c, SO_SNDLOWAT, 1).error(), kENOPROTOOPT);
  EXPECT_EQ(SetInt(s, c, SO_PEEK_OFF, 1).error(), kEOPNOTSUPP);
  EXPECT_EQ(SetInt(s, c, SO_REUSEPORT, 1).error(), kEOPNOTSUPP);
  ASSERT_TRUE(SetInt(s, c, SO_PASSCRED, 1).ok());
  EXPECT_TRUE(s.passcred());
  TestSocket inet(AF_INET, SOCK_DGRAM);
  EXPECT_EQ(SetInt(inet, c, SO_PASSCRED, 1).error(), kEOPNOTSUPP);
}

}  // namespace
}  // namespace sandbox::net
