// Guest-side copies. While the Sentry thread serving a guest thread copies a
// long read from a host file into the guest's pages, the platform's guest
// side (systrap: the stub thread of that guest thread, in its signal
// handler) usually spins on another CPU for the reply. A guest-side copy puts
// that CPU to work: the Sentry queues the tail of the read in the stub's data
// pipe with splice(2) (page references, no copy), the stub reads the pipe
// into the guest's buffer through its own mapping of the guest's pages, and
// meanwhile the Sentry preads the head. A 1 MiB read then costs about 5/8 of
// the copy instead of all of it.
//
// Trust: the guest side runs in the guest's address space, so what it
// reports (how much it copied) is the guest's word about its own buffer;
// whatever it did not copy, the caller copies itself. The data pipe only
// ever holds bytes the Sentry read for a request of that same process.
//
// Rule: Start, then the caller's own part of the copy, then Finish, all
// within one request of the guest thread (between two Switches), on the
// Sentry thread serving it. The guest's pages need not stay locked: the
// guest side writes through the address space's own mapping, like a guest
// store, and the MemoryManager unmaps pages from it before it frees them,
// so a racing munmap or fork makes that write fail or land in the mm's own
// memory, never in a page another process got.
#ifndef PLATFORM_GUEST_COPY_H_
#define PLATFORM_GUEST_COPY_H_

#include <stddef.h>
#include <stdint.h>

namespace sandbox::platform {

// Reads shorter than this are copied by the Sentry alone: the queueing and
// the hand-off cost a few microseconds, worth it only against ~8 us of
// copying saved.
inline constexpr size_t kGuestCopyMinBytes = 512 * 1024;

class GuestCopier {
 public:
  // Queues up to `len` bytes of host file `fd` from `offset` for the guest
  // side to copy to guest address `addr`. Returns the bytes queued: fewer
  // than `len` at the end of the file or when the pipe holds less, 0 if
  // nothing was queued (no idle guest side now, another copy of the same
  // address space in flight, the pipe could not be set up, or splice
  // failed: the caller copies everything itself). A non-zero Start must be
  // followed by Finish; the caller copies whatever Finish does not report.
  virtual size_t Start(int fd, uint64_t offset, uintptr_t addr, size_t len) = 0;
  // Waits for the guest side and returns how many of the queued bytes it
  // copied, counted from the start (at most what Start queued). The rest
  // are discarded: the caller copies them itself.
  virtual size_t Finish() = 0;

 protected:
  ~GuestCopier() = default;
};

namespace internal {
// The copier of the guest thread the calling Sentry thread serves now, or
// null. Set by the platform's Context::Switch when it returns a request,
// cleared at the next Switch (like long_work_flag).
inline thread_local GuestCopier* guest_copier = nullptr;
}  // namespace internal

inline GuestCopier* CurrentGuestCopier() { return internal::guest_copier; }

}  // namespace sandbox::platform

#endif  // PLATFORM_GUEST_COPY_H_
