// getrandom(2): bytes from the host's getrandom.
#include <sys/random.h>

#include <algorithm>
#include <vector>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {
namespace {

// Bytes per host call; a larger request returns a short count, as Linux's
// does for the urandom source beyond 32 MiB.
constexpr size_t kChunk = 1 << 16;

SyscallResult Getrandom(Task& t, UserAddr buf, uint64_t len, Flags flags) {
  constexpr uint64_t kKnown =
      abi::kGrndNonblock | abi::kGrndRandom | abi::kGrndInsecure;
  if (flags.v & ~kKnown) return kEINVAL;
  if ((flags.v & abi::kGrndInsecure) && (flags.v & abi::kGrndRandom)) {
    return kEINVAL;
  }
  if (len == 0) return uint64_t{0};
  std::vector<uint8_t> tmp(std::min<uint64_t>(len, kChunk));
  // The host pool is initialised on any running system; the Sentry never
  // blocks here.
  ssize_t n = getrandom(tmp.data(), tmp.size(), GRND_NONBLOCK);
  if (n < 0) return Errno(errno);
  TRY(size_t copied, t.CopyOut(buf.addr, tmp.data(), n));
  return copied;
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Getrandom);

}  // namespace sandbox::syscalls
