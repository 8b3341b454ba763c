// The OOM killer: what happens when the sandbox's memory (runsc do
// --memory, the memory file's limit) is used up. As Linux's memory cgroup
// OOM (mem_cgroup_out_of_memory, oom_kill_process): the process with the
// most resident memory gets SIGKILL, the allocation is retried once its pages
// are back, and the Sentry itself goes on. If the victim is init, the
// sandbox ends with it (exit status 137), as a container whose init the
// OOM killer took.
//
// Locking: oom_mu_ serialises the choice of a victim; the wait for its
// pages runs without it. The allocating thread may hold mm, inode or page
// cache locks, so nothing here takes one: resident sizes are read with
// MemoryManager::OwnedBytesNoLock, and the wait is bounded (a victim whose
// exit needs a lock the allocator holds cannot finish meanwhile).
#include <unistd.h>

#include <algorithm>

#include "absl/time/clock.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/log.h"
#include "sentry/mm/memory_manager.h"

namespace sandbox::kernel {
namespace {

// How long an allocation waits for a victim's pages before it fails (and
// a page fault is retried from the guest).
constexpr absl::Duration kOomWait = absl::Milliseconds(500);

}  // namespace

std::shared_ptr<ThreadGroup> Kernel::PickOomVictim(uint64_t* bytes) {
  std::vector<std::shared_ptr<ThreadGroup>> groups;
  {
    absl::MutexLock l(&mu_);
    groups = thread_groups_;
  }
  std::shared_ptr<ThreadGroup> best;
  uint64_t best_bytes = 0;
  for (const std::shared_ptr<ThreadGroup>& tg : groups) {
    if (tg->exiting()) continue;
    uint64_t rss = 0;
    for (const std::shared_ptr<Task>& t : tg->TaskRefs()) {
      std::shared_ptr<mm::MemoryManager> m = t->MmRefLocked();
      if (m == nullptr) continue;
      rss = m->OwnedBytesNoLock();
      break;  // the threads of a process share one mm
    }
    // oom_badness: every eligible process scores at least 1, so a process
    // is found even when tmpfs files hold all the memory.
    if (best == nullptr || rss > best_bytes) {
      best = tg;
      best_bytes = rss;
    }
  }
  *bytes = best_bytes;
  return best;
}

bool Kernel::OutOfMemory(uint64_t needed) {
  if (platform_ == nullptr) return false;
  platform::MemoryFile& mf = platform_->memory_file();
  Task* self = Task::Current();
  auto self_dying = [self] {
    return self != nullptr && self->thread_group().exiting();
  };
  // A dying process gets nothing more: it is about to give back what it
  // has (Linux lets it dip into reserves; failing its allocation is safe).
  if (self_dying()) return false;

  std::shared_ptr<ThreadGroup> victim;
  {
    absl::MutexLock l(&oom_mu_);
    victim = oom_victim_.lock();
    if (victim != nullptr && victim->TaskCount() == 0) victim = nullptr;
    if (victim == nullptr) {
      uint64_t rss = 0;
      victim = PickOomVictim(&rss);
      if (victim == nullptr) return false;
      const std::string exe = victim->exe_path();
      LogWarning(
          "Memory cgroup out of memory: Killed process %d (%s) rss:%dkB "
          "(limit %dkB, in use %dkB)",
          victim->tgid(), exe.substr(exe.rfind('/') + 1), rss / 1024,
          mf.Limit() / 1024, mf.AllocatedBytes() / 1024);
      victim->ExitGroup(ExitStatus::Killed(SIGKILL));
      oom_victim_ = victim;
    }
  }
  if (self != nullptr && &self->thread_group() == victim.get()) return false;

  // Wait until the victim's tasks have dropped their address spaces, or
  // the allocation fits anyway.
  const absl::Time deadline = absl::Now() + kOomWait;
  for (;;) {
    const uint64_t limit = mf.Limit();
    if (limit == 0 || mf.AllocatedBytes() + needed <= limit) return true;
    if (victim->TaskCount() == 0) return true;  // retry: maybe a new victim
    if (self_dying() || absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
}

Kernel::MemoryFigures Kernel::Memory() const {
  MemoryFigures m;
  const uint64_t limit =
      platform_ != nullptr ? platform_->memory_file().Limit() : 0;
  if (limit != 0) {
    const uint64_t used = platform_->memory_file().AllocatedBytes();
    m.total = limit;
    m.free = limit - std::min(used, limit);
    return m;
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long avail = sysconf(_SC_AVPHYS_PAGES);
  const long psz = sysconf(_SC_PAGESIZE);
  m.total = pages > 0 ? static_cast<uint64_t>(pages) * psz : 0;
  m.free = avail > 0 ? static_cast<uint64_t>(avail) * psz : 0;
  return m;
}

}  // namespace sandbox::kernel
