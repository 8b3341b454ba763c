// Linux's capability fixups on uid changes (cap_emulate_setxuid,
// cap_task_fix_setuid for setfsuid).
#include "sentry/kernel/auth/credentials.h"

#include "gtest/gtest.h"

namespace sandbox::kernel {
namespace {

Credentials WithIds(Credentials c, Uid r, Uid e, Uid s, Uid fs) {
  c.ruid = r;
  c.euid = e;
  c.suid = s;
  c.fsuid = fs;
  return c;
}

TEST(CredentialsTest, LeavingEveryRootUidClearsPermittedEffectiveAmbient) {
  Credentials old = Credentials::Root();
  old.cap_ambient = CapBit(kCapKill);
  Credentials next = WithIds(old, 1000, 1000, 1000, 1000);
  FixSetuidCaps(old, next);
  EXPECT_EQ(next.cap_permitted, 0u);
  EXPECT_EQ(next.cap_effective, 0u);
  EXPECT_EQ(next.cap_ambient, 0u);
}

TEST(CredentialsTest, KeepCapsKeepsPermittedButNotEffectiveOrAmbient) {
  Credentials old = Credentials::Root();
  old.securebits = kSecureKeepCaps;
  old.cap_ambient = CapBit(kCapKill);
  Credentials next = WithIds(old, 1000, 1000, 1000, 1000);
  FixSetuidCaps(old, next);
  EXPECT_EQ(next.cap_permitted, kAllCaps);
  EXPECT_EQ(next.cap_effective, 0u);  // euid 0 -> nonzero
  EXPECT_EQ(next.cap_ambient, 0u);
}

TEST(CredentialsTest, SavedRootKeepsPermittedAndEuidZeroRestoresEffective) {
  Credentials old = Credentials::Root();
  Credentials next = WithIds(old, 1000, 1000, 0, 1000);
  FixSetuidCaps(old, next);
  EXPECT_EQ(next.cap_permitted, kAllCaps);
  EXPECT_EQ(next.cap_effective, 0u);
  Credentials back = WithIds(next, 1000, 0, 0, 0);
  FixSetuidCaps(next, back);
  EXPECT_EQ(back.cap_effective, kAllCaps);
}

TEST(CredentialsTest, NoSetuidFixupChangesNothing) {
  Credentials old = Credentials::Root();
  old.securebits = kSecureNoSetuidFixup;
  Credentials next = WithIds(old, 1000, 1000, 1000, 1000);
  FixSetuidCaps(old, next);
  EXPECT_EQ(next.cap_effective, kAllCaps);
  FixSetfsuidCaps(old, next);
  EXPECT_EQ(next.cap_effective, kAllCaps);
}

TEST(CredentialsTest, FsuidDropsAndRaisesOnlyFsCapabilities) {
  Credentials old = Credentials::Root();
  Credentials next = WithIds(old, 0, 0, 0, 1000);
  FixSetfsuidCaps(old, next);
  EXPECT_EQ(next.cap_effective, kAllCaps & ~kCapFsMask);
  EXPECT_FALSE(next.HasCapability(kCapChown));
  EXPECT_FALSE(next.HasCapability(kCapMacOverride));
  EXPECT_TRUE(next.HasCapability(kCapSetuid));
  Credentials back = WithIds(next, 0, 0, 0, 0);
  back.cap_permitted = kAllCaps & ~CapBit(kCapChown);
  FixSetfsuidCaps(next, back);
  // Raised only where permitted.
  EXPECT_EQ(back.cap_effective, kAllCaps & ~CapBit(kCapChown));
}

}  // namespace
}  // namespace sandbox::kernel
