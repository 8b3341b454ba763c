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

}  // namespace sandbox::platform

#endif  // PLATFORM_LONG_WORK_H_
