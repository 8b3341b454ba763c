#include "sentry/kernel/timers.h"

#include <string.h>
#include <time.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "sentry/kernel/cpu_clock.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/ktime.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"

namespace sandbox::kernel {
namespace {

constexpr int kItProf = 0;
constexpr int kItVirt = 1;

int64_t ClockValue(const CpuSample& s, int which) {
  return which == kCpuClockVirt ? s.user_ns : s.total();
}

// A looked-up task held while a clock is read: PidNamespace::Lookup gives
// a shared reference (or, in older trees, a pointer valid for the
// sandbox's life).
std::shared_ptr<void> Hold(const std::shared_ptr<Task>& t) { return t; }
[[maybe_unused]] std::shared_ptr<void> Hold(Task*) { return nullptr; }

int ClampOverrun(int64_t v) {
  return static_cast<int>(std::clamp<int64_t>(v, 0, INT32_MAX));
}

// The signal sent for SIGEV_SIGNAL/_THREAD_ID (Linux's preallocated
// sigqueue: SI_TIMER, the timer's id and sigev_value).
siginfo_t TimerInfo(int id, const ProcessTimers::Event& ev) {
  siginfo_t info;
  memset(&info, 0, sizeof(info));
  info.si_signo = ev.signo;
  info.si_code = SI_TIMER;
  info.si_timerid = id;
  info.si_overrun = 0;
  info.si_value.sival_ptr = reinterpret_cast<void*>(ev.value);
  return info;
}

}  // namespace

KResult<CpuClockRef> ResolveCpuClock(Task& caller, int clock, bool gettime) {
  ThreadGroup& own = caller.thread_group();
  if (clock == CLOCK_PROCESS_CPUTIME_ID) {
    return CpuClockRef{&own, nullptr, kCpuClockSched};
  }
  if (clock == CLOCK_THREAD_CPUTIME_ID) {
    return CpuClockRef{&own, &caller, kCpuClockSched, caller.tid()};
  }
  if (clock >= 0) return kEINVAL;
  const bool thread = (clock & kCpuClockPerThread) != 0;
  const int which = clock & 3;
  if (which > kCpuClockSched) return kEINVAL;
  const ThreadId pid = ~(clock >> 3);  // CPUCLOCK_PID
  if (pid == 0) {
    return thread ? CpuClockRef{&own, &caller, which, caller.tid()}
                  : CpuClockRef{&own, nullptr, which};
  }
  auto found = own.kernel().root_pid_namespace().Lookup(pid);
  if (found == nullptr) return kEINVAL;
  Task* t = &*found;
  if (thread) {
    if (&t->thread_group() != &own) return kEINVAL;
    return CpuClockRef{&own, t, which, pid, Hold(found)};
  }
  // A process clock names a process by its TGID; clock_gettime also takes
  // the caller's own TID for its process.
  if (gettime && t == &caller) return CpuClockRef{&own, nullptr, which};
  if (t->thread_group().tgid() != pid) return kEINVAL;
  return CpuClockRef{&t->thread_group(), nullptr, which, pid, Hold(found)};
}

int64_t ReadCpuClock(const CpuClockRef& c, const Task* self) {
  CpuSample s = c.task != nullptr ? SampleTask(*c.task, self)
                                  : SampleProcess(*c.tg, self);
  return ClockValue(s, c.which);
}

TimerService& ProcessTimers::service() { return tg_.kernel().timer_service(); }

void ProcessTimers::BindLocked(Task& t) {
  if (self_.expired()) self_ = t.thread_group_ref();
}

int64_t ProcessTimers::WallNow(int clock) {
  // The _ALARM clocks run as their base clocks.
  if (clock == CLOCK_REALTIME_ALARM) clock = CLOCK_REALTIME;
  if (clock == CLOCK_BOOTTIME_ALARM) clock = CLOCK_BOOTTIME;
  timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// ---- Interval timers. ----

void ProcessTimers::FireReal(uint64_t gen) {
  {
    absl::MutexLock l(&mu_);
    if (dead_ || gen != real_gen_ || !real_queued_) return;
    real_queued_ = false;
    real_id_ = 0;
  }
  // it_real_fn: SIGALRM to the process, SEND_SIG_PRIV (SI_KERNEL).
  (void)SendSignalToGroup(tg_, KernelSignalInfo(SIGALRM));
}

void ProcessTimers::ArmRealLocked() {
  const uint64_t gen = ++real_gen_;
  real_queued_ = true;
  real_id_ = service().Schedule(real_expiry_, [w = self_, gen] {
    if (auto tg = w.lock()) tg->timers().FireReal(gen);
  });
}

ProcessTimers::Spec ProcessTimers::GetItimer(Task& t, int which) {
  Spec out;
  if (which == ITIMER_REAL) {
    absl::MutexLock l(&mu_);
    out.interval_ns = real_incr_;
    if (real_queued_) {
      // itimer_get_remtime: an expired timer not yet fired says 1 us.
      const int64_t rem = real_expiry_ - TimerService::Now();
      out.value_ns = rem > 0 ? rem : 1000;
    }
    return out;
  }
  const int idx = which == ITIMER_PROF ? kItProf : kItVirt;
  CpuSample s = SampleProcess(tg_, &t);
  absl::MutexLock l(&mu_);
  const CpuItimer& it = cpu_it_[idx];
  out.interval_ns = it.incr;
  if (it.expires != 0) {
    const int64_t now = idx == kItProf ? s.total() : s.user_ns;
    // get_cpu_itimer: an expiry already passed says one tick.
    out.value_ns = it.expires < now ? kTickNs : it.expires - now;
  }
  return out;
}

ProcessTimers::Spec ProcessTimers::SetItimer(Task& t, int which,
                                             const Spec& next) {
  Spec old;
  if (which == ITIMER_REAL) {
    absl::MutexLock l(&mu_);
    BindLocked(t);
    old.interval_ns = real_incr_;
    if (real_queued_) {
      const int64_t rem = real_expiry_ - TimerService::Now();
      old.value_ns = rem > 0 ? rem : 1000;
      service().Cancel(real_id_);
      real_queued_ = false;
      real_id_ = 0;
    }
    ++real_gen_;
    if (next.value_ns != 0 && !dead_) {
      real_incr_ = next.interval_ns;
      real_expiry_ = SatAdd(TimerService::Now(), next.value_ns);
      ArmRealLocked();
    } else {
      real_incr_ = 0;
    }
    return old;
  }
  const int idx = which == ITIMER_PROF ? kItProf : kItVirt;
  CpuSample s = SampleProcess(tg_, &t);
  const int64_t now = idx == kItProf ? s.total() : s.user_ns;
  {
    absl::MutexLock l(&mu_);
    BindLocked(t);
    CpuItimer& it = cpu_it_[idx];
    old.interval_ns = it.incr;
    if (it.expires != 0) {
      old.value_ns = it.expires < now ? kTickNs : it.expires - now;
    }
    // set_cpu_itimer: a new value is rounded up by a tick, then made
    // absolute on the process's clock.
    it.expires =
        next.value_ns > 0 ? SatAdd(SatAdd(now, next.value_ns), kTickNs) : 0;
    it.incr = next.interval_ns;
    UpdateCpuEarliestLocked();
    SchedulePollLocked();
  }
  return old;
}

// ---- CPU timers. ----

void ProcessTimers::UpdateCpuEarliestLocked() {
  int64_t e = INT64_MAX;
  for (const CpuItimer& it : cpu_it_) {
    if (it.expires != 0) e = std::min(e, it.expires);
  }
  for (const auto& [id, p] : posix_) {
    if (p.cpu && p.armed && !p.sig_pending && p.ev.notify != SIGEV_NONE) {
      e = std::min(e, p.expiry);
    }
  }
  cpu_earliest_.store(e, std::memory_order_relaxed);
}

void ProcessTimers::SchedulePollLocked() {
  const int64_t earliest = cpu_earliest_.load(std::memory_order_relaxed);
  if (earliest == INT64_MAX || dead_) {
    if (poll_id_ != 0) service().Cancel(poll_id_);
    poll_id_ = 0;
    return;
  }
  if (poll_id_ != 0) return;  // the pending poll reschedules itself
  // The process cannot use more CPU time than the host has CPUs in a
  // given wall time: poll when the earliest timer could first be due,
  // at most once a tick.
  const int64_t ncpu =
      std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t left =
      earliest - tg_.cpu_times().charged_ns.load(std::memory_order_relaxed);
  const int64_t delay = std::max(kTickNs, left / ncpu);
  poll_id_ =
      service().Schedule(SatAdd(TimerService::Now(), delay), [w = self_] {
        std::shared_ptr<ThreadGroup> tg = w.lock();
        if (tg == nullptr) return;
        ProcessTimers& self = tg->timers();
        {
          absl::MutexLock l(&self.mu_);
          self.poll_id_ = 0;
        }
        self.CheckCpu(nullptr);
      });
}

void ProcessTimers::MaybeCheckCpu(Task& t) {
  const int64_t e = cpu_earliest_.load(std::memory_order_relaxed);
  if (e == INT64_MAX) return;
  // Every CPU clock of the process reads at most its charged total.
  if (tg_.cpu_times().charged_ns.load(std::memory_order_relaxed) < e) return;
  CheckCpu(&t);
}

void ProcessTimers::CheckCpu(const Task* self) {
  std::vector<int> itimer_signals;
  std::vector<std::pair<PosixTimer*, uint64_t>> fired;
  std::vector<std::tuple<int, uint64_t, siginfo_t, ThreadId>> sends;
  {
    absl::MutexLock sl(&tg_.signal_mu());
    const CpuSample proc = SampleProcessLocked(tg_, self);
    absl::MutexLock l(&mu_);
    if (dead_) return;
    for (int idx : {kItProf, kItVirt}) {
      CpuItimer& it = cpu_it_[idx];
      const int64_t now = idx == kItProf ? proc.total() : proc.user_ns;
      if (it.expires == 0 || now < it.expires) continue;
      // check_cpu_itimer: one period added, no catching up.
      it.expires = it.incr != 0 ? it.expires + it.incr : 0;
      itimer_signals.push_back(idx == kItProf ? SIGPROF : SIGVTALRM);
    }
    for (auto& [id, p] : posix_) {
      if (!p.cpu || !p.armed || p.ev.notify == SIGEV_NONE) continue;
      const int64_t now = p.cpu_clock.task != nullptr
                              ? ClockValue(SampleTask(*p.cpu_clock.task, self),
                                           p.cpu_clock.which)
                              : ClockValue(proc, p.cpu_clock.which);
      if (now < p.expiry) continue;
      if (p.interval == 0) p.armed = false;  // one-shot: expiry goes
      if (p.sig_pending) {
        ++p.queued_extra;
        p.pending_gen = p.gen;
        continue;
      }
      p.sig_pending = true;
      p.pending_gen = p.gen;
      sends.emplace_back(id, p.gen, TimerInfo(id, p.ev),
                         p.ev.notify == SIGEV_THREAD_ID ? p.ev.tid : 0);
    }
    UpdateCpuEarliestLocked();
    SchedulePollLocked();
  }
  for (int sig : itimer_signals) {
    (void)SendSignalToGroup(tg_, KernelSignalInfo(sig));
  }
  for (auto& [id, gen, info, tid] : sends) SendTimerSignal(id, gen, info, tid);
}

// ---- POSIX timers. ----

KResult<int> ProcessTimers::Create(Task& t, int clock, const Event& ev) {
  PosixTimer p;
  p.clock = clock;
  p.ev = ev;
  if (IsCpuClockId(clock)) {
    TRY(p.cpu_clock, ResolveCpuClock(t, clock, false));
    // Not yet: a timer on another process's CPU clock (Linux allows it).
    if (p.cpu_clock.tg != &tg_) return kEINVAL;
    p.cpu = true;
  }
  // Each timer holds a preallocated signal counted against
  // RLIMIT_SIGPENDING (per user in Linux, per process here). Read before
  // mu_ (the limits live under signal_mu).
  const uint64_t limit = tg_.GetLimit(RLIMIT_SIGPENDING).rlim_cur;
  if (p.cpu && p.cpu_clock.task != nullptr && p.cpu_clock.hold == nullptr) {
    // A thread clock's timer keeps the thread's Task (not the thread).
    p.cpu_clock.hold =
        Hold(tg_.kernel().root_pid_namespace().Lookup(p.cpu_clock.tid));
  }
  absl::MutexLock l(&mu_);
  BindLocked(t);
  if (posix_.size() >= limit || posix_.size() >= INT32_MAX) return kEAGAIN;
  // posix_timer_add: the next free id, wrapping at INT_MAX.
  while (posix_.count(next_id_) != 0) {
    next_id_ = next_id_ == INT32_MAX ? 0 : next_id_ + 1;
  }
  p.id = next_id_;
  next_id_ = next_id_ == INT32_MAX ? 0 : next_id_ + 1;
  if (!ev.given) p.ev.value = static_cast<uint64_t>(p.id);
  p.gen = next_gen_++;
  const int id = p.id;
  posix_.emplace(id, std::move(p));
  return id;
}

int64_t ProcessTimers::TimerNowLocked(const PosixTimer& p, int64_t cpu_now) {
  return p.cpu ? cpu_now : WallNow(p.clock);
}

int64_t ProcessTimers::CpuNowSignalLocked(const PosixTimer& p,
                                          const Task* self) {
  const CpuSample s = p.cpu_clock.task != nullptr
                          ? SampleTask(*p.cpu_clock.task, self)
                          : SampleProcessLocked(tg_, self);
  return ClockValue(s, p.cpu_clock.which);
}

std::optional<CpuClockRef> ProcessTimers::CpuRefOf(int id) {
  absl::MutexLock l(&mu_);
  auto it = posix_.find(id);
  if (it == posix_.end() || !it->second.cpu) return std::nullopt;
  return it->second.cpu_clock;
}

ProcessTimers::Spec ProcessTimers::GettimeLocked(PosixTimer& p,
                                                 int64_t cpu_now) {
  Spec out;
  out.interval_ns = p.interval;
  const bool sig_none = p.ev.notify == SIGEV_NONE;
  if (p.cpu) {
    // posix_cpu_timer_get.
    if (!p.armed) return out;
    const int64_t now = cpu_now;
    out.value_ns = now < p.expiry ? p.expiry - now : 1;
    return out;
  }
  // common_timer_get.
  if (p.interval == 0 && !p.armed && !sig_none) return out;
  const int64_t now = WallNow(p.clock);
  if (p.interval != 0 && (p.sig_pending || sig_none)) {
    p.overrun += Forward(&p.expiry, now, p.interval);
  }
  const int64_t rem = p.expiry - now;
  if (rem <= 0) {
    if (!sig_none) out.value_ns = 1;
  } else {
    out.value_ns = rem;
  }
  return out;
}

void ProcessTimers::DisarmLocked(PosixTimer& p) {
  p.gen = next_gen_++;
  if (p.service_id != 0) service().Cancel(p.service_id);
  p.service_id = 0;
  p.armed = false;
}

void ProcessTimers::ArmWallLocked(PosixTimer& p) {
  if (p.ev.notify == SIGEV_NONE || dead_) return;
  const int64_t left = p.expiry - WallNow(p.clock);
  const int64_t mono = SatAdd(TimerService::Now(), std::max<int64_t>(0, left));
  const int id = p.id;
  const uint64_t gen = p.gen;
  p.service_id = service().Schedule(mono, [w = self_, id, gen] {
    if (auto tg = w.lock()) tg->timers().FireWall(id, gen);
  });
}

KResult<ProcessTimers::Spec> ProcessTimers::Settime(Task& t, int id,
                                                    bool absolute,
                                                    const Spec& next) {
  bool check_cpu = false;
  Spec old;
  // A CPU clock is sampled before mu_ (sampling takes signal_mu).
  std::optional<CpuClockRef> ref = CpuRefOf(id);
  const int64_t cpu_now = ref.has_value() ? ReadCpuClock(*ref, &t) : 0;
  {
    absl::MutexLock l(&mu_);
    auto it = posix_.find(id);
    if (it == posix_.end()) return kEINVAL;
    PosixTimer& p = it->second;
    old = GettimeLocked(p, cpu_now);
    DisarmLocked(p);
    p.interval = next.interval_ns;
    p.overrun_last = 0;
    if (next.value_ns == 0) {
      if (p.cpu) UpdateCpuEarliestLocked();
      return old;
    }
    const int64_t now = TimerNowLocked(p, cpu_now);
    p.expiry = absolute ? next.value_ns : SatAdd(now, next.value_ns);
    if (p.expiry <= 0) p.expiry = 1;  // an absolute 0 is not "disarmed"
    p.armed = true;
    if (p.cpu) {
      UpdateCpuEarliestLocked();
      SchedulePollLocked();
      check_cpu = p.expiry <= now;
    } else {
      ArmWallLocked(p);
    }
  }
  if (check_cpu) CheckCpu(&t);
  return old;
}

KResult<ProcessTimers::Spec> ProcessTimers::Gettime(Task& t, int id) {
  std::optional<CpuClockRef> ref = CpuRefOf(id);
  const int64_t cpu_now = ref.has_value() ? ReadCpuClock(*ref, &t) : 0;
  absl::MutexLock l(&mu_);
  auto it = posix_.find(id);
  if (it == posix_.end()) return kEINVAL;
  return GettimeLocked(it->second, cpu_now);
}

KResult<int> ProcessTimers::Getoverrun(int id) {
  absl::MutexLock l(&mu_);
  auto it = posix_.find(id);
  if (it == posix_.end()) return kEINVAL;
  return ClampOverrun(it->second.overrun_last);
}

KResult<void> ProcessTimers::Delete(int id) {
  absl::MutexLock l(&mu_);
  auto it = posix_.find(id);
  if (it == posix_.end()) return kEINVAL;
  DisarmLocked(it->second);
  posix_.erase(it);
  UpdateCpuEarliestLocked();
  return OkResult();
}

void ProcessTimers::DeletePosixTimers() {
  absl::MutexLock l(&mu_);
  for (auto& [id, p] : posix_) DisarmLocked(p);
  posix_.clear();
  UpdateCpuEarliestLocked();
}

void ProcessTimers::OnExec(Task& t) {
  DeletePosixTimers();
  absl::MutexLock l(&tg_.signal_mu());
  auto from_timer = [](const siginfo_t& i) { return i.si_code == SI_TIMER; };
  tg_.SharedPendingLocked().RemoveIf(from_timer);
  t.signals().pending.RemoveIf(from_timer);
}

void ProcessTimers::Shutdown() {
  absl::MutexLock l(&mu_);
  dead_ = true;
  for (auto& [id, p] : posix_) DisarmLocked(p);
  posix_.clear();
  if (real_queued_) service().Cancel(real_id_);
  real_queued_ = false;
  ++real_gen_;
  cpu_it_[0] = cpu_it_[1] = CpuItimer{};
  UpdateCpuEarliestLocked();
  SchedulePollLocked();
}

std::string ProcessTimers::ProcText() {
  absl::MutexLock l(&mu_);
  std::string out;
  // Newest first, as Linux lists them.
  std::vector<const PosixTimer*> v;
  for (const auto& [id, p] : posix_) v.push_back(&p);
  std::sort(v.begin(), v.end(), [](const PosixTimer* a, const PosixTimer* b) {
    return a->gen > b->gen;
  });
  for (const PosixTimer* p : v) {
    const int n = p->ev.notify;
    const char* kind = (n & ~SIGEV_THREAD_ID) == SIGEV_NONE     ? "none"
                       : (n & ~SIGEV_THREAD_ID) == SIGEV_THREAD ? "thread"
                                                                : "signal";
    const int signo = p->ev.signo;  // the event's, whatever the notify
    absl::StrAppendFormat(
        &out,
        "ID: %d\nsignal: %d/%016x\nnotify: %s/%s.%d\n"
        "ClockID: %d\n",
        p->id, signo, p->ev.value, kind, (n & SIGEV_THREAD_ID) ? "tid" : "pid",
        (n & SIGEV_THREAD_ID) ? p->ev.tid : tg_.tgid(), p->clock);
  }
  return out;
}

void ProcessTimers::FireWall(int id, uint64_t gen) {
  siginfo_t info;
  ThreadId tid = 0;
  {
    absl::MutexLock l(&mu_);
    auto it = posix_.find(id);
    if (dead_ || it == posix_.end()) return;
    PosixTimer& p = it->second;
    if (p.gen != gen || !p.armed) return;
    p.service_id = 0;
    if (p.interval == 0) p.armed = false;
    if (p.sig_pending) {
      // Still queued (the timer was re-set while its signal waited): one
      // more overrun; the dequeue re-arms it.
      ++p.queued_extra;
      p.pending_gen = p.gen;
      return;
    }
    p.sig_pending = true;
    p.pending_gen = p.gen;
    info = TimerInfo(id, p.ev);
    if (p.ev.notify == SIGEV_THREAD_ID) tid = p.ev.tid;
  }
  SendTimerSignal(id, gen, info, tid);
}

void ProcessTimers::SendTimerSignal(int id, uint64_t gen, const siginfo_t& info,
                                    ThreadId tid) {
  Task* target = nullptr;
  auto held = tg_.kernel().root_pid_namespace().Lookup(tid);
  if (tid != 0 && held) {
    target = &*held;
    if (&target->thread_group() != &tg_) target = nullptr;
  }
  if (tid == 0) {
    (void)SendSignalToGroup(tg_, info);
  } else if (target != nullptr) {
    (void)SendSignalToTask(*target, info);
  }
  // Dropped (ignored, the thread gone, the group dying)? Then nothing will
  // dequeue it: a periodic timer goes on (Linux re-arms an ignored timer
  // at least a tick later).
  absl::MutexLock sl(&tg_.signal_mu());
  auto is_ours = [id](const siginfo_t& i) {
    return i.si_code == SI_TIMER && i.si_timerid == id;
  };
  const bool queued = tid == 0 ? tg_.SharedPendingLocked().AnyQueued(is_ours)
                               : (target != nullptr &&
                                  target->signals().pending.AnyQueued(is_ours));
  absl::MutexLock l(&mu_);
  auto it = posix_.find(id);
  if (queued || it == posix_.end()) return;
  PosixTimer& p = it->second;
  if (!p.sig_pending) return;  // dequeued already
  p.sig_pending = false;
  p.queued_extra = 0;
  if (p.gen != gen || !p.armed || p.interval == 0 || dead_ || tg_.exiting()) {
    UpdateCpuEarliestLocked();
    return;
  }
  const int64_t now = p.cpu ? CpuNowSignalLocked(p, nullptr) : WallNow(p.clock);
  const int64_t floor = SatAdd(now, std::max(p.interval, kTickNs) - p.interval);
  p.overrun += Forward(&p.expiry, floor, p.interval);
  if (p.cpu) {
    UpdateCpuEarliestLocked();
    SchedulePollLocked();
  } else {
    ArmWallLocked(p);
  }
}

void ProcessTimers::OnDequeueLocked(Task& t, siginfo_t& info) {
  absl::MutexLock l(&mu_);
  if (dead_) return;
  BindLocked(t);
  if (info.si_signo == SIGALRM && !real_queued_ && real_incr_ != 0) {
    // dequeue_signal: a periodic ITIMER_REAL re-arms now.
    Forward(&real_expiry_, TimerService::Now(), real_incr_);
    ArmRealLocked();
  }
  if (info.si_code != SI_TIMER) return;
  auto it = posix_.find(info.si_timerid);
  if (it == posix_.end()) return;
  PosixTimer& p = it->second;
  if (!p.sig_pending || p.ev.signo != info.si_signo) return;
  p.sig_pending = false;
  const int64_t extra = p.queued_extra;
  p.queued_extra = 0;
  if (p.interval != 0 && p.armed && p.pending_gen == p.gen) {
    // posixtimer_rearm: forward past now; the periods passed meanwhile are
    // the overrun.
    const int64_t now = p.cpu ? CpuNowSignalLocked(p, &t) : WallNow(p.clock);
    p.overrun += Forward(&p.expiry, now, p.interval);
    p.overrun_last = p.overrun;
    p.overrun = -1;
    info.si_overrun = ClampOverrun(p.overrun_last + extra);
    if (p.cpu) {
      UpdateCpuEarliestLocked();
      SchedulePollLocked();
    } else {
      ArmWallLocked(p);
    }
  } else {
    info.si_overrun = ClampOverrun(extra);
    if (p.cpu) UpdateCpuEarliestLocked();
  }
}

}  // namespace sandbox::kernel
