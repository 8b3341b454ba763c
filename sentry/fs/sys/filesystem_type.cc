// sysfs as a file system type (vfs/filesystem_type.h): mount(2) -t sysfs
// makes a new instance; only the generic options are accepted.
#include "sentry/vfs/filesystem_type.h"

#include <memory>

#include "sentry/fs/sys/sys.h"

namespace sandbox::fs::sys {

std::unique_ptr<vfs::FilesystemType> NewFilesystemType() {
  return std::make_unique<vfs::GenericOptionsType>(
      "sysfs", [] { return NewSysFilesystem(); });
}

}  // namespace sandbox::fs::sys
