// Identity syscalls: the task's credentials as data. The get* calls are
// here; identity_set.cc changes ids and groups, identity_caps.cc
// capabilities.
#include "sentry/syscalls/identity.h"

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {
namespace {

// getuid(2), geteuid(2), getgid(2), getegid(2).
SyscallResult Getuid(Task& t) { return uint64_t{t.creds().ruid}; }
SyscallResult Geteuid(Task& t) { return uint64_t{t.creds().euid}; }
SyscallResult Getgid(Task& t) { return uint64_t{t.creds().rgid}; }
SyscallResult Getegid(Task& t) { return uint64_t{t.creds().egid}; }

// getresuid(2).
SyscallResult Getresuid(Task& t, UserPtr<uint32_t> r, UserPtr<uint32_t> e,
                        UserPtr<uint32_t> s) {
  const kernel::Credentials& c = t.creds();
  TRY_VOID(r.CopyOut(t, c.ruid));
  TRY_VOID(e.CopyOut(t, c.euid));
  TRY_VOID(s.CopyOut(t, c.suid));
  return uint64_t{0};
}

// getresgid(2).
SyscallResult Getresgid(Task& t, UserPtr<uint32_t> r, UserPtr<uint32_t> e,
                        UserPtr<uint32_t> s) {
  const kernel::Credentials& c = t.creds();
  TRY_VOID(r.CopyOut(t, c.rgid));
  TRY_VOID(e.CopyOut(t, c.egid));
  TRY_VOID(s.CopyOut(t, c.sgid));
  return uint64_t{0};
}

// getgroups(2).
SyscallResult Getgroups(Task& t, int32_t size, UserAddr list) {
  const std::vector<kernel::Gid>& g = t.creds().groups;
  if (size < 0) return kEINVAL;
  if (size == 0) return uint64_t{g.size()};
  if (static_cast<size_t>(size) < g.size()) return kEINVAL;
  TRY_VOID(t.CopyOutFull(list.addr, g.data(), g.size() * sizeof(kernel::Gid)));
  return uint64_t{g.size()};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Getuid);
SANDBOX_SYSCALL_HANDLER(Geteuid);
SANDBOX_SYSCALL_HANDLER(Getgid);
SANDBOX_SYSCALL_HANDLER(Getegid);
SANDBOX_SYSCALL_HANDLER(Getresuid);
SANDBOX_SYSCALL_HANDLER(Getresgid);
SANDBOX_SYSCALL_HANDLER(Getgroups);

}  // namespace sandbox::syscalls
