// The run loop against a scripted platform Context: syscalls, faults
// resolved by the mm or ending the process, interrupts, a dead stub.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "sentry/kernel/kernel.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/testing/fake_platform.h"

namespace sandbox::kernel {
namespace {

using platform::CpuState;
using platform::SwitchReason;
using platform::SwitchResult;

// One scripted guest step: inspects the state the Sentry left (rax of the
// last syscall) and returns what the guest does next.
using Step = std::function<SwitchResult(CpuState&)>;

class ScriptedContext : public platform::Context {
 public:
  explicit ScriptedContext(std::deque<Step>* script) : script_(script) {}
  SwitchResult Switch(platform::AddressSpace&, CpuState& state) override {
    if (interrupted_.exchange(false)) return {SwitchReason::kInterrupted};
    if (script_->empty()) {
      // A guest spinning forever: wait for an interrupt.
      while (!interrupted_.exchange(false)) usleep(1000);
      return {SwitchReason::kInterrupted};
    }
    Step s = std::move(script_->front());
    script_->pop_front();
    return s(state);
  }
  void Interrupt() override { interrupted_ = true; }
  void ClearInterrupt() override { interrupted_ = false; }

 private:
  std::deque<Step>* script_;
  std::atomic<bool> interrupted_{false};
};

class ScriptedPlatform : public mm::testing::FakePlatform {
 public:
  absl::StatusOr<std::unique_ptr<platform::Context>> NewContext() override {
    return std::unique_ptr<platform::Context>(new ScriptedContext(&script));
  }
  std::deque<Step> script;
};

// Handles getpid (39), exit_group (231), and a blocking call (0) that
// waits on the task's interrupt FD.
class FakeDispatcher : public SyscallDispatcher {
 public:
  KResult<uint64_t> Dispatch(Task& t, uint64_t nr,
                             const SyscallArgs& a) override {
    ++calls;
    switch (nr) {
      case 39:
        return static_cast<uint64_t>(t.thread_group().tgid());
      case 231:
        t.thread_group().ExitGroup(ExitStatus::Exited(a.v[0]));
        return uint64_t{0};
      case 60:
        t.ExitThread(a.v[0]);
        return uint64_t{0};
      default:
        return kENOSYS;
    }
  }
  std::atomic<int> calls{0};
};

SwitchResult Syscall(CpuState& s, uint64_t nr, uint64_t arg0 = 0) {
  s.regs.orig_rax = nr;
  s.regs.rdi = arg0;
  return {SwitchReason::kSyscall};
}

SwitchResult Fault(int sig, uintptr_t addr, bool write) {
  SwitchResult r;
  r.reason = SwitchReason::kFault;
  r.signal.si_signo = sig;
  r.signal.si_code = SEGV_MAPERR;
  r.signal.si_addr = reinterpret_cast<void*>(addr);
  r.access.write = write;
  r.access.read = !write;
  return r;
}

class TaskRunTest : public ::testing::Test {
 protected:
  Task* NewTask() {
    kernel_ =
        std::make_unique<Kernel>(&platform_, dispatcher_, KernelOptions{});
    auto mm = mm::MemoryManager::Create(platform_, {.randomize = false});
    EXPECT_TRUE(mm.ok());
    mm_ = std::move(mm).value();
    NewProcessArgs args;
    args.mm = mm_;
    auto t = kernel_->NewProcess(std::move(args));
    EXPECT_TRUE(t.ok());
    return t.value();
  }

  ScriptedPlatform platform_;
  FakeDispatcher dispatcher_;
  std::unique_ptr<Kernel> kernel_;
  std::shared_ptr<mm::MemoryManager> mm_;
};

TEST_F(TaskRunTest, SyscallResultsReachRaxAndExitGroupEnds) {
  uint64_t seen_rax = 0, seen_enosys = 0;
  platform_.script = {
      [](CpuState& s) { return Syscall(s, 39); },
      [&](CpuState& s) {
        seen_rax = s.regs.rax;
        return Syscall(s, 9999);
      },
      [&](CpuState& s) {
        seen_enosys = s.regs.rax;
        return Syscall(s, 231, 7);
      },
  };
  Task* t = NewTask();
  kernel_->Start(t);
  ExitStatus st = kernel_->WaitInit();
  EXPECT_EQ(st.ShellStatus(), 7);
  EXPECT_EQ(seen_rax, 1u);
  EXPECT_EQ(seen_enosys, static_cast<uint64_t>(-ENOSYS));
  EXPECT_EQ(dispatcher_.calls, 3);
  EXPECT_FALSE(kernel_->fatal_error().has_value());
  EXPECT_EQ(kernel_->TaskCount(), 0u);
}

TEST_F(TaskRunTest, LastThreadExitIsTheProcessStatus) {
  platform_.script = {[](CpuState& s) { return Syscall(s, 60, 5); }};
  Task* t = NewTask();
  kernel_->Start(t);
  EXPECT_EQ(kernel_->WaitInit().ShellStatus(), 5);
}

TEST_F(TaskRunTest, ExitClearsChildTid) {
  Task* t = NewTask();
  auto addr = mm_->Mmap({.length = 4096,
                         .prot = PROT_READ | PROT_WRITE,
                         .flags = MAP_PRIVATE | MAP_ANONYMOUS});
  ASSERT_TRUE(addr.ok());
  uint32_t tid = 1;
  ASSERT_TRUE(t->CopyOutFull(addr.value() + 8, &tid, 4).ok());
  t->set_clear_child_tid(addr.value() + 8);
  platform_.script = {[](CpuState& s) { return Syscall(s, 60, 0); }};
  kernel_->Start(t);
  kernel_->WaitInit();
  uint32_t v = 7;
  ASSERT_TRUE(mm_->CopyIn(addr.value() + 8, &v, 4).ok());
  EXPECT_EQ(v, 0u);
}

TEST_F(TaskRunTest, FaultInAVmaIsResolvedElseSigsegv) {
  Task* t = NewTask();
  auto addr = mm_->Mmap({.length = 8192,
                         .prot = PROT_READ | PROT_WRITE,
                         .flags = MAP_PRIVATE | MAP_ANONYMOUS});
  ASSERT_TRUE(addr.ok());
  uintptr_t a = addr.value();
  platform_.script = {
      [a](CpuState&) { return Fault(SIGSEGV, a + 100, true); },
      [](CpuState& s) { return Syscall(s, 39); },
      [](CpuState&) { return Fault(SIGSEGV, 0x10, false); },
  };
  kernel_->Start(t);
  ExitStatus st = kernel_->WaitInit();
  EXPECT_EQ(st.signo, SIGSEGV);
  EXPECT_EQ(st.ShellStatus(), 139);
  EXPECT_EQ(dispatcher_.calls, 1);  // The resolved fault let getpid run.
  EXPECT_GT(mm_->BackedBytes(), 0u);
}

TEST_F(TaskRunTest, OtherSynchronousSignalsEndTheProcess) {
  platform_.script = {[](CpuState&) {
    SwitchResult r;
    r.reason = SwitchReason::kFault;
    r.signal.si_signo = SIGFPE;
    r.signal.si_code = FPE_INTDIV;
    return r;
  }};
  Task* t = NewTask();
  kernel_->Start(t);
  EXPECT_EQ(kernel_->WaitInit().ShellStatus(), 128 + SIGFPE);
}

TEST_F(TaskRunTest, ExternalSignalInterruptsASpinningGuest) {
  Task* t = NewTask();
  kernel_->Start(t);
  usleep(20000);
  kernel_->SendExternalSignal(SIGTERM);
  EXPECT_EQ(kernel_->WaitInit().ShellStatus(), 128 + SIGTERM);
}

TEST_F(TaskRunTest, IgnoredExternalSignalIsIgnored) {
  Task* t = NewTask();
  t->thread_group().SetAction(SIGINT, {.handler = abi::kSigIgn});
  kernel_->Start(t);
  kernel_->SendExternalSignal(SIGINT);
  kernel_->SendExternalSignal(SIGCHLD);  // Default action: ignore.
  usleep(20000);
  EXPECT_FALSE(t->thread_group().exiting());
  kernel_->SendExternalSignal(SIGKILL);
  EXPECT_EQ(kernel_->WaitInit().ShellStatus(), 128 + SIGKILL);
}

TEST_F(TaskRunTest, DeadStubKillsOnlyItsProcess) {
  platform_.script = {
      [](CpuState&) { return SwitchResult{SwitchReason::kDead}; }};
  Task* t = NewTask();
  kernel_->Start(t);
  // The process ends as if by SIGKILL; the sandbox itself has no error.
  EXPECT_EQ(kernel_->WaitInit().ShellStatus(), 128 + SIGKILL);
  EXPECT_FALSE(kernel_->fatal_error().has_value());
}

}  // namespace
}  // namespace sandbox::kernel
