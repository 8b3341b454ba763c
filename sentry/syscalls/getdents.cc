// getdents64(2) and getdents(2): directory entries through
// vfs::VfsFile::IterDirents into a bounce buffer, then to the guest.
#include <dirent.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"

namespace sandbox::syscalls {
namespace {

// The most one call returns; a larger buffer gets a short (valid) read.
constexpr size_t kMaxDirentBytes = 1 << 20;
constexpr uint64_t kTaskSizeMax = 0x7ffffffff000;

// Serializes one entry as the old struct linux_dirent (d_ino, d_off,
// d_reclen, d_name, NUL, padding, d_type in the last byte).
bool AppendDirent(absl::Span<uint8_t> buf, size_t* used,
                  const vfs::DirEntry& e) {
  constexpr size_t kHeader = 18;  // offsetof(struct linux_dirent, d_name)
  size_t reclen = (kHeader + e.name.size() + 2 + 7) & ~size_t{7};
  if (buf.size() - *used < reclen) return false;
  uint8_t* p = buf.data() + *used;
  memset(p, 0, reclen);
  uint64_t ino = e.ino;
  int64_t off = e.next_offset;
  uint16_t rl = static_cast<uint16_t>(reclen);
  memcpy(p, &ino, 8);
  memcpy(p + 8, &off, 8);
  memcpy(p + 16, &rl, 2);
  memcpy(p + kHeader, e.name.data(), e.name.size());
  p[reclen - 1] = e.type;
  *used += reclen;
  return true;
}

KResult<uint64_t> DoGetdents(Task& t, Fd fd, UserAddr dirp, uint32_t count,
                             bool is64) {
  TRY(vfs::FileRef f, GetFile(t, fd.fd));
  if (count > kTaskSizeMax || dirp.addr > kTaskSizeMax - count) return kEFAULT;
  vfs::VfsFile* vf = AsVfsFile(f);
  if (vf == nullptr) return kENOTDIR;
  std::vector<uint8_t> buf(std::min<size_t>(count, kMaxDirentBytes));
  size_t used = 0;
  bool too_small = false;
  TRY_VOID(vf->IterDirents([&](const vfs::DirEntry& e) {
    bool ok = is64 ? vfs::AppendDirent64(absl::MakeSpan(buf), &used, e)
                   : AppendDirent(absl::MakeSpan(buf), &used, e);
    if (!ok && used == 0) too_small = true;
    return ok;
  }));
  // Not even one entry fits: EINVAL, as Linux's filldir reports it.
  if (too_small) return kEINVAL;
  TRY_VOID(t.CopyOutFull(dirp.addr, buf.data(), used));
  return uint64_t{used};
}

// getdents64(2).
SyscallResult Getdents64(Task& t, Fd fd, UserAddr dirp, uint32_t count) {
  return DoGetdents(t, fd, dirp, count, /*is64=*/true);
}

// getdents(2).
SyscallResult Getdents(Task& t, Fd fd, UserAddr dirp, uint32_t count) {
  return DoGetdents(t, fd, dirp, count, /*is64=*/false);
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Getdents64);
SANDBOX_SYSCALL_HANDLER(Getdents);

}  // namespace sandbox::syscalls
