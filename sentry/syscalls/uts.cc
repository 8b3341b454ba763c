// sethostname(2), setdomainname(2): the sandbox's UTS names
// (sentry/kernel/uts.h), which uname(2) and /proc/sys/kernel/hostname and
// domainname report. The host's names never change.
#include "sentry/kernel/uts.h"

#include <string>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/kernel.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {
namespace {

// Linux's order: CAP_SYS_ADMIN (over the UTS namespace's user namespace:
// the sandbox's), then 0 <= len <= 64, then the copy (EFAULT). The `len`
// bytes are the name as given, NULs included.
KResult<std::string> CopyInName(Task& t, UserAddr name, int32_t len) {
  if (!t.creds().HasCapability(kernel::kCapSysAdmin)) return kEPERM;
  if (len < 0 || len > kernel::Uts::kMaxLen) return kEINVAL;
  std::string s(static_cast<size_t>(len), '\0');
  TRY_VOID(t.CopyInFull(name.addr, s.data(), s.size()));
  return s;
}

// sethostname(2).
SyscallResult Sethostname(Task& t, UserAddr name, int32_t len) {
  TRY(std::string s, CopyInName(t, name, len));
  t.kernel().uts().set_hostname(std::move(s));
  return uint64_t{0};
}

// setdomainname(2).
SyscallResult Setdomainname(Task& t, UserAddr name, int32_t len) {
  TRY(std::string s, CopyInName(t, name, len));
  t.kernel().uts().set_domainname(std::move(s));
  return uint64_t{0};
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Sethostname);
SANDBOX_SYSCALL_HANDLER(Setdomainname);

}  // namespace sandbox::syscalls
