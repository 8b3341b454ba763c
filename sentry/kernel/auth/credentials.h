// Credentials: a task's identity as data (Linux struct cred).
//
// All permission checks use these, never the host's: the host sees only the
// Sentry's own uid.
//
// Locking design (Linux's RCU-protected task->cred, as a shared_ptr):
//  - A Credentials object is immutable once a task holds it. Tasks hold
//    std::shared_ptr<const Credentials>; threads and fork children start
//    with the same object (no copy).
//  - Only a task's own thread changes its credentials (Linux:
//    commit_creds acts on current only): it copies the object, edits the
//    copy, and installs the copy with Task::CommitCreds, which swaps the
//    pointer under Task::mu_ (a leaf lock).
//  - The task's own thread reads Task::creds() without a lock (it is the
//    only writer, so the pointer cannot change under it). A reference it
//    takes stays valid for the rest of the syscall.
//  - Any other thread (/proc/PID/status, capget(pid), kill's permission
//    check, ptrace later) calls Task::CredsRef(), which copies the
//    shared_ptr under Task::mu_ and so keeps that snapshot alive however
//    long it reads it. Never hold a reference from creds() of another task.
//
// Per-thread credentials, as Linux: setuid(2) and friends change the
// calling thread only. POSIX's process-wide semantics are the C library's
// job: glibc's __nptl_setxid sends SIGSETXID (signal 33) with tgkill to
// every other thread and each one's handler makes the same syscall (musl's
// __synccall does the same with signal 34). In the Sentry, tgkill to
// another thread and handler delivery do not exist yet (signal.cc: self
// only), so glibc's tgkill fails with ESRCH, which glibc takes for a
// thread that already exited: the caller's thread changes and the other
// threads keep their old credentials (single-threaded programs, the common
// case, are exact). Signals 32 and 33 must stay deliverable to handlers
// when signal delivery lands.
//
// Capability sets are 64-bit masks of CAP_* bits (kAllCaps: the valid
// ones). securebits holds SECBIT_* (PR_SET_SECUREBITS; SECURE_KEEP_CAPS is
// PR_SET_KEEPCAPS).
#ifndef SENTRY_KERNEL_AUTH_CREDENTIALS_H_
#define SENTRY_KERNEL_AUTH_CREDENTIALS_H_

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
inline constexpr int kCapFsetid = 4;
inline constexpr int kCapKill = 5;
inline constexpr int kCapSetgid = 6;
inline constexpr int kCapSetuid = 7;
inline constexpr int kCapSetpcap = 8;
inline constexpr int kCapLinuxImmutable = 9;
inline constexpr int kCapSysAdmin = 21;
inline constexpr int kCapSysNice = 23;
inline constexpr int kCapSysResource = 24;
inline constexpr int kCapMknod = 27;
inline constexpr int kCapMacOverride = 32;
inline constexpr int kCapWakeAlarm = 35;
inline constexpr int kCapLastCap = 40;  // CAP_CHECKPOINT_RESTORE
inline constexpr uint64_t kAllCaps = (uint64_t{1} << (kCapLastCap + 1)) - 1;
constexpr uint64_t CapBit(int cap) { return uint64_t{1} << cap; }
// CAP_FS_MASK: what a change of fsuid to or from 0 drops or raises.
inline constexpr uint64_t kCapFsMask =
    CapBit(kCapChown) | CapBit(kCapDacOverride) | CapBit(kCapDacReadSearch) |
    CapBit(kCapFowner) | CapBit(kCapFsetid) | CapBit(kCapLinuxImmutable) |
    CapBit(kCapMknod) | CapBit(kCapMacOverride);

// securebits (linux/securebits.h): each flag's lock is the next bit.
inline constexpr uint32_t kSecureNoroot = 1 << 0;
inline constexpr uint32_t kSecureNoSetuidFixup = 1 << 2;
inline constexpr uint32_t kSecureKeepCaps = 1 << 4;
inline constexpr uint32_t kSecureKeepCapsLocked = 1 << 5;
inline constexpr uint32_t kSecureNoCapAmbientRaise = 1 << 6;
inline constexpr uint32_t kSecureAllBits = 0x55;
inline constexpr uint32_t kSecureAllLocks = 0xaa;

struct Credentials {
  Uid ruid = 0, euid = 0, suid = 0, fsuid = 0;
  Gid rgid = 0, egid = 0, sgid = 0, fsgid = 0;
  std::vector<Gid> groups;  // supplementary groups, sorted
  uint64_t cap_permitted = 0;
  uint64_t cap_inheritable = 0;
  uint64_t cap_effective = 0;
  uint64_t cap_bounding = kAllCaps;
  uint64_t cap_ambient = 0;
  uint32_t securebits = 0;  // SECBIT_*

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
  bool IsSecure(uint32_t bit) const { return securebits & bit; }
};

// cap_task_fix_setuid for LSM_SETID_ID/RE/RES (cap_emulate_setxuid):
// `next` has the new uids of a task whose credentials were `old`.
//  - leaving every one of r/e/s uid 0 clears permitted and effective
//    (unless SECURE_KEEP_CAPS) and always clears ambient;
//  - euid 0 -> nonzero clears effective; nonzero -> 0 sets effective to
//    permitted.
// Nothing with SECURE_NO_SETUID_FIXUP.
inline void FixSetuidCaps(const Credentials& old, Credentials& next) {
  if (old.IsSecure(kSecureNoSetuidFixup)) return;
  bool old_root = old.ruid == 0 || old.euid == 0 || old.suid == 0;
  bool new_root = next.ruid == 0 || next.euid == 0 || next.suid == 0;
  if (old_root && !new_root) {
    if (!old.IsSecure(kSecureKeepCaps)) {
      next.cap_permitted = 0;
      next.cap_effective = 0;
    }
    next.cap_ambient = 0;
  }
  if (old.euid == 0 && next.euid != 0) next.cap_effective = 0;
  if (old.euid != 0 && next.euid == 0) next.cap_effective = next.cap_permitted;
}

// cap_task_fix_setuid for LSM_SETID_FS (setfsuid): fsuid 0 -> nonzero drops
// the file-system capabilities from effective; nonzero -> 0 raises those of
// them that are permitted.
inline void FixSetfsuidCaps(const Credentials& old, Credentials& next) {
  if (old.IsSecure(kSecureNoSetuidFixup)) return;
  if (old.fsuid == 0 && next.fsuid != 0) next.cap_effective &= ~kCapFsMask;
  if (old.fsuid != 0 && next.fsuid == 0) {
    next.cap_effective |= next.cap_permitted & kCapFsMask;
  }
}

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_AUTH_CREDENTIALS_H_
