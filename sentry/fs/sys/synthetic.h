// Mounts the synthetic file systems of a Linux system in a sandbox's mount
// namespace: devtmpfs at /dev (nosuid), proc at /proc and sysfs at /sys
// (nosuid,nodev,noexec), as a container runtime does. The mount points are
// created (mode 0755) if missing. Called at boot before the root file
// system is seeded, so the seed's /dev/shm tmpfs lands on the new /dev.
#ifndef SENTRY_FS_SYS_SYNTHETIC_H_
#define SENTRY_FS_SYS_SYNTHETIC_H_

#include "sentry/base/result.h"
#include "sentry/kernel/kernel.h"
#include "sentry/vfs/mount.h"

namespace sandbox::fs {

KResult<void> MountSynthetic(kernel::Kernel& kernel,
                             vfs::MountNamespace& mntns);

}  // namespace sandbox::fs

#endif  // SENTRY_FS_SYS_SYNTHETIC_H_
