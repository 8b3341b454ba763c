// VforkCompletion: the vfork parent's killable wait.
#include "sentry/kernel/vfork.h"

#include <signal.h>

#include <memory>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "sentry/kernel/kernel.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/mm/testing/fake_platform.h"

namespace sandbox::kernel {
namespace {

class NoSyscalls : public SyscallDispatcher {
 public:
  KResult<uint64_t> Dispatch(Task&, uint64_t, const SyscallArgs&) override {
    return kENOSYS;
  }
};

class VforkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kernel_ =
        std::make_unique<Kernel>(&platform_, dispatcher_, KernelOptions{});
    auto mm = mm::MemoryManager::Create(platform_, {.randomize = false});
    ASSERT_TRUE(mm.ok());
    NewProcessArgs args;
    args.mm = std::move(mm).value();
    auto t = kernel_->NewProcess(std::move(args));
    ASSERT_TRUE(t.ok());
    task_ = *t;  // never started: this thread plays its part
  }

  mm::testing::FakePlatform platform_;
  NoSyscalls dispatcher_;
  std::unique_ptr<Kernel> kernel_;
  Task* task_ = nullptr;
};

TEST_F(VforkTest, CompletedBeforeTheWait) {
  VforkCompletion c;
  c.Complete();
  EXPECT_TRUE(c.Wait(*task_));
}

TEST_F(VforkTest, WaitsForTheCompletion) {
  VforkCompletion c;
  std::thread child([&c] {
    absl::SleepFor(absl::Milliseconds(50));
    c.Complete();
  });
  absl::Time start = absl::Now();
  EXPECT_TRUE(c.Wait(*task_));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(40));
  child.join();
}

TEST_F(VforkTest, InterruptsDoNotEndTheWait) {
  // A caught signal interrupts the task; the wait goes on (killable, not
  // interruptible), and the interrupt stays pending for the run loop.
  VforkCompletion c;
  std::thread other([this, &c] {
    for (int i = 0; i < 5; ++i) {
      absl::SleepFor(absl::Milliseconds(10));
      task_->Interrupt();
    }
    absl::SleepFor(absl::Milliseconds(20));
    c.Complete();
  });
  EXPECT_TRUE(c.Wait(*task_));
  EXPECT_TRUE(c.done());
  EXPECT_TRUE(task_->InterruptPending());
  other.join();
}

TEST_F(VforkTest, AKillEndsTheWait) {
  VforkCompletion c;
  std::thread killer([this] {
    absl::SleepFor(absl::Milliseconds(20));
    task_->thread_group().ExitGroup(ExitStatus::Killed(SIGKILL));
  });
  EXPECT_FALSE(c.Wait(*task_));
  EXPECT_FALSE(c.done());
  killer.join();
}

TEST_F(VforkTest, TaskCompletesOnNewMm) {
  // execve's set_mm releases the vfork parent.
  auto c = std::make_shared<VforkCompletion>();
  task_->set_vfork_done(c);
  EXPECT_FALSE(c->done());
  auto mm = mm::MemoryManager::Create(platform_, {.randomize = false});
  ASSERT_TRUE(mm.ok());
  task_->set_mm(std::move(mm).value());
  EXPECT_TRUE(c->done());
}

}  // namespace
}  // namespace sandbox::kernel
