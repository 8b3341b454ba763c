// PATH lookup for `runsc do -- NAME`, in the sandbox's own file system, as
// execvp(3) does it (glibc's __execvpe).
#ifndef SENTRY_BOOT_PATH_LOOKUP_H_
#define SENTRY_BOOT_PATH_LOOKUP_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sentry/base/result.h"
#include "sentry/vfs/path_walk.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::boot {

// The search path when the environment has no PATH: glibc's execvp uses
// CS_PATH (confstr(_CS_PATH)), "/bin:/usr/bin".
inline constexpr char kDefaultPath[] = "/bin:/usr/bin";

struct FoundProgram {
  std::string path;  // the name execve would get: "DIR/NAME", or NAME
  std::shared_ptr<vfs::VfsFile> file;  // opened by loader::OpenExecutable
};

// The value of the first PATH=... in an environment (what the program's
// getenv would see), or nullopt if there is none.
std::optional<std::string> PathFromEnv(const std::vector<std::string>& envp);

// Finds `name` for execution, resolving against base (root, cwd, creds):
// - empty: ENOENT;
// - with a '/': used as is (relative ones against the cwd); its open error
//   is the result;
// - else each element of `path` (kDefaultPath if nullopt) in order, an
//   empty element meaning the cwd ("NAME"): the first that opens for
//   execution wins; EACCES is remembered and the search goes on, as it does
//   past ENOENT, ENOTDIR, ESTALE, ENODEV and ETIMEDOUT; any other error
//   ends it with that error. Not found: EACCES if one was seen, else
//   ENOENT. A NAME longer than NAME_MAX: ENAMETOOLONG.
KResult<FoundProgram> FindProgram(const vfs::ResolveBase& base,
                                  std::string_view name,
                                  const std::optional<std::string>& path);

}  // namespace sandbox::boot

#endif  // SENTRY_BOOT_PATH_LOOKUP_H_
