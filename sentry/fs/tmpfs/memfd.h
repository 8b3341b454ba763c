// memfd_create's files (Linux's shmem_file_setup, mm/memfd.c): anonymous
// tmpfs regular files on the kernel's internal shm mount (Linux's shm_mnt;
// kernel::Kernel::ShmRoot keeps it), which no mount namespace contains, so
// no path reaches them. The syscall (sentry/syscalls/memfd.cc) decodes its
// flags and delegates here; seals are RegularFile's.
#ifndef SENTRY_FS_TMPFS_MEMFD_H_
#define SENTRY_FS_TMPFS_MEMFD_H_

#include <stdint.h>

#include <memory>
#include <string>

#include "platform/memory_file.h"
#include "sentry/base/result.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox::fs::tmpfs {

// The internal shm mount: a tmpfs in `mf` with no size or inode limit
// (statfs shows no sizes), an internal mount (vfs::Mount::CreateInternal).
std::shared_ptr<vfs::Mount> NewShmMount(platform::MemoryFile& mf);

struct MemfdSpec {
  // The dentry's name, "memfd:NAME": what /proc/PID/fd/N and
  // /proc/PID/maps show, as "/memfd:NAME (deleted)" (d_path).
  std::string name;
  uint32_t mode = 0777;  // permission bits (no umask)
  uint32_t uid = 0, gid = 0;
  uint32_t seals = 0;  // the initial seals (F_SEAL_*)
};

// A new memfd on `shm` (the root of a mount NewShmMount made): a regular
// file with no links, opened O_RDWR|O_LARGEFILE. ENOSPC/ENOMEM as tmpfs.
KResult<std::shared_ptr<vfs::VfsFile>> NewMemfd(const vfs::VirtualDentry& shm,
                                                const MemfdSpec& spec);

}  // namespace sandbox::fs::tmpfs

#endif  // SENTRY_FS_TMPFS_MEMFD_H_
