// Kernel::ShmRoot: the kernel's internal shm mount (Linux's shm_mnt).
#include <memory>

#include "sentry/kernel/kernel.h"
#include "sentry/vfs/mount.h"

namespace sandbox::kernel {

vfs::VirtualDentry Kernel::ShmRoot(
    absl::FunctionRef<std::shared_ptr<vfs::Mount>()> make) {
  absl::MutexLock l(&shm_mu_);
  if (shm_mount_ == nullptr) shm_mount_ = make();
  return {shm_mount_, shm_mount_->root()};
}

}  // namespace sandbox::kernel
