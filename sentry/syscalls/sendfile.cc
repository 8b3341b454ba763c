// sendfile(2) and copy_file_range(2): in-Sentry copies through a bounce
// buffer, with Linux's checks and partial-progress rules (a later error
// after some bytes moved returns the count).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <vector>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/vfs_util.h"

namespace sandbox::syscalls {
namespace {

constexpr size_t kChunk = 64 * 1024;
// MAX_RW_COUNT: INT_MAX rounded down to a page.
constexpr uint64_t kMaxRwCount = 0x7ffff000;

// sendfile(2): from `in` (at *offset, or its own offset) to `out` (at its
// offset). Reading stops at EOF; a short write stops the copy and the
// input offset moves by what was written.
SyscallResult Sendfile(Task& t, Fd out_fd, Fd in_fd, UserPtr<int64_t> offset,
                       uint64_t count) {
  int64_t pos = -1;
  if (!offset.null()) {
    TRY(pos, offset.CopyIn(t));
  }
  TRY(vfs::FileRef in, GetFile(t, in_fd.fd));
  if (!in->readable()) return kEBADF;
  bool own_offset = pos == -1 && offset.null();
  if (!offset.null() && pos < 0) return kEINVAL;
  if (own_offset) {
    // A seekable input is read at its offset, which moves by what was
    // written; a pipe is read as a stream.
    KResult<int64_t> cur = in->Seek(0, SEEK_CUR);
    if (cur.ok()) pos = *cur;
  }
  count = std::min(count, kMaxRwCount);
  TRY(vfs::FileRef out, GetFile(t, out_fd.fd));
  if (!out->writable()) return kEBADF;
  if (out->status_flags() & O_APPEND) return kEINVAL;
  vfs::IoContext ctx = t.io_context();
  std::vector<uint8_t> buf(std::min<uint64_t>(count, kChunk));
  uint64_t done = 0;
  Errno err(0);
  while (done < count) {
    size_t want = std::min<uint64_t>(buf.size(), count - done);
    auto span = absl::MakeSpan(buf.data(), want);
    KResult<size_t> r =
        pos >= 0 ? in->PRead(ctx, span, pos + done) : in->Read(ctx, span);
    if (!r.ok()) {
      err = r.error();
      break;
    }
    if (*r == 0) break;
    KResult<size_t> w = out->Write(ctx, absl::MakeConstSpan(buf.data(), *r));
    if (!w.ok()) {
      err = w.error();
      break;
    }
    done += *w;
    if (*w < *r) break;
  }
  if (pos >= 0) {
    int64_t end = pos + static_cast<int64_t>(done);
    if (own_offset) {
      (void)in->Seek(end, SEEK_SET);
    } else {
      TRY_VOID(offset.CopyOut(t, end));
    }
  }
  if (done == 0 && err.number() != 0) {
    if (err == kEPIPE) t.thread_group().SignalDefaultAction(SIGPIPE);
    return err;
  }
  return done;
}

// generic_file_rw_checks for one side that is not a VFS file (host
// stdio): EISDIR/EINVAL by type; a host regular file is another super
// block (EXDEV).
Errno NonVfsError(vfs::FileDescription& f) {
  KResult<abi::Stat> st = f.Stat();
  if (st.ok() && S_ISDIR(st->st_mode)) return kEISDIR;
  if (!st.ok() || !S_ISREG(st->st_mode)) return kEINVAL;
  return kEXDEV;
}

// copy_file_range(2) between regular files of one file system.
SyscallResult CopyFileRange(Task& t, Fd fd_in, UserPtr<int64_t> off_in,
                            Fd fd_out, UserPtr<int64_t> off_out, uint64_t len,
                            uint32_t flags) {
  if (flags != 0) return kEINVAL;
  TRY(vfs::FileRef in, GetFile(t, fd_in.fd));
  TRY(vfs::FileRef out, GetFile(t, fd_out.fd));
  int64_t pos_in, pos_out;
  if (!off_in.null()) {
    TRY(pos_in, off_in.CopyIn(t));
  } else {
    TRY(pos_in, in->Seek(0, SEEK_CUR));
  }
  if (!off_out.null()) {
    TRY(pos_out, off_out.CopyIn(t));
  } else {
    TRY(pos_out, out->Seek(0, SEEK_CUR));
  }
  vfs::VfsFile* vin = AsVfsFile(in);
  vfs::VfsFile* vout = AsVfsFile(out);
  if (vin == nullptr) return NonVfsError(*in);
  if (vout == nullptr) return NonVfsError(*out);
  vfs::Inode& iin = vin->inode();
  vfs::Inode& iout = vout->inode();
  if (iin.IsDir() || iout.IsDir()) return kEISDIR;
  if (!iin.IsRegular() || !iout.IsRegular()) return kEINVAL;
  if (!in->readable() || !out->writable() || (out->status_flags() & O_APPEND)) {
    return kEBADF;
  }
  if (&iin.fs() != &iout.fs()) return kEXDEV;
  if (pos_in < 0 || pos_out < 0) return kEINVAL;
  uint64_t count = std::min(len, kMaxRwCount);
  uint64_t end_in, end_out;
  if (__builtin_add_overflow(static_cast<uint64_t>(pos_in), count, &end_in) ||
      __builtin_add_overflow(static_cast<uint64_t>(pos_out), count, &end_out) ||
      static_cast<int64_t>(end_in) < 0 || static_cast<int64_t>(end_out) < 0) {
    return kEOVERFLOW;
  }
  uint64_t size_in = iin.Attrs().size;
  count = static_cast<uint64_t>(pos_in) >= size_in
              ? 0
              : std::min(count, size_in - static_cast<uint64_t>(pos_in));
  if (&iin == &iout && count > 0 &&
      static_cast<uint64_t>(pos_out) + count > static_cast<uint64_t>(pos_in) &&
      static_cast<uint64_t>(pos_out) < static_cast<uint64_t>(pos_in) + count) {
    return kEINVAL;
  }
  vfs::IoContext ctx = t.io_context();
  std::vector<uint8_t> buf(std::min<uint64_t>(count, kChunk));
  uint64_t done = 0;
  Errno err(0);
  while (done < count) {
    size_t want = std::min<uint64_t>(buf.size(), count - done);
    KResult<size_t> r =
        in->PRead(ctx, absl::MakeSpan(buf.data(), want), pos_in + done);
    if (!r.ok()) {
      err = r.error();
      break;
    }
    if (*r == 0) break;
    KResult<size_t> w =
        out->PWrite(ctx, absl::MakeConstSpan(buf.data(), *r), pos_out + done);
    if (!w.ok()) {
      err = w.error();
      break;
    }
    done += *w;
    if (*w < *r) break;
  }
  if (done == 0 && err.number() != 0) return err;
  int64_t new_in = pos_in + static_cast<int64_t>(done);
  int64_t new_out = pos_out + static_cast<int64_t>(done);
  if (!off_in.null()) {
    TRY_VOID(off_in.CopyOut(t, new_in));
  } else {
    (void)in->Seek(new_in, SEEK_SET);
  }
  if (!off_out.null()) {
    TRY_VOID(off_out.CopyOut(t, new_out));
  } else {
    (void)out->Seek(new_out, SEEK_SET);
  }
  return done;
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Sendfile);
SANDBOX_SYSCALL_HANDLER(CopyFileRange);

}  // namespace sandbox::syscalls
