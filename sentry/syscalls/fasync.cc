#include "sentry/syscalls/fasync.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/pid_namespace.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/thread_group.h"

namespace sandbox::syscalls {
namespace {

using Owner = vfs::FileDescription::AsyncOwner;

constexpr int kOwnerTid = 0, kOwnerPid = 1, kOwnerPgrp = 2;  // F_OWNER_*

// The events that signal (sock_wake_async / kill_fasync callers: data,
// errors and hang-ups; space to write only for a write-only description,
// a pipe's writer).
uint32_t AsyncMask(const vfs::FileDescription& f) {
  uint32_t m = POLLIN | POLLRDNORM | POLLPRI | POLLERR | POLLHUP | POLLRDHUP;
  if (!f.readable()) m |= POLLOUT | POLLWRNORM;
  return m;
}

// A task or process `type`/`id` names now (find_vpid), or none.
bool OwnerExists(Task& t, int type, int32_t id) {
  kernel::PidNamespace& ns = t.kernel().root_pid_namespace();
  if (type != kOwnerPgrp) return ns.Lookup(id) != nullptr;
  if (ns.Lookup(id) != nullptr) return true;
  for (kernel::ThreadId tid : ns.Tids()) {
    std::shared_ptr<kernel::Task> k = ns.Lookup(tid);
    if (k != nullptr && k->thread_group().pgid() == id) return true;
  }
  return false;
}

// The registration: sends the owner's signal on each matching Notify
// (send_sigio). Owned by the description, so `f_` outlives it.
class SigioEntry final : public vfs::WaitEntry {
 public:
  SigioEntry(kernel::Kernel& k, vfs::FileDescription& f, int fd)
      : kernel_(k), f_(f), fd_(fd) {}

  void Callback(uint32_t events) override {
    if (!(f_.status_flags() & O_ASYNC)) return;
    const Owner o = f_.async_owner();
    if (o.id == 0) return;
    // The reason (si_code) and band, as kill_fasync's callers give them.
    int reason;
    long band;
    if (events & POLLERR) {
      reason = POLL_ERR;
      band = POLLERR;
    } else if (events & (POLLHUP | POLLRDHUP)) {
      reason = POLL_HUP;
      band = POLLHUP | POLLERR;
    } else if (events & POLLPRI) {
      reason = POLL_PRI;
      band = POLLPRI | POLLRDBAND;
    } else if (events & (POLLIN | POLLRDNORM)) {
      reason = POLL_IN;
      band = POLLIN | POLLRDNORM | POLLMSG;
    } else {
      reason = POLL_OUT;
      band = POLLOUT | POLLWRNORM | POLLWRBAND;
    }
    siginfo_t info;
    if (o.sig == 0) {
      info = kernel::KernelSignalInfo(SIGIO);
    } else {
      info = {};
      info.si_signo = o.sig;
      info.si_code = reason;
      info.si_band = band;
      info.si_fd = fd_;
    }
    kernel::PidNamespace& ns = kernel_.root_pid_namespace();
    if (o.type != kOwnerPgrp) {
      std::shared_ptr<kernel::Task> k = ns.Lookup(o.id);
      if (k == nullptr) return;
      if (o.type == kOwnerTid) {
        (void)kernel::SendSignalToTask(*k, info);
      } else {
        (void)kernel::SendSignalToGroup(k->thread_group(), info);
      }
      return;
    }
    std::vector<const kernel::ThreadGroup*> seen;
    for (kernel::ThreadId tid : ns.Tids()) {
      std::shared_ptr<kernel::Task> k = ns.Lookup(tid);
      if (k == nullptr || k->thread_group().pgid() != o.id) continue;
      if (std::find(seen.begin(), seen.end(), &k->thread_group()) !=
          seen.end()) {
        continue;
      }
      seen.push_back(&k->thread_group());
      (void)kernel::SendSignalToGroup(k->thread_group(), info);
    }
  }

 private:
  kernel::Kernel& kernel_;
  vfs::FileDescription& f_;
  const int fd_;
};

}  // namespace

bool IsFcntlAsync(int32_t cmd) {
  switch (cmd) {
    case F_SETOWN:
    case F_GETOWN:
    case F_SETOWN_EX:
    case F_GETOWN_EX:
    case F_SETSIG:
    case F_GETSIG:
      return true;
    default:
      return false;
  }
}

SyscallResult FcntlAsync(Task& t, vfs::FileDescription& f, int32_t cmd,
                         uint64_t arg) {
  switch (cmd) {
    case F_SETOWN: {  // f_setown
      int32_t who = static_cast<int32_t>(arg);
      Owner o = f.async_owner();
      o.type = kOwnerPid;
      if (who < 0) {
        if (who == INT_MIN) return kEINVAL;
        o.type = kOwnerPgrp;
        who = -who;
      }
      if (who != 0 && !OwnerExists(t, o.type, who)) return kESRCH;
      o.id = who;
      f.set_async_owner(o);
      return uint64_t{0};
    }
    case F_GETOWN: {  // f_getown: a process group as a negative number
      const Owner o = f.async_owner();
      const int64_t v = o.type == kOwnerPgrp ? -int64_t{o.id} : o.id;
      return static_cast<uint64_t>(v);
    }
    case F_SETOWN_EX: {
      TRY(abi::FOwnerEx ex, UserPtr<abi::FOwnerEx>{arg}.CopyIn(t));
      if (ex.type != kOwnerTid && ex.type != kOwnerPid &&
          ex.type != kOwnerPgrp) {
        return kEINVAL;
      }
      if (ex.pid != 0 && !OwnerExists(t, ex.type, ex.pid)) return kESRCH;
      Owner o = f.async_owner();
      o.type = ex.type;
      o.id = ex.pid;
      f.set_async_owner(o);
      return uint64_t{0};
    }
    case F_GETOWN_EX: {
      const Owner o = f.async_owner();
      TRY_VOID(UserPtr<abi::FOwnerEx>{arg}.CopyOut(
          t, abi::FOwnerEx{o.type, static_cast<int32_t>(o.id)}));
      return uint64_t{0};
    }
    case F_SETSIG: {
      // valid_signal: 0 (plain SIGIO) to _NSIG.
      if (arg > static_cast<uint64_t>(abi::kNumSignals)) return kEINVAL;
      Owner o = f.async_owner();
      o.sig = static_cast<int>(arg);
      f.set_async_owner(o);
      return uint64_t{0};
    }
    case F_GETSIG:
      return static_cast<uint64_t>(f.async_owner().sig);
    default:
      return kEINVAL;
  }
}

void SetAsync(Task& t, vfs::FileDescription& f, int fd, bool on) {
  if (!f.CanPoll()) return;
  if (!on) {
    f.SetAsyncEntry(nullptr);
    return;
  }
  auto e = std::make_unique<SigioEntry>(t.kernel(), f, fd);
  f.EventRegister(e.get(), AsyncMask(f));
  f.SetAsyncEntry(std::move(e));
}

}  // namespace sandbox::syscalls
