// Identity-changing syscalls: set*uid, set*gid, setfsuid, setfsgid,
// setgroups (Linux kernel/sys.c, kernel/groups.c).
//
// Each handler copies the calling task's Credentials, edits the copy and
// installs it with Task::CommitCreds (credentials.h: per-thread,
// copy-on-write; only the task's own thread replaces its credentials).
// Capability fixups on uid changes are Linux's cap_task_fix_setuid
// (FixSetuidCaps, FixSetfsuidCaps in credentials.h).
//
// There is a single user namespace in which every id maps to itself, so the
// only invalid id is (uid_t)-1 (Linux: make_kuid fails, EINVAL), and
// "capable" is the effective set of the caller.
#include <algorithm>
#include <vector>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {
namespace {

using kernel::Credentials;
using kernel::Gid;
using kernel::Uid;

constexpr uint32_t kNoChange = 0xffffffff;  // (uid_t)-1
constexpr int32_t kNgroupsMax = 65536;      // NGROUPS_MAX

bool Valid(uint32_t id) { return id != kNoChange; }

// The three ids of a set, for the "is it one of mine" rule.
bool OneOf(uint32_t id, uint32_t a, uint32_t b, uint32_t c) {
  return id == a || id == b || id == c;
}

// setuid(2): with CAP_SETUID all four uids; otherwise euid and fsuid, to the
// real or saved uid only.
SyscallResult Setuid(Task& t, uint32_t uid) {
  if (!Valid(uid)) return kEINVAL;
  const Credentials& old = t.creds();
  Credentials next = old;
  if (old.HasCapability(kernel::kCapSetuid)) {
    next.ruid = next.suid = uid;
  } else if (uid != old.ruid && uid != old.suid) {
    return kEPERM;
  }
  next.euid = next.fsuid = uid;
  kernel::FixSetuidCaps(old, next);
  t.CommitCreds(std::move(next));
  return uint64_t{0};
}

// setgid(2).
SyscallResult Setgid(Task& t, uint32_t gid) {
  if (!Valid(gid)) return kEINVAL;
  const Credentials& old = t.creds();
  Credentials next = old;
  if (old.HasCapability(kernel::kCapSetgid)) {
    next.rgid = next.sgid = gid;
  } else if (gid != old.rgid && gid != old.sgid) {
    return kEPERM;
  }
  next.egid = next.fsgid = gid;
  t.CommitCreds(std::move(next));
  return uint64_t{0};
}

// The setreuid/setregid rule on one id set: r may become the old real or
// effective id; e the old real, effective or saved id (unless capable). The
// saved id follows the new effective id when r is set or e differs from the
// old real id; fs follows e.
template <typename Id>
KResult<void> SetRe(uint32_t r, uint32_t e, bool capable, Id& ro, Id& eo,
                    Id& so, Id& fso) {
  const Id old_r = ro, old_e = eo, old_s = so;
  if (r != kNoChange) {
    if (!capable && r != old_r && r != old_e) return kEPERM;
    ro = r;
  }
  if (e != kNoChange) {
    if (!capable && !OneOf(e, old_r, old_e, old_s)) return kEPERM;
    eo = e;
  }
  if (r != kNoChange || (e != kNoChange && e != old_r)) so = eo;
  fso = eo;
  return {};
}

// setreuid(2). -1 means "unchanged", so no id is invalid here.
SyscallResult Setreuid(Task& t, uint32_t ruid, uint32_t euid) {
  const Credentials& old = t.creds();
  Credentials next = old;
  TRY_VOID(SetRe(ruid, euid, old.HasCapability(kernel::kCapSetuid), next.ruid,
                 next.euid, next.suid, next.fsuid));
  kernel::FixSetuidCaps(old, next);
  t.CommitCreds(std::move(next));
  return uint64_t{0};
}

// setregid(2).
SyscallResult Setregid(Task& t, uint32_t rgid, uint32_t egid) {
  const Credentials& old = t.creds();
  Credentials next = old;
  TRY_VOID(SetRe(rgid, egid, old.HasCapability(kernel::kCapSetgid), next.rgid,
                 next.egid, next.sgid, next.fsgid));
  t.CommitCreds(std::move(next));
  return uint64_t{0};
}

// The setresuid/setresgid rule: each id that is not -1 must be one of the
// old real, effective and saved ids unless capable; fs follows effective.
// Returns false when nothing would change (Linux returns 0 early then, so
// not even the fixups run).
template <typename Id>
KResult<bool> SetRes(uint32_t r, uint32_t e, uint32_t s, bool capable, Id& ro,
                     Id& eo, Id& so, Id& fso) {
  if ((r == kNoChange || r == ro) &&
      (e == kNoChange || (e == eo && e == fso)) &&
      (s == kNoChange || s == so)) {
    return false;
  }
  if (!capable) {
    for (uint32_t id : {r, e, s}) {
      if (id != kNoChange && !OneOf(id, ro, eo, so)) return kEPERM;
    }
  }
  if (r != kNoChange) ro = r;
  if (e != kNoChange) eo = e;
  if (s != kNoChange) so = s;
  fso = eo;
  return true;
}

// setresuid(2).
SyscallResult Setresuid(Task& t, uint32_t ruid, uint32_t euid, uint32_t suid) {
  const Credentials& old = t.creds();
  Credentials next = old;
  TRY(bool change,
      SetRes(ruid, euid, suid, old.HasCapability(kernel::kCapSetuid), next.ruid,
             next.euid, next.suid, next.fsuid));
  if (!change) return uint64_t{0};
  kernel::FixSetuidCaps(old, next);
  t.CommitCreds(std::move(next));
  return uint64_t{0};
}

// setresgid(2).
SyscallResult Setresgid(Task& t, uint32_t rgid, uint32_t egid, uint32_t sgid) {
  const Credentials& old = t.creds();
  Credentials next = old;
  TRY(bool change,
      SetRes(rgid, egid, sgid, old.HasCapability(kernel::kCapSetgid), next.rgid,
             next.egid, next.sgid, next.fsgid));
  if (!change) return uint64_t{0};
  t.CommitCreds(std::move(next));
  return uint64_t{0};
}

// setfsuid(2): always returns the old fsuid; changes it only to one of the
// caller's ids (or anything with CAP_SETUID), never to -1.
SyscallResult Setfsuid(Task& t, uint32_t uid) {
  const Credentials& old = t.creds();
  const uint64_t old_fsuid = old.fsuid;
  if (!Valid(uid)) return old_fsuid;
  if (OneOf(uid, old.ruid, old.euid, old.suid) || uid == old.fsuid ||
      old.HasCapability(kernel::kCapSetuid)) {
    if (uid != old.fsuid) {
      Credentials next = old;
      next.fsuid = uid;
      kernel::FixSetfsuidCaps(old, next);
      t.CommitCreds(std::move(next));
    }
  }
  return old_fsuid;
}

// setfsgid(2).
SyscallResult Setfsgid(Task& t, uint32_t gid) {
  const Credentials& old = t.creds();
  const uint64_t old_fsgid = old.fsgid;
  if (!Valid(gid)) return old_fsgid;
  if (OneOf(gid, old.rgid, old.egid, old.sgid) || gid == old.fsgid ||
      old.HasCapability(kernel::kCapSetgid)) {
    if (gid != old.fsgid) {
      Credentials next = old;
      next.fsgid = gid;
      t.CommitCreds(std::move(next));
    }
  }
  return old_fsgid;
}

// setgroups(2): EPERM without CAP_SETGID (checked first, as Linux), EINVAL
// for a size above NGROUPS_MAX (or negative) or a -1 entry, EFAULT.
// Groups are kept sorted (duplicates kept, as Linux's groups_sort).
SyscallResult Setgroups(Task& t, int32_t size, UserAddr list) {
  const Credentials& old = t.creds();
  if (!old.HasCapability(kernel::kCapSetgid)) return kEPERM;
  if (size < 0 || size > kNgroupsMax) return kEINVAL;
  std::vector<Gid> groups(static_cast<size_t>(size));
  if (size > 0) {
    TRY_VOID(
        t.CopyInFull(list.addr, groups.data(), groups.size() * sizeof(Gid)));
  }
  for (Gid g : groups) {
    if (!Valid(g)) return kEINVAL;
  }
  std::sort(groups.begin(), groups.end());
  Credentials next = old;
  next.groups = std::move(groups);
  t.CommitCreds(std::move(next));
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Setuid);
SANDBOX_SYSCALL_HANDLER(Setgid);
SANDBOX_SYSCALL_HANDLER(Setreuid);
SANDBOX_SYSCALL_HANDLER(Setregid);
SANDBOX_SYSCALL_HANDLER(Setresuid);
SANDBOX_SYSCALL_HANDLER(Setresgid);
SANDBOX_SYSCALL_HANDLER(Setfsuid);
SANDBOX_SYSCALL_HANDLER(Setfsgid);
SANDBOX_SYSCALL_HANDLER(Setgroups);

}  // namespace sandbox::syscalls
