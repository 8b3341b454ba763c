#include "sentry/fs/signalfd/signalfd.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "sentry/fs/anon/anon_inode.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"

namespace sandbox::fs::signalfd {
namespace {

using kernel::SigBit;
using kernel::SigSet;

// Linux's enum siginfo_layout.
enum class Layout { kKill, kTimer, kPoll, kFault, kFaultMce, kChld, kRt, kSys };

// Linux's uapi NSIG* limits (6.x): the highest si_code the kernel defines
// for each signal with its own codes.
struct SigCodes {
  int sig;
  int limit;
  Layout layout;
};
constexpr SigCodes kSigCodes[] = {
    {SIGILL, 11, Layout::kFault},  {SIGFPE, 15, Layout::kFault},
    {SIGSEGV, 10, Layout::kFault}, {SIGBUS, 5, Layout::kFault},
    {SIGTRAP, 6, Layout::kFault},  {SIGCHLD, 6, Layout::kChld},
    {SIGPOLL, 6, Layout::kPoll},   {SIGSYS, 2, Layout::kSys},
};
constexpr int kNsigPoll = 6;
constexpr int kBusMceerrAr = 4, kBusMceerrAo = 5;

// siginfo_layout (kernel/signal.c).
Layout LayoutOf(int sig, int code) {
  if (code > SI_USER && code < SI_KERNEL) {
    for (const SigCodes& c : kSigCodes) {
      if (c.sig != sig) continue;
      if (code > c.limit) break;
      if (sig == SIGBUS && code >= kBusMceerrAr && code <= kBusMceerrAo) {
        return Layout::kFaultMce;
      }
      // SEGV_BNDERR, SEGV_PKUERR, TRAP_PERF: signalfd treats them as
      // SIL_FAULT.
      return c.layout;
    }
    return code <= kNsigPoll ? Layout::kPoll : Layout::kKill;
  }
  if (code == SI_TIMER) return Layout::kTimer;
  if (code == SI_SIGIO) return Layout::kPoll;
  if (code < 0) return Layout::kRt;
  return Layout::kKill;
}

}  // namespace

signalfd_siginfo ToSignalfdSiginfo(const siginfo_t& info) {
  signalfd_siginfo s;
  memset(&s, 0, sizeof(s));  // unused members are zero
  s.ssi_signo = info.si_signo;
  s.ssi_errno = info.si_errno;
  s.ssi_code = info.si_code;
  switch (LayoutOf(info.si_signo, info.si_code)) {
    case Layout::kKill:
      s.ssi_pid = info.si_pid;
      s.ssi_uid = info.si_uid;
      break;
    case Layout::kTimer:
      s.ssi_tid = info.si_timerid;
      s.ssi_overrun = info.si_overrun;
      s.ssi_ptr = reinterpret_cast<uint64_t>(info.si_ptr);
      s.ssi_int = info.si_int;
      break;
    case Layout::kPoll:
      s.ssi_band = static_cast<uint32_t>(info.si_band);
      s.ssi_fd = info.si_fd;
      break;
    case Layout::kFault:
      s.ssi_addr = reinterpret_cast<uint64_t>(info.si_addr);
      break;
    case Layout::kFaultMce:
      s.ssi_addr = reinterpret_cast<uint64_t>(info.si_addr);
      s.ssi_addr_lsb = static_cast<uint16_t>(info.si_addr_lsb);
      break;
    case Layout::kChld:
      s.ssi_pid = info.si_pid;
      s.ssi_uid = info.si_uid;
      s.ssi_status = info.si_status;
      s.ssi_utime = static_cast<uint64_t>(info.si_utime);
      s.ssi_stime = static_cast<uint64_t>(info.si_stime);
      break;
    case Layout::kRt:  // also sigqueue's
      s.ssi_pid = info.si_pid;
      s.ssi_uid = info.si_uid;
      s.ssi_ptr = reinterpret_cast<uint64_t>(info.si_ptr);
      s.ssi_int = info.si_int;
      break;
    case Layout::kSys:
      s.ssi_call_addr = reinterpret_cast<uint64_t>(info.si_call_addr);
      s.ssi_syscall = info.si_syscall;
      s.ssi_arch = info.si_arch;
      break;
  }
  return s;
}

SignalFd::SignalFd(SigSet mask, uint32_t flags)
    : vfs::FileDescription(flags), mask_(mask & ~kernel::kUnblockableSignals) {}

void SignalFd::SetMask(SigSet mask) {
  mask_.store(mask & ~kernel::kUnblockableSignals, std::memory_order_release);
  // wake_up(&current->sighand->signalfd_wqh): readers re-check.
  if (kernel::Task* t = kernel::Task::Current()) {
    t->thread_group().signalfd_queue().Notify(vfs::kPollIn);
  }
}

KResult<size_t> SignalFd::Read(vfs::IoContext& ctx, absl::Span<uint8_t> dst) {
  size_t count = dst.size() / sizeof(signalfd_siginfo);
  if (count == 0) return kEINVAL;
  kernel::Task* t = kernel::Task::Current();
  if (t == nullptr) return kEAGAIN;  // not a task: nothing is pending
  size_t total = 0;
  auto put = [&](const siginfo_t& info) {
    const signalfd_siginfo s = ToSignalfdSiginfo(info);
    memcpy(dst.data() + total, &s, sizeof(s));
    total += sizeof(s);
  };
  // signalfd_dequeue for the first record.
  std::optional<siginfo_t> info;
  TRY_VOID(vfs::WaitUntil(t->thread_group().signalfd_queue(), vfs::kPollIn,
                          nonblocking(), ctx.interrupt_fd, [&] {
                            info = kernel::DequeueSignalIn(*t, mask());
                            return info.has_value();
                          }));
  put(*info);
  // The rest only if already pending.
  while (--count > 0) {
    info = kernel::DequeueSignalIn(*t, mask());
    if (!info.has_value()) break;
    put(*info);
  }
  return total;
}

KResult<abi::Stat> SignalFd::Stat() { return anon::AnonInodeStat(); }

uint32_t SignalFd::Readiness(uint32_t mask) {
  kernel::Task* t = kernel::Task::Current();
  if (t == nullptr) return 0;
  // signalfd_poll: POLLIN only.
  const bool pending = kernel::HasSignalOutside(*t, ~this->mask());
  return (pending ? vfs::kPollIn : 0) & mask;
}

void SignalFd::EventRegister(vfs::WaitEntry* e, uint32_t mask) {
  if (kernel::Task* t = kernel::Task::Current()) {
    t->thread_group().signalfd_queue().Register(e, mask);
  }
}

std::string SignalFd::FdInfo() {
  // render_sigset_t: 16 hex digits, the highest signals first.
  return absl::StrFormat("sigmask:\t%016x\n", mask());
}

}  // namespace sandbox::fs::signalfd
