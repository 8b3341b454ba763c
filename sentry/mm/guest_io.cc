#include "sentry/mm/guest_io.h"

#include <algorithm>

namespace sandbox::mm {

KResult<size_t> GuestSegments::Walk(
    size_t n, absl::FunctionRef<size_t(uint64_t, size_t, size_t)> fn) {
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

}  // namespace sandbox::mm
