// sysfs: the /sys the sandbox shows, built on kernfs. Only what programs
// commonly read:
//   devices/system/cpu/{online,possible,present}: "0-<n-1>", n = the CPUs
//     the Sentry may run on (as sched_getaffinity(2) and /proc/cpuinfo)
//   kernel/mm/transparent_hugepage/enabled: "always [madvise] never"
//   fs/cgroup: an empty directory, as Linux shows before cgroups are
//     mounted (no cgroup support yet)
// Not done: per-CPU directories (cpu0/...), class/, block/, bus/, module/.
#ifndef SENTRY_FS_SYS_SYS_H_
#define SENTRY_FS_SYS_SYS_H_

#include <memory>
#include <string>

#include "sentry/vfs/filesystem.h"
#include "sentry/vfs/filesystem_type.h"

namespace sandbox::fs::sys {

inline constexpr uint64_t kSysfsMagic = 0x62656572;

// A new sysfs instance.
std::shared_ptr<vfs::Filesystem> NewSysFilesystem();

// The "sysfs" type, for the kernel's registry (filesystem_type.cc): the
// generic options only.
std::unique_ptr<vfs::FilesystemType> NewFilesystemType();

// "0-3\n" for 4 CPUs, "0\n" for one (cpumap_print_list).
std::string CpuListText(int ncpus);

}  // namespace sandbox::fs::sys

#endif  // SENTRY_FS_SYS_SYS_H_
