// Long-work hints. The Sentry thread serving a guest thread tells the
// platform that what it does now is CPU-bound work of tens of microseconds
// or more (a large copy between a file and the guest's pages), not a wait.
//
// Why: systrap's stub thread spins briefly for the Sentry's reply before it
// sleeps on a futex. A reply that comes after the spin pays a futex wake-up
// and two context switches (on this VM ~11 us on one vCPU, ~100 us across
// vCPUs): a 1 MiB read from the page cache (~60 us) cost 20 us more than
// natively. With the hint the stub keeps spinning, on the otherwise idle
// CPU, through the work (bounded: SystrapOptions::busy_spin_ns), and the
// reply costs a cache-line transfer.
//
// Rule: call it only where no blocking wait follows in the same request
// (after the wait, at the copy); a hint before a wait only makes the stub
// spin up to its bound before it sleeps, which wastes CPU but stays correct.
#ifndef PLATFORM_LONG_WORK_H_
#define PLATFORM_LONG_WORK_H_

#include <stddef.h>
#include <stdint.h>

#include <atomic>

namespace sandbox::platform {

// Copies at least this long are worth the hint (~4 us of copying: below
// that the stub's ordinary spin covers the work).
inline constexpr size_t kLongWorkBytes = 64 * 1024;

namespace internal {
// The flag word the platform's Context::Switch published for the calling
// thread while it serves the request the Switch returned, or null. Written
// only by the thread itself: Switch sets it on return and clears it before
// the next hand-off; the word outlives that interval (it is in the slot the
// Context is bound to).
inline thread_local uint32_t* long_work_flag = nullptr;
}  // namespace internal

// Marks the request the calling thread serves as long CPU-bound work. Cheap
// (a thread-local load and a store); a no-op on threads that serve no guest
// thread and on platforms that do not spin.
inline void HintLongWork() {
  if (uint32_t* f = internal::long_work_flag) {
    __atomic_store_n(f, 1, __ATOMIC_RELAXED);
  }
}

// ---- Stopping long work. ----
//
// A guest can ask for work whose length it chooses (fallocate of 1 PiB,
// MAP_POPULATE of a 1 TiB mapping, a copy of a huge range). Linux checks for
// a pending signal in such loops (shmem_fallocate: EINTR; populate stops on
// a fatal one), so a killed process ends at once. The Sentry thread serving
// a guest thread publishes that thread's "interrupt pending" word here
// (kernel::Task::Run: set for any signal to deliver, a kill or a stop), and
// long loops in mm and fs check LongWorkInterrupted() every few MiB and stop
// as Linux does.

namespace internal {
// The serving task's interrupt-pending flag, or null. Set and cleared by
// the thread itself; the flag outlives the interval (it is in the Task).
inline thread_local const std::atomic<bool>* interrupt_flag = nullptr;
}  // namespace internal

// Pages a long loop may do between two checks (2 MiB).
inline constexpr uint64_t kLongWorkCheckPages = 512;

// Whether the guest thread the calling thread serves has an interrupt
// pending. False on threads that serve none.
inline bool LongWorkInterrupted() {
  const std::atomic<bool>* f = internal::interrupt_flag;
  return f != nullptr && f->load(std::memory_order_relaxed);
}

// Publishes `flag` for the calling thread for this object's lifetime.
class ScopedInterruptFlag {
 public:
  explicit ScopedInterruptFlag(const std::atomic<bool>* flag)
      : prev_(internal::interrupt_flag) {
    internal::interrupt_flag = flag;
  }
  ~ScopedInterruptFlag() { internal::interrupt_flag = prev_; }
  ScopedInterruptFlag(const ScopedInterruptFlag&) = delete;
  ScopedInterruptFlag& operator=(const ScopedInterruptFlag&) = delete;

 private:
  const std::atomic<bool>* const prev_;
};

}  // namespace sandbox::platform

#endif  // PLATFORM_LONG_WORK_H_
