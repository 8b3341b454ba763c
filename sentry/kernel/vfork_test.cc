// VforkCompletion: the vfork parent's killable wait.
#include "sentry/kernel/vfork.h"

#include <signal.h>

#include <memory>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/testing.h"

namespace sandbox::kernel {
namespace {

// task_ never starts: this thread plays its part.
using VforkTest = testing::OneProcessTest;

TEST_F(VforkTest, CompletedBeforeTheWait) {
  VforkCompletion c;
  c.Complete();
  EXPECT_TRUE(c.Wait(*task_));
}

TEST_F(VforkTest, WaitsForTheCompletion) {
  VforkCompletion c;
  // Before the thread starts: its 50 ms all fall after `start`.
  absl::Time start = absl::Now();
  std::thread child([&c] {
    absl::SleepFor(absl::Milliseconds(50));
    c.Complete();
  });
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
