// A Context, one guest thread's way into its stub: Switch (registers and
// FP state through the slot, the handoff and its spinning and pinning,
// CPUID and the checks of what the stub reported), Prepare, interrupts, FP
// state sync, and the round-trip statistics (TakeSystrapTimings). A Context
// is used by one Sentry thread at a time and takes no lock of its own;
// Interrupt may come from any thread (atomics). It takes Stub locks only
// through Stub's methods.
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>

#include "platform/systrap/systrap.h"
#include "platform/systrap/systrap_internal.h"

namespace sandbox::platform::systrap_internal {

void SystrapContext::Unbind() {
  if (thread_ != nullptr) {
    // A later Context may live at this address: never let it skip its FP
    // load and inherit this one's registers.
    thread_->fp_owner = nullptr;
    stub_->ReleaseThread(thread_);
    thread_ = nullptr;
  }
  stub_.reset();
}

void SystrapContext::SyncFp(CpuState& state) {
  if (!state.fp_stale) return;
  state.fp_stale = false;
  // The image is in the slot of the thread that ran the last Switch: the
  // stub copied the one the kernel saved at the trap, or it is the one the
  // Sentry loaded. Guest-writable memory: the length is clamped and the
  // image is sanitised again before any load.
  if (thread_ == nullptr || thread_->fp_owner != this) return;
  const size_t xsize = plat_->FpStateSize();
  stub_slot* s = thread_->slot;
  uint32_t len = Load(&s->xsave_len);
  if (len > xsize) len = static_cast<uint32_t>(xsize);
  state.fp.resize(xsize);
  memcpy(state.fp.data(), s->xsave, len);
  if (len < xsize) memset(state.fp.data() + len, 0, xsize - len);
}

SwitchResult SystrapContext::Dead() {
  Unbind();
  SwitchResult r;
  r.reason = SwitchReason::kDead;
  return r;
}

void SystrapContext::Interrupt() {
  interrupt_.store(true);
  uint64_t r = running_.load();
  if (r != 0) {
    syscall(SYS_tgkill, static_cast<pid_t>(r >> 32),
            static_cast<pid_t>(r & 0xffffffff), SIGCHLD);
    // Let a sleeping Switch switch to its timed wait. (A stale pointer only
    // costs a spurious wake-up: the Sentry's mapping of the file stays.)
    if (uint32_t* w = running_word_.load()) FutexWake(w, INT32_MAX);
  }
}

void SystrapContext::Pin(StubThread* t, int cpu) {
  if (t->pinned_cpu == cpu) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu >= 0) {
    CPU_SET(cpu, &set);
  } else {
    for (int i = 0; i < CPU_SETSIZE; ++i) CPU_SET(i, &set);
  }
  if (sched_setaffinity(t->tid, sizeof(set), &set) == 0) t->pinned_cpu = cpu;
}

bool SystrapContext::WaitForStub(StubThread* t, bool spin, int cpu) {
  stub_slot* s = t->slot;
  // A stub thread that last trapped on this CPU cannot run while we spin
  // here (the value is guest-writable: a lie only costs the guest time).
  if (spin && cpu >= 0 && Load(&s->stub_cpu) == static_cast<uint32_t>(cpu)) {
    spin = false;
    ticks_.same_cpu++;
  }
  if (spin) {
    ticks_.spins++;
    uint64_t end = __rdtsc() + plat_->spin_ticks();
    bool done = false;
    while (!(done = Load(&s->state) == STUB_SLOT_SENTRY)) {
      if (__rdtsc() > end) break;
      _mm_pause();
    }
    if (done) {
      ticks_.spin_hits++;
      backoff_len_ = 1;
    } else {
      backoff_left_ = backoff_len_;
      if (backoff_len_ < 4096) backoff_len_ *= 2;
    }
  }
  // While an interrupt is pending the wait is timed: the signal is sent
  // again (cheap insurance) and a guest that still has not stopped after
  // interrupt_kill_ms (it blocked SIGCHLD through a forged rt_sigreturn
  // frame and never traps) is killed.
  uint64_t interrupt_deadline = 0;
  for (;;) {
    uint32_t v = Load(&s->state);
    if (v == STUB_SLOT_SENTRY) break;
    if (stub_->dead()) return false;
    Store(&s->sentry_waiting, 1);
    v = Load(&s->state);
    if (v == STUB_SLOT_SENTRY) break;
    if (stub_->dead()) return false;
    if (!interrupt_.load() || plat_->opts().interrupt_kill_ms <= 0) {
      ticks_.sleeps++;
      Futex(&s->state, FUTEX_WAIT, v);
      continue;
    }
    uint64_t now = __rdtsc();
    if (interrupt_deadline == 0) {
      interrupt_deadline =
          now + static_cast<uint64_t>(plat_->opts().interrupt_kill_ms * 1e6 *
                                      TscPerNs());
    } else if (now > interrupt_deadline) {
      stub_->Kill();
      return false;
    }
    struct timespec ts = {0, 50 * 1000 * 1000};
    Futex(&s->state, FUTEX_WAIT, v, &ts);
    if (interrupt_.load() && Load(&s->state) != STUB_SLOT_SENTRY) {
      syscall(SYS_tgkill, stub_->pid(), t->tid, SIGCHLD);
    }
  }
  Store(&s->sentry_waiting, 0);
  return true;
}

void SanitizeXsave(uint8_t* x, size_t size, uint64_t xfeatures) {
  if (size < 576) return;
  uint32_t mxcsr;
  memcpy(&mxcsr, x + 24, 4);
  mxcsr &= 0xffff;
  memcpy(x + 24, &mxcsr, 4);
  uint64_t bv;
  memcpy(&bv, x + STUB_XSAVE_HDR_OFF, 8);
  bv &= xfeatures;
  memcpy(x + STUB_XSAVE_HDR_OFF, &bv, 8);
  memset(x + STUB_XSAVE_HDR_OFF + 8, 0, 56);  // xcomp_bv, reserved
}

absl::Status SystrapContext::Prepare(AddressSpace& as) {
  auto& sas = static_cast<SystrapAddressSpace&>(as);
  if (stub_ == sas.stub() && thread_ != nullptr) return absl::OkStatus();
  Unbind();
  auto t = sas.stub()->AcquireThread();
  if (!t.ok()) return t.status();
  stub_ = sas.stub();
  thread_ = *t;
  return absl::OkStatus();
}

SwitchResult SystrapContext::Switch(AddressSpace& as, CpuState& state) {
  auto& sas = static_cast<SystrapAddressSpace&>(as);
  internal::long_work_flag = nullptr;
  internal::guest_copier = nullptr;
  if (interrupt_.exchange(false)) {
    SwitchResult r;
    r.reason = SwitchReason::kInterrupted;
    return r;
  }
  if (stub_ != sas.stub()) {
    SyncFp(state);  // the image is in the old thread's slot
    Unbind();
    auto t = sas.stub()->AcquireThread();
    if (!t.ok()) return Dead();
    stub_ = sas.stub();
    thread_ = *t;
  }
  if (stub_->dead()) return Dead();

  StubThread* t = thread_;
  stub_slot* s = t->slot;
  // Published before interrupt_ is checked again: Interrupt stores
  // interrupt_ and then loads running_, this side stores running_ and then
  // loads interrupt_ (all sequentially consistent), so either Interrupt
  // sees running_ and kicks the stub thread, or the check here sees the
  // interrupt. (An Interrupt between the check at the top and this store
  // read running_ as 0; without this check the guest would run on, with
  // the interrupt pending, until its next trap.) A kick that finds the stub
  // still waiting for the handoff is reported when it resumes the guest
  // (STUB_EV_INTERRUPT), or is a stale one after an early return here.
  running_word_.store(&s->state);
  running_.store((static_cast<uint64_t>(stub_->pid()) << 32) |
                 static_cast<uint32_t>(t->tid));
  if (interrupt_.exchange(false)) {
    running_.store(0);
    running_word_.store(nullptr);
    SwitchResult r;
    r.reason = SwitchReason::kInterrupted;
    return r;
  }
  const size_t xsize = plat_->FpStateSize();
  const uint64_t xfeatures = plat_->features().xfeatures;

  bool load_fp = state.fp_changed || t->fp_owner != this;
  state.fp_changed = false;
  t->fp_owner = this;
  if (load_fp) {
    if (state.fp.size() == xsize) {
      memcpy(s->xsave, state.fp.data(), xsize);
      SanitizeXsave(s->xsave, xsize, xfeatures);
    } else {
      memset(s->xsave, 0, xsize);
      uint16_t fcw = 0x37f;
      uint32_t mxcsr = 0x1f80;
      memcpy(s->xsave, &fcw, 2);
      memcpy(s->xsave + 24, &mxcsr, 4);
    }
  }
  s->fp_load = load_fp ? STUB_FP_LOAD : STUB_FP_KEEP;

  plat_->active_switches.fetch_add(1);
  SwitchResult result;
  for (;;) {
    memcpy(&s->regs, &state.regs, sizeof(stub_regs));
    // `spin`: both sides spin for each other (a CPU is free and the
    // Sentry's own spins have not been failing: back-off).
    const bool may_spin = plat_->MaySpin();
    bool spin = false;
    if (backoff_left_ > 0) {
      --backoff_left_;
    } else {
      spin = may_spin;
    }
    // The request just served was long CPU-bound work (platform/long_work.h):
    // a guest streaming data, whose next request is likely long too. Its
    // stub spins through such work whenever a CPU is free; the back-off
    // (which is about the guest's time between requests) does not apply.
    const bool long_work = Load(&s->sentry_busy) != 0;
    const bool stub_spins = spin || (long_work && may_spin);
    // (A streaming guest's stub spins even during the back-off: with
    // `spin` 0 it would go to sleep before the Sentry marks the request as
    // long work, and every 1 MiB read would end in a futex wake-up.)
    s->spin = stub_spins ? plat_->stub_spin_iters() : 0;
    s->busy_spin = may_spin ? plat_->stub_busy_spin_iters() : 0;
    const int cpu = sched_getcpu();
    s->sentry_cpu = static_cast<uint32_t>(cpu);
    // When one side must sleep, keep both on one CPU: a futex wake-up
    // across CPUs costs tens of microseconds in a VM, on one CPU a couple.
    // While the stub spins, let the scheduler place it, except for a guest
    // streaming data: spinning through each long request only helps on
    // another CPU, and the scheduler tends to keep both on one (then the
    // stub sleeps and every reply is a futex wake-up).
    if (plat_->opts().pin) {
      int where = cpu;
      if (stub_spins) {
        where = (plat_->opts().spread || long_work) && cpu >= 0
                    ? plat_->OtherCpu(cpu)
                    : -1;
        if (where == cpu) where = -1;
      }
      Pin(t, where);
    }
    uint64_t handoff = __rdtsc();
    ticks_.handoffs++;
    Store(&s->sentry_busy, 0);
    Store(&s->state, STUB_SLOT_STUB);
    if (Load(&s->stub_waiting)) FutexWake(&s->state);
    if (!WaitForStub(t, stub_spins, cpu)) {
      result.reason = SwitchReason::kDead;
      break;
    }
    uint64_t back = __rdtsc();
    {
      const uint32_t ss = Load(&s->stub_sleeps);
      if (last_slot_ == s) ticks_.stub_sleeps += ss - last_stub_sleeps_;
      last_slot_ = s;
      last_stub_sleeps_ = ss;
    }
    {
      uint64_t resume = s->tsc_resume, trap = s->tsc_trap;
      if (handoff <= resume && resume <= trap && trap <= back) {
        if (last_back_ != 0 && last_back_ <= handoff) {
          ticks_.sentry += handoff - last_back_;
          Record(kSentry, handoff - last_back_);
        }
        ticks_.n++;
        ticks_.to_stub += resume - handoff;
        ticks_.guest += trap - resume;
        ticks_.to_sentry += back - trap;
        Record(kToStub, resume - handoff);
        Record(kGuest, trap - resume);
        Record(kToSentry, back - trap);
      }
      last_back_ = back;
    }
    // Everything below comes from memory the guest can write.
    uint32_t ev = Load(&s->event);
    memcpy(&state.regs, &s->regs, sizeof(stub_regs));
    state.regs.cs = 0x33;
    state.regs.ss = 0x2b;
    state.regs.ds = state.regs.es = state.regs.fs = state.regs.gs = 0;
    s->fp_load = STUB_FP_KEEP;
    if (ev == STUB_EV_CPUID) {
      uint32_t out[4];
      plat_->Cpuid(static_cast<uint32_t>(state.regs.rax),
                   static_cast<uint32_t>(state.regs.rcx), out);
      state.regs.rax = out[0];
      state.regs.rbx = out[1];
      state.regs.rcx = out[2];
      state.regs.rdx = out[3];
      state.regs.rip += 2;
      continue;
    }
    // The FPU image stays in the slot until the Sentry asks (SyncFp):
    // signal delivery, clone. Until the next Switch the stub waits, so the
    // slot holds it; a KEEP then resumes with it.
    state.fp_stale = true;
    if (ev == STUB_EV_INTERRUPT) {
      if (interrupt_.exchange(false)) {
        result.reason = SwitchReason::kInterrupted;
        break;
      }
      continue;  // a stale interrupt signal
    }
    if (ev == STUB_EV_SYSCALL) {
      result.reason = SwitchReason::kSyscall;
      break;
    }
    uint32_t signo = Load(&s->signo);
    if (ev == STUB_EV_FAULT &&
        (signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE ||
         signo == SIGILL || signo == SIGTRAP)) {
      result.reason = SwitchReason::kFault;
      result.signal.si_signo = signo;
      result.signal.si_code = s->fault_code;
      result.signal.si_addr = reinterpret_cast<void*>(s->fault_addr);
      if ((signo == SIGSEGV || signo == SIGBUS) && s->trapno == 14) {
        uint64_t err = s->fault_err;
        result.access.write = (err & 2) != 0;
        result.access.execute = (err & 16) != 0;
        result.access.read = !result.access.write && !result.access.execute;
      }
      break;
    }
    // Corrupted shared memory: the guest tampered with its slot.
    stub_->Kill();
    result.reason = SwitchReason::kDead;
    break;
  }
  running_.store(0);
  running_word_.store(nullptr);
  plat_->active_switches.fetch_sub(1);
  if (result.reason == SwitchReason::kDead) {
    Dead();
  } else {
    // Until the next Switch, HintLongWork() on this thread marks the slot
    // and guest-side copies go to its stub thread.
    internal::long_work_flag = &s->sentry_busy;
    internal::guest_copier = this;
  }
  return result;
}

}  // namespace sandbox::platform::systrap_internal

namespace sandbox::platform {

using systrap_internal::SystrapContext;
using systrap_internal::TscPerNs;

SystrapTimings TakeSystrapTimings(Context& ctx) {
  SystrapTimings out;
  auto* c = dynamic_cast<SystrapContext*>(&ctx);
  if (c == nullptr) return out;
  SystrapContext::Ticks t = c->TakeTicks();
  out.handoffs = t.handoffs;
  out.spins = t.spins;
  out.spin_hits = t.spin_hits;
  out.same_cpu = t.same_cpu;
  out.sentry_sleeps = t.sleeps;
  out.stub_sleeps = t.stub_sleeps;
  if (t.n == 0) return out;
  double k = 1.0 / TscPerNs() / t.n;
  out.round_trips = t.n;
  out.to_stub_ns = t.to_stub * k;
  out.guest_ns = t.guest * k;
  out.to_sentry_ns = t.to_sentry * k;
  out.sentry_ns = t.sentry * k;
  double* p50[] = {&out.to_stub_p50_ns, &out.guest_p50_ns,
                   &out.to_sentry_p50_ns, &out.sentry_p50_ns};
  for (int p = 0; p < SystrapContext::kPhases; ++p) {
    uint64_t total = 0, seen = 0;
    for (uint32_t c : t.hist[p]) total += c;
    for (int b = 0; b < SystrapContext::kHistBuckets && total > 0; ++b) {
      seen += t.hist[p][b];
      if (2 * seen >= total) {
        *p50[p] = SystrapContext::BucketMidNs(b);
        break;
      }
    }
  }
  return out;
}

}  // namespace sandbox::platform
