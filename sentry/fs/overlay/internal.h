// Helpers shared by the overlay's files.
#ifndef SENTRY_FS_OVERLAY_INTERNAL_H_
#define SENTRY_FS_OVERLAY_INTERNAL_H_

#include <stdint.h>

#include <string_view>

#include "sentry/vfs/inode.h"

namespace sandbox::fs::overlay {

inline constexpr uint64_t kCopyAllData = ~uint64_t{0};

// An upper-layer whiteout: a character device 0:0 (Linux's WHITEOUT_DEV).
bool IsWhiteout(const vfs::Inode& inode);
// An upper directory marked "trusted.overlay.opaque" = "y".
bool IsOpaque(vfs::Inode& upper_dir);
// "trusted.overlay.*".
bool IsPrivateXattr(std::string_view name);

}  // namespace sandbox::fs::overlay

#endif  // SENTRY_FS_OVERLAY_INTERNAL_H_
