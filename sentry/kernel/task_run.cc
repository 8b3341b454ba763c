// The task run loop: guest code runs until it needs the kernel.
#include <signal.h>

#include "platform/long_work.h"
#include "platform/memory_file.h"
#include "platform/sleep_state.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/log.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"

namespace sandbox::kernel {

namespace {
thread_local Task* current_task = nullptr;
}  // namespace

Task* Task::Current() { return current_task; }

void Task::Run() {
  current_task = this;
  // Long loops in mm and fs stop when this task is interrupted
  // (platform/long_work.h).
  platform::ScopedInterruptFlag interruptible(&interrupt_pending_);
  // Blocking waits mark the task as sleeping (/proc's State).
  platform::ScopedSleepWord sleep_word(&sleep_state_);
  cpu_clock_.Start();  // cpu_clock.h: system time from here
  std::unique_ptr<platform::Context> context = std::move(prepared_context_);
  if (context != nullptr) {
    run_context_ = context.get();
    absl::MutexLock l(&mu_);
    context_ = context.get();
  } else if (kernel_.platform() == nullptr) {
    kernel_.Fatal("no platform to run guest code on");
  } else {
    auto c = kernel_.platform()->NewContext();
    if (!c.ok()) {
      kernel_.Fatal("cannot create a platform context: " +
                    c.status().ToString());
    } else {
      context = std::move(c).value();
      run_context_ = context.get();
      absl::MutexLock l(&mu_);
      context_ = context.get();
    }
  }

  while (context != nullptr) {
    // Order: clear the platform's pending interrupt, then check for exit.
    // An Interrupt() after the check makes the next Switch return at once.
    // One that woke the syscall just served (through the FD) has set the
    // flag once AwaitInterruptsInFlight returns: a signal that interrupted
    // a syscall is delivered on its return, before any guest code runs, as
    // Linux sets TIF_SIGPENDING before the wake-up (signal_wake_up).
    context->ClearInterrupt();
    AwaitInterruptsInFlight();
    const bool interrupted = InterruptPending();
    DrainInterrupts();
    if (exit_requested_ || tg_->exiting() || tg_->KilledByExec(this)) break;
    // Signals (signal.h): whatever interrupted us, a syscall that wants to
    // restart, or a mask sigsuspend saved.
    if (interrupted || signals_.syscall_restart.has_value() ||
        signals_.saved_mask.has_value()) {
      DeliverSignals(*this);
      if (tg_->exiting()) break;
    }

    cpu_clock_.EnterUser(tg_->cpu_times());
    platform::SwitchResult r = context->Switch(mm_->address_space(), cpu_);
    cpu_clock_.LeaveUser(tg_->cpu_times());
    tg_->timers().MaybeCheckCpu(*this);  // ITIMER_VIRTUAL/PROF, CPU timers
    Step step = Step::kContinue;
    switch (r.reason) {
      case platform::SwitchReason::kSyscall:
        step = HandleSyscall();
        break;
      case platform::SwitchReason::kFault:
        step = HandleFault(r);
        break;
      case platform::SwitchReason::kInterrupted:
        break;
      case platform::SwitchReason::kDead:
        // The stub holding this address space died: killed from outside,
        // or the guest broke its own stub (jumped into stub code, corrupted
        // its shared slot, ignored interrupts). Only this process is lost;
        // it ends as if by SIGKILL, and the rest of the sandbox goes on.
        LogWarning(
            "task %d: the host process running its address space died; "
            "killing its process",
            tid_);
        tg_->ExitGroup(ExitStatus::Killed(SIGKILL));
        step = Step::kExit;
        break;
    }
    if (step == Step::kExit) break;
  }

  SyncFp();  // the image must not outlive the context it is in
  run_context_ = nullptr;
  {
    absl::MutexLock l(&mu_);
    context_ = nullptr;
  }
  context.reset();
  // The task's CPU times join its process's before the parent can reap it.
  RetireTaskCpu(*this, mm_ != nullptr ? mm_->BackedBytes() / 1024 : 0);
  SignalsOnTaskExit(*this);
  // CLONE_CHILD_CLEARTID / set_tid_address: zero the word and wake one
  // futex waiter (pthread_join). The wake is a shared futex, as Linux's
  // mm_release makes it (glibc waits with a shared FUTEX_WAIT). Errors are
  // ignored, as Linux does.
  if (clear_child_tid_ != 0) {
    uint32_t zero = 0;
    if (CopyOutFull(clear_child_tid_, &zero, sizeof(zero)).ok()) {
      (void)kernel_.futexes().Wake(*this, clear_child_tid_, /*shared=*/true,
                                   ~0u, 1);
    }
  }
  // Release what the task holds before the group is reported dead, so the
  // last description closes (and flushes) before the sandbox exits.
  SwapFdTable(nullptr);
  // The last task of a process drops its address space here (the stub
  // process and the memory go), not when the sandbox ends.
  SwapMm(nullptr);
  CompleteVforkDone();  // mm_release: a vfork parent goes on
  kernel_.TaskExited(this);
  tg_->TaskExited(this, exit_code_);
  if (tg_->TaskCount() == 0) tg_->timers().Shutdown();  // exit_itimers
}

void Task::SyncFp() {
  if (run_context_ != nullptr) {
    run_context_->SyncFp(cpu_);
  } else {
    cpu_.fp_stale = false;
  }
}

Task::Step Task::HandleSyscall() {
  user_regs_struct& regs = cpu_.regs;
  const uint64_t nr = regs.orig_rax;
  SyscallArgs args;
  args.v[0] = regs.rdi;
  args.v[1] = regs.rsi;
  args.v[2] = regs.rdx;
  args.v[3] = regs.r10;
  args.v[4] = regs.r8;
  args.v[5] = regs.r9;
  KResult<uint64_t> r = kernel_.dispatcher().Dispatch(*this, nr, args);
  if (r.ok()) {
    regs.rax = r.value();
  } else {
    Errno e = r.error();
    // The signal step (DeliverSignals) turns it into EINTR or a restart.
    if (e.IsRestart()) signals_.syscall_restart = e;
    regs.rax = static_cast<uint64_t>(-static_cast<int64_t>(e.number()));
  }
  return Step::kContinue;
}

Task::Step Task::HandleFault(const platform::SwitchResult& r) {
  int sig = r.signal.si_signo;
  const bool memory_fault = (sig == SIGSEGV || sig == SIGBUS) &&
                            r.signal.si_code > 0 &&
                            r.signal.si_code != SI_KERNEL;
  if (memory_fault) {
    auto addr = reinterpret_cast<uintptr_t>(r.signal.si_addr);
    platform::MemoryFile& mf = kernel_.platform()->memory_file();
    const uint64_t refused = mf.LimitFailures();
    KResult<void> res = mm_->HandleFault(addr, r.access);
    if (res.ok()) return Step::kContinue;
    if (res.error() == kENOMEM && mf.LimitFailures() != refused) {
      // The sandbox's memory limit refused a page and the OOM killer has
      // run (oom.cc): as pagefault_out_of_memory, go back to the guest,
      // which faults again, unless this process is the one dying.
      return Step::kContinue;
    }
    if (res.error() == kENOMEM) {
      LogWarning("task %d: out of memory resolving a fault at %#x", tid_, addr);
    }
    // A file or shared-memory page past the end of its object: SIGBUS
    // (BUS_ADRERR), whatever the host reported for the unmapped page.
    if (res.error() == kEIO) sig = SIGBUS;
  }
  if (sig <= 0 || sig > abi::kNumSignals) {
    kernel_.Fatal(
        absl::StrFormat("task %d: fault with bad signal %d", tid_, sig));
    return Step::kExit;
  }
  // force_sig_fault: the guest's handler (or the default action, which
  // ends the process) runs on the loop's next pass.
  siginfo_t info = r.signal;
  info.si_signo = sig;
  if (sig == SIGBUS && r.signal.si_signo != SIGBUS) info.si_code = BUS_ADRERR;
  signals_.fault_addr = reinterpret_cast<uintptr_t>(r.signal.si_addr);
  signals_.fault_trapno = 0;
  signals_.fault_err = 0;
  if (memory_fault) {
    // The page-fault error code as the CPU reports it: user mode, write,
    // instruction fetch, protection (vs not-present).
    signals_.fault_trapno = 14;
    signals_.fault_err = 4 | (r.access.write ? 2 : 0) |
                         (r.access.execute ? 16 : 0) |
                         (r.signal.si_code == SEGV_ACCERR ? 1 : 0);
  }
  ForceSignal(*this, info);
  return Step::kContinue;
}

}  // namespace sandbox::kernel
