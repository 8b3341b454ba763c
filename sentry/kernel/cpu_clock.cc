#include "sentry/kernel/cpu_clock.h"

#include <string.h>
#include <time.h>

#include <algorithm>

#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"

namespace sandbox::kernel {

int64_t HostThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t AcctMonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void TaskCpuClock::Start() {
  cpu_mark_ = HostThreadCpuNs();
  sys_since_ = AcctMonotonicNs();
  wall_since_cpu_mark_ = 0;
}

// System time without a host call per round trip: reading the thread's CPU
// clock is a real syscall (2.5 us here, twice per Switch would double the
// trap's cost). A Sentry interval shorter than kShortSysNs is charged at its
// wall time (the thread did not sleep long in it). A longer one may have
// blocked: it is charged from the host thread's CPU clock, the CPU used
// since the previous reading less what was charged by wall time meanwhile,
// at most the interval itself. (That difference also holds the Sentry's
// spinning in Switch since the reading: an overestimate bounded by the
// interval.)
int64_t TaskCpuClock::SysOfInterval(int64_t now, int64_t* cpu) const {
  const int64_t w = std::max<int64_t>(0, now - sys_since_);
  *cpu = -1;
  if (w < kShortSysNs) return w;
  *cpu = HostThreadCpuNs();
  return std::clamp<int64_t>(*cpu - cpu_mark_ - wall_since_cpu_mark_, 0, w);
}

int64_t TaskCpuClock::SysSince(int64_t now) {
  int64_t cpu;
  const int64_t d = SysOfInterval(now, &cpu);
  if (cpu < 0) {
    wall_since_cpu_mark_ += d;
  } else {
    cpu_mark_ = cpu;
    wall_since_cpu_mark_ = 0;
  }
  return d;
}

void TaskCpuClock::ChargeSys(ProcessCpuTimes& p, int64_t now) {
  const int64_t d = SysSince(now);
  sys_since_ = now;
  sys_ns_.store(sys_ns_.load(std::memory_order_relaxed) + d,
                std::memory_order_relaxed);
  p.charged_ns.fetch_add(d, std::memory_order_relaxed);
}

// The sequence count brackets every change of the three fields (the task
// thread is the only writer).
void TaskCpuClock::EnterUser(ProcessCpuTimes& p) {
  const int64_t now = AcctMonotonicNs();
  const uint32_t s = seq_.load(std::memory_order_relaxed);
  seq_.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  ChargeSys(p, now);
  user_since_.store(now, std::memory_order_relaxed);
  seq_.store(s + 2, std::memory_order_release);
}

void TaskCpuClock::LeaveUser(ProcessCpuTimes& p) {
  const int64_t now = AcctMonotonicNs();
  const uint32_t s = seq_.load(std::memory_order_relaxed);
  seq_.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  const int64_t since = user_since_.load(std::memory_order_relaxed);
  const int64_t d = since == 0 ? 0 : std::max<int64_t>(0, now - since);
  user_ns_.store(user_ns_.load(std::memory_order_relaxed) + d,
                 std::memory_order_relaxed);
  user_since_.store(0, std::memory_order_relaxed);
  seq_.store(s + 2, std::memory_order_release);
  p.charged_ns.fetch_add(d, std::memory_order_relaxed);
  p.charged_user_ns.fetch_add(d, std::memory_order_relaxed);
  // The Sentry's own work starts now.
  sys_since_ = now;
}

void TaskCpuClock::Stop(ProcessCpuTimes& p) {
  const int64_t now = AcctMonotonicNs();
  const uint32_t s = seq_.load(std::memory_order_relaxed);
  seq_.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  ChargeSys(p, now);
  seq_.store(s + 2, std::memory_order_release);
}

CpuSample TaskCpuClock::Sample() const {
  for (;;) {
    const uint32_t s1 = seq_.load(std::memory_order_acquire);
    CpuSample out{user_ns_.load(std::memory_order_relaxed),
                  sys_ns_.load(std::memory_order_relaxed)};
    const int64_t since = user_since_.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint32_t s2 = seq_.load(std::memory_order_relaxed);
    if ((s1 & 1) != 0 || s1 != s2) continue;
    if (since != 0)
      out.user_ns += std::max<int64_t>(0, AcctMonotonicNs() - since);
    return out;
  }
}

CpuSample TaskCpuClock::SampleSelf() const {
  CpuSample out = Sample();
  // The Sentry interval in progress, by SysSince's rules without charging
  // it: a thread asleep in it (clock_nanosleep on a CPU clock) must not
  // count its sleep.
  int64_t cpu;
  out.sys_ns += SysOfInterval(AcctMonotonicNs(), &cpu);
  return out;
}

CpuSample SampleTask(const Task& t, const Task* self) {
  return &t == self ? t.cpu_clock().SampleSelf() : t.cpu_clock().Sample();
}

CpuSample SampleProcessLocked(ThreadGroup& tg, const Task* self) {
  // (ThreadGroup is incomplete in cpu_clock.h, so the precondition is
  // stated here for the analysis.)
  tg.signal_mu().AssertHeld();
  CpuSample out = tg.cpu_times().exited;
  for (Task* t : tg.TasksLocked()) {
    if (t->cpu_clock().retired) continue;
    CpuSample s = SampleTask(*t, self);
    out.user_ns += s.user_ns;
    out.sys_ns += s.sys_ns;
  }
  return out;
}

CpuSample SampleProcess(ThreadGroup& tg, const Task* self) {
  absl::MutexLock l(&tg.signal_mu());
  return SampleProcessLocked(tg, self);
}

void RetireTaskCpu(Task& t, int64_t rss_kb) {
  ThreadGroup& tg = t.thread_group();
  t.cpu_clock().Stop(tg.cpu_times());
  absl::MutexLock l(&tg.signal_mu());
  CpuSample s = t.cpu_clock().Sample();
  ProcessCpuTimes& p = tg.cpu_times();
  p.exited.user_ns += s.user_ns;
  p.exited.sys_ns += s.sys_ns;
  p.maxrss_kb = std::max(p.maxrss_kb, rss_kb);
  t.cpu_clock().retired = true;
}

ChildUsage ChildUsageLocked(ThreadGroup& child) {
  ChildUsage u;
  CpuSample self = SampleProcessLocked(child, nullptr);
  const ProcessCpuTimes& c = child.cpu_times();
  u.times.user_ns = self.user_ns + c.children.user_ns;
  u.times.sys_ns = self.sys_ns + c.children.sys_ns;
  u.maxrss_kb = std::max(c.maxrss_kb, c.child_maxrss_kb);
  return u;
}

void AddChildUsageLocked(ThreadGroup& parent, const ChildUsage& u) {
  ProcessCpuTimes& p = parent.cpu_times();
  p.children.user_ns += u.times.user_ns;
  p.children.sys_ns += u.times.sys_ns;
  p.child_maxrss_kb = std::max(p.child_maxrss_kb, u.maxrss_kb);
}

StatTimes ProcStatTimes(Task& t, bool whole) {
  ThreadGroup& tg = t.thread_group();
  const Task* self = Task::Current();
  absl::MutexLock l(&tg.signal_mu());
  const CpuSample s =
      whole ? SampleProcessLocked(tg, self) : SampleTask(t, self);
  const CpuSample& c = tg.cpu_times().children;
  return StatTimes{NsToClockT(s.user_ns), NsToClockT(s.sys_ns),
                   NsToClockT(c.user_ns), NsToClockT(c.sys_ns)};
}

struct rusage MakeRusage(const CpuSample& s, int64_t maxrss_kb) {
  struct rusage r;
  memset(&r, 0, sizeof(r));
  r.ru_utime.tv_sec = s.user_ns / 1000000000;
  r.ru_utime.tv_usec = (s.user_ns % 1000000000) / 1000;
  r.ru_stime.tv_sec = s.sys_ns / 1000000000;
  r.ru_stime.tv_usec = (s.sys_ns % 1000000000) / 1000;
  r.ru_maxrss = maxrss_kb;
  return r;
}

struct rusage RusageOf(Task& t, int who) {
  ThreadGroup& tg = t.thread_group();
  CpuSample s;
  int64_t maxrss;
  {
    absl::MutexLock l(&tg.signal_mu());
    const ProcessCpuTimes& p = tg.cpu_times();
    if (who == RUSAGE_CHILDREN) {
      s = p.children;
      maxrss = p.child_maxrss_kb;
    } else {
      s = who == RUSAGE_THREAD ? t.cpu_clock().SampleSelf()
                               : SampleProcessLocked(tg, &t);
      maxrss = p.maxrss_kb;
    }
  }
  // Linux's setmax_mm_hiwater_rss: the live address space counts for
  // SELF and THREAD (its current size: no high-water mark is kept).
  if (who != RUSAGE_CHILDREN) {
    maxrss = std::max<int64_t>(maxrss, t.mm().BackedBytes() / 1024);
  }
  return MakeRusage(s, maxrss);
}

}  // namespace sandbox::kernel
