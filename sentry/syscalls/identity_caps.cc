// Capability syscalls: capget(2), capset(2) and prctl's capability options
// (Linux kernel/capability.c, security/commoncap.c).
//
// Credentials change as in identity_set.cc: a copy installed with
// Task::CommitCreds. capget of another task reads a CredsRef snapshot.
#include <linux/capability.h>
#include <sys/prctl.h>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/kernel/kernel.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/identity.h"

namespace sandbox::syscalls {
namespace {

using kernel::Credentials;

struct CapHeader {
  uint32_t version;
  int32_t pid;
};
struct CapData {
  uint32_t effective, permitted, inheritable;
};
static_assert(sizeof(CapHeader) == 8 && sizeof(CapData) == 12);

// cap_validate_magic: how many CapData words the header's version has (1
// for v1, 2 for v2 and v3). An unknown version is EINVAL after the
// preferred version (v3) is written back into the header (the probe
// libcap uses).
KResult<int> ValidateVersion(Task& t, UserAddr header) {
  TRY(uint32_t version, t.CopyInObj<uint32_t>(header.addr));
  switch (version) {
    case _LINUX_CAPABILITY_VERSION_1:
      return 1;
    case _LINUX_CAPABILITY_VERSION_2:
    case _LINUX_CAPABILITY_VERSION_3:
      return 2;
    default:
      TRY_VOID(
          t.CopyOutObj<uint32_t>(header.addr, _LINUX_CAPABILITY_VERSION_3));
      return kEINVAL;
  }
}

// capget(2). A null data pointer only probes the version: 0 for a good one
// and also for a bad one (after the write-back). pid 0 is the caller; a
// negative pid is EINVAL; an unknown one ESRCH.
SyscallResult Capget(Task& t, UserAddr header, UserAddr data) {
  KResult<int> words = ValidateVersion(t, header);
  if (data.addr == 0) {
    return (words.ok() || words.error() == kEINVAL) ? KResult<uint64_t>(0)
                                                    : words.error();
  }
  if (!words.ok()) return words.error();
  TRY(int32_t pid, t.CopyInObj<int32_t>(header.addr + 4));
  if (pid < 0) return kEINVAL;
  std::shared_ptr<const Credentials> creds;
  if (pid == 0 || pid == t.tid()) {
    creds = t.CredsRef();
  } else {
    std::shared_ptr<kernel::Task> target =
        t.kernel().root_pid_namespace().Lookup(pid);
    if (target == nullptr) return kESRCH;
    creds = target->CredsRef();
  }
  CapData out[2];
  for (int i = 0; i < 2; ++i) {
    int shift = 32 * i;
    out[i].effective = static_cast<uint32_t>(creds->cap_effective >> shift);
    out[i].permitted = static_cast<uint32_t>(creds->cap_permitted >> shift);
    out[i].inheritable = static_cast<uint32_t>(creds->cap_inheritable >> shift);
  }
  TRY_VOID(t.CopyOutFull(data.addr, out, *words * sizeof(CapData)));
  return uint64_t{0};
}

// capset(2): the caller only (pid 0 or its own TID, else EPERM). Bits
// above CAP_LAST_CAP are dropped; a v1 header sets the low 32 bits and
// clears the rest. Linux's cap_capset rules, in order (each EPERM):
// inheritable within old inheritable|permitted unless CAP_SETPCAP, and
// within old inheritable|bounding; permitted within the old permitted;
// effective within the new permitted. Ambient loses what is no longer both
// permitted and inheritable.
SyscallResult Capset(Task& t, UserAddr header, UserAddr data) {
  TRY(int words, ValidateVersion(t, header));
  TRY(int32_t pid, t.CopyInObj<int32_t>(header.addr + 4));
  if (pid != 0 && pid != t.tid()) return kEPERM;
  CapData in[2] = {};
  TRY_VOID(t.CopyInFull(data.addr, in, words * sizeof(CapData)));
  auto join = [](uint32_t lo, uint32_t hi) {
    return (uint64_t{lo} | (uint64_t{hi} << 32)) & kernel::kAllCaps;
  };
  uint64_t effective = join(in[0].effective, in[1].effective);
  uint64_t permitted = join(in[0].permitted, in[1].permitted);
  uint64_t inheritable = join(in[0].inheritable, in[1].inheritable);
  const Credentials& old = t.creds();
  if (!old.HasCapability(kernel::kCapSetpcap) &&
      (inheritable & ~(old.cap_inheritable | old.cap_permitted)) != 0) {
    return kEPERM;
  }
  if ((inheritable & ~(old.cap_inheritable | old.cap_bounding)) != 0) {
    return kEPERM;
  }
  if ((permitted & ~old.cap_permitted) != 0) return kEPERM;
  if ((effective & ~permitted) != 0) return kEPERM;
  Credentials next = old;
  next.cap_effective = effective;
  next.cap_permitted = permitted;
  next.cap_inheritable = inheritable;
  next.cap_ambient &= permitted & inheritable;
  t.CommitCreds(std::move(next));
  return uint64_t{0};
}

bool ValidCap(uint64_t cap) {
  return cap <= static_cast<uint64_t>(kernel::kCapLastCap);
}

}  // namespace

KResult<uint64_t> CapabilityPrctl(Task& t, int option, uint64_t arg2,
                                  uint64_t arg3, uint64_t arg4, uint64_t arg5) {
  const Credentials& old = t.creds();
  switch (option) {
    case PR_CAPBSET_READ:
      if (!ValidCap(arg2)) return kEINVAL;
      return (old.cap_bounding >> arg2) & 1;
    case PR_CAPBSET_DROP: {
      // cap_prctl_drop: the privilege check comes before the range check.
      if (!old.HasCapability(kernel::kCapSetpcap)) return kEPERM;
      if (!ValidCap(arg2)) return kEINVAL;
      Credentials next = old;
      next.cap_bounding &= ~kernel::CapBit(static_cast<int>(arg2));
      t.CommitCreds(std::move(next));
      return uint64_t{0};
    }
    case PR_CAP_AMBIENT: {
      if (arg2 == PR_CAP_AMBIENT_CLEAR_ALL) {
        if (arg3 != 0 || arg4 != 0 || arg5 != 0) return kEINVAL;
        Credentials next = old;
        next.cap_ambient = 0;
        t.CommitCreds(std::move(next));
        return uint64_t{0};
      }
      if (!ValidCap(arg3) || arg4 != 0 || arg5 != 0) return kEINVAL;
      const uint64_t bit = kernel::CapBit(static_cast<int>(arg3));
      if (arg2 == PR_CAP_AMBIENT_IS_SET) {
        return uint64_t{(old.cap_ambient & bit) != 0};
      }
      if (arg2 != PR_CAP_AMBIENT_RAISE && arg2 != PR_CAP_AMBIENT_LOWER) {
        return kEINVAL;
      }
      Credentials next = old;
      if (arg2 == PR_CAP_AMBIENT_RAISE) {
        if ((old.cap_permitted & bit) == 0 ||
            (old.cap_inheritable & bit) == 0 ||
            old.IsSecure(kernel::kSecureNoCapAmbientRaise)) {
          return kEPERM;
        }
        next.cap_ambient |= bit;
      } else {
        next.cap_ambient &= ~bit;
      }
      t.CommitCreds(std::move(next));
      return uint64_t{0};
    }
    case PR_GET_KEEPCAPS:
      return uint64_t{old.IsSecure(kernel::kSecureKeepCaps)};
    case PR_SET_KEEPCAPS: {
      if (arg2 > 1) return kEINVAL;
      if (old.IsSecure(kernel::kSecureKeepCapsLocked)) return kEPERM;
      Credentials next = old;
      if (arg2 != 0) {
        next.securebits |= kernel::kSecureKeepCaps;
      } else {
        next.securebits &= ~kernel::kSecureKeepCaps;
      }
      t.CommitCreds(std::move(next));
      return uint64_t{0};
    }
    case PR_GET_SECUREBITS:
      return uint64_t{old.securebits};
    case PR_SET_SECUREBITS: {
      // No change of a locked bit, no unlocking, no unknown bit, and
      // CAP_SETPCAP for anything (each EPERM).
      const uint64_t locks = old.securebits & kernel::kSecureAllLocks;
      if (((locks >> 1) & (old.securebits ^ arg2)) != 0 ||
          (locks & ~arg2) != 0 ||
          (arg2 &
           ~uint64_t{kernel::kSecureAllLocks | kernel::kSecureAllBits}) != 0 ||
          !old.HasCapability(kernel::kCapSetpcap)) {
        return kEPERM;
      }
      Credentials next = old;
      next.securebits = static_cast<uint32_t>(arg2);
      t.CommitCreds(std::move(next));
      return uint64_t{0};
    }
    default:
      return kEINVAL;
  }
}

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Capget);
SANDBOX_SYSCALL_HANDLER(Capset);

}  // namespace sandbox::syscalls
