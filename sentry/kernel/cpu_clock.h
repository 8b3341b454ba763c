// CPU time accounting (Linux's utime/stime, task_cputime, signal_struct's
// totals and the children's).
//
// User time is the wall time a task spends in guest code (inside the
// platform's Context::Switch in the run loop); system time is the CPU time
// of the task's Sentry host thread outside Switch (CLOCK_THREAD_CPUTIME_ID:
// the Sentry serving the task; time blocked in a wait is not counted).
//
// Per task, TaskCpuClock holds the charged times and, while the task runs
// guest code, when it entered it; its own thread writes under a sequence
// count so another thread reads a consistent triple (clock_gettime on a
// thread CPU clock, /proc/PID/task/TID/stat). Per process, ProcessCpuTimes
// holds the times of its exited tasks and of its reaped children; a
// process's time is that plus its live tasks' (SampleProcessLocked, under
// the thread group's signal_mu(), which also orders a task's retirement).
// `charged_ns` is every task's charged user+system time, a cheap bound the
// run loop compares with the earliest CPU-timer expiry.
#ifndef SENTRY_KERNEL_CPU_CLOCK_H_
#define SENTRY_KERNEL_CPU_CLOCK_H_

#include <stdint.h>
#include <sys/resource.h>

#include <atomic>

#include "absl/base/thread_annotations.h"

namespace sandbox::kernel {

class Task;
class ThreadGroup;

// Linux's USER_HZ (clock_t units of times(2), /proc stat, si_utime) and
// the tick the CPU itimers round to (CONFIG_HZ=250, Debian's).
inline constexpr int64_t kUserHz = 100;
inline constexpr int64_t kTickNs = 1000000000 / 250;
inline constexpr int64_t NsToClockT(int64_t ns) {
  return ns / (1000000000 / kUserHz);
}

struct CpuSample {
  int64_t user_ns = 0;
  int64_t sys_ns = 0;
  int64_t total() const { return user_ns + sys_ns; }
};

struct ProcessCpuTimes {
  std::atomic<int64_t> charged_ns{0};  // every task's, live or exited
  std::atomic<int64_t> charged_user_ns{0};
  // Under the thread group's signal_mu().
  CpuSample exited;             // tasks that have exited
  CpuSample children;           // reaped children (each with its own children)
  int64_t maxrss_kb = 0;        // the largest RSS seen at a task's exit
  int64_t child_maxrss_kb = 0;  // the largest of the reaped children's
};

class TaskCpuClock {
 public:
  // ---- The run loop's hooks (task thread). ----
  // The task's host thread starts (the system-time mark).
  void Start();
  // Before Context::Switch: charges system time since the last mark and
  // starts user time.
  void EnterUser(ProcessCpuTimes& p);
  // After Context::Switch: charges the user time.
  void LeaveUser(ProcessCpuTimes& p);
  // The run loop ends: charges the last system time.
  void Stop(ProcessCpuTimes& p);

  // Any thread: charged times plus user time in progress.
  CpuSample Sample() const;
  // The task's own thread: plus system time not yet charged.
  CpuSample SampleSelf() const;
  // Under signal_mu(): set once the task's times moved to the process's
  // `exited` (the task no longer counts as live).
  bool retired = false;

 private:
  // A Sentry interval shorter than this is charged at its wall time.
  static constexpr int64_t kShortSysNs = 200 * 1000;
  // System time of the Sentry interval that ends at `now` (CLOCK_MONOTONIC),
  // without charging it; `*cpu` is the thread CPU clock it read, or -1 if
  // the interval was short (charged at wall time).
  int64_t SysOfInterval(int64_t now, int64_t* cpu) const;
  // The same, moving the CPU-clock marks: the interval is being charged.
  int64_t SysSince(int64_t now);
  void ChargeSys(ProcessCpuTimes& p, int64_t now);

  std::atomic<uint32_t> seq_{0};  // odd while the task thread writes
  std::atomic<int64_t> user_ns_{0};
  std::atomic<int64_t> sys_ns_{0};
  std::atomic<int64_t> user_since_{0};  // CLOCK_MONOTONIC ns; 0: not in guest
  // Task thread only.
  int64_t sys_since_ = 0;  // CLOCK_MONOTONIC ns: the Sentry interval began
  int64_t cpu_mark_ = 0;   // host thread CPU at the last reading
  int64_t wall_since_cpu_mark_ = 0;  // charged at wall time since then
};

// The host thread's CPU time and CLOCK_MONOTONIC, in ns.
int64_t HostThreadCpuNs();
int64_t AcctMonotonicNs();

// A process's CPU time: exited tasks plus the live ones (the calling task
// `self`, if in the group, with its uncharged system time). Under
// tg.signal_mu().
CpuSample SampleProcessLocked(ThreadGroup& tg, const Task* self);
CpuSample SampleProcess(ThreadGroup& tg, const Task* self);
// The task's CPU time (its own, exactly if `t` is the caller).
CpuSample SampleTask(const Task& t, const Task* self);

// The run loop is ending: the task's times go to its process's `exited`,
// with the RSS high-water mark (`rss_kb`).
void RetireTaskCpu(Task& t, int64_t rss_kb);
// A dead child's own plus its children's times (wait4's rusage,
// RUSAGE_BOTH) and its max RSS. Under the child's signal_mu().
struct ChildUsage {
  CpuSample times;
  int64_t maxrss_kb = 0;
};
ChildUsage ChildUsageLocked(ThreadGroup& child);
// wait reaps a child: its usage goes to `parent`'s children (Linux's
// wait_task_zombie). Under the parent's signal_mu().
void AddChildUsageLocked(ThreadGroup& parent, const ChildUsage& u);

// /proc/PID/stat's utime, stime, cutime, cstime in clock ticks: the
// process's (`whole`) or the thread's own times, the reaped children's.
struct StatTimes {
  int64_t utime = 0, stime = 0, cutime = 0, cstime = 0;
};
StatTimes ProcStatTimes(Task& t, bool whole);

// getrusage(2) for RUSAGE_SELF, RUSAGE_CHILDREN or RUSAGE_THREAD of the
// calling task. Fields beyond the times and ru_maxrss are 0.
struct rusage RusageOf(Task& t, int who);
// A rusage with the given times and max RSS (wait4).
struct rusage MakeRusage(const CpuSample& s, int64_t maxrss_kb);

}  // namespace sandbox::kernel

#endif  // SENTRY_KERNEL_CPU_CLOCK_H_
