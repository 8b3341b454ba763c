// End-to-end: iproute2 (`ip addr`, `ip link`, `ip route`, `ip -6 route`)
// prints in `runsc do` what it prints natively in a fresh network
// namespace (`unshare -n`) after `ip link set lo up`; and the same after
// taking lo down and up again. Skips where /usr/sbin/ip is missing,
// `unshare -n` fails (not root) or no sandbox can start.
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace sandbox::e2e {
namespace {

constexpr const char* kIp = "/usr/sbin/ip";
constexpr const char* kUnshare = "/usr/bin/unshare";

class Iproute2Test : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (IsSkipped()) return;
    if (access(kIp, X_OK) != 0) GTEST_SKIP() << kIp << " is missing";
    if (access(kUnshare, X_OK) != 0) GTEST_SKIP() << kUnshare << " is missing";
    Result r = RunNative({kUnshare, "-n", "/bin/true"});
    if (r.status != 0) {
      GTEST_SKIP() << "unshare -n fails here (status " << r.status
                   << "): " << r.err;
    }
  }

  // Runs `script` with sh natively in a new network namespace and in the
  // sandbox; expects the same output and status 0 from both.
  void Compare(const std::string& script) {
    Result native = RunNative({kUnshare, "-n", "/bin/sh", "-c", script});
    ASSERT_EQ(native.status, 0) << native.err;
    ASSERT_FALSE(native.out.empty());
    Result sandboxed = RunscDo({"/bin/sh", "-c", script});
    EXPECT_EQ(sandboxed.status, 0) << sandboxed.err;
    EXPECT_EQ(sandboxed.out, native.out)
        << "script: " << script << "\nsandbox stderr: " << sandboxed.err;
    EXPECT_EQ(sandboxed.err, native.err);
  }
};

// Not `ip -6 addr`: AF_INET6's link dump has no IFLA_TXQLEN, and ip then
// asks SIOCGIFTXQLEN of an AF_INET socket, which the sandbox gets with
// the Internet families (#21).
TEST_F(Iproute2Test, AddrLinkRoute) {
  Compare(
      "ip link set lo up && ip addr && ip link && ip route && ip -6 route && "
      "ip route show table all && ip -6 route show table local && "
      "ip addr show dev lo && ip -4 addr && ip link show lo && "
      "ip -d link && ip -s link && ip -o addr");
}

TEST_F(Iproute2Test, LoDownAndUpAgain) {
  Compare(
      "ip link set lo up && ip link set lo down && ip addr && "
      "ip route show table all && ip link set lo up && ip addr && "
      "ip route show table all && ip -br link && ip -br addr");
}

TEST_F(Iproute2Test, RouteGet) {
  Compare(
      "ip link set lo up; ip route get 127.0.0.1; ip route get 127.0.0.2; "
      "ip route get 127.255.255.255; ip route get 8.8.8.8; echo $?; "
      "ip -6 route get ::1; ip -6 route get 2001:db8::1; echo $?; "
      "ip route get fibmatch 127.0.0.5; ip route get 0.0.0.0; "
      "ip route get 127.0.0.1 from 127.0.0.1; ip link set lo down; "
      "ip -6 route get ::1; echo $?; ip link set lo up");
}

TEST_F(Iproute2Test, Errors) {
  // What ip prints for a device or a table that does not exist.
  Compare(
      "ip link set lo up; ip link show dev nosuchdev0; echo $?; "
      "ip route show table 3917; echo $?; ip addr show dev nosuchdev0; "
      "echo $?");
}

}  // namespace
}  // namespace sandbox::e2e
