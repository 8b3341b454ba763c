// File locks: flock(2), and fcntl's record-lock commands (lock.h), over
// vfs::lock::FileLocks (fs/locks.c).
#include "sentry/syscalls/lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/syscalls/handler.h"
#include "sentry/vfs/lock/file_locks.h"

namespace sandbox::syscalls {
namespace {

using vfs::lock::kOffsetMax;
using vfs::lock::LockType;

// struct flock on x86-64 (also struct flock64).
struct Flock {
  int16_t l_type;
  int16_t l_whence;
  int32_t pad0;
  int64_t l_start;
  int64_t l_len;
  int32_t l_pid;
  int32_t pad1;
};
static_assert(sizeof(Flock) == 32);

constexpr uint32_t kLockMand = 32;  // LOCK_MAND

struct Range {
  int64_t start;
  int64_t end;
};

// flock64_to_posix_lock: the byte range of `fl` (EINVAL for a bad whence
// or a negative start, EOVERFLOW past OFFSET_MAX).
KResult<Range> DecodeRange(vfs::FileDescription& f, const Flock& fl) {
  int64_t base;
  switch (fl.l_whence) {
    case SEEK_SET:
      base = 0;
      break;
    case SEEK_CUR: {
      // f_pos; files without a position (pipes) have 0.
      KResult<int64_t> pos = f.Seek(0, SEEK_CUR);
      base = pos.ok() ? pos.value() : 0;
      break;
    }
    case SEEK_END: {
      KResult<abi::Stat> st = f.Stat();
      base = st.ok() ? st.value().st_size : 0;
      break;
    }
    default:
      return kEINVAL;
  }
  if (fl.l_start > kOffsetMax - base) return kEOVERFLOW;
  int64_t start = base + fl.l_start;
  if (start < 0) return kEINVAL;
  int64_t end;
  if (fl.l_len > 0) {
    if (fl.l_len - 1 > kOffsetMax - start) return kEOVERFLOW;
    end = start + (fl.l_len - 1);
  } else if (fl.l_len < 0) {
    if (start + fl.l_len < 0) return kEINVAL;
    end = start - 1;
    start += fl.l_len;
  } else {
    end = kOffsetMax;
  }
  return Range{start, end};
}

KResult<LockType> DecodeType(int16_t type) {
  switch (type) {
    case F_RDLCK:
      return LockType::kRead;
    case F_WRLCK:
      return LockType::kWrite;
    case F_UNLCK:
      return LockType::kUnlock;
    default:
      return kEINVAL;
  }
}

// flock(2).
SyscallResult FlockSyscall(Task& t, Fd fd, uint32_t cmd) {
  // LOCK_MAND requests are ignored (they never worked), as Linux does.
  if (cmd & kLockMand) return uint64_t{0};
  LockType type;
  switch (cmd & ~uint32_t{LOCK_NB}) {
    case LOCK_SH:
      type = LockType::kRead;
      break;
    case LOCK_EX:
      type = LockType::kWrite;
      break;
    case LOCK_UN:
      type = LockType::kUnlock;
      break;
    default:
      return kEINVAL;
  }
  TRY(vfs::FileRef f, t.fd_table().Get(fd.fd, nullptr));
  if (f->status_flags() & O_PATH) return kEBADF;  // fdget
  vfs::lock::FileLocks* locks = f->locks();
  if (locks == nullptr) return kENOLCK;
  vfs::IoContext ctx = t.io_context();
  TRY_VOID(locks->Flock(f.get(), type, !(cmd & LOCK_NB), ctx.interrupt_fd));
  return uint64_t{0};
}

}  // namespace

SyscallResult FcntlLock(Task& t, vfs::FileDescription& f, int32_t cmd,
                        uint64_t arg) {
  TRY(Flock fl, t.CopyInObj<Flock>(arg));
  const bool ofd =
      cmd == F_OFD_GETLK || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
  const bool get = cmd == F_GETLK || cmd == F_OFD_GETLK;
  // fcntl_getlk checks the type first; fcntl_setlk after the range.
  if (get && fl.l_type != F_RDLCK && fl.l_type != F_WRLCK) return kEINVAL;
  TRY(Range r, DecodeRange(f, fl));
  TRY(LockType type, DecodeType(fl.l_type));
  if (!get) {
    // check_fmode_for_setlk.
    if (type == LockType::kRead && !f.readable()) return kEBADF;
    if (type == LockType::kWrite && !f.writable()) return kEBADF;
  }
  if (ofd && fl.l_pid != 0) return kEINVAL;
  vfs::lock::FileLocks* locks = f.locks();
  if (locks == nullptr) return kENOLCK;
  vfs::lock::Owner owner;
  if (ofd) {
    owner = {&f, 0, true};
  } else {
    owner = {&t.fd_table(), static_cast<int32_t>(t.thread_group().tgid()),
             false};
  }
  if (get) {
    std::optional<vfs::lock::RangeLock> c =
        locks->TestRange(owner, type, r.start, r.end);
    if (!c.has_value()) {
      fl.l_type = F_UNLCK;
    } else {
      fl.l_type = c->type == LockType::kWrite ? F_WRLCK : F_RDLCK;
      fl.l_whence = SEEK_SET;
      fl.l_start = c->start;
      fl.l_len = c->end == kOffsetMax ? 0 : c->end - c->start + 1;
      fl.l_pid = c->owner.ofd ? -1 : c->owner.pid;
    }
    TRY_VOID(t.CopyOutObj<Flock>(arg, fl));
    return uint64_t{0};
  }
  bool wait = cmd == F_SETLKW || cmd == F_OFD_SETLKW;
  vfs::IoContext ctx = t.io_context();
  TRY_VOID(
      locks->SetRange(owner, type, r.start, r.end, wait, ctx.interrupt_fd));
  return uint64_t{0};
}

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(FlockSyscall);

}  // namespace sandbox::syscalls
