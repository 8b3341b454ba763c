// setuid(2), setgid(2), setreuid(2), setregid(2), setresuid(2),
// setresgid(2), setfsuid(2), setfsgid(2), setgroups(2)/getgroups(2) and the
// capability changes that uid changes make.
//
// Every case changes its identity in a forked child. The suite runs as
// root; in a user namespace (Bazel's sandbox) only the ids in
// /proc/self/uid_map exist, so cases that need another id skip when it is
// unmapped (without the file, as in the sandbox, every id is mapped).
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr uint32_t kOther = 65534;  // nobody
constexpr uint32_t kOther2 = 65533;

// Whether `id` is mapped in the id map file `path` (uid_map or gid_map).
bool Mapped(const char* path, uint32_t id) {
  std::ifstream f(path);
  if (!f) return true;  // no user namespaces: every id exists
  uint64_t inside, outside, count;
  while (f >> inside >> outside >> count) {
    if (id >= inside && id - inside < count) return true;
  }
  return false;
}
bool UidsMapped(std::initializer_list<uint32_t> ids) {
  for (uint32_t id : ids) {
    if (!Mapped("/proc/self/uid_map", id)) return false;
  }
  return true;
}
bool GidsMapped(std::initializer_list<uint32_t> ids) {
  for (uint32_t id : ids) {
    if (!Mapped("/proc/self/gid_map", id)) return false;
  }
  return true;
}

#define SKIP_UNLESS_ROOT()                          \
  if (geteuid() != 0)                               \
  GTEST_SKIP() << "needs root (the suite's normal " \
                  "identity)"
#define SKIP_UNLESS_UIDS(...)                                          \
  if (!UidsMapped({__VA_ARGS__}))                                      \
  GTEST_SKIP() << "uid " #__VA_ARGS__                                  \
                  " not mapped in this user namespace (only uid 0 is " \
                  "under Bazel's sandbox)"
#define SKIP_UNLESS_GIDS(...)                                          \
  if (!GidsMapped({__VA_ARGS__}))                                      \
  GTEST_SKIP() << "gid " #__VA_ARGS__                                  \
                  " not mapped in this user namespace (only gid 0 is " \
                  "under Bazel's sandbox)"

// In a forked child: exits with `code` unless `cond`.
#define CHILD_CHECK(cond, code) \
  if (!(cond)) _exit(code)

struct Caps {
  uint64_t effective = 0, permitted = 0, inheritable = 0;
};
Caps GetCaps() {
  __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct d[2] = {};
  Caps c;
  if (syscall(SYS_capget, &h, d) != 0) return c;
  c.effective = d[0].effective | (uint64_t{d[1].effective} << 32);
  c.permitted = d[0].permitted | (uint64_t{d[1].permitted} << 32);
  c.inheritable = d[0].inheritable | (uint64_t{d[1].inheritable} << 32);
  return c;
}
constexpr uint64_t Bit(int cap) { return uint64_t{1} << cap; }

bool ResUid(uid_t r, uid_t e, uid_t s) {
  uid_t a = 1, b = 1, c = 1;
  return syscall(SYS_getresuid, &a, &b, &c) == 0 && a == r && b == e && c == s;
}
bool ResGid(gid_t r, gid_t e, gid_t s) {
  gid_t a = 1, b = 1, c = 1;
  return syscall(SYS_getresgid, &a, &b, &c) == 0 && a == r && b == e && c == s;
}
uid_t FsUid() { return static_cast<uid_t>(syscall(SYS_setfsuid, -1)); }
gid_t FsGid() { return static_cast<gid_t>(syscall(SYS_setfsgid, -1)); }

TEST(IdentityTest, InvalidIdIsEinval) {
  SKIP_UNLESS_ROOT();
  EXPECT_THAT(
      InForkedChild([] {
        CHILD_CHECK(syscall(SYS_setuid, -1) == -1 && errno == EINVAL, 2);
        CHILD_CHECK(syscall(SYS_setgid, -1) == -1 && errno == EINVAL, 3);
        CHILD_CHECK(ResUid(0, 0, 0) && ResGid(0, 0, 0), 4);
      }),
      ExitedWithCode(0));
}

TEST(IdentityTest, MinusOneChangesNothing) {
  SKIP_UNLESS_ROOT();
  EXPECT_THAT(InForkedChild([] {
                Caps before = GetCaps();
                CHILD_CHECK(syscall(SYS_setresuid, -1, -1, -1) == 0, 2);
                CHILD_CHECK(syscall(SYS_setreuid, -1, -1) == 0, 3);
                CHILD_CHECK(syscall(SYS_setresgid, -1, -1, -1) == 0, 4);
                CHILD_CHECK(syscall(SYS_setregid, -1, -1) == 0, 5);
                CHILD_CHECK(ResUid(0, 0, 0) && ResGid(0, 0, 0), 6);
                Caps after = GetCaps();
                CHILD_CHECK(before.effective == after.effective &&
                                before.permitted == after.permitted,
                            7);
                // setfsuid(-1) only reports the current fsuid.
                CHILD_CHECK(FsUid() == 0 && FsGid() == 0, 8);
              }),
              ExitedWithCode(0));
}

TEST(IdentityTest, UnprivilegedMayOnlyUseOwnIds) {
  SKIP_UNLESS_ROOT();
  SKIP_UNLESS_UIDS(kOther, kOther2);
  EXPECT_THAT(
      InForkedChild([] {
        // Real and effective nobody, saved root.
        CHILD_CHECK(syscall(SYS_setresuid, kOther, kOther, 0) == 0, 2);
        CHILD_CHECK(ResUid(kOther, kOther, 0), 3);
        // No CAP_SETUID now: a foreign id is EPERM.
        CHILD_CHECK(syscall(SYS_setuid, kOther2) == -1 && errno == EPERM, 4);
        CHILD_CHECK(
            syscall(SYS_setresuid, -1, kOther2, -1) == -1 && errno == EPERM, 5);
        CHILD_CHECK(syscall(SYS_setreuid, kOther2, -1) == -1 && errno == EPERM,
                    6);
        // The saved uid may become the effective one, which gives
        // back the effective capabilities.
        CHILD_CHECK(syscall(SYS_setresuid, -1, 0, -1) == 0, 7);
        CHILD_CHECK(ResUid(kOther, 0, 0), 8);
        Caps c = GetCaps();
        CHILD_CHECK(c.effective == c.permitted && c.permitted != 0, 9);
        // setfsuid to a foreign id changes nothing without
        // CAP_SETUID... (euid 0 has it again, so first drop it).
        CHILD_CHECK(syscall(SYS_setresuid, -1, kOther, -1) == 0, 10);
        CHILD_CHECK(FsUid() == kOther, 11);
        CHILD_CHECK(syscall(SYS_setfsuid, kOther2) == kOther, 12);
        CHILD_CHECK(FsUid() == kOther, 13);
      }),
      ExitedWithCode(0));
}

TEST(IdentityTest, SetuidAsRootSetsAllAndDropsCapabilities) {
  SKIP_UNLESS_ROOT();
  SKIP_UNLESS_UIDS(kOther);
  EXPECT_THAT(InForkedChild([] {
                CHILD_CHECK(prctl(PR_GET_DUMPABLE) == 1, 2);
                CHILD_CHECK(setuid(kOther) == 0, 3);
                CHILD_CHECK(ResUid(kOther, kOther, kOther), 4);
                CHILD_CHECK(FsUid() == kOther, 5);
                Caps c = GetCaps();
                CHILD_CHECK(c.effective == 0 && c.permitted == 0, 6);
                CHILD_CHECK(setuid(0) == -1 && errno == EPERM, 7);
                // commit_creds: a new euid makes the process non-dumpable.
                CHILD_CHECK(prctl(PR_GET_DUMPABLE) == 0, 8);
              }),
              ExitedWithCode(0));
}

TEST(IdentityTest, EffectiveRootToNonRootClearsEffectiveOnly) {
  SKIP_UNLESS_ROOT();
  SKIP_UNLESS_UIDS(kOther);
  EXPECT_THAT(InForkedChild([] {
                Caps before = GetCaps();
                // seteuid: the real (and saved) uid stays 0.
                CHILD_CHECK(syscall(SYS_setresuid, -1, kOther, -1) == 0, 2);
                Caps c = GetCaps();
                CHILD_CHECK(c.effective == 0, 3);
                CHILD_CHECK(c.permitted == before.permitted, 4);
                CHILD_CHECK(syscall(SYS_setresuid, -1, 0, -1) == 0, 5);
                CHILD_CHECK(GetCaps().effective == before.permitted, 6);
              }),
              ExitedWithCode(0));
}

TEST(IdentityTest, KeepCapsKeepsPermitted) {
  SKIP_UNLESS_ROOT();
  SKIP_UNLESS_UIDS(kOther);
  EXPECT_THAT(InForkedChild([] {
                Caps before = GetCaps();
                CHILD_CHECK(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == 0, 2);
                CHILD_CHECK(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) == 1, 3);
                CHILD_CHECK(syscall(SYS_setresuid, kOther, kOther, kOther) == 0,
                            4);
                Caps c = GetCaps();
                CHILD_CHECK(c.permitted == before.permitted, 5);
                CHILD_CHECK(c.effective == 0, 6);
              }),
              ExitedWithCode(0));
}

TEST(IdentityTest, SetfsuidDropsAndRaisesFsCapabilities) {
  SKIP_UNLESS_ROOT();
  SKIP_UNLESS_UIDS(kOther);
  EXPECT_THAT(InForkedChild([] {
                Caps before = GetCaps();
                CHILD_CHECK(syscall(SYS_setfsuid, kOther) == 0, 2);
                CHILD_CHECK(FsUid() == kOther, 3);
                CHILD_CHECK(ResUid(0, 0, 0), 4);
                Caps c = GetCaps();
                const uint64_t fs = Bit(CAP_CHOWN) | Bit(CAP_DAC_OVERRIDE) |
                                    Bit(CAP_DAC_READ_SEARCH) | Bit(CAP_FOWNER) |
                                    Bit(CAP_FSETID) | Bit(CAP_LINUX_IMMUTABLE) |
                                    Bit(CAP_MKNOD) | Bit(CAP_MAC_OVERRIDE);
                CHILD_CHECK(c.effective == (before.effective & ~fs), 5);
                CHILD_CHECK(c.permitted == before.permitted, 6);
                CHILD_CHECK(syscall(SYS_setfsuid, 0) == kOther, 7);
                CHILD_CHECK(GetCaps().effective == before.effective, 8);
              }),
              ExitedWithCode(0));
}

TEST(IdentityTest, SetreuidSavedUidRule) {
  SKIP_UNLESS_ROOT();
  SKIP_UNLESS_UIDS(kOther, kOther2);
  EXPECT_THAT(InForkedChild([] {
                // Only the effective uid, to a value other than the real
                // uid: the saved uid follows it.
                CHILD_CHECK(syscall(SYS_setreuid, -1, kOther) == 0, 2);
                CHILD_CHECK(ResUid(0, kOther, kOther), 3);
              }),
              ExitedWithCode(0));
  EXPECT_THAT(InForkedChild([] {
                // Both set: saved = new effective.
                CHILD_CHECK(syscall(SYS_setreuid, kOther2, kOther) == 0, 2);
                CHILD_CHECK(ResUid(kOther2, kOther, kOther), 3);
                // Unprivileged: real may become the old effective; the
                // effective may become the old real.
                CHILD_CHECK(syscall(SYS_setreuid, kOther, kOther2) == 0, 4);
                CHILD_CHECK(ResUid(kOther, kOther2, kOther2), 5);
                CHILD_CHECK(
                    syscall(SYS_setreuid, 0, -1) == -1 && errno == EPERM, 6);
              }),
              ExitedWithCode(0));
}

TEST(IdentityTest, GroupIds) {
  SKIP_UNLESS_ROOT();
  SKIP_UNLESS_GIDS(kOther, kOther2);
  EXPECT_THAT(InForkedChild([] {
                CHILD_CHECK(syscall(SYS_setresgid, kOther, kOther2, 0) == 0, 2);
                CHILD_CHECK(ResGid(kOther, kOther2, 0), 3);
                CHILD_CHECK(FsGid() == kOther2, 4);
                // The new effective gid is the real one: the saved gid
                // stays.
                CHILD_CHECK(syscall(SYS_setregid, -1, kOther) == 0, 5);
                CHILD_CHECK(ResGid(kOther, kOther, 0), 6);
                CHILD_CHECK(syscall(SYS_setfsgid, 0) == kOther, 7);
                CHILD_CHECK(FsGid() == 0, 8);
                CHILD_CHECK(syscall(SYS_setgid, kOther2) == 0, 9);
                CHILD_CHECK(ResGid(kOther2, kOther2, kOther2), 10);
                // Group changes leave capabilities alone.
                CHILD_CHECK(GetCaps().effective != 0, 11);
                // Without CAP_SETGID only the own ids.
                CHILD_CHECK(DropCapabilities(false), 12);
                CHILD_CHECK(syscall(SYS_setgid, kOther) == -1 && errno == EPERM,
                            13);
                CHILD_CHECK(syscall(SYS_setgid, kOther2) == 0, 14);
              }),
              ExitedWithCode(0));
}

TEST(IdentityTest, WithoutCapabilitiesOwnIdsStillWork) {
  SKIP_UNLESS_ROOT();
  EXPECT_THAT(InForkedChild([] {
                CHILD_CHECK(DropCapabilities(false), 2);
                CHILD_CHECK(syscall(SYS_setuid, 0) == 0, 3);
                CHILD_CHECK(syscall(SYS_setresuid, 0, 0, 0) == 0, 4);
                CHILD_CHECK(syscall(SYS_setgid, 0) == 0, 5);
                CHILD_CHECK(syscall(SYS_setfsuid, 0) == 0, 6);
                CHILD_CHECK(ResUid(0, 0, 0), 7);
                CHILD_CHECK(
                    syscall(SYS_setgroups, 0, nullptr) == -1 && errno == EPERM,
                    8);
              }),
              ExitedWithCode(0));
}

// Whether this process may call setgroups at all (a user namespace with
// /proc/self/setgroups "deny" refuses it even to root).
bool MaySetgroups() {
  std::ifstream f("/proc/self/setgroups");
  std::string v;
  if (f >> v && v == "deny") return false;
  return true;
}

TEST(IdentityTest, SetgroupsErrors) {
  SKIP_UNLESS_ROOT();
  if (!MaySetgroups()) GTEST_SKIP() << "/proc/self/setgroups is deny";
  EXPECT_THAT(
      InForkedChild([] {
        std::vector<gid_t> big(65537, 0);
        CHILD_CHECK(syscall(SYS_setgroups, big.size(), big.data()) == -1 &&
                        errno == EINVAL,
                    2);
        CHILD_CHECK(
            syscall(SYS_setgroups, -1, big.data()) == -1 && errno == EINVAL, 3);
        CHILD_CHECK(syscall(SYS_setgroups, 1, 8) == -1 && errno == EFAULT, 4);
        gid_t bad[1] = {static_cast<gid_t>(-1)};
        CHILD_CHECK(syscall(SYS_setgroups, 1, bad) == -1 && errno == EINVAL, 5);
        // NGROUPS_MAX itself is fine.
        std::vector<gid_t> max(65536, 0);
        CHILD_CHECK(syscall(SYS_setgroups, max.size(), max.data()) == 0, 6);
        CHILD_CHECK(syscall(SYS_getgroups, 0, nullptr) == 65536, 7);
        CHILD_CHECK(syscall(SYS_setgroups, 0, nullptr) == 0, 8);
        CHILD_CHECK(syscall(SYS_getgroups, 0, nullptr) == 0, 9);
      }),
      ExitedWithCode(0));
}

TEST(IdentityTest, SetgroupsSortsAndGetgroupsReturns) {
  SKIP_UNLESS_ROOT();
  SKIP_UNLESS_GIDS(kOther, kOther2);
  if (!MaySetgroups()) GTEST_SKIP() << "/proc/self/setgroups is deny";
  EXPECT_THAT(
      InForkedChild([] {
        gid_t in[3] = {kOther, 0, kOther2};
        CHILD_CHECK(syscall(SYS_setgroups, 3, in) == 0, 2);
        gid_t out[3] = {};
        CHILD_CHECK(syscall(SYS_getgroups, 3, out) == 3, 3);
        CHILD_CHECK(out[0] == 0 && out[1] == kOther2 && out[2] == kOther, 4);
        CHILD_CHECK(syscall(SYS_getgroups, 2, out) == -1 && errno == EINVAL, 5);
      }),
      ExitedWithCode(0));
}

// Linux credentials are per thread; glibc makes setuid process-wide by
// signalling every thread (SIGSETXID) to make the same call.
TEST(IdentityTest, GlibcSetuidReachesOtherThreads) {
  SKIP_UNLESS_ROOT();
  SKIP_UNLESS_UIDS(kOther);
  EXPECT_THAT(InForkedChild([] {
                std::atomic<int> phase{0};
                long thread_uid = -1, raw_uid = -1;
                std::thread th([&] {
                  while (phase.load() != 1) usleep(1000);
                  thread_uid = syscall(SYS_getuid);
                  phase.store(2);
                });
                CHILD_CHECK(setuid(kOther) == 0, 2);
                raw_uid = syscall(SYS_getuid);
                phase.store(1);
                th.join();
                CHILD_CHECK(raw_uid == kOther, 3);
                CHILD_CHECK(thread_uid == kOther, 4);
              }),
              ExitedWithCode(0));
}

}  // namespace
}  // namespace sandbox::testutil
