// select(2) and pselect6(2): fs/select.c's core_sys_select over the files'
// readiness (FileDescription::Readiness, sentry/vfs/waiter.h).
//
// As Linux: nfds < 0 is EINVAL; nfds is cut to the FD table's size
// (max_fds: bits above it are neither read nor written); the three sets
// are read as whole longs (EFAULT), and a set bit for a descriptor that is
// not open is EBADF (an O_PATH descriptor is open but never ready). A
// descriptor is readable with POLLIN_SET (IN, RDNORM, RDBAND, HUP, ERR),
// writable with POLLOUT_SET (OUT, WRNORM, WRBAND, ERR), exceptional with
// POLLPRI; the result counts one per set. The sets are written back on
// success (cleared on timeout), not when interrupted, which gives
// ERESTARTNOHAND. select's timeval is normalized (tv_usec >= 1e6 carries
// into seconds) and the time left is written back (if that write fails, an
// interrupted call returns EINTR instead of restarting); pselect6 does
// the same with a timespec and swaps the signal mask for the call.
#include <vector>

#include "sentry/abi/syscalls.h"
#include "sentry/kernel/task.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/readiness.h"

namespace sandbox::syscalls {
namespace {

constexpr uint32_t kPollInSet =
    POLLRDNORM | POLLRDBAND | POLLIN | POLLHUP | POLLERR;
constexpr uint32_t kPollOutSet = POLLWRBAND | POLLWRNORM | POLLOUT | POLLERR;
constexpr uint32_t kPollExSet = POLLPRI;

using Word = uint64_t;  // one long of an fd_set

// get_fd_set: the first n bits of the set at `addr` (null: empty).
KResult<void> GetFdSet(Task& t, uint64_t addr, std::vector<Word>& set) {
  if (addr == 0) {
    std::fill(set.begin(), set.end(), 0);
    return OkResult();
  }
  if (set.empty()) return OkResult();
  return t.CopyInFull(addr, set.data(), set.size() * sizeof(Word));
}

bool Bit(const std::vector<Word>& set, int fd) {
  return (set[fd / 64] >> (fd % 64)) & 1;
}

// core_sys_select: the number of ready bits, or ERESTARTNOHAND.
SyscallResult CoreSysSelect(Task& t, int32_t n, uint64_t inp, uint64_t outp,
                            uint64_t exp, int64_t deadline) {
  if (n < 0) return kEINVAL;
  n = std::min(n, t.fd_table().MaxFds());
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  std::vector<Word> in(words), out(words), ex(words);
  TRY_VOID(GetFdSet(t, inp, in));
  TRY_VOID(GetFdSet(t, outp, out));
  TRY_VOID(GetFdSet(t, exp, ex));
  // max_select_fd: every descriptor named must be open.
  std::vector<PolledFile> files;
  std::vector<int> fd_of;
  for (int fd = 0; fd < n; ++fd) {
    const bool r = Bit(in, fd), w = Bit(out, fd), e = Bit(ex, fd);
    if (!r && !w && !e) continue;
    vfs::FileRef f = t.fd_table().Get(fd);
    if (f == nullptr) return kEBADF;
    PolledFile p;
    // fdget: an O_PATH description is open but has no poll (EPOLLNVAL,
    // which is in no set).
    if (!(f->status_flags() & O_PATH)) p.file = std::move(f);
    p.mask =
        (r ? kPollInSet : 0) | (w ? kPollOutSet : 0) | (e ? kPollExSet : 0);
    files.push_back(std::move(p));
    fd_of.push_back(fd);
  }
  TRY(int ready, PollFiles(t, absl::MakeSpan(files), deadline,
                           /*nval_ready=*/false));
  (void)ready;
  std::vector<Word> rin(words), rout(words), rex(words);
  int count = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const int fd = fd_of[i];
    const uint32_t ev = files[i].revents;
    const Word bit = Word{1} << (fd % 64);
    if ((ev & kPollInSet) && Bit(in, fd)) {
      rin[fd / 64] |= bit;
      ++count;
    }
    if ((ev & kPollOutSet) && Bit(out, fd)) {
      rout[fd / 64] |= bit;
      ++count;
    }
    if ((ev & kPollExSet) && Bit(ex, fd)) {
      rex[fd / 64] |= bit;
      ++count;
    }
  }
  // set_fd_set: whole longs, only for the sets given.
  if (words > 0) {
    if (inp != 0 && !t.CopyOutFull(inp, rin.data(), words * 8).ok()) {
      return kEFAULT;
    }
    if (outp != 0 && !t.CopyOutFull(outp, rout.data(), words * 8).ok()) {
      return kEFAULT;
    }
    if (exp != 0 && !t.CopyOutFull(exp, rex.data(), words * 8).ok()) {
      return kEFAULT;
    }
  }
  return static_cast<uint64_t>(count);
}

// select(2).
SyscallResult Select(Task& t, int32_t n, UserAddr inp, UserAddr outp,
                     UserAddr exp, UserPtr<abi::Timeval> tvp) {
  int64_t deadline = kNoDeadline;
  if (!tvp.null()) {
    TRY(abi::Timeval tv, tvp.CopyIn(t));
    // tv_usec past a second carries (Linux divides, then validates).
    const int64_t carry = tv.tv_usec / 1000000;
    int64_t sec;
    if (__builtin_add_overflow(tv.tv_sec, carry, &sec)) {
      return kEINVAL;
    }
    TRY(deadline, DeadlineAfter(sec, (tv.tv_usec % 1000000) * 1000));
  }
  SyscallResult r =
      CoreSysSelect(t, n, inp.addr, outp.addr, exp.addr, deadline);
  if (!tvp.null() && deadline != 0 && deadline != kNoDeadline) {
    abi::Timespec left = TimeLeft(deadline);
    abi::Timeval tv{left.tv_sec, left.tv_nsec / 1000};
    if (!tvp.CopyOut(t, tv).ok() && !r.ok() &&
        r.error().number() == kERESTARTNOHAND) {
      return kEINTR;
    }
  }
  return r;
}

// pselect6's sixth argument: {const sigset_t* ss; size_t ss_len}.
struct SigsetArgpack {
  uint64_t ss;
  uint64_t ss_len;
};

// pselect6(2).
SyscallResult Pselect6(Task& t, int32_t n, UserAddr inp, UserAddr outp,
                       UserAddr exp, UserPtr<abi::Timespec> tsp,
                       UserPtr<SigsetArgpack> sig) {
  int64_t deadline = kNoDeadline;
  if (!tsp.null()) {
    TRY(abi::Timespec ts, tsp.CopyIn(t));
    TRY(deadline, DeadlineAfter(ts.tv_sec, ts.tv_nsec));
  }
  SigsetArgpack pack{0, 0};
  if (!sig.null()) {
    TRY(pack, sig.CopyIn(t));
  }
  TRY_VOID(SetUserSigmask(t, pack.ss, pack.ss_len));
  SyscallResult r =
      CoreSysSelect(t, n, inp.addr, outp.addr, exp.addr, deadline);
  RestoreSigmaskUnless(t, r, kERESTARTNOHAND);
  if (!tsp.null() && deadline != 0 && deadline != kNoDeadline) {
    if (!tsp.CopyOut(t, TimeLeft(deadline)).ok() && !r.ok() &&
        r.error().number() == kERESTARTNOHAND) {
      return kEINTR;
    }
  }
  return r;
}

}  // namespace

// The handles of this file's handlers, named by linux64.tbl.inc.
SANDBOX_SYSCALL_HANDLER(Select);
SANDBOX_SYSCALL_HANDLER(Pselect6);

}  // namespace sandbox::syscalls
