// capget(2), capset(2) and prctl's capability options: PR_CAPBSET_READ,
// PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_SET/GET_KEEPCAPS,
// PR_SET/GET_SECUREBITS, PR_SET/GET_NO_NEW_PRIVS.
//
// Cases that change capabilities do it in a forked child. The suite runs as
// root with (nearly) every capability; a case that needs a particular one
// skips when it is missing.
#include <errno.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

#define CHILD_CHECK(cond, code) \
  if (!(cond)) _exit(code)

constexpr uint64_t Bit(int cap) { return uint64_t{1} << cap; }

struct Caps {
  uint64_t effective = 0, permitted = 0, inheritable = 0;
};

int Capget(int pid, Caps* c, uint32_t version = _LINUX_CAPABILITY_VERSION_3) {
  __user_cap_header_struct h = {version, pid};
  __user_cap_data_struct d[2] = {};
  int r = static_cast<int>(syscall(SYS_capget, &h, d));
  if (r == 0) {
    c->effective = d[0].effective | (uint64_t{d[1].effective} << 32);
    c->permitted = d[0].permitted | (uint64_t{d[1].permitted} << 32);
    c->inheritable = d[0].inheritable | (uint64_t{d[1].inheritable} << 32);
  }
  return r;
}
Caps Get() {
  Caps c;
  Capget(0, &c);
  return c;
}
int Capset(const Caps& c, int pid = 0) {
  __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, pid};
  __user_cap_data_struct d[2];
  for (int i = 0; i < 2; ++i) {
    d[i].effective = static_cast<uint32_t>(c.effective >> (32 * i));
    d[i].permitted = static_cast<uint32_t>(c.permitted >> (32 * i));
    d[i].inheritable = static_cast<uint32_t>(c.inheritable >> (32 * i));
  }
  return static_cast<int>(syscall(SYS_capset, &h, d));
}

// /proc/self/status's hex field `name` (CapEff, CapPrm, ...).
uint64_t StatusHex(const std::string& name) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(name + ":", 0) == 0) {
      return std::stoull(line.substr(name.size() + 1), nullptr, 16);
    }
  }
  return ~uint64_t{0};
}

#define SKIP_UNLESS_CAP(cap)                     \
  if (!(Get().effective & Bit(cap)))             \
  GTEST_SKIP() << #cap                           \
      " is not in the effective set (the suite " \
      "normally runs as root)"

TEST(CapabilityTest, CapgetMatchesProcStatus) {
  Caps c = Get();
  EXPECT_EQ(c.effective, StatusHex("CapEff"));
  EXPECT_EQ(c.permitted, StatusHex("CapPrm"));
  EXPECT_EQ(c.inheritable, StatusHex("CapInh"));
}

TEST(CapabilityTest, BadVersionWritesPreferredVersion) {
  __user_cap_header_struct h = {0x12345, 0};
  __user_cap_data_struct d[2] = {};
  EXPECT_THAT(syscall(SYS_capget, &h, d), SyscallFailsWithErrno(EINVAL));
  EXPECT_EQ(h.version, _LINUX_CAPABILITY_VERSION_3);
  // With no data pointer it is only a probe: success, version written.
  h.version = 0;
  EXPECT_THAT(syscall(SYS_capget, &h, nullptr), SyscallSucceeds());
  EXPECT_EQ(h.version, _LINUX_CAPABILITY_VERSION_3);
  h.version = 0;
  EXPECT_THAT(syscall(SYS_capset, &h, d), SyscallFailsWithErrno(EINVAL));
  EXPECT_EQ(h.version, _LINUX_CAPABILITY_VERSION_3);
  // A good version with no data: 0.
  EXPECT_THAT(syscall(SYS_capget, &h, nullptr), SyscallSucceeds());
}

TEST(CapabilityTest, VersionsCopyOneOrTwoWords) {
  Caps all = Get();
  __user_cap_data_struct d[2];
  memset(d, 0xab, sizeof(d));
  __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_1, 0};
  ASSERT_THAT(syscall(SYS_capget, &h, d), SyscallSucceeds());
  EXPECT_EQ(d[0].effective, static_cast<uint32_t>(all.effective));
  EXPECT_EQ(d[1].effective, 0xababababu);  // v1: one word only
  h.version = _LINUX_CAPABILITY_VERSION_2;
  ASSERT_THAT(syscall(SYS_capget, &h, d), SyscallSucceeds());
  EXPECT_EQ(d[1].effective, static_cast<uint32_t>(all.effective >> 32));
}

TEST(CapabilityTest, Faults) {
  __user_cap_data_struct d[2] = {};
  EXPECT_THAT(syscall(SYS_capget, 8, d), SyscallFailsWithErrno(EFAULT));
  __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  EXPECT_THAT(syscall(SYS_capget, &h, 8), SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(syscall(SYS_capset, &h, 8), SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(syscall(SYS_capset, 8, d), SyscallFailsWithErrno(EFAULT));
}

TEST(CapabilityTest, Pids) {
  Caps c;
  EXPECT_THAT(Capget(-1, &c), SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(Capget(getpid(), &c), SyscallSucceeds());
  EXPECT_THAT(Capset(Get(), getpid()), SyscallSucceeds());
  // Another process: capget reads it, capset refuses.
  int go[2], ready[2];
  ASSERT_THAT(pipe(go), SyscallSucceeds());
  ASSERT_THAT(pipe(ready), SyscallSucceeds());
  pid_t child = fork();
  ASSERT_THAT(child, SyscallSucceeds());
  if (child == 0) {
    Caps none;
    char b = 0;
    if (Capset(none) != 0) _exit(2);
    (void)!write(ready[1], &b, 1);
    (void)!read(go[0], &b, 1);
    _exit(0);
  }
  char b = 0;
  ASSERT_THAT(read(ready[0], &b, 1), SyscallSucceedsWithValue(1));
  Caps theirs = Get();
  EXPECT_THAT(Capget(child, &theirs), SyscallSucceeds());
  EXPECT_EQ(theirs.effective, 0u);
  EXPECT_EQ(theirs.permitted, 0u);
  EXPECT_THAT(Capset(Get(), child), SyscallFailsWithErrno(EPERM));
  ASSERT_THAT(write(go[1], &b, 1), SyscallSucceedsWithValue(1));
  int status = 0;
  ASSERT_THAT(waitpid(child, &status, 0), SyscallSucceedsWithValue(child));
  EXPECT_EQ(status, 0);
  // A PID nobody has now.
  EXPECT_THAT(Capget(child, &theirs), SyscallFailsWithErrno(ESRCH));
  for (int fd : {go[0], go[1], ready[0], ready[1]}) close(fd);
}

TEST(CapabilityTest, CapsetRules) {
  SKIP_UNLESS_CAP(CAP_CHOWN);
  EXPECT_THAT(InForkedChild([] {
                Caps c = Get();
                // Effective must stay within permitted.
                Caps bad = c;
                bad.permitted &= ~Bit(CAP_CHOWN);
                CHILD_CHECK(Capset(bad) == -1 && errno == EPERM, 2);
                // Dropping from permitted works; it cannot come back.
                bad.effective &= ~Bit(CAP_CHOWN);
                CHILD_CHECK(Capset(bad) == 0, 3);
                CHILD_CHECK(Capset(c) == -1 && errno == EPERM, 4);
                CHILD_CHECK(Get().permitted == bad.permitted, 5);
              }),
              ExitedWithCode(0));
}

TEST(CapabilityTest, InheritableNeedsSetpcapOutsidePermitted) {
  SKIP_UNLESS_CAP(CAP_CHOWN);
  EXPECT_THAT(InForkedChild([] {
                Caps c = Get();
                c.effective &= ~Bit(CAP_SETPCAP) & ~Bit(CAP_CHOWN);
                c.permitted &= ~Bit(CAP_CHOWN);
                CHILD_CHECK(Capset(c) == 0, 2);
                Caps want = c;
                want.inheritable = Bit(CAP_CHOWN);
                CHILD_CHECK(Capset(want) == -1 && errno == EPERM, 3);
                // Within permitted it is fine without CAP_SETPCAP.
                want.inheritable = Bit(CAP_KILL) & c.permitted;
                CHILD_CHECK(Capset(want) == 0, 4);
                CHILD_CHECK(Get().inheritable == want.inheritable, 5);
              }),
              ExitedWithCode(0));
}

TEST(CapabilityTest, V1ClearsUpperWords) {
  Caps c = Get();
  if ((c.permitted >> 32) == 0) GTEST_SKIP() << "no capability above 31";
  EXPECT_THAT(InForkedChild([] {
                Caps c = Get();
                __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_1, 0};
                __user_cap_data_struct d = {static_cast<uint32_t>(c.effective),
                                            static_cast<uint32_t>(c.permitted),
                                            0};
                CHILD_CHECK(syscall(SYS_capset, &h, &d) == 0, 2);
                Caps after = Get();
                CHILD_CHECK(after.permitted == (c.permitted & 0xffffffffu), 3);
                CHILD_CHECK(after.effective == (c.effective & 0xffffffffu), 4);
              }),
              ExitedWithCode(0));
}

TEST(CapabilityTest, BoundingSet) {
  EXPECT_THAT(prctl(PR_CAPBSET_READ, CAP_LAST_CAP + 1, 0, 0, 0),
              SyscallFailsWithErrno(EINVAL));
  EXPECT_THAT(prctl(PR_CAPBSET_READ, -1, 0, 0, 0),
              SyscallFailsWithErrno(EINVAL));
  SKIP_UNLESS_CAP(CAP_SETPCAP);
  if (prctl(PR_CAPBSET_READ, CAP_CHOWN, 0, 0, 0) != 1) {
    GTEST_SKIP() << "CAP_CHOWN is not in the bounding set";
  }
  EXPECT_THAT(
      InForkedChild([] {
        CHILD_CHECK(
            prctl(PR_CAPBSET_DROP, 1000, 0, 0, 0) == -1 && errno == EINVAL, 2);
        CHILD_CHECK(prctl(PR_CAPBSET_DROP, CAP_CHOWN, 0, 0, 0) == 0, 3);
        CHILD_CHECK(prctl(PR_CAPBSET_READ, CAP_CHOWN, 0, 0, 0) == 0, 4);
        // Dropping from the bounding set leaves the other sets.
        CHILD_CHECK(Get().effective & Bit(CAP_CHOWN), 5);
        // A bit outside bounding and inheritable cannot become
        // inheritable, even with CAP_SETPCAP.
        Caps c = Get();
        c.inheritable = Bit(CAP_CHOWN);
        CHILD_CHECK(Capset(c) == -1 && errno == EPERM, 6);
        // Without CAP_SETPCAP, EPERM comes before EINVAL.
        c = Get();
        c.effective &= ~Bit(CAP_SETPCAP);
        CHILD_CHECK(Capset(c) == 0, 7);
        CHILD_CHECK(
            prctl(PR_CAPBSET_DROP, 1000, 0, 0, 0) == -1 && errno == EPERM, 8);
      }),
      ExitedWithCode(0));
}

TEST(CapabilityTest, Ambient) {
  SKIP_UNLESS_CAP(CAP_KILL);
  EXPECT_THAT(
      InForkedChild([] {
        CHILD_CHECK(
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_KILL, 0, 0) == 0,
            2);
        // Not inheritable yet: EPERM.
        CHILD_CHECK(
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_KILL, 0, 0) == -1 &&
                errno == EPERM,
            3);
        Caps c = Get();
        c.inheritable |= Bit(CAP_KILL);
        CHILD_CHECK(Capset(c) == 0, 4);
        CHILD_CHECK(
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_KILL, 0, 0) == 0,
            5);
        CHILD_CHECK(
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_KILL, 0, 0) == 1,
            6);
        CHILD_CHECK(StatusHex("CapAmb") == Bit(CAP_KILL), 7);
        CHILD_CHECK(
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_KILL, 0, 0) == 0,
            8);
        CHILD_CHECK(
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_KILL, 0, 0) == 0,
            9);
        // Dropping the inheritable bit drops the ambient one.
        CHILD_CHECK(
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_KILL, 0, 0) == 0,
            10);
        c.inheritable &= ~Bit(CAP_KILL);
        CHILD_CHECK(Capset(c) == 0, 11);
        CHILD_CHECK(
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_KILL, 0, 0) == 0,
            12);
        // Argument checks.
        CHILD_CHECK(
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 1, 0, 0) == -1 &&
                errno == EINVAL,
            13);
        CHILD_CHECK(
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0, 14);
        CHILD_CHECK(
            prctl(PR_CAP_AMBIENT, 99, CAP_KILL, 0, 0) == -1 && errno == EINVAL,
            15);
        CHILD_CHECK(
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, 1000, 0, 0) == -1 &&
                errno == EINVAL,
            16);
      }),
      ExitedWithCode(0));
}

TEST(CapabilityTest, KeepCapsAndSecurebits) {
  SKIP_UNLESS_CAP(CAP_SETPCAP);
  EXPECT_THAT(
      InForkedChild([] {
        CHILD_CHECK(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) == 0, 2);
        CHILD_CHECK(prctl(PR_SET_KEEPCAPS, 2, 0, 0, 0) == -1 && errno == EINVAL,
                    3);
        CHILD_CHECK(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == 0, 4);
        CHILD_CHECK(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) == 1, 5);
        CHILD_CHECK(prctl(PR_GET_SECUREBITS, 0, 0, 0, 0) == SECBIT_KEEP_CAPS,
                    6);
        // Unknown bits: EPERM.
        CHILD_CHECK(
            prctl(PR_SET_SECUREBITS, 1 << 12, 0, 0, 0) == -1 && errno == EPERM,
            7);
        // Lock keep-caps on: it can no longer change.
        CHILD_CHECK(
            prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED,
                  0, 0, 0) == 0,
            8);
        CHILD_CHECK(prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) == -1 && errno == EPERM,
                    9);
        CHILD_CHECK(prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS, 0, 0, 0) == -1 &&
                        errno == EPERM,
                    10);
        // Without CAP_SETPCAP nothing changes.
        Caps c = Get();
        c.effective &= ~Bit(CAP_SETPCAP);
        CHILD_CHECK(Capset(c) == 0, 11);
        CHILD_CHECK(
            prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED,
                  0, 0, 0) == -1 &&
                errno == EPERM,
            12);
      }),
      ExitedWithCode(0));
}

TEST(CapabilityTest, NoNewPrivs) {
  EXPECT_THAT(
      InForkedChild([] {
        CHILD_CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0, 2);
        CHILD_CHECK(
            prctl(PR_SET_NO_NEW_PRIVS, 2, 0, 0, 0) == -1 && errno == EINVAL, 3);
        CHILD_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, 4);
        CHILD_CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1, 5);
        CHILD_CHECK(StatusHex("NoNewPrivs") == 1, 6);
      }),
      ExitedWithCode(0));
}

}  // namespace
}  // namespace sandbox::testutil
