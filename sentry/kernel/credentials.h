// Credentials: a task's identity as data (Linux struct cred).
//
// All permission checks use these, never the host's: the host sees only the
// Sentry's own uid. Immutable once shared: a task that changes its identity
// installs a new Credentials (copy on write).
#ifndef SENTRY_KERNEL_CREDENTIALS_H_
#define SENTRY_KERNEL_CREDENTIALS_H_

#include <stdint.h>

#include <algorithm>
#include <vector>

namespace sandbox::kernel {

using Uid = uint32_t;
using Gid = uint32_t;

// Capability numbers (linux/capability.h) used by the Sentry.
inline constexpr int kCapChown = 0;
inline constexpr int kCapDacOverride = 1;
inline constexpr int kCapDacReadSearch = 2;
inline constexpr int kCapFowner = 3;
inline constexpr int kCapKill = 5;
inline constexpr int kCapSetgid = 6;
inline constexpr int kCapSetuid = 7;
inline constexpr int kCapSysAdmin = 21;
inline constexpr int kCapSysResource = 24;
inline constexpr int kCapLastCap = 40;  // CAP_CHECKPOINT_RESTORE
inline constexpr uint64_t kAllCaps = (uint64_t{1} << (kCapLastCap + 1)) - 1;

struct Credentials {
  Uid ruid = 0, euid = 0, suid = 0, fsuid = 0;
  Gid rgid = 0, egid = 0, sgid = 0, fsgid = 0;
  std::vector<Gid> groups;  // supplementary groups, sorted
  uint64_t cap_permitted = 0;
  uint64_t cap_inheritable = 0;
  uint64_t cap_effective = 0;
  uint64_t cap_bounding = kAllCaps;
  uint64_t cap_ambient = 0;

  // Root with every capability (the sandbox's own root user).
  static Credentials Root() {
    Credentials c;
    c.cap_permitted = c.cap_effective = kAllCaps;
    return c;
  }
  // An ordinary user: no capabilities.
  static Credentials User(Uid uid, Gid gid, std::vector<Gid> groups = {}) {
    Credentials c;
    c.ruid = c.euid = c.suid = c.fsuid = uid;
    c.rgid = c.egid = c.sgid = c.fsgid = gid;
    std::sort(groups.begin(), groups.end());
    c.groups = std::move(groups);
    return c;
  }

  bool HasCapability(int cap) const {
    return cap >= 0 && cap <= kCapLastCap && (cap_effective >> cap) & 1;
  }
  bool InGroup(Gid gid) const {
    return gid == fsgid ||
           std::binary_search(groups.begin(), groups.end(), gid);
  }
};

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_CREDENTIALS_H_
