#include "sentry/vfs/at_start.h"

#include <fcntl.h>

#include "sentry/vfs/vfs_file.h"

namespace sandbox::vfs {

KResult<VirtualDentry> AtStart(const FdTable& fds, const FsContext& fs,
                               int dirfd, std::string_view path) {
  if (!path.empty() && path[0] == '/') return fs.Root();
  if (dirfd == AT_FDCWD) return fs.Cwd();
  FileRef file = fds.Get(dirfd);
  if (file == nullptr) return kEBADF;
  auto* vf = dynamic_cast<VfsFile*>(file.get());
  if (vf == nullptr) return kENOTDIR;
  return vf->vd();
}

}  // namespace sandbox::vfs
