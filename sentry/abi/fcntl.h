// The kernel's open(2) flags on x86-64 (uapi asm-generic/fcntl.h), as the
// guest passes them and as F_GETFL reports them. glibc agrees on every value
// but two: its O_LARGEFILE is 0 on 64-bit (the kernel's is 0100000, forced
// on by open(2) and shown by F_GETFL) and its O_TMPFILE includes
// O_DIRECTORY. Checked against <fcntl.h> in linux_test.cc. No logic.
#ifndef SENTRY_ABI_FCNTL_H_
#define SENTRY_ABI_FCNTL_H_

#include <stdint.h>

namespace sandbox::abi {

inline constexpr uint32_t kOAccmode = 03;
inline constexpr uint32_t kORdonly = 00;
inline constexpr uint32_t kOWronly = 01;
inline constexpr uint32_t kORdwr = 02;
inline constexpr uint32_t kOCreat = 0100;
inline constexpr uint32_t kOExcl = 0200;
inline constexpr uint32_t kONoctty = 0400;
inline constexpr uint32_t kOTrunc = 01000;
inline constexpr uint32_t kOAppend = 02000;
inline constexpr uint32_t kONonblock = 04000;
inline constexpr uint32_t kODsync = 010000;
inline constexpr uint32_t kOAsync = 020000;  // FASYNC
inline constexpr uint32_t kODirect = 040000;
inline constexpr uint32_t kOLargefile = 0100000;
inline constexpr uint32_t kODirectory = 0200000;
inline constexpr uint32_t kONofollow = 0400000;
inline constexpr uint32_t kONoatime = 01000000;
inline constexpr uint32_t kOCloexec = 02000000;
inline constexpr uint32_t kOSyncBit = 04000000;  // __O_SYNC
inline constexpr uint32_t kOSync = kOSyncBit | kODsync;
inline constexpr uint32_t kOPath = 010000000;
// __O_TMPFILE alone; O_TMPFILE is it with O_DIRECTORY.
inline constexpr uint32_t kOTmpfileBit = 020000000;
inline constexpr uint32_t kOTmpfile = kOTmpfileBit | kODirectory;

}  // namespace sandbox::abi

#endif  // SENTRY_ABI_FCNTL_H_
