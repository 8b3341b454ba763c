// /dev: the sandbox's device directory (Linux devtmpfs as a container sees
// it), built on kernfs.
//
// Contents: the memory devices null (1:3), zero (1:5), full (1:7),
// random (1:8), urandom (1:9); tty (5:0: ENXIO, the sandbox has no
// controlling terminal yet); ptmx (5:2: a placeholder until the terminal
// issue, ENXIO); symlinks fd -> /proc/self/fd, stdin/stdout/stderr ->
// /proc/self/fd/{0,1,2}; empty directories shm (boot mounts a tmpfs on it)
// and pts.
//
// Not done: creating files in /dev (EPERM; Linux's devtmpfs is writable by
// root), mknod'ed device nodes elsewhere do not reach these drivers.
#ifndef SENTRY_FS_DEV_DEV_H_
#define SENTRY_FS_DEV_DEV_H_

#include <memory>

#include "sentry/vfs/filesystem.h"

namespace sandbox::fs::dev {

// A new /dev file system instance.
std::shared_ptr<vfs::Filesystem> NewDevFilesystem();

}  // namespace sandbox::fs::dev

#endif  // SENTRY_FS_DEV_DEV_H_
