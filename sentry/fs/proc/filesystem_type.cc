// proc as a file system type (vfs/filesystem_type.h): mount(2) -t proc
// makes a new instance for the kernel the type was registered by; only
// the generic options are accepted.
#include "sentry/vfs/filesystem_type.h"

#include <memory>

#include "sentry/fs/proc/proc.h"

namespace sandbox::fs::proc {

std::unique_ptr<vfs::FilesystemType> NewFilesystemType(kernel::Kernel& kernel) {
  return std::make_unique<vfs::GenericOptionsType>(
      "proc", [&kernel] { return NewProcFilesystem(kernel); });
}

}  // namespace sandbox::fs::proc
