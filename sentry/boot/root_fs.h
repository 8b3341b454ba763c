// The sandbox's initial mount tree, built from the BootSpec: the root file
// system (chosen in MakeRootFilesystem, the one place that decides it), the
// synthetic /dev, /proc and /sys, the seed (tmpfs /tmp and /dev/shm; the
// whole content of a tmpfs root), and the Gofer mounts (runsc do --bind).
#ifndef SENTRY_BOOT_ROOT_FS_H_
#define SENTRY_BOOT_ROOT_FS_H_

#include <stdint.h>

#include <memory>
#include <string>

#include "platform/memory_file.h"
#include "sentry/base/result.h"
#include "sentry/boot/boot_spec.h"
#include "sentry/kernel/kernel.h"
#include "sentry/vfs/filesystem.h"
#include "sentry/vfs/mount.h"

namespace sandbox::boot {

struct RootFilesystem {
  std::shared_ptr<vfs::Filesystem> fs;
  uint32_t mount_flags = 0;  // vfs::kMount*
};

// The root file system: RootKind::kTmpfs, an empty tmpfs (the seed fills
// it); RootKind::kGofer, the Gofer's connection on spec.root_gofer_fd (the
// host root, served read-only; owned from now on), cached as exclusive to
// the sandbox, its mmapped pages in `mf`, under an overlay whose upper
// layer is a new tmpfs in `mf` (sentry/fs/overlay: writes stay in the
// sandbox); RootKind::kGoferReadOnly, the same Gofer root without the
// overlay (EROFS). EIO (with *why) if the Gofer does not answer the attach.
KResult<RootFilesystem> MakeRootFilesystem(const BootSpec& spec,
                                           platform::MemoryFile& mf,
                                           std::string* why);

// Registers the file system types in `kernel`'s registry
// (vfs/filesystem_type.h), in Linux's registration order, which
// /proc/filesystems keeps: sysfs, tmpfs, devtmpfs, proc, pipefs, devpts,
// 9p, overlay. mount(2) makes tmpfs, proc, sysfs and devpts; the others
// (the Sentry's own /dev, pipes, Gofer and overlay roots) are listed only.
// Called once, before guest code runs.
void RegisterFilesystemTypes(kernel::Kernel& kernel);

// The whole initial tree: the root, /dev /proc /sys (fs::MountSynthetic),
// spec.seed applied in order, then each of spec.gofer_mounts (its
// connection owned from now on; the mount point is created if missing, so
// one below /tmp works; shared mounts revalidate). Closes the seed's host
// FDs. On failure *why says which step.
KResult<std::shared_ptr<vfs::MountNamespace>> MakeRootNamespace(
    const BootSpec& spec, kernel::Kernel& kernel, platform::MemoryFile& mf,
    std::string* why);

}  // namespace sandbox::boot

#endif  // SENTRY_BOOT_ROOT_FS_H_
