// The broker's loop in-process, over loopback only: connects allowed and
// denied by a policy, resolves checked and pinned, a published TCP port's
// connections and a published UDP port's flows, and hostile records.
#include "broker/server/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "broker/protocol/codec.h"
#include "gtest/gtest.h"

namespace sandbox::broker {
namespace {

Endpoint Loopback(uint16_t port) {
  Endpoint e;
  e.ip.bytes = {127, 0, 0, 1};
  e.port = port;
  return e;
}

// A host listener on 127.0.0.1 (any port).
struct HostServer {
  HostServer() {
    fd.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(listen(fd.get(), 8), 0);
    socklen_t len = sizeof(a);
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  UniqueFd fd;
  uint16_t port = 0;
};

uint16_t FreePort(int type) {
  int s = socket(AF_INET, type, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

// Answers every name with 127.0.0.1 (and counts the calls).
class FakeResolver : public Resolver {
 public:
  FakeResolver() : Resolver(dns::HostsFile(), {}) {}
  Resolution Resolve(std::string_view name, uint8_t) override {
    ++calls;
    Resolution r;
    if (name == "missing.test") {
      r.rcode = Rcode::kNxDomain;
    } else {
      r.addresses = {Loopback(0).ip};
      r.ttl = 30;
    }
    return r;
  }
  std::atomic<int> calls{0};
};

class ServerTest : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> allow, bool policy,
             std::vector<Publish> publishes = {}) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    sentry_.reset(sv[0]);
    ServerConfig c;
    c.sentry.reset(sv[1]);
    if (policy) {
      std::vector<policy::Entry> entries;
      for (const std::string& a : allow) {
        auto e = policy::ParseEntry(a);
        ASSERT_TRUE(e.ok()) << e.status();
        entries.push_back(*e);
      }
      c.policy = policy::Policy::FromEntries(std::move(entries));
    } else {
      c.policy = policy::Policy::AllowAll();
    }
    auto r = std::make_unique<FakeResolver>();
    resolver_ = r.get();
    c.resolver = std::move(r);
    ASSERT_TRUE(OpenPublishListeners(publishes, &c.listeners).ok());
    server_ = std::thread(
        [c = std::move(c), this]() mutable { result_ = Serve(std::move(c)); });
  }
  void TearDown() override {
    sentry_.reset();
    if (server_.joinable()) server_.join();
    EXPECT_TRUE(result_.ok()) << result_;
  }
  Received Call(Message req) {
    req.id = ++id_;
    EXPECT_EQ(SendMessage(sentry_.get(), req), 0);
    Received r;
    EXPECT_EQ(RecvMessage(sentry_.get(), &r), 0);
    EXPECT_EQ(r.message.id, req.id);
    return r;
  }
  Received Connect(Proto proto, uint16_t port, std::string name = "") {
    Message m;
    m.type = Type::kConnect;
    m.proto = proto;
    m.endpoint = Loopback(port);
    m.name = name;
    return Call(m);
  }
  Received Resolve(std::string name) {
    Message m;
    m.type = Type::kResolve;
    m.name = name;
    return Call(m);
  }

  UniqueFd sentry_;
  std::thread server_;
  absl::Status result_;
  FakeResolver* resolver_ = nullptr;
  uint32_t id_ = 0;
};

TEST_F(ServerTest, NoPolicyRefusesTheHostsLoopback) {
  Start({}, false);
  HostServer host;
  Received r = Connect(Proto::kTcp, host.port);
  ASSERT_EQ(r.message.type, Type::kConnectReply);
  EXPECT_EQ(r.message.error, ECONNREFUSED);
  EXPECT_FALSE(r.fd.valid());
  EXPECT_NE(r.message.reason.find("reachable only when a policy lists it"),
            std::string::npos)
      << r.message.reason;
  Received u = Connect(Proto::kUdp, 9);
  EXPECT_EQ(u.message.error, EPERM);
}

TEST_F(ServerTest, ListedHostLoopbackConnects) {
  HostServer host;
  Start({"127.0.0.0/8"}, true);
  Received r = Connect(Proto::kTcp, host.port);
  ASSERT_EQ(r.message.type, Type::kConnectReply);
  ASSERT_EQ(r.message.error, 0);
  ASSERT_TRUE(r.fd.valid());
  // The connection reaches the host server (wait out EINPROGRESS).
  pollfd p = {r.fd.get(), POLLOUT, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  int err = -1;
  socklen_t len = sizeof(err);
  getsockopt(r.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  EXPECT_EQ(err, 0);
  UniqueFd a(accept(host.fd.get(), nullptr, nullptr));
  ASSERT_TRUE(a.valid());
  ASSERT_EQ(write(r.fd.get(), "hi", 2), 2);
  char buf[2];
  EXPECT_EQ(read(a.get(), buf, 2), 2);
  EXPECT_EQ(r.message.local.ip, Loopback(0).ip);
  EXPECT_NE(r.message.local.port, 0);
  // UDP: a connected datagram socket.
  Received u = Connect(Proto::kUdp, 9);
  ASSERT_EQ(u.message.error, 0);
  int type = 0;
  len = sizeof(type);
  getsockopt(u.fd.get(), SOL_SOCKET, SO_TYPE, &type, &len);
  EXPECT_EQ(type, SOCK_DGRAM);
}

TEST_F(ServerTest, PolicyDeniesWithTheLogLine) {
  HostServer host;
  const std::string allowed = "127.0.0.1:" + std::to_string(host.port);
  Start({allowed}, true);
  Received ok = Connect(Proto::kTcp, host.port);
  EXPECT_EQ(ok.message.error, 0);
  EXPECT_TRUE(ok.fd.valid());
  const uint16_t other = host.port == 65535 ? 1 : host.port + 1;
  Received tcp = Connect(Proto::kTcp, other);
  EXPECT_EQ(tcp.message.error, ECONNREFUSED);
  EXPECT_FALSE(tcp.fd.valid());
  EXPECT_NE(tcp.message.reason.find("egress denied: tcp to 127.0.0.1:" +
                                    std::to_string(other)),
            std::string::npos)
      << tcp.message.reason;
  Received udp = Connect(Proto::kUdp, other, "name.test");
  EXPECT_EQ(udp.message.error, EPERM);
  EXPECT_NE(udp.message.reason.find("udp to 127.0.0.1"), std::string::npos);
  EXPECT_NE(udp.message.reason.find("(name name.test)"), std::string::npos)
      << udp.message.reason;
}

TEST_F(ServerTest, ResolveOnlyAllowedNamesAndPinsThem) {
  HostServer host;
  Start({"allowed.test:" + std::to_string(host.port)}, true);
  // Not resolved yet: 127.0.0.1 is not in the policy.
  EXPECT_EQ(Connect(Proto::kTcp, host.port).message.error, ECONNREFUSED);
  Received no = Resolve("other.test");
  EXPECT_EQ(no.message.rcode, Rcode::kRefused);
  EXPECT_EQ(resolver_->calls.load(), 0);  // never asked upstream
  Received yes = Resolve("Allowed.Test");
  EXPECT_EQ(yes.message.rcode, Rcode::kNoError);
  ASSERT_EQ(yes.message.addresses.size(), 1u);
  // Pinned: now the address is allowed on the name's port, and the log
  // line of a denial on another port names the name.
  Received c = Connect(Proto::kTcp, host.port);
  EXPECT_EQ(c.message.error, 0) << c.message.reason;
  Received d = Connect(Proto::kTcp, host.port == 1 ? 2 : host.port - 1);
  EXPECT_EQ(d.message.error, ECONNREFUSED);
  EXPECT_NE(d.message.reason.find("allowed.test"), std::string::npos)
      << d.message.reason;
}

TEST_F(ServerTest, PublishedTcpPortHandsOverConnections) {
  Publish p;
  p.host = Loopback(FreePort(SOCK_STREAM));
  p.guest_port = 8080;
  Start({}, false, {p});
  UniqueFd client(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(p.host.port);
  ASSERT_EQ(connect(client.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)),
            0);
  Received r;
  ASSERT_EQ(RecvMessage(sentry_.get(), &r), 0);
  EXPECT_EQ(r.message.type, Type::kAccepted);
  EXPECT_EQ(r.message.guest_port, 8080);
  EXPECT_EQ(r.message.endpoint.ip, Loopback(0).ip);
  ASSERT_TRUE(r.fd.valid());
  ASSERT_EQ(write(client.get(), "ping", 4), 4);
  char buf[4];
  pollfd pf = {r.fd.get(), POLLIN, 0};
  ASSERT_EQ(poll(&pf, 1, 5000), 1);
  EXPECT_EQ(read(r.fd.get(), buf, 4), 4);
}

TEST_F(ServerTest, PublishedUdpPortRelaysFlows) {
  Publish p;
  p.proto = Proto::kUdp;
  p.host = Loopback(FreePort(SOCK_DGRAM));
  p.guest_port = 5353;
  Start({}, false, {p});
  UniqueFd client(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(p.host.port);
  ASSERT_EQ(connect(client.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)),
            0);
  ASSERT_EQ(send(client.get(), "q1", 2, 0), 2);
  Received r;
  ASSERT_EQ(RecvMessage(sentry_.get(), &r), 0);
  ASSERT_EQ(r.message.type, Type::kUdpFlow);
  EXPECT_EQ(r.message.guest_port, 5353);
  char buf[16];
  pollfd pf = {r.fd.get(), POLLIN, 0};
  ASSERT_EQ(poll(&pf, 1, 5000), 1);
  EXPECT_EQ(recv(r.fd.get(), buf, sizeof(buf), 0), 2);
  // A second datagram from the same peer: the same flow, no new message.
  ASSERT_EQ(send(client.get(), "q2", 2, 0), 2);
  ASSERT_EQ(poll(&pf, 1, 5000), 1);
  EXPECT_EQ(recv(r.fd.get(), buf, sizeof(buf), 0), 2);
  EXPECT_EQ(memcmp(buf, "q2", 2), 0);
  // The guest's reply goes back to the peer from the published port.
  ASSERT_EQ(send(r.fd.get(), "answer", 6, 0), 6);
  pollfd pc = {client.get(), POLLIN, 0};
  ASSERT_EQ(poll(&pc, 1, 5000), 1);
  EXPECT_EQ(recv(client.get(), buf, sizeof(buf), 0), 6);
  Received none;
  EXPECT_EQ(RecvMessage(sentry_.get(), &none, MSG_DONTWAIT), EAGAIN);
}

TEST_F(ServerTest, HostileRecordsAreDropped) {
  Start({}, false);
  ASSERT_EQ(SendRecord(sentry_.get(), "garbage"), 0);
  // A reply type as a request, a request with a descriptor.
  Message wrong;
  wrong.type = Type::kConnectReply;
  wrong.id = 5;
  wrong.error = 1;
  ASSERT_EQ(SendMessage(sentry_.get(), wrong), 0);
  Message resolve;
  resolve.type = Type::kResolve;
  resolve.id = 6;
  resolve.name = "x.test";
  ASSERT_EQ(SendMessage(sentry_.get(), resolve, 1), 0);
  // The loop goes on.
  Received r = Resolve("localhost.test");
  EXPECT_EQ(r.message.rcode, Rcode::kNoError);
}

TEST(ResolvConf, Nameservers) {
  std::vector<Endpoint> v = ParseResolvConf(
      "# c\nsearch x\nnameserver 10.0.0.1\nnameserver ::1\n"
      "nameserver bad\nnameserver 1.1.1.1\nnameserver 8.8.8.8\n");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(EndpointToString(v[0]), "10.0.0.1:53");
  EXPECT_EQ(EndpointToString(v[1]), "[::1]:53");
  EXPECT_EQ(EndpointToString(v[2]), "1.1.1.1:53");
  Endpoint e;
  ASSERT_TRUE(ParseHostPort("127.0.0.1:5353", 53, &e));
  EXPECT_EQ(e.port, 5353);
  ASSERT_TRUE(ParseHostPort("[::1]:54", 53, &e));
  EXPECT_EQ(EndpointToString(e), "[::1]:54");
  ASSERT_TRUE(ParseHostPort("::1", 53, &e));
  EXPECT_EQ(e.port, 53);
  EXPECT_FALSE(ParseHostPort("127.0.0.1:", 53, &e));
  EXPECT_FALSE(ParseHostPort("127.0.0.1:0", 53, &e));
  EXPECT_FALSE(ParseHostPort("127.0.0.1:99999", 53, &e));
  EXPECT_FALSE(ParseHostPort("name:53", 53, &e));
}

}  // namespace
}  // namespace sandbox::broker
