// /proc/<pid> and /proc/<pid>/task/<tid> directories.
#ifndef SENTRY_FS_PROC_TASK_DIR_H_
#define SENTRY_FS_PROC_TASK_DIR_H_

#include <memory>
#include <string>

#include "sentry/fs/kernfs/kernfs.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/mount.h"

namespace sandbox::fs::proc {

// The directory of `task` (a thread group leader for /proc/<pid>; any task
// for task/<tid>, which has no task/ subdirectory).
// The directory and its files hold the task weakly: once it is freed
// (reaped), reads give ESRCH and lookups and links ENOENT.
std::shared_ptr<vfs::Inode> NewTaskDir(kernfs::Filesystem& fs,
                                       std::shared_ptr<kernel::Task> task,
                                       bool thread_dir);

// Where the reader sees `vd`: its path from the reader's root (the
// current task's, else `fallback_root`), " (deleted)" appended if removed.
std::string PathForReader(const vfs::VirtualDentry& vd,
                          const vfs::VirtualDentry& fallback_root);

// /proc/<pid>/mountinfo and mounts for a task whose root is `root`.
std::string MountinfoText(const vfs::VirtualDentry& root, bool mountinfo);

}  // namespace sandbox::fs::proc

#endif  // SENTRY_FS_PROC_TASK_DIR_H_
