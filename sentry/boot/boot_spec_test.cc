#include "sentry/boot/boot_spec.h"

#include <string.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "sentry/boot/boot_spec.pb.h"

namespace sandbox::boot {
namespace {

// The frame's header: "RSB5" and the message's length.
constexpr size_t kHeader = 8;

// The message inside a serialized spec, to change what the writer never
// writes wrong.
wire::BootSpec WireOf(const BootSpec& s) {
  wire::BootSpec w;
  const std::string data = SerializeBootSpec(s);
  EXPECT_TRUE(w.ParseFromString(data.substr(kHeader)));
  return w;
}

std::string Frame(const std::string& message) {
  const uint32_t n = static_cast<uint32_t>(message.size());
  return std::string("RSB5") +
         std::string(reinterpret_cast<const char*>(&n), sizeof(n)) + message;
}
std::string Frame(const wire::BootSpec& w) {
  return Frame(w.SerializeAsString());
}

// ParseBootSpec's error message for `data` ("" if it parses).
std::string ErrorOf(const std::string& data) {
  absl::StatusOr<BootSpec> s = ParseBootSpec(data);
  return s.ok() ? "" : std::string(s.status().message());
}

TEST(BootSpecTest, RoundTripThroughMemfd) {
  BootSpec s;
  s.exe_path = "/bin/true";
  s.cwd = "/tmp";
  s.hostname = "h";
  s.strace_summary = true;
  s.log = "/tmp/runsc.log";
  s.log_json = true;
  s.argv = {"true", "", std::string("a\0b", 3)};
  s.envp = {"A=1"};
  s.seed = {{SeedEntry::kTmpfsMount, "/tmp", 01777, 0, 0, -1},
            {SeedEntry::kFile, "/bin/true", 0755, 1, 2, 4}};
  auto fd = WriteBootSpecToMemfd(s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  auto got = ReadBootSpecFromFd(*fd);
  close(*fd);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->exe_path, "/bin/true");
  EXPECT_EQ(got->cwd, "/tmp");
  EXPECT_FALSE(got->strace);
  EXPECT_TRUE(got->strace_summary);
  EXPECT_EQ(got->log, "/tmp/runsc.log");
  EXPECT_TRUE(got->log_json);
  EXPECT_FALSE(got->warn_unsupported);
  EXPECT_EQ(got->argv, s.argv);
  EXPECT_EQ(got->envp, s.envp);
  ASSERT_EQ(got->seed.size(), 2u);
  EXPECT_EQ(got->seed[0].kind, SeedEntry::kTmpfsMount);
  EXPECT_EQ(got->seed[0].path, "/tmp");
  EXPECT_EQ(got->seed[0].mode, 01777u);
  EXPECT_EQ(got->seed[1].kind, SeedEntry::kFile);
  EXPECT_EQ(got->seed[1].uid, 1u);
  EXPECT_EQ(got->seed[1].gid, 2u);
  EXPECT_EQ(got->seed[1].host_fd, 4);
  EXPECT_EQ(got->root, RootKind::kTmpfs);
  EXPECT_TRUE(got->gofer_mounts.empty());
  EXPECT_EQ(got->memory_limit, 0u);
  EXPECT_EQ(got->pids_limit, 0u);
}

TEST(BootSpecTest, RoundTripsTheResourceLimits) {
  BootSpec s{.argv = {"x"}};
  s.memory_limit = uint64_t{5} << 30;
  s.pids_limit = 64;
  auto got = ParseBootSpec(SerializeBootSpec(s));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->memory_limit, uint64_t{5} << 30);
  EXPECT_EQ(got->pids_limit, 64u);
  // Truncated limits are refused.
  std::string data = SerializeBootSpec(s);
  data.resize(data.size() - 2);
  EXPECT_FALSE(ParseBootSpec(data).ok());
}

TEST(BootSpecTest, RoundTripsTheGoferRootAndMounts) {
  BootSpec s{.argv = {"x"}};
  s.root = RootKind::kGofer;
  s.root_gofer_fd = 6;
  s.gofer_mounts = {{"/data", 7, false, true},
                    {"/ro", 8, true, false},
                    {"/suid", 9, false, true, true},
                    {"/uds", 10, false, true, false, true}};
  auto got = ParseBootSpec(SerializeBootSpec(s));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->root, RootKind::kGofer);
  EXPECT_EQ(got->root_gofer_fd, 6);
  ASSERT_EQ(got->gofer_mounts.size(), 4u);
  EXPECT_EQ(got->gofer_mounts[0].path, "/data");
  EXPECT_EQ(got->gofer_mounts[0].fd, 7);
  EXPECT_FALSE(got->gofer_mounts[0].read_only);
  EXPECT_TRUE(got->gofer_mounts[0].shared);
  EXPECT_TRUE(got->gofer_mounts[1].read_only);
  EXPECT_FALSE(got->gofer_mounts[1].shared);
  EXPECT_FALSE(got->gofer_mounts[0].suid);
  EXPECT_FALSE(got->gofer_mounts[1].suid);
  EXPECT_TRUE(got->gofer_mounts[2].suid);
  EXPECT_FALSE(got->gofer_mounts[2].host_sockets);
  EXPECT_TRUE(got->gofer_mounts[3].host_sockets);
  EXPECT_FALSE(got->gofer_mounts[3].suid);
}

// The hand-written layouts of versions 1 to 4 are gone: one binary
// writes and reads the spec. Another version or magic is refused, naming
// itself.
TEST(BootSpecTest, RejectsOtherVersionsAndMagic) {
  std::string good = SerializeBootSpec(BootSpec{.argv = {"x"}});
  ASSERT_EQ(ErrorOf(good), "");
  for (char v : {'1', '4', '6'}) {
    std::string d = good;
    d[3] = v;
    EXPECT_NE(ErrorOf(d).find(std::string("format version '") + v + "'"),
              std::string::npos)
        << ErrorOf(d);
  }
  std::string d = good;
  d[0] = 'X';
  EXPECT_EQ(ErrorOf(d), "boot spec: bad magic or size");
  EXPECT_EQ(ErrorOf(""), "boot spec: bad magic or size");
  EXPECT_EQ(ErrorOf("RSB5"), "boot spec: bad magic or size");
}

TEST(BootSpecTest, RoundTripsTheNetwork) {
  BootSpec s{.argv = {"x"}};
  s.broker_fd = 9;
  s.network = NetworkMode::kHost;
  s.egress_policy = true;
  s.published = {{PublishedPort::kTcp, 8888, "127.0.0.1:18888"},
                 {PublishedPort::kUdp, 53, "[::1]:5353"}};
  auto got = ParseBootSpec(SerializeBootSpec(s));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->broker_fd, 9);
  EXPECT_EQ(got->network, NetworkMode::kHost);
  EXPECT_TRUE(got->egress_policy);
  ASSERT_EQ(got->published.size(), 2u);
  EXPECT_EQ(got->published[0].proto, PublishedPort::kTcp);
  EXPECT_EQ(got->published[0].guest_port, 8888);
  EXPECT_EQ(got->published[0].host, "127.0.0.1:18888");
  EXPECT_EQ(got->published[1].proto, PublishedPort::kUdp);
  EXPECT_EQ(got->published[1].guest_port, 53);
  // The default: no broker, mode none.
  auto none = ParseBootSpec(SerializeBootSpec(BootSpec{.argv = {"x"}}));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->broker_fd, -1);
  EXPECT_EQ(none->network, NetworkMode::kNone);
  EXPECT_TRUE(none->published.empty());
}

TEST(BootSpecTest, RejectsBadNetworkFields) {
  BootSpec s{.argv = {"x"}};
  s.broker_fd = 9;
  s.published = {{PublishedPort::kTcp, 8888, "h"}};
  const std::string good = SerializeBootSpec(s);
  ASSERT_EQ(ErrorOf(good), "");
  wire::BootSpec w = WireOf(s);
  w.set_broker_fd(-2);
  EXPECT_EQ(ErrorOf(Frame(w)), "boot spec: broker_fd: negative FD");
  w = WireOf(s);
  w.clear_broker_fd();  // ports, no broker
  EXPECT_EQ(ErrorOf(Frame(w)),
            "boot spec: host network or published ports without a broker_fd");
  w = WireOf(s);
  w.set_network(static_cast<wire::NetworkMode>(4));
  EXPECT_EQ(ErrorOf(Frame(w)), "boot spec: unknown network mode 4");
  w = WireOf(s);
  for (int k = 0; k < 256; ++k) *w.add_published() = w.published(0);
  EXPECT_EQ(ErrorOf(Frame(w)), "boot spec: too many published ports");
  w = WireOf(s);
  w.mutable_published(0)->set_proto(static_cast<wire::PublishedPort::Proto>(3));
  EXPECT_EQ(ErrorOf(Frame(w)),
            "boot spec: published port of unknown protocol 3");
  w.mutable_published(0)->set_proto(wire::PublishedPort::PROTO_UNSPECIFIED);
  EXPECT_NE(ErrorOf(Frame(w)), "");
  w = WireOf(s);
  w.mutable_published(0)->set_guest_port(0);
  EXPECT_EQ(ErrorOf(Frame(w)), "boot spec: published guest port 0");
  w.mutable_published(0)->set_guest_port(65536);
  EXPECT_EQ(ErrorOf(Frame(w)), "boot spec: published guest port 65536");
  w = WireOf(s);
  w.mutable_published(0)->set_host(std::string(65, 'h'));
  EXPECT_NE(ErrorOf(Frame(w)), "");
  // Host mode without a broker.
  BootSpec host{.argv = {"x"}};
  host.network = NetworkMode::kHost;
  EXPECT_NE(ErrorOf(SerializeBootSpec(host)), "");
}

TEST(BootSpecTest, RejectsBadGoferFields) {
  BootSpec s{.argv = {"x"}};
  s.root = RootKind::kGofer;
  s.root_gofer_fd = 6;
  s.gofer_mounts = {{"/data", 7, false, true}};
  std::string good = SerializeBootSpec(s);
  ASSERT_EQ(ErrorOf(good), "");
  wire::BootSpec w = WireOf(s);
  w.set_root(static_cast<wire::RootKind>(7));
  EXPECT_EQ(ErrorOf(Frame(w)), "boot spec: unknown root kind 7");
  w = WireOf(s);
  w.clear_root_gofer_fd();
  EXPECT_EQ(ErrorOf(Frame(w)),
            "boot spec: a Gofer root without its connection (root_gofer_fd)");
  w.set_root_gofer_fd(-1);
  EXPECT_EQ(ErrorOf(Frame(w)), "boot spec: root_gofer_fd: negative FD");
  w = WireOf(s);
  for (uint32_t k = 0; k < kMaxGoferMounts; ++k) {
    *w.add_gofer_mounts() = w.gofer_mounts(0);
  }
  EXPECT_EQ(ErrorOf(Frame(w)), "boot spec: too many Gofer mounts");
  w = WireOf(s);
  w.mutable_gofer_mounts(0)->clear_fd();
  EXPECT_EQ(ErrorOf(Frame(w)),
            "boot spec: the Gofer mount at /data has no connection (fd)");
  w.mutable_gofer_mounts(0)->set_fd(-1);
  EXPECT_NE(ErrorOf(Frame(w)), "");
  BootSpec rel = s;
  rel.gofer_mounts[0].path = "data";
  EXPECT_EQ(ErrorOf(SerializeBootSpec(rel)),
            "boot spec: a Gofer mount's path is not absolute");
  rel.gofer_mounts[0].path = "";
  EXPECT_NE(ErrorOf(SerializeBootSpec(rel)), "");
}

// A spec that lost its end, or has bytes after it, or holds no message
// is refused with a message saying so; every prefix of a spec is.
TEST(BootSpecTest, RejectsTruncatedAndGarbage) {
  BootSpec s{.argv = {"x", "y"}, .envp = {"A=1"}};
  s.root = RootKind::kGofer;
  s.root_gofer_fd = 6;
  s.gofer_mounts = {{"/data", 7, false, true}};
  s.seed = {{SeedEntry::kDir, "/d", 0755, 0, 0, -1}};
  s.broker_fd = 9;
  s.published = {{PublishedPort::kTcp, 8888, "h"}};
  const std::string good = SerializeBootSpec(s);
  ASSERT_EQ(ErrorOf(good), "");
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_NE(ErrorOf(good.substr(0, n)), "") << n;
  }
  EXPECT_NE(ErrorOf(good.substr(0, good.size() - 1)).find("truncated"),
            std::string::npos);
  EXPECT_NE(ErrorOf(good + "x").find("trailing bytes"), std::string::npos);
  // A frame whose length is right around bytes that are no message.
  EXPECT_EQ(ErrorOf(Frame(std::string("\xff\xff\xff\xff", 4))),
            "boot spec: malformed (not a BootSpec message)");
  // A message whose end was cut, in a frame made to fit it.
  const std::string message = good.substr(kHeader);
  EXPECT_NE(ErrorOf(Frame(message.substr(0, message.size() - 1))), "");
}

TEST(BootSpecTest, RejectsBadSeedAndCounts) {
  BootSpec with_seed{.argv = {"x"}};
  with_seed.seed.push_back({SeedEntry::kDir, "/d", 0755, 0, 0, -1});
  EXPECT_EQ(ErrorOf(SerializeBootSpec(with_seed)), "");
  wire::BootSpec w = WireOf(with_seed);
  w.mutable_seed(0)->set_kind(static_cast<wire::SeedEntry::Kind>(9));
  EXPECT_EQ(ErrorOf(Frame(w)), "boot spec: seed entry of unknown kind 9");
  w.mutable_seed(0)->set_kind(wire::SeedEntry::KIND_UNSPECIFIED);
  EXPECT_NE(ErrorOf(Frame(w)), "");
  w = WireOf(with_seed);
  w.mutable_seed(0)->set_host_fd(-5);
  EXPECT_EQ(ErrorOf(Frame(w)), "boot spec: seed: negative FD");
  // A list longer than 1M entries.
  w = WireOf(with_seed);
  for (int k = 0; k <= 1 << 20; ++k) w.add_envp();
  EXPECT_EQ(ErrorOf(Frame(w)),
            "boot spec: too many argv, envp or seed entries");
}

}  // namespace
}  // namespace sandbox::boot
