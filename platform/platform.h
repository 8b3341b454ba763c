// The platform interface: how the Sentry runs guest machine code.
//
// A Platform makes AddressSpaces (windows of the MemoryFile mapped at guest
// addresses) and Contexts (the means to run guest code on one Sentry thread).
// Context::Switch runs guest code with given registers in a given address
// space until the guest makes a syscall, takes a fault, or is interrupted,
// and returns which, with the registers the guest left.
//
// Implementations: platform/systrap (default). A KVM platform implements the
// same interface; nothing above this header knows which one runs.
//
// Threading: an AddressSpace may be used by many Contexts at once (threads of
// one guest process). A Context is used by one Sentry thread at a time, except
// Interrupt(), which any thread may call at any time.
#ifndef PLATFORM_PLATFORM_H_
#define PLATFORM_PLATFORM_H_

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sandbox::platform {

class MemoryFile;

// Guest CPU state that travels across Switch.
struct CpuState {
  // General registers, including fs_base (TLS) and orig_rax. On return from a
  // syscall trap, orig_rax holds the syscall number; the Sentry writes the
  // result to rax before the next Switch.
  user_regs_struct regs = {};
  // User-format XSAVE image (as XSAVE/XRSTOR use it), of the size
  // Platform::FpStateSize() reports. Empty means "not yet initialised": the
  // platform then starts the guest with the default (reset) FPU state.
  std::vector<uint8_t> fp;
  // Set by the Sentry when it changes `fp` (signal delivery, sigreturn,
  // execve), so the platform knows to load it.
  bool fp_changed = false;
  // Set by Switch when it left the guest's current FP image with the
  // platform instead of copying it into `fp` (most syscalls never look at
  // it, and the copy is ~2.4 KB written on another CPU): code that reads
  // `fp` between two Switches first calls Context::SyncFp. Writing `fp`
  // (with fp_changed) needs no sync.
  bool fp_stale = false;
};

// Memory access that caused a fault.
struct AccessType {
  bool read = false;
  bool write = false;
  bool execute = false;
};

// Why Switch returned.
enum class SwitchReason {
  kSyscall,      // regs.orig_rax is the syscall number, rip is past it.
  kFault,        // a synchronous fault; see SwitchResult::signal.
  kInterrupted,  // Interrupt() was called; the guest was stopped cleanly.
  kDead,         // the address space's host process died (killed from outside).
};

struct SwitchResult {
  SwitchReason reason = SwitchReason::kDead;
  // For kFault: the signal the guest would get on Linux (SIGSEGV, SIGBUS,
  // SIGFPE, SIGILL, SIGTRAP), with si_code and si_addr filled as Linux does.
  siginfo_t signal = {};
  // For SIGSEGV/SIGBUS: the access that faulted (from the page-fault error
  // code).
  AccessType access;
};

// A guest address space. Mappings always refer to the MemoryFile.
class AddressSpace {
 public:
  virtual ~AddressSpace() = default;

  // Maps [addr, addr+length) to [offset, offset+length) of the memory file
  // with protection `prot` (PROT_*), replacing whatever was there.
  // addr, offset and length are page-aligned and addr+length does not
  // exceed Platform::MaxUserAddress().
  virtual absl::Status MapFile(uintptr_t addr, uint64_t offset, size_t length,
                               int prot) = 0;

  // MapFile, and the host installs the page-table entries at once
  // (MAP_POPULATE) instead of at the guest's first touch of each page: one
  // host call instead of a host page fault per page (or per 16 pages, the
  // host's fault-around, for reads). Only for pages the memory file already
  // holds (a file's cached pages, copies): populating a hole would allocate
  // it. Default: MapFile.
  virtual absl::Status MapFilePopulate(uintptr_t addr, uint64_t offset,
                                       size_t length, int prot) {
    return MapFile(addr, offset, length, prot);
  }

  // Removes any mappings in [addr, addr+length).
  virtual absl::Status Unmap(uintptr_t addr, size_t length) = 0;
};

// One Sentry thread's way into guest code.
class Context {
 public:
  virtual ~Context() = default;

  // Runs guest code in `as` from `state` until a syscall, a fault or an
  // interrupt. `state` is updated with the guest's registers on return.
  virtual SwitchResult Switch(AddressSpace& as, CpuState& state) = 0;

  // Makes a running (or the next) Switch return kInterrupted promptly.
  // Thread-safe; may be called from any thread.
  virtual void Interrupt() = 0;

  // Clears a pending interrupt that no Switch has consumed yet.
  virtual void ClearInterrupt() = 0;

  // Fills state.fp with the guest's FP image if the last Switch left it
  // stale (CpuState::fp_stale). The Context's own thread, between Switches.
  virtual void SyncFp(CpuState& state) { state.fp_stale = false; }
  // Binds the Context to `as` before its first Switch, taking what running
  // there needs (systrap: a stub thread), so that a new guest thread that
  // cannot run fails at clone time (EAGAIN) instead of dying at its first
  // Switch. RESOURCE_EXHAUSTED when `as` can run no more threads (systrap:
  // 1024 per address space, or the memory limit), another error when the
  // host failed. May be called from another thread than the one that will
  // run the Context. Default: nothing to take.
  virtual absl::Status Prepare(AddressSpace& as) {
    (void)as;
    return absl::OkStatus();
  }
};

class Platform {
 public:
  virtual ~Platform() = default;

  virtual absl::StatusOr<std::unique_ptr<AddressSpace>> NewAddressSpace() = 0;
  virtual absl::StatusOr<std::unique_ptr<Context>> NewContext() = 0;

  // The guest's usable address range is [MinUserAddress, MaxUserAddress).
  virtual uintptr_t MinUserAddress() const = 0;
  virtual uintptr_t MaxUserAddress() const = 0;

  // Size in bytes of a user-format XSAVE image (CPUID leaf 0xD, EBX).
  virtual size_t FpStateSize() const = 0;

  // Answers a guest CPUID: (leaf, subleaf) -> eax, ebx, ecx, edx, from the
  // fixed feature set the platform exposes (used by /proc/cpuinfo too).
  virtual void Cpuid(uint32_t leaf, uint32_t subleaf,
                     uint32_t out[4]) const = 0;

  virtual MemoryFile& memory_file() = 0;

  // One line of where the platform's time went since creation (start-up
  // profiling: `runsc do --strace-summary`), or "".
  virtual std::string StatsSummary() const { return ""; }
};

}  // namespace sandbox::platform

#endif  // PLATFORM_PLATFORM_H_
