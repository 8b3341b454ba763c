// tmpfs as a file system type (vfs/filesystem_type.h): mount(2) -t tmpfs
// parses its options here (shmem_parse_one) and makes a new instance in
// the caller's memory file; MS_REMOUNT checks them again (a new size= is
// parsed, not applied).
//
// Options: size=N[kmgtpe%] (rounded up to pages; % of RAM), nr_blocks=N,
// nr_inodes=N[kmgtpe], mode=OCTAL (root directory), uid=N, gid=N, and the
// generic flags (vfs::ParseSbFlag); anything else, or an option with a
// missing value, is EINVAL. Mountinfo shows them as shmem_show_options:
// size and nr_inodes when not the defaults (half of RAM's pages each),
// mode when not 1777, uid and gid when not 0.
#ifndef SENTRY_FS_TMPFS_FILESYSTEM_TYPE_H_
#define SENTRY_FS_TMPFS_FILESYSTEM_TYPE_H_

#include <memory>
#include <string>
#include <string_view>

#include "platform/memory_file.h"
#include "sentry/base/result.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/vfs/filesystem_type.h"

namespace sandbox::fs::tmpfs {

// A parsed tmpfs data string.
struct MountOptions {
  Options opts;
  bool read_only = false;  // "ro"
  std::string shown;       // as mountinfo shows them
};

// Parses `data` for a tmpfs in `mf` (whose limit is the "RAM" the
// defaults and size=N% are taken from).
KResult<MountOptions> ParseMountOptions(std::string_view data,
                                        const platform::MemoryFile& mf);

// The "tmpfs" type, for the kernel's registry.
std::unique_ptr<vfs::FilesystemType> NewFilesystemType();

}  // namespace sandbox::fs::tmpfs

#endif  // SENTRY_FS_TMPFS_FILESYSTEM_TYPE_H_
