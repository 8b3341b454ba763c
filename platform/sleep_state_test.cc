#include "platform/sleep_state.h"

#include <atomic>
#include <thread>

#include "gtest/gtest.h"

namespace sandbox::platform {
namespace {

TEST(SleepStateTest, ScopedSleepMarksThePublishedWordAndNests) {
  std::atomic<SleepState> word{SleepState::kRunning};
  ScopedSleepWord published(&word);
  {
    ScopedSleep outer;
    EXPECT_EQ(word.load(), SleepState::kInterruptible);
    {
      ScopedSleep inner(SleepState::kUninterruptible);
      EXPECT_EQ(word.load(), SleepState::kUninterruptible);
    }
    EXPECT_EQ(word.load(), SleepState::kInterruptible);
  }
  EXPECT_EQ(word.load(), SleepState::kRunning);
}

TEST(SleepStateTest, ScopedSleepWithoutAWordDoesNothing) {
  std::atomic<SleepState> word{SleepState::kRunning};
  { ScopedSleepWord published(&word); }
  ScopedSleep s;  // no word published on this thread any more
  EXPECT_EQ(word.load(), SleepState::kRunning);
}

TEST(SleepStateTest, TheWordIsPerThread) {
  std::atomic<SleepState> word{SleepState::kRunning};
  ScopedSleepWord published(&word);
  std::thread([] { ScopedSleep s; }).join();
  EXPECT_EQ(word.load(), SleepState::kRunning);
}

}  // namespace
}  // namespace sandbox::platform
