// BrokerClient against a fake broker: a thread on the other end of a
// SOCK_SEQPACKET socketpair that answers as the broker would (and as a
// hostile one might).
#include "sentry/net/hostinet/broker_client.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "broker/protocol/transport.h"
#include "gtest/gtest.h"
#include "platform/host_fds.h"

namespace sandbox::net::hostinet {
namespace {

broker::Endpoint V4(uint16_t port) {
  broker::Endpoint e;
  e.ip.family = broker::kFamilyInet;
  e.ip.bytes = {127, 0, 0, 1};
  e.port = port;
  return e;
}

class BrokerClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    platform::HostFdBudget::Configure(4096);
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    broker_.reset(sv[1]);
    client_ = std::make_unique<BrokerClient>(
        sv[0], true, std::vector<PublishedPort>{{broker::Proto::kTcp, 8888}});
  }
  // Answers the next request with `reply` (its id copied) and `fd`.
  void AnswerNext(broker::Message reply, int fd = -1) {
    broker::Received req;
    ASSERT_EQ(broker::RecvMessage(broker_.get(), &req), 0);
    reply.id = req.message.id;
    last_request_ = req.message;
    ASSERT_EQ(broker::SendMessage(broker_.get(), reply, fd), 0);
  }
  broker::UniqueFd broker_;
  std::unique_ptr<BrokerClient> client_;
  broker::Message last_request_;
};

TEST_F(BrokerClientTest, ConnectGetsTheDonatedSocket) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  broker::Message reply;
  reply.type = broker::Type::kConnectReply;
  reply.in_progress = true;
  reply.local = V4(40000);
  std::thread t([&] { AnswerNext(reply, sv[1]); });
  Caller c;
  KResult<HostConnection> conn =
      client_->Connect(c, broker::Proto::kTcp, V4(80), "example.test");
  t.join();
  close(sv[1]);
  ASSERT_TRUE(conn.ok()) << conn.error().name();
  EXPECT_TRUE(conn->in_progress);
  EXPECT_EQ(conn->local, V4(40000));
  EXPECT_EQ(last_request_.type, broker::Type::kConnect);
  EXPECT_EQ(last_request_.endpoint, V4(80));
  EXPECT_EQ(last_request_.name, "example.test");
  ASSERT_EQ(write(conn->fd.get(), "x", 1), 1);
  char ch;
  EXPECT_EQ(read(sv[0], &ch, 1), 1);
  close(sv[0]);
}

TEST_F(BrokerClientTest, DenialIsTheBrokersErrnoAndLogged) {
  broker::Message reply;
  reply.type = broker::Type::kConnectReply;
  reply.error = ECONNREFUSED;
  reply.reason = "egress denied: tcp to 127.0.0.1:80: not in policy";
  std::thread t([&] { AnswerNext(reply); });
  Caller c;
  KResult<HostConnection> conn =
      client_->Connect(c, broker::Proto::kTcp, V4(80));
  t.join();
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.error(), kECONNREFUSED);
  EXPECT_EQ(client_->denials(), 1u);
}

TEST_F(BrokerClientTest, WrongSocketTypeIsRefused) {
  // A hostile broker donates a datagram socket for a TCP connect.
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
  broker::Message reply;
  reply.type = broker::Type::kConnectReply;
  std::thread t([&] { AnswerNext(reply, sv[1]); });
  Caller c;
  KResult<HostConnection> conn =
      client_->Connect(c, broker::Proto::kTcp, V4(80));
  t.join();
  close(sv[0]);
  close(sv[1]);
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.error(), kECONNABORTED);
}

TEST_F(BrokerClientTest, Resolve) {
  broker::Message reply;
  reply.type = broker::Type::kResolveReply;
  reply.ttl = 60;
  reply.addresses = {V4(0).ip};
  std::thread t([&] { AnswerNext(reply); });
  Caller c;
  KResult<Resolved> r = client_->Resolve(c, "example.test", AF_INET);
  t.join();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->rcode, broker::Rcode::kNoError);
  ASSERT_EQ(r->addresses.size(), 1u);
  EXPECT_EQ(last_request_.family, broker::kFamilyInet);
  EXPECT_EQ(last_request_.name, "example.test");
}

TEST_F(BrokerClientTest, InterruptedCallAndItsLateReply) {
  int intr = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);  // already signalled
  Caller c;
  c.io.interrupt_fd = intr;
  KResult<Resolved> r = client_->Resolve(c, "slow.test", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), kERestartSys);
  // The reply that comes later is dropped; the next call gets its own.
  broker::Message reply;
  reply.type = broker::Type::kResolveReply;
  reply.rcode = broker::Rcode::kNxDomain;
  AnswerNext(reply);
  std::thread t([&] { AnswerNext(reply); });
  Caller c2;
  r = client_->Resolve(c2, "other.test", 0);
  t.join();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->rcode, broker::Rcode::kNxDomain);
  EXPECT_EQ(last_request_.name, "other.test");
  close(intr);
}

TEST_F(BrokerClientTest, UnsolicitedConnectionsOnlyForPublishedPorts) {
  std::atomic<int> got{0};
  std::atomic<uint16_t> port{0};
  client_->SetAcceptHandler(
      [&](uint16_t p, const broker::Endpoint&, HostConnection conn) {
        EXPECT_TRUE(conn.fd.valid());
        port = p;
        got++;
      });
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  broker::Message m;
  m.type = broker::Type::kAccepted;
  m.endpoint = V4(50000);
  m.guest_port = 9999;  // not published
  ASSERT_EQ(broker::SendMessage(broker_.get(), m, sv[1]), 0);
  m.guest_port = 8888;
  ASSERT_EQ(broker::SendMessage(broker_.get(), m, sv[1]), 0);
  close(sv[1]);
  for (int i = 0; i < 500 && got.load() == 0; ++i) usleep(2000);
  EXPECT_EQ(got.load(), 1);
  EXPECT_EQ(port.load(), 8888);
  for (int i = 0; i < 500 && client_->dropped() == 0; ++i) usleep(2000);
  EXPECT_EQ(client_->dropped(), 1u);
  close(sv[0]);
}

TEST_F(BrokerClientTest, BrokerGoneAbortsCalls) {
  std::thread t([&] {
    broker::Received req;
    ASSERT_EQ(broker::RecvMessage(broker_.get(), &req), 0);
    broker_.reset();  // the broker dies with the call in flight
  });
  Caller c;
  KResult<HostConnection> conn =
      client_->Connect(c, broker::Proto::kUdp, V4(53));
  t.join();
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.error(), kECONNABORTED);
  conn = client_->Connect(c, broker::Proto::kUdp, V4(53));
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.error(), kECONNABORTED);
}

}  // namespace
}  // namespace sandbox::net::hostinet
