// The root file system's initial content from BootSpec::seed: tmpfs mounts,
// directories and files copied from host FDs, created through the VFS as
// the sandbox's root user. Replaced by the Gofer's root in issue #6.
#ifndef SENTRY_BOOT_SEED_H_
#define SENTRY_BOOT_SEED_H_

#include <string>
#include <vector>

#include "platform/memory_file.h"
#include "sentry/base/result.h"
#include "sentry/boot/boot_spec.h"
#include "sentry/vfs/mount.h"

namespace sandbox::boot {

// Applies `seed` in order to `ns`; new tmpfs instances use `mf`. Missing
// parents are created (root, 0755); an existing directory gets the entry's
// mode and owner. A kFile's host FD must be a regular file of at most
// kMaxSeedFileSize bytes. On failure *why names the entry and the step.
KResult<void> ApplySeed(vfs::MountNamespace& ns, platform::MemoryFile& mf,
                        const std::vector<SeedEntry>& seed, std::string* why);

}  // namespace sandbox::boot

#endif  // SENTRY_BOOT_SEED_H_
