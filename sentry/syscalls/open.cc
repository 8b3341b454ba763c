// open(2), openat(2), creat(2), openat2(2): flag decoding as Linux's
// build_open_how/build_open_flags, then vfs::OpenAt and an FD.
#include <fcntl.h>
#include <linux/openat2.h>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"
#include "sentry/vfs/operations.h"

namespace sandbox::syscalls {
namespace {

// The kernel's O_LARGEFILE on x86-64 (glibc defines it as 0 there).
constexpr uint64_t kOLargefile = 0100000;
// __O_TMPFILE alone (glibc's O_TMPFILE includes O_DIRECTORY).
constexpr uint64_t kOTmpfileBit = 020000000;
constexpr uint64_t kValidOpenFlags =
    O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND | O_NONBLOCK |
    O_DSYNC | O_SYNC | O_ASYNC | O_DIRECT | kOLargefile | O_DIRECTORY |
    O_NOFOLLOW | O_NOATIME | O_CLOEXEC | O_PATH | kOTmpfileBit;
constexpr uint64_t kOPathFlags = O_DIRECTORY | O_NOFOLLOW | O_PATH | O_CLOEXEC;
constexpr uint64_t kSIallugo = 07777;

struct OpenHow {
  uint64_t flags;
  uint64_t mode;
  uint64_t resolve;
};
static_assert(sizeof(OpenHow) == sizeof(struct open_how));
constexpr size_t kOpenHowSizeVer0 = 24;
constexpr size_t kPageSize = 4096;

bool WillCreate(uint64_t flags) { return flags & (O_CREAT | kOTmpfileBit); }

// build_open_flags: the checks every open variant makes (openat2 passes its
// struct unchanged; the legacy calls pass what build_open_how made).
KResult<void> CheckOpenHow(const OpenHow& how) {
  uint64_t flags = how.flags;
  if (flags & ~kValidOpenFlags) return kEINVAL;
  if (how.resolve & ~vfs::kResolveAll) return kEINVAL;
  if ((how.resolve & vfs::kResolveBeneath) &&
      (how.resolve & vfs::kResolveInRoot)) {
    return kEINVAL;
  }
  if (WillCreate(flags)) {
    if (how.mode & ~kSIallugo) return kEINVAL;
  } else if (how.mode != 0) {
    return kEINVAL;
  }
  if ((flags & O_CREAT) && (flags & O_DIRECTORY)) return kEINVAL;
  if (flags & kOTmpfileBit) {
    if ((flags & (kOTmpfileBit | O_DIRECTORY | O_CREAT)) !=
        (kOTmpfileBit | O_DIRECTORY)) {
      return kEINVAL;
    }
    uint64_t acc = flags & O_ACCMODE;
    if (acc != O_WRONLY && acc != O_RDWR) return kEINVAL;
  }
  if ((flags & O_PATH) && (flags & ~kOPathFlags)) return kEINVAL;
  if ((how.resolve & vfs::kResolveCached) &&
      (flags & (O_TRUNC | O_CREAT | kOTmpfileBit))) {
    return kEAGAIN;
  }
  return OkResult();
}

KResult<uint64_t> DoOpen(Task& t, int32_t dirfd, UserCString path,
                         const OpenHow& how) {
  TRY_VOID(CheckOpenHow(how));
  PathBuf buf;
  TRY(std::string_view p, CopyInPath(t, path, buf));
  TRY_VOID(t.fd_table().CheckFree(NofileLimit(t)));
  TRY(vfs::ResolveBase base, BaseAt(t, dirfd, p));
  uint32_t flags = static_cast<uint32_t>(how.flags);
  TRY(std::shared_ptr<vfs::VfsFile> file,
      vfs::OpenAt(base, p, flags, static_cast<uint32_t>(how.mode),
                  t.fs().umask(), how.resolve));
  // A FIFO waits for its peer here (sentry/fs/pipe), before it has an fd.
  vfs::IoContext ctx = t.io_context();
  TRY_VOID(file->WaitOpen(ctx));
  TRY(int fd, t.fd_table().Install(std::move(file), 0, flags & O_CLOEXEC,
                                   NofileLimit(t)));
  return static_cast<uint64_t>(fd);
}

// build_open_how: what open/openat/creat make of their arguments (unknown
// flags dropped, O_PATH keeping only its flags, a mode only for creation,
// O_LARGEFILE forced on 64-bit).
OpenHow LegacyHow(uint64_t flags, uint64_t mode) {
  OpenHow how{(flags | kOLargefile) & kValidOpenFlags, mode & kSIallugo, 0};
  if (how.flags & O_PATH) how.flags &= kOPathFlags;
  if (!WillCreate(how.flags)) how.mode = 0;
  return how;
}

// open(2).
SyscallResult Open(Task& t, UserCString path, Flags flags, uint32_t mode) {
  return DoOpen(t, AT_FDCWD, path, LegacyHow(flags.v & 0xffffffff, mode));
}

// openat(2).
SyscallResult Openat(Task& t, Fd dirfd, UserCString path, Flags flags,
                     uint32_t mode) {
  return DoOpen(t, dirfd.fd, path, LegacyHow(flags.v & 0xffffffff, mode));
}

// creat(2): open(O_CREAT|O_WRONLY|O_TRUNC).
SyscallResult Creat(Task& t, UserCString path, uint32_t mode) {
  return DoOpen(t, AT_FDCWD, path,
                LegacyHow(O_CREAT | O_WRONLY | O_TRUNC, mode));
}

// openat2(2): struct open_how of `size` bytes (EINVAL below version 0,
// E2BIG above a page or with non-zero bytes past the known struct).
SyscallResult Openat2(Task& t, Fd dirfd, UserCString path, UserAddr how_addr,
                      uint64_t size) {
  if (size < kOpenHowSizeVer0) return kEINVAL;
  if (size > kPageSize) return kE2BIG;
  OpenHow how{};
  size_t known = std::min<uint64_t>(size, sizeof(how));
  TRY_VOID(t.CopyInFull(how_addr.addr, &how, known));
  if (size > sizeof(how)) {
    uint8_t rest[kPageSize];
    size_t extra = size - sizeof(how);
    TRY_VOID(t.CopyInFull(how_addr.addr + sizeof(how), rest, extra));
    for (size_t i = 0; i < extra; ++i) {
      if (rest[i] != 0) return kE2BIG;
    }
  }
  // O_LARGEFILE is forced, except that O_PATH keeps only its own flags.
  if (!(how.flags & O_PATH)) how.flags |= kOLargefile;
  return DoOpen(t, dirfd.fd, path, how);
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Open);
SANDBOX_SYSCALL_HANDLER(Openat);
SANDBOX_SYSCALL_HANDLER(Creat);
SANDBOX_SYSCALL_HANDLER(Openat2);

}  // namespace sandbox::syscalls
