#include "sentry/fs/sys/synthetic.h"

#include "sentry/fs/dev/dev.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/fs/sys/sys.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/operations.h"
#include "sentry/vfs/path_walk.h"

namespace sandbox::fs {

KResult<void> MountSynthetic(kernel::Kernel& kernel,
                             vfs::MountNamespace& mntns) {
  const kernel::Credentials root = kernel::Credentials::Root();
  vfs::ResolveBase base{root, mntns.Root(), mntns.Root()};
  constexpr uint32_t kNoSuidDevExec =
      vfs::kMountNoSuid | vfs::kMountNoDev | vfs::kMountNoExec;
  struct {
    const char* path;
    std::shared_ptr<vfs::Filesystem> fs;
    uint32_t flags;
  } mounts[] = {
      {"/dev", dev::NewDevFilesystem(), vfs::kMountNoSuid},
      {"/proc", proc::NewProcFilesystem(kernel), kNoSuidDevExec},
      {"/sys", sys::NewSysFilesystem(), kNoSuidDevExec},
  };
  for (auto& m : mounts) {
    KResult<void> made = vfs::MkdirAt(base, m.path, 0755, 0);
    if (!made.ok() && made.error() != kEEXIST) return made.error();
    TRY(vfs::VirtualDentry point,
        vfs::Resolve(base, m.path, vfs::ResolveOptions{}));
    TRY_VOID(mntns.MountAt(point, std::move(m.fs), m.flags));
  }
  return OkResult();
}

}  // namespace sandbox::fs
