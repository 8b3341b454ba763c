// devpts: the file system of pseudo-terminal slaves (Linux fs/devpts), as
// `mount -t devpts devpts /dev/pts` makes it in a container.
//
// Every mount is a new instance (Linux since 4.7; "newinstance" is accepted
// and changes nothing). Its root (ino 1, mode 0755, root-owned) holds the
// `ptmx` node: character device 5:2, root-owned, mode `ptmxmode` (default
// 0000), ino 2. Terminals do not exist yet (the terminals issue): opening
// ptmx fails with ENXIO, what Linux's chrdev_open gives for a device number
// without a driver, and no slave ever appears.
//
// Options (devpts_parse_param): uid=N, gid=N (owner of new slaves; N a
// number, base as strtoul's 0, not (uid_t)-1), mode=OCTAL (slave
// permissions, default 0600), ptmxmode=OCTAL, max=N (at most
// kMaxPtys), newinstance; anything else, a missing value or a value given
// to newinstance is EINVAL. The generic flags (ro, rw, ...: vfs::ParseSbFlag)
// are matched first, by key alone. The "devpts" type
// (filesystem_type.cc, NewFilesystemType) parses a mount(2) data string.
#ifndef SENTRY_FS_DEVPTS_DEVPTS_H_
#define SENTRY_FS_DEVPTS_DEVPTS_H_

#include <stdint.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sentry/base/result.h"
#include "sentry/vfs/filesystem.h"
#include "sentry/vfs/filesystem_type.h"
#include "sentry/vfs/mount.h"

namespace sandbox::fs::devpts {

inline constexpr uint64_t kDevptsMagic = 0x1cd1;  // DEVPTS_SUPER_MAGIC
inline constexpr uint32_t kMaxPtys = 1u << 20;    // NR_UNIX98_PTY_MAX

struct Options {
  std::optional<uint32_t> uid;  // uid=: shown only when given
  std::optional<uint32_t> gid;  // gid=
  uint32_t mode = 0600;         // DEVPTS_DEFAULT_MODE
  uint32_t ptmx_mode = 0;       // DEVPTS_DEFAULT_PTMX_MODE
  uint32_t max = kMaxPtys;

  // One "key[=value]" option (value: std::nullopt without '='). EINVAL for
  // an unknown key or a bad value; *this is unchanged then.
  KResult<void> Parse(std::string_view key,
                      std::optional<std::string_view> value);
  // The super block's options as /proc/self/mountinfo shows them
  // (devpts_show_options), without the leading "rw": "mode=600,ptmxmode=000".
  std::string Show() const;
};

// A new devpts instance with these options.
std::shared_ptr<vfs::Filesystem> NewDevptsFilesystem(const Options& opts);

// The sandbox's default /dev/pts (runsc do, containers): if `ns` has a
// directory at /dev/pts, a devpts instance with the options runc gives
// (newinstance,ptmxmode=0666,mode=0620,gid=5; nosuid,noexec) is mounted
// on it. Nothing is done if there is no such directory.
KResult<void> MountDefault(vfs::MountNamespace& ns);

// MS_REMOUNT of a devpts instance (devpts_reconfigure): the options
// replace the old ones (unlisted ones back to their defaults); ptmx takes
// the new ptmxmode (update_ptmx_mode). `fs` must be a devpts instance.
// The mount's shown options stay those of the mount (vfs::Mount keeps them
// fixed): a known difference.
void Reconfigure(vfs::Filesystem& fs, const Options& opts);

// The "devpts" type, for the kernel's registry: mount(2) makes a new
// instance with the data string's options; MS_REMOUNT reconfigures it.
std::unique_ptr<vfs::FilesystemType> NewFilesystemType();

}  // namespace sandbox::fs::devpts

#endif  // SENTRY_FS_DEVPTS_DEVPTS_H_
