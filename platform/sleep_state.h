// Whether the guest thread a Sentry thread serves sleeps, for the state
// /proc shows (Linux's task state: R, S, D). The Sentry thread serving a
// guest thread publishes that thread's state word here
// (kernel::Task::Run); each blocking wait in the Sentry (pipes, poll and
// epoll, futexes, nanosleep, wait4, sigsuspend, host files...) marks it
// for the wait's duration with a ScopedSleep. Elsewhere, in guest code or
// in the non-blocking part of a syscall, the thread is running (R).
//
// The word is written only by the serving thread and read by any (relaxed
// atomics: a reader sees a state the thread was in, which is all /proc
// promises).
#ifndef PLATFORM_SLEEP_STATE_H_
#define PLATFORM_SLEEP_STATE_H_

#include <stdint.h>

#include <atomic>

namespace sandbox::platform {

enum class SleepState : uint8_t {
  kRunning = 0,
  kInterruptible = 1,    // TASK_INTERRUPTIBLE: 'S'
  kUninterruptible = 2,  // TASK_UNINTERRUPTIBLE or TASK_KILLABLE: 'D'
};

namespace internal {
// The serving task's state word, or null on threads that serve none. Set
// and cleared by the thread itself; the word outlives the interval (it is
// in the Task).
inline thread_local std::atomic<SleepState>* sleep_word = nullptr;
}  // namespace internal

// Publishes `word` for the calling thread for this object's lifetime.
class ScopedSleepWord {
 public:
  explicit ScopedSleepWord(std::atomic<SleepState>* word)
      : prev_(internal::sleep_word) {
    internal::sleep_word = word;
  }
  ~ScopedSleepWord() { internal::sleep_word = prev_; }
  ScopedSleepWord(const ScopedSleepWord&) = delete;
  ScopedSleepWord& operator=(const ScopedSleepWord&) = delete;

 private:
  std::atomic<SleepState>* const prev_;
};

// Marks the guest thread the calling thread serves as sleeping in `state`
// for this object's lifetime (nested ones restore the outer state). A
// no-op on threads that serve none.
class ScopedSleep {
 public:
  explicit ScopedSleep(SleepState state = SleepState::kInterruptible)
      : word_(internal::sleep_word) {
    if (word_ != nullptr) {
      prev_ = word_->load(std::memory_order_relaxed);
      word_->store(state, std::memory_order_relaxed);
    }
  }
  ~ScopedSleep() {
    if (word_ != nullptr) word_->store(prev_, std::memory_order_relaxed);
  }
  ScopedSleep(const ScopedSleep&) = delete;
  ScopedSleep& operator=(const ScopedSleep&) = delete;

 private:
  std::atomic<SleepState>* const word_;
  SleepState prev_ = SleepState::kRunning;
};

}  // namespace sandbox::platform

#endif  // PLATFORM_SLEEP_STATE_H_
