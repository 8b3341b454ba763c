// The guest's vDSO: an ELF image built from vdso.c (vdso.lds), mapped with
// its data page [vvar] into every process at exec, and the clock source
// that keeps the data page current.
//
// Layout in a process (as Linux 6.x x86-64, placed where mmap would put
// VDSO_VVAR_PAGES + image pages, top-down):
//   [vvar]  4 pages, r--p, max prot PROT_READ: mprotect to writable or
//           executable is EACCES (no VM_MAYWRITE/VM_MAYEXEC), writes fault
//   [vdso]  the image, r-xp, private: written pages are copy-on-write
// Both are Mappables over pages of the MemoryFile shared by every process
// on that MemoryFile (one VdsoPages per MemoryFile while any process maps
// it); fork copies the mappings like any other.
//
// Time: the Timekeeper publishes CLOCK_MONOTONIC and CLOCK_MONOTONIC_RAW as
// lines of the TSC fitted to the host's clocks, plus the REALTIME and
// BOOTTIME offsets (vdso_data.h), on a thread that refits them every
// second (sooner right after start, while the fit's window is short). New
// lines start where the old ones are at the switch (no step back) and
// steer towards the host clock over the next interval. Without an
// invariant TSC (CPUID 0x80000007 EDX bit 8), or if the host clock
// stops following the TSC, the vDSO makes the real syscalls.
#ifndef SENTRY_VDSO_VDSO_H_
#define SENTRY_VDSO_VDSO_H_

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "sentry/base/result.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/vdso/vdso_data.h"

namespace sandbox::vdso {

inline constexpr size_t kVvarSize = VDSO_VVAR_PAGES * 4096;

// The vDSO ELF (generated from vdso.c at build time).
const uint8_t* ImageData();
size_t ImageSize();

// Maps [vvar] and [vdso] into `mm` below the mmap base (where mmap puts a
// mapping of their size) and returns the [vdso] address: AT_SYSINFO_EHDR.
// ENOMEM when there is no room or the MemoryFile is full.
KResult<uintptr_t> MapVdso(mm::MemoryManager& mm);

// The clock the vDSO computes, read by the Sentry from its own copy of the
// parameters (the same numbers the guest sees, so syscall and vDSO
// readings agree and stay monotonic together). Returns false when the
// vDSO does not serve `clock` right now (the caller asks the host).
bool ClockGettime(int clock, timespec* ts);

// For tests: the parameters now (a copy), and a refit right away.
VdsoData CurrentParams();
void UpdateNowForTest();

}  // namespace sandbox::vdso

#endif  // SENTRY_VDSO_VDSO_H_
