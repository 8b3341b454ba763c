// procfs: /proc for the sandbox, generated from the Sentry's kernel state.
//
// Layout (what Linux has; PIDs are the sandbox's, from the root PID
// namespace):
//   self -> <tgid of the reader>, thread-self -> <tgid>/task/<tid>
//   <pid>/ for each process (task_dir.cc): status stat statm cmdline
//     environ auxv comm maps smaps limits mounts mountinfo exe cwd root fd/
//     fdinfo/ task/<tid>/
//   cpuinfo (the platform's CPUID), meminfo, stat, uptime, loadavg,
//   version, filesystems (the kernel's vfs::FilesystemTypeRegistry),
//   mounts -> self/mounts
//   sys/kernel/{hostname,domainname,osrelease,ostype,version,pid_max,
//     ngroups_max,cap_last_cap,random/{boot_id,uuid}},
//   sys/vm/{overcommit_memory,max_map_count}, sys/fs/{pipe-max-size,nr_open}
//
// Everything is generated when read (kernfs::GeneratedFile). The reader
// is Task::Current() (the task whose syscall is running on this host
// thread).
//
// Lifetime: the Kernel must outlive the file system. Task objects are never
// freed while the kernel lives (sentry/kernel README), so inodes keep raw
// Task pointers and check liveness through the PID namespace.
//
// Not done: mem, io, ns/, pagemap; /proc/pid/fd links are plain
// symlinks (opening one walks the path it names, not the open file: no
// magic links in the VFS yet), CPU times and start times (no accounting),
// writable sysctls.
#ifndef SENTRY_FS_PROC_PROC_H_
#define SENTRY_FS_PROC_PROC_H_

#include <memory>

#include "sentry/kernel/kernel.h"
#include "sentry/vfs/filesystem.h"
#include "sentry/vfs/filesystem_type.h"

namespace sandbox::fs::proc {

inline constexpr uint64_t kProcSuperMagic = 0x9fa0;

// A new procfs instance for `kernel`.
std::shared_ptr<vfs::Filesystem> NewProcFilesystem(kernel::Kernel& kernel);

// The "proc" type, for `kernel`'s registry (filesystem_type.cc): instances
// for `kernel`, the generic options only.
std::unique_ptr<vfs::FilesystemType> NewFilesystemType(kernel::Kernel& kernel);

}  // namespace sandbox::fs::proc

#endif  // SENTRY_FS_PROC_PROC_H_
