#include "hostconfine/capabilities.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace sandbox::hostconfine {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::ErrnoToStatus(errno, what);
}

}  // namespace

absl::Status DropCapabilitiesExcept(uint64_t keep) {
  for (int c = 0; c <= 63; ++c) {
    if (keep & (uint64_t{1} << c)) continue;
    // EINVAL past the last capability the kernel knows.
    if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno != EINVAL &&
        errno != EPERM) {
      return Errno("PR_CAPBSET_DROP");
    }
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 &&
      errno != EINVAL) {
    return Errno("PR_CAP_AMBIENT_CLEAR_ALL");
  }
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  // Nothing kept: the sets are all zero, no need to read them.
  if (keep != 0) {
    if (syscall(SYS_capget, &hdr, data) != 0) return Errno("capget");
    for (int i = 0; i < 2; ++i) {
      uint32_t k = static_cast<uint32_t>(keep >> (32 * i));
      data[i].effective &= k;
      data[i].permitted &= k;
      data[i].inheritable = 0;
    }
  }
  if (syscall(SYS_capset, &hdr, data) != 0) return Errno("capset");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return Errno("PR_SET_NO_NEW_PRIVS");
  }
  return absl::OkStatus();
}

}  // namespace sandbox::hostconfine
