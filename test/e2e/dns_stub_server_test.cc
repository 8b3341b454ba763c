// dns_stub_server answers what its command line lists, over UDP and TCP on
// 127.0.0.1, and nothing else.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "broker/dns/message.h"
#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

namespace dns = sandbox::broker::dns;

class DnsStubServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TEST_TMPDIR");
    port_file_ = std::string(tmp ? tmp : "/var/tmp") + "/dns_port";
    unlink(port_file_.c_str());
    std::vector<std::string> argv = {
        Program("dns_stub_server"),
        "--port=0",
        "--ttl=42",
        "--port-file=" + port_file_,
        "--record=pypi.test=127.0.0.5",
        "--record=pypi.test=127.0.0.6",
        "--record=PyPI.test=::1",
        "--record=v4only.test.=127.0.0.7",
    };
    for (int i = 0; i < 40; ++i) {
      argv.push_back("--record=many.test=10.0.0." + std::to_string(i));
    }
    server_ = std::make_unique<Child>(Child::Native{}, argv);
    ASSERT_TRUE(server_->WaitForOutput("listening on 127.0.0.1:"));
    std::ifstream f(port_file_);
    int port = 0;
    f >> port;
    ASSERT_GT(port, 0);
    ASSERT_LT(port, 65536);
    port_ = static_cast<uint16_t>(port);
  }

  sockaddr_in Addr() const {
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
  }

  // Sends `msg` over UDP; the reply, or empty after `timeout_ms`.
  std::vector<uint8_t> Udp(const std::vector<uint8_t>& msg,
                           int timeout_ms = 5000) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd, 0);
    const sockaddr_in a = Addr();
    EXPECT_EQ(sendto(fd, msg.data(), msg.size(), 0,
                     reinterpret_cast<const sockaddr*>(&a), sizeof(a)),
              static_cast<ssize_t>(msg.size()));
    pollfd p = {fd, POLLIN, 0};
    std::vector<uint8_t> buf;
    if (poll(&p, 1, timeout_ms) == 1) {
      buf.resize(65536);
      const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
      buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
    }
    close(fd);
    return buf;
  }

  dns::Response Ask(const std::string& name, uint16_t type) {
    absl::StatusOr<std::vector<uint8_t>> q = dns::BuildQuery(0x77, name, type);
    EXPECT_TRUE(q.ok());
    std::vector<uint8_t> r = Udp(*q);
    absl::StatusOr<dns::Response> resp = dns::ParseResponse(r);
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (!resp.ok()) return {};
    EXPECT_TRUE(dns::AnswersQuery(*resp, 0x77, name, type));
    return *resp;
  }

  static std::string Text(const dns::AddressAnswer& a) {
    char buf[INET6_ADDRSTRLEN];
    inet_ntop(a.v6 ? AF_INET6 : AF_INET, a.bytes.data(), buf, sizeof(buf));
    return buf;
  }

  std::string port_file_;
  uint16_t port_ = 0;
  std::unique_ptr<Child> server_;
};

TEST_F(DnsStubServerTest, AnswersListedNamesOverUdp) {
  dns::Response r = Ask("PYPI.test", dns::kTypeA);
  EXPECT_EQ(r.header.rcode, 0);
  dns::Addresses a = dns::ExtractAddresses(r, "pypi.test", dns::kTypeA);
  ASSERT_EQ(a.addresses.size(), 2u);
  EXPECT_EQ(Text(a.addresses[0]), "127.0.0.5");
  EXPECT_EQ(Text(a.addresses[1]), "127.0.0.6");
  EXPECT_EQ(a.ttl, 42u);
  // The question comes back in the case it was asked.
  EXPECT_EQ(r.question->name, "PYPI.test");

  r = Ask("pypi.test", dns::kTypeAAAA);
  a = dns::ExtractAddresses(r, "pypi.test", dns::kTypeAAAA);
  ASSERT_EQ(a.addresses.size(), 1u);
  EXPECT_EQ(Text(a.addresses[0]), "::1");

  // A name without a record of the type, another type: NOERROR, nothing.
  r = Ask("v4only.test", dns::kTypeAAAA);
  EXPECT_EQ(r.header.rcode, 0);
  EXPECT_TRUE(r.answers.empty());
  r = Ask("pypi.test", dns::kTypeMX);
  EXPECT_EQ(r.header.rcode, 0);
  EXPECT_TRUE(r.answers.empty());

  r = Ask("unlisted.test", dns::kTypeA);
  EXPECT_EQ(r.header.rcode, static_cast<uint8_t>(dns::Rcode::kNxDomain));
  EXPECT_TRUE(r.answers.empty());
}

TEST_F(DnsStubServerTest, RefusesAndRejects) {
  // Class CH.
  std::vector<uint8_t> q = *dns::BuildQuery(5, "pypi.test", dns::kTypeA);
  q[q.size() - 1] = 3;
  absl::StatusOr<dns::Response> r = dns::ParseResponse(Udp(q));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->header.rcode, static_cast<uint8_t>(dns::Rcode::kRefused));
  // No question: FORMERR with the ID.
  const std::vector<uint8_t> empty = {0x12, 0x34, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  r = dns::ParseResponse(Udp(empty));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->header.id, 0x1234);
  EXPECT_EQ(r->header.rcode, static_cast<uint8_t>(dns::Rcode::kFormErr));
  // A response or a runt gets no answer at all.
  std::vector<uint8_t> resp = q;
  resp[2] |= 0x80;
  EXPECT_TRUE(Udp(resp, 300).empty());
  EXPECT_TRUE(Udp({1, 2, 3}, 300).empty());
  // And the server still answers.
  EXPECT_EQ(Ask("pypi.test", dns::kTypeA).answers.size(), 2u);
}

TEST_F(DnsStubServerTest, TruncatesUdpAndAnswersWholeOverTcp) {
  dns::Response r = Ask("many.test", dns::kTypeA);
  EXPECT_TRUE(r.header.tc);
  EXPECT_LT(r.answers.size(), 40u);

  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  const sockaddr_in a = Addr();
  ASSERT_EQ(connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)), 0);
  // Two queries on one connection.
  for (const char* name : {"many.test", "pypi.test"}) {
    std::vector<uint8_t> framed =
        dns::FrameTcp(*dns::BuildQuery(9, name, dns::kTypeA));
    ASSERT_EQ(write(fd, framed.data(), framed.size()),
              static_cast<ssize_t>(framed.size()));
    uint8_t len[2];
    ASSERT_EQ(recv(fd, len, 2, MSG_WAITALL), 2);
    std::vector<uint8_t> msg((len[0] << 8) | len[1]);
    ASSERT_EQ(recv(fd, msg.data(), msg.size(), MSG_WAITALL),
              static_cast<ssize_t>(msg.size()));
    absl::StatusOr<dns::Response> resp = dns::ParseResponse(msg);
    ASSERT_TRUE(resp.ok()) << resp.status();
    EXPECT_FALSE(resp->header.tc);
    EXPECT_EQ(dns::ExtractAddresses(*resp, name, dns::kTypeA).addresses.size(),
              std::string(name) == "many.test" ? 40u : 2u);
  }
  close(fd);
}

TEST_F(DnsStubServerTest, LogsEachQueryAndStopsOnSigterm) {
  Ask("pypi.test", dns::kTypeA);
  Ask("nope.test", dns::kTypeAAAA);
  ASSERT_EQ(kill(server_->pid(), SIGTERM), 0);
  Result res = server_->Finish(10000);
  EXPECT_EQ(res.status, 0) << res.err;
  EXPECT_NE(res.err.find("query pypi.test A udp -> NOERROR 2\n"),
            std::string::npos)
      << res.err;
  EXPECT_NE(res.err.find("query nope.test AAAA udp -> NXDOMAIN 0\n"),
            std::string::npos)
      << res.err;
}

}  // namespace
}  // namespace sandbox::e2e
