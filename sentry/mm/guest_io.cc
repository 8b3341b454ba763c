#include "sentry/mm/guest_io.h"

#include <algorithm>
#include <cstring>

#include "platform/guest_copy.h"
#include "platform/long_work.h"

namespace sandbox::mm {

KResult<size_t> GuestSegments::Walk(
    size_t n, absl::FunctionRef<size_t(uint64_t, size_t, size_t)> fn) {
  // A large transfer is copying, not waiting: let the platform's guest side
  // spin through it (platform/long_work.h).
  if (std::min(n, size_) >= platform::kLongWorkBytes) platform::HintLongWork();
  size_t done = 0;
  for (const Segment& s : segs_) {
    if (done >= n) break;
    const size_t want = std::min(s.len, n - done);
    bool short_piece = false;
    const size_t base = done;
    KResult<size_t> r =
        mm_.WalkGuest(s.addr, want, guest_written_,
                      [&](uint64_t off, size_t at, size_t k) -> size_t {
                        size_t got = fn(off, base + at, k);
                        if (got < k) short_piece = true;
                        return got;
                      });
    if (!r.ok()) {
      if (done == 0) return r.error();
      break;
    }
    done += *r;
    if (short_piece || *r < want) break;
  }
  return done;
}

platform::GuestCopier* GuestSegments::StartGuestCopy(int fd,
                                                     uint64_t file_offset,
                                                     size_t at, size_t n) {
  if (!guest_written_ || segs_.size() != 1 || n == 0 || at > segs_[0].len ||
      n > segs_[0].len - at) {
    return nullptr;
  }
  platform::GuestCopier* c = platform::CurrentGuestCopier();
  if (c == nullptr) return nullptr;
  const uintptr_t addr = segs_[0].addr + at;
  if (!mm_.MappedWritable(addr, n)) return nullptr;
  return c->Start(fd, file_offset, addr, n) > 0 ? c : nullptr;
}

KResult<size_t> CopyInCString(MemoryManager& mm, uintptr_t addr, char* buf,
                              size_t max_len) {
  if (max_len == 0) return kENAMETOOLONG;
  constexpr size_t kPiece = 256;
  platform::MemoryFile& mf = mm.memory_file();
  bool found = false;
  size_t len = 0;
  // Returns fewer bytes than offered as soon as the NUL is found (or a
  // read fails), which ends the walk before it looks at another page.
  KResult<size_t> r =
      mm.WalkGuest(addr, max_len, /*write=*/false,
                   [&](uint64_t off, size_t at, size_t k) -> size_t {
                     for (size_t done = 0; done < k;) {
                       const size_t piece = std::min(k - done, kPiece);
                       char* dst = buf + at + done;
                       if (!mf.Read(off + done, dst, piece))
                         return done;  // SIGBUS
                       if (const void* nul = std::memchr(dst, 0, piece)) {
                         const size_t i = static_cast<const char*>(nul) - dst;
                         found = true;
                         len = at + done + i;
                         return done + i;  // < k: stop
                       }
                       done += piece;
                     }
                     return k;
                   });
  if (found) return len;
  // No NUL: a fault before max_len bytes, or none within them.
  if (!r.ok() || *r < max_len) return kEFAULT;
  return kENAMETOOLONG;
}

}  // namespace sandbox::mm
