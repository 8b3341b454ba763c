// Extended attributes: getxattr/setxattr/listxattr/removexattr and their
// l* and f* variants (Linux fs/xattr.c + xattr_permission).
//
// Namespaces: "user." on regular files and directories only (ENODATA to
// read, EPERM to write elsewhere; in a sticky directory only its owner or
// CAP_FOWNER may write), "trusted." with CAP_SYS_ADMIN (EPERM otherwise;
// listing hides them), anything else EOPNOTSUPP ("security.", "system."
// have no handlers yet). Names are 1..255 bytes (ERANGE), values at most
// 64 KiB (E2BIG). The syscall layer copies names in and values out and
// turns a too-small buffer into ERANGE.
#ifndef SENTRY_VFS_XATTR_OPS_H_
#define SENTRY_VFS_XATTR_OPS_H_

#include <string>
#include <string_view>
#include <vector>

#include "sentry/base/result.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/path_walk.h"

namespace sandbox::vfs {

inline constexpr size_t kXattrNameMax = 255;
inline constexpr size_t kXattrSizeMax = 65536;

// On a resolved location (the f* variants pass the file's vd()).
KResult<std::string> GetXattr(const kernel::Credentials& creds,
                              const VirtualDentry& vd, std::string_view name);
KResult<void> SetXattr(const kernel::Credentials& creds,
                       const VirtualDentry& vd, std::string_view name,
                       std::string_view value, int flags);
KResult<std::vector<std::string>> ListXattr(const kernel::Credentials& creds,
                                            const VirtualDentry& vd);
KResult<void> RemoveXattr(const kernel::Credentials& creds,
                          const VirtualDentry& vd, std::string_view name);

// Path variants: `follow` is false for the l* syscalls.
KResult<std::string> GetXattrAt(const ResolveBase& base, std::string_view path,
                                bool follow, std::string_view name);
KResult<void> SetXattrAt(const ResolveBase& base, std::string_view path,
                         bool follow, std::string_view name,
                         std::string_view value, int flags);
KResult<std::vector<std::string>> ListXattrAt(const ResolveBase& base,
                                              std::string_view path,
                                              bool follow);
KResult<void> RemoveXattrAt(const ResolveBase& base, std::string_view path,
                            bool follow, std::string_view name);

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_XATTR_OPS_H_
