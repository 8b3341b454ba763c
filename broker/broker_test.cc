// The broker as `runsc broker` runs it, in a forked child under its real
// seccomp allowlist (and confined when root): connects, resolves through
// /etc/hosts and through an upstream DNS server this test runs on
// 127.0.0.1, each with a policy; the child must end cleanly (exit 0, not
// SIGSYS) when its connection closes. Loopback only.
#include "broker/broker.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "broker/dns/message.h"
#include "broker/protocol/codec.h"
#include "broker/protocol/transport.h"
#include "gtest/gtest.h"

namespace sandbox::broker {
namespace {

// Answers A queries for "up.test" with 127.0.0.1 and everything else with
// NXDOMAIN, until stopped.
class FakeUpstream {
 public:
  FakeUpstream() {
    fd_.reset(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~FakeUpstream() {
    stop_ = true;
    thread_.join();
  }
  uint16_t port() const { return port_; }
  int queries() const { return queries_.load(); }

 private:
  void Run() {
    while (!stop_) {
      pollfd p = {fd_.get(), POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      uint8_t buf[512];
      sockaddr_storage from;
      socklen_t len = sizeof(from);
      ssize_t n = recvfrom(fd_.get(), buf, sizeof(buf), 0,
                           reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0) continue;
      ++queries_;
      auto q = dns::ParseQuery(std::span<const uint8_t>(buf, n));
      if (!q || !q->question) continue;
      std::vector<dns::AddressAnswer> answers;
      dns::Rcode rcode = dns::Rcode::kNxDomain;
      if (dns::NameEquals(q->question->name, "up.test")) {
        rcode = dns::Rcode::kNoError;
        if (q->question->qtype == dns::kTypeA) {
          dns::AddressAnswer a;
          a.bytes = {127, 0, 0, 1};
          a.ttl = 60;
          answers.push_back(a);
        }
      }
      std::vector<uint8_t> resp =
          dns::BuildResponse(*q, rcode, answers, dns::kMaxUdpSize);
      sendto(fd_.get(), resp.data(), resp.size(), 0,
             reinterpret_cast<sockaddr*>(&from), len);
    }
  }
  UniqueFd fd_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> queries_{0};
  std::thread thread_;
};

Endpoint Loopback(uint16_t port) {
  Endpoint e;
  e.ip.bytes = {127, 0, 0, 1};
  e.port = port;
  return e;
}

TEST(BrokerFlags, Parse) {
  auto c = ParseBrokerFlags({"--fd=3", "--listener=4:127.0.0.1:8080:80",
                             "--allow=10.0.0.0/8", "--resolver=[::1]:5353",
                             "--no-confine"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sentry_fd, 3);
  ASSERT_EQ(c->listeners.size(), 1u);
  EXPECT_EQ(c->listeners[0].first, 4);
  EXPECT_EQ(c->listeners[0].second.guest_port, 80);
  EXPECT_TRUE(c->policy);
  EXPECT_EQ(c->allow, std::vector<std::string>{"10.0.0.0/8"});
  ASSERT_EQ(c->resolvers.size(), 1u);
  EXPECT_EQ(c->resolvers[0].port, 5353);
  EXPECT_FALSE(c->confine);
  EXPECT_TRUE(c->seccomp);
  EXPECT_FALSE(ParseBrokerFlags({}).ok());  // no --fd
  EXPECT_FALSE(ParseBrokerFlags({"--fd=3", "--bogus"}).ok());
  EXPECT_FALSE(ParseBrokerFlags({"--fd=3", "--listener=x:1:2"}).ok());
  EXPECT_FALSE(ParseBrokerFlags({"--fd=3", "--resolver=host"}).ok());
}

TEST(Broker, ServesUnderItsSeccompFilter) {
  FakeUpstream upstream;
  // A host server the policy allows, by address and by name.
  UniqueFd server(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(server.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(server.get(), 4), 0);
  socklen_t len = sizeof(a);
  getsockname(server.get(), reinterpret_cast<sockaddr*>(&a), &len);
  const uint16_t port = ntohs(a.sin_port);

  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(sv[0]);
    BrokerConfig c;
    c.sentry_fd = sv[1];
    c.policy = true;
    c.allow = {"up.test:" + std::to_string(port)};
    c.resolvers = {Loopback(upstream.port())};
    c.confine = geteuid() == 0;  // needs CAP_SYS_ADMIN (or a user ns)
    absl::Status s = RunBroker(c);
    _exit(s.ok() ? 0 : 1);
  }
  close(sv[1]);
  UniqueFd sentry(sv[0]);
  uint32_t id = 0;
  auto call = [&](Message m) {
    m.id = ++id;
    EXPECT_EQ(SendMessage(sentry.get(), m), 0);
    Received r;
    EXPECT_EQ(RecvMessage(sentry.get(), &r), 0);
    return r;
  };
  Message connect;
  connect.type = Type::kConnect;
  connect.endpoint = Loopback(port);
  Received denied = call(connect);
  EXPECT_EQ(denied.message.error, ECONNREFUSED);  // not resolved yet
  Message resolve;
  resolve.type = Type::kResolve;
  resolve.name = "up.test";
  resolve.family = kFamilyInet;
  Received r = call(resolve);
  EXPECT_EQ(r.message.rcode, Rcode::kNoError);
  ASSERT_EQ(r.message.addresses.size(), 1u);
  EXPECT_EQ(IpToString(r.message.addresses[0]), "127.0.0.1");
  EXPECT_GE(upstream.queries(), 1);
  resolve.name = "other.test";  // not in the policy: never asked
  const int before = upstream.queries();
  EXPECT_EQ(call(resolve).message.rcode, Rcode::kRefused);
  EXPECT_EQ(upstream.queries(), before);
  Received ok = call(connect);
  EXPECT_EQ(ok.message.error, 0) << ok.message.reason;
  ASSERT_TRUE(ok.fd.valid());
  pollfd p = {ok.fd.get(), POLLOUT, 0};
  EXPECT_EQ(poll(&p, 1, 5000), 1);
  UniqueFd conn(accept(server.get(), nullptr, nullptr));
  EXPECT_TRUE(conn.valid());
  sentry.reset();  // the Sentry goes: the broker ends cleanly
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace sandbox::broker
