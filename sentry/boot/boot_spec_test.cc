#include "sentry/boot/boot_spec.h"

#include <string.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace sandbox::boot {
namespace {

// Version 3's tail: u64 memory_limit, u32 pids_limit.
constexpr size_t kLimitsBytes3 = 8 + 4;
// Version 4's tail without a network: i32 broker fd, u32 flags, u32 count.
constexpr size_t kNetBytes = 4 + 4 + 4;
// What follows version 2's fields in a spec without a network.
constexpr size_t kLimitsBytes = kLimitsBytes3 + kNetBytes;

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

// Versions 1 (no root fields) and 2 (no limits) still parse, as a tmpfs
// root and without limits; other versions do not.
TEST(BootSpecTest, ParsesVersions1And2) {
  BootSpec s{.argv = {"x"}};
  s.memory_limit = 1 << 30;
  s.pids_limit = 9;
  std::string v4 = SerializeBootSpec(s);
  std::string v3 = v4.substr(0, v4.size() - kNetBytes);
  v3[3] = '3';
  auto got3 = ParseBootSpec(v3);
  ASSERT_TRUE(got3.ok()) << got3.status();
  EXPECT_EQ(got3->memory_limit, uint64_t{1} << 30);
  EXPECT_EQ(got3->broker_fd, -1);
  std::string v2 = v3.substr(0, v3.size() - kLimitsBytes3);
  v2[3] = '2';
  auto got2 = ParseBootSpec(v2);
  ASSERT_TRUE(got2.ok()) << got2.status();
  EXPECT_EQ(got2->memory_limit, 0u);
  EXPECT_EQ(got2->pids_limit, 0u);
  std::string v1 = v2.substr(0, v2.size() - 12);
  v1[3] = '1';
  auto got = ParseBootSpec(v1);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->argv, std::vector<std::string>{"x"});
  EXPECT_EQ(got->root, RootKind::kTmpfs);
  v1[3] = '5';
  EXPECT_FALSE(ParseBootSpec(v1).ok());
  v1[3] = '0';
  EXPECT_FALSE(ParseBootSpec(v1).ok());
  // A version 1 spec with version 2's fields has trailing bytes; so has a
  // version 2 spec with version 3's.
  v2[3] = '1';
  EXPECT_FALSE(ParseBootSpec(v2).ok());
  v3[3] = '2';
  EXPECT_FALSE(ParseBootSpec(v3).ok());
  v4[3] = '3';
  EXPECT_FALSE(ParseBootSpec(v4).ok());
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
  ASSERT_TRUE(ParseBootSpec(good).ok());
  // Tail: fd, flags, count, proto, port, host (4+1).
  const size_t tail = 4 + 4 + 4 + 4 + 4 + 4 + 1;
  auto patched = [&](size_t off, uint32_t v) {
    std::string d = good;
    memcpy(&d[good.size() - tail + off], &v, 4);
    return d;
  };
  EXPECT_FALSE(ParseBootSpec(patched(0, 0xfffffffe)).ok());  // fd -2
  EXPECT_FALSE(ParseBootSpec(patched(0, 0xffffffff)).ok());  // ports, no fd
  EXPECT_FALSE(ParseBootSpec(patched(4, 4)).ok());           // flags
  EXPECT_FALSE(ParseBootSpec(patched(8, 0x7fffffff)).ok());  // count
  EXPECT_FALSE(ParseBootSpec(patched(12, 3)).ok());          // proto
  EXPECT_FALSE(ParseBootSpec(patched(16, 0)).ok());          // port 0
  EXPECT_FALSE(ParseBootSpec(patched(16, 65536)).ok());
  for (size_t n = good.size() - tail; n < good.size(); ++n) {
    EXPECT_FALSE(ParseBootSpec(good.substr(0, n)).ok()) << n;
  }
  // Host mode without a broker.
  BootSpec host{.argv = {"x"}};
  host.network = NetworkMode::kHost;
  EXPECT_FALSE(ParseBootSpec(SerializeBootSpec(host)).ok());
}

TEST(BootSpecTest, RejectsBadGoferFields) {
  BootSpec s{.argv = {"x"}};
  s.root = RootKind::kGofer;
  s.root_gofer_fd = 6;
  s.gofer_mounts = {{"/data", 7, false, true}};
  std::string good = SerializeBootSpec(s);
  ASSERT_TRUE(ParseBootSpec(good).ok());
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(ParseBootSpec(good.substr(0, n)).ok()) << n;
  }
  // Layout of the tail: kind, root fd, count, path (4+5), fd, flags.
  const size_t tail = 4 + 4 + 4 + 4 + 5 + 4 + 4;
  auto patched = [&](size_t off, uint32_t v) {
    std::string d = good;
    memcpy(&d[good.size() - kLimitsBytes - tail + off], &v, 4);
    return d;
  };
  EXPECT_FALSE(ParseBootSpec(patched(0, 7)).ok());           // Unknown root.
  EXPECT_FALSE(ParseBootSpec(patched(4, 0xffffffff)).ok());  // Root fd -1.
  EXPECT_FALSE(ParseBootSpec(patched(8, 0x7fffffff)).ok());  // Huge count.
  EXPECT_FALSE(ParseBootSpec(patched(8, 257)).ok());
  EXPECT_FALSE(ParseBootSpec(patched(12 + 9, 0xffffffff)).ok());  // fd -1.
  EXPECT_FALSE(ParseBootSpec(patched(12 + 9 + 4, 16)).ok());      // Bad flags.
  BootSpec rel = s;
  rel.gofer_mounts[0].path = "data";
  EXPECT_FALSE(ParseBootSpec(SerializeBootSpec(rel)).ok());
}

TEST(BootSpecTest, RejectsMalformed) {
  std::string good = SerializeBootSpec(BootSpec{.argv = {"x"}});
  EXPECT_TRUE(ParseBootSpec(good).ok());
  EXPECT_FALSE(ParseBootSpec("").ok());
  EXPECT_FALSE(ParseBootSpec("XXXX").ok());
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(ParseBootSpec(good.substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(ParseBootSpec(good + "x").ok());
  // A huge count is rejected without allocating.
  // (The seed count is followed by version 2's 12 bytes and version 3's.)
  std::string bad =
      good.substr(0, good.size() - kLimitsBytes - 12 - 4 - 4 - 5 - 4);
  bad.append("\xff\xff\xff\x7f", 4);
  EXPECT_FALSE(ParseBootSpec(bad).ok());
  // So is a seed entry of an unknown kind.
  BootSpec with_seed{.argv = {"x"}};
  with_seed.seed.push_back({SeedEntry::kDir, "/d", 0755, 0, 0, -1});
  std::string seeded = SerializeBootSpec(with_seed);
  EXPECT_TRUE(ParseBootSpec(seeded).ok());
  size_t kind_at =
      seeded.size() - kLimitsBytes - 12 - (4 + 4 + 2 + 4 + 4 + 4 + 4);
  seeded[kind_at] = 9;
  EXPECT_FALSE(ParseBootSpec(seeded).ok());
}

}  // namespace
}  // namespace sandbox::boot
