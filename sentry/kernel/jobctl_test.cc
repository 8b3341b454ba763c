// Job control (signal_jobctl.cc), init's immunity and the lifecycle of
// reaped tasks, with tasks that never run guest code: the test's threads
// play their parts (the run loop's DeliverSignals and exit steps).
#include <signal.h>

#include <memory>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signal.h"
#include "sentry/kernel/testing.h"

namespace sandbox::kernel {
namespace {

class JobControlTest : public testing::OneProcessTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OneProcessTest::SetUp());
    init_ = task_;
    // init catches SIGCHLD (a fake handler address: nothing runs it), so
    // the notices are queued where the test can see them.
    abi::KernelSigaction act = {};
    act.handler = 0x1000;
    init_->thread_group().SetAction(SIGCHLD, act);
  }

  Task* NewChild() {
    auto c = kernel_->Fork(*init_, platform::CpuState{});
    EXPECT_TRUE(c.ok());
    return c.ok() ? *c : nullptr;
  }

  // What Task::Run does as it ends (the task never ran).
  void EndTask(Task* t, int code) {
    std::shared_ptr<Task> hold = t->shared_from_this();  // as its thread
    SignalsOnTaskExit(*t);
    kernel_->TaskExited(t);
    t->thread_group().TaskExited(t, code);
  }

  // WaitChild as wait4 runs it: a pending interrupt (the SIGCHLD the child's
  // stop or exit sends to init) makes it return ERESTARTSYS, which the run
  // loop turns into a transparent restart. Nothing drains init's interrupts
  // here, but each call scans the children first, so the retry ends as soon
  // as the event is there.
  KResult<ThreadGroup::Reaped> Wait(const ThreadGroup::WaitOptions& o) {
    ThreadGroup& tg = init_->thread_group();
    KResult<ThreadGroup::Reaped> r = tg.WaitChild(*init_, o);
    for (int i = 0; i < 10000 && !r.ok() && r.error() == kERestartSys; ++i) {
      absl::SleepFor(absl::Milliseconds(1));
      r = tg.WaitChild(*init_, o);
    }
    return r;
  }

  std::optional<siginfo_t> TakeSigchld() {
    return DequeueSignalIn(*init_, SigBit(SIGCHLD));
  }

  Task* init_ = nullptr;  // task_, the sandbox's init
};

TEST_F(JobControlTest, SigstopStopsUntilSigcontAndWaitReportsEachOnce) {
  Task* child = NewChild();
  ASSERT_NE(child, nullptr);
  ThreadGroup& tg = child->thread_group();
  ASSERT_TRUE(
      SendSignalToGroup(tg, UserSignalInfo(SIGSTOP, SI_USER, init_)).ok());
  std::atomic<bool> returned{false};
  std::thread runner([&] {
    DeliverSignals(*child);  // stops here until SIGCONT
    returned = true;
  });
  ThreadGroup::WaitOptions o;
  o.type = ThreadGroup::WaitOptions::Type::kPid;
  o.id = tg.tgid();
  o.stopped = true;
  o.continued = true;
  KResult<ThreadGroup::Reaped> r = Wait(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cld, CLD_STOPPED);
  EXPECT_EQ(r->stop_signo, SIGSTOP);
  EXPECT_EQ(r->WaitStatus(), 0x7f | (SIGSTOP << 8));
  EXPECT_TRUE(TaskStopped(*child));
  std::optional<siginfo_t> info = TakeSigchld();
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->si_code, CLD_STOPPED);
  EXPECT_EQ(info->si_status, SIGSTOP);
  EXPECT_EQ(info->si_pid, tg.tgid());
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(returned.load());
  // Reported once.
  o.nohang = true;
  r = Wait(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tgid, 0);

  ASSERT_TRUE(
      SendSignalToGroup(tg, UserSignalInfo(SIGCONT, SI_USER, init_)).ok());
  runner.join();
  EXPECT_TRUE(returned.load());
  EXPECT_FALSE(TaskStopped(*child));
  r = Wait(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cld, CLD_CONTINUED);
  EXPECT_EQ(r->WaitStatus(), 0xffff);
  info = TakeSigchld();
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->si_code, CLD_CONTINUED);
  EXPECT_EQ(info->si_status, SIGCONT);
  EndTask(child, 0);
}

TEST_F(JobControlTest, SigkillEndsAStoppedTask) {
  Task* child = NewChild();
  ASSERT_NE(child, nullptr);
  ThreadGroup& tg = child->thread_group();
  ASSERT_TRUE(
      SendSignalToGroup(tg, UserSignalInfo(SIGSTOP, SI_USER, init_)).ok());
  std::thread runner([&] { DeliverSignals(*child); });
  while (!TaskStopped(*child)) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_TRUE(
      SendSignalToGroup(tg, UserSignalInfo(SIGKILL, SI_USER, init_)).ok());
  runner.join();
  EXPECT_TRUE(tg.exiting());
  EndTask(child, 0);
  std::optional<ExitStatus> st = tg.exit_status();
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->signo, SIGKILL);
}

// wants_signal: a stopped thread takes only SIGKILL; a fatal signal waits
// for SIGCONT, then ends the process.
TEST_F(JobControlTest, FatalSignalWaitsForSigcontWhileStopped) {
  Task* child = NewChild();
  ASSERT_NE(child, nullptr);
  ThreadGroup& tg = child->thread_group();
  ASSERT_TRUE(
      SendSignalToGroup(tg, UserSignalInfo(SIGSTOP, SI_USER, init_)).ok());
  std::thread runner([&] { DeliverSignals(*child); });
  while (!TaskStopped(*child)) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_TRUE(
      SendSignalToGroup(tg, UserSignalInfo(SIGTERM, SI_USER, init_)).ok());
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_FALSE(tg.exiting());
  EXPECT_TRUE(TaskStopped(*child));
  ASSERT_TRUE(
      SendSignalToGroup(tg, UserSignalInfo(SIGCONT, SI_USER, init_)).ok());
  runner.join();
  EXPECT_TRUE(tg.exiting());
  EndTask(child, 0);
  ASSERT_TRUE(tg.exit_status().has_value());
  EXPECT_EQ(tg.exit_status()->signo, SIGTERM);
}

TEST_F(JobControlTest, SaNocldstopSuppressesTheNotice) {
  abi::KernelSigaction act = {};
  act.handler = 0x1000;
  act.flags = SA_NOCLDSTOP;
  init_->thread_group().SetAction(SIGCHLD, act);
  Task* child = NewChild();
  ASSERT_NE(child, nullptr);
  ThreadGroup& tg = child->thread_group();
  ASSERT_TRUE(
      SendSignalToGroup(tg, UserSignalInfo(SIGSTOP, SI_USER, init_)).ok());
  std::thread runner([&] { DeliverSignals(*child); });
  while (!TaskStopped(*child)) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_FALSE(TakeSigchld().has_value());
  ASSERT_TRUE(
      SendSignalToGroup(tg, UserSignalInfo(SIGCONT, SI_USER, init_)).ok());
  runner.join();
  EndTask(child, 0);
}

TEST_F(JobControlTest, InitIgnoresFatalSignalsFromInsideNotFromOutside) {
  Task* child = NewChild();
  ASSERT_NE(child, nullptr);
  ThreadGroup& init_tg = init_->thread_group();
  ASSERT_TRUE(init_tg.unkillable());
  for (int sig : {SIGKILL, SIGTERM, SIGSTOP, SIGSEGV}) {
    ASSERT_TRUE(
        SendSignalToGroup(init_tg, UserSignalInfo(sig, SI_USER, child)).ok());
    EXPECT_FALSE(init_tg.exiting()) << sig;
  }
  // Nothing was queued either.
  EXPECT_EQ(PendingBlockedSignals(*init_) | SignalStatusOf(*init_).shared, 0u);
  EndTask(child, 0);
  // The runtime's path (a signal from outside, no sender) still kills.
  ASSERT_TRUE(
      SendSignalToGroup(init_tg, UserSignalInfo(SIGKILL, SI_USER, nullptr))
          .ok());
  EXPECT_TRUE(init_tg.exiting());
}

TEST_F(JobControlTest, ReapedTaskAndProcessAreFreed) {
  Task* child = NewChild();
  ASSERT_NE(child, nullptr);
  std::weak_ptr<Task> task = child->shared_from_this();
  std::weak_ptr<ThreadGroup> group = child->thread_group_ref();
  const ThreadId pid = child->tid();
  const size_t groups = kernel_->ThreadGroupCount();
  EndTask(child, 7);
  // A zombie: its PID still names the task.
  EXPECT_FALSE(task.expired());
  EXPECT_NE(kernel_->root_pid_namespace().Lookup(pid), nullptr);
  ThreadGroup::WaitOptions o;
  KResult<ThreadGroup::Reaped> r = Wait(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tgid, pid);
  EXPECT_EQ(r->status.code, 7);
  EXPECT_EQ(kernel_->root_pid_namespace().Lookup(pid), nullptr);
  EXPECT_TRUE(task.expired());
  EXPECT_TRUE(group.expired());
  EXPECT_EQ(kernel_->ThreadGroupCount(), groups - 1);
}

TEST_F(JobControlTest, ExitedThreadIsFreedAtOnce) {
  auto t = kernel_->NewThread(*init_, platform::CpuState{});
  ASSERT_TRUE(t.ok());
  std::weak_ptr<Task> thread = (*t)->shared_from_this();
  const ThreadId tid = (*t)->tid();
  EndTask(*t, 0);
  EXPECT_EQ(kernel_->root_pid_namespace().Lookup(tid), nullptr);
  EXPECT_TRUE(thread.expired());
}

TEST_F(JobControlTest, OrphansGoToInitAndAParentHeldWhileItExits) {
  Task* child = NewChild();
  ASSERT_NE(child, nullptr);
  auto g = kernel_->Fork(*child, platform::CpuState{});
  ASSERT_TRUE(g.ok());
  Task* grandchild = *g;
  std::shared_ptr<ThreadGroup> held = grandchild->thread_group().parent_ref();
  EXPECT_EQ(held.get(), &child->thread_group());
  EndTask(child, 0);
  // Reparented to init; the old parent object is still valid while held.
  EXPECT_EQ(grandchild->thread_group().parent(), &init_->thread_group());
  EXPECT_TRUE(held->dead());
  // A CLONE_PARENT child of the grandchild now goes to init too.
  ForkOptions opts;
  opts.sibling = true;
  auto s = kernel_->Fork(*grandchild, platform::CpuState{}, opts);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->thread_group().parent(), &init_->thread_group());
  EndTask(*s, 0);
  EndTask(grandchild, 0);
}

}  // namespace
}  // namespace sandbox::kernel
