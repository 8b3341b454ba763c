/* The guest's vDSO: clock_gettime, gettimeofday, time, clock_getres and
 * getcpu without a system call, as Linux's arch/x86/entry/vdso/vclock_gettime.c.
 *
 * Built -fPIC -nostdlib -shared with vdso.lds: one PT_LOAD, no relocations
 * (every reference is PC-relative), symbols under version LINUX_2.6 (glibc
 * looks them up by name and version). The data page [vvar] sits right below
 * the text ("vvar" in vdso.lds); vdso_data.h describes it.
 *
 * Anything the data page cannot answer (CPU-time clocks, bad clock ids,
 * no usable TSC) makes the real syscall and returns its raw result (-errno
 * on failure), as Linux's vDSO fallbacks do: glibc expects exactly that. */
#include <stddef.h>
#include <stdint.h>

#include "sentry/vdso/vdso_data.h"

/* Placed by vdso.lds at the first page of [vvar]. Hidden: accessed
 * PC-relative, never through the GOT. */
extern const volatile struct VdsoData vvar __attribute__((visibility("hidden")));

#define NSEC_PER_SEC 1000000000LL

/* The kernel's types (the guest ABI), without libc headers. */
struct vdso_timespec {
  int64_t tv_sec;
  int64_t tv_nsec;
};
struct vdso_timeval {
  int64_t tv_sec;
  int64_t tv_usec;
};
struct vdso_timezone {
  int tz_minuteswest;
  int tz_dsttime;
};

enum {
  kClockRealtime = 0,
  kClockMonotonic = 1,
  kClockMonotonicRaw = 4,
  kClockRealtimeCoarse = 5,
  kClockMonotonicCoarse = 6,
  kClockBoottime = 7,
};

enum {
  kSysGettimeofday = 96,
  kSysTime = 201,
  kSysClockGettime = 228,
  kSysClockGetres = 229,
  kSysGetcpu = 309,
};

static inline long Syscall2(long nr, long a, long b) {
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "0"(nr), "D"(a), "S"(b)
                   : "rcx", "r11", "memory");
  return ret;
}

static inline long Syscall3(long nr, long a, long b, long c) {
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "0"(nr), "D"(a), "S"(b), "d"(c)
                   : "rcx", "r11", "memory");
  return ret;
}

/* rdtsc_ordered(): LFENCE keeps RDTSC after the loads before it (the
 * sequence count and the parameters). */
static inline uint64_t RdtscOrdered(void) {
  uint32_t lo, hi;
  __asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
  return ((uint64_t)hi << 32) | lo;
}

static inline int64_t ClockNs(const volatile struct VdsoClock* c,
                              uint64_t cycles) {
  const uint64_t base = c->base_cycles;
  /* A TSC read just before the base (another CPU's view, or RDTSC run
   * ahead) counts as the base: never before the published time. */
  const uint64_t delta = cycles > base ? cycles - base : 0;
  const unsigned __int128 prod = (unsigned __int128)delta * c->mult;
  return c->base_ns + (int64_t)(uint64_t)(prod >> c->shift);
}

/* Nanoseconds of `clock` (one of those above), or -1: not from here. */
static int64_t ReadNs(int clock) {
  for (;;) {
    const uint32_t seq = __atomic_load_n(&vvar.seq, __ATOMIC_ACQUIRE);
    if (seq & 1) {
      __builtin_ia32_pause();
      continue;
    }
    if (!vvar.enabled) return -1;
    const uint64_t cycles = RdtscOrdered();
    int64_t ns;
    switch (clock) {
      case kClockMonotonicRaw:
        ns = ClockNs(&vvar.raw, cycles);
        break;
      case kClockRealtime:
      case kClockRealtimeCoarse:
        ns = ClockNs(&vvar.mono, cycles) + vvar.realtime_offset_ns;
        break;
      case kClockBoottime:
        ns = ClockNs(&vvar.mono, cycles) + vvar.boottime_offset_ns;
        break;
      default: /* kClockMonotonic, kClockMonotonicCoarse */
        ns = ClockNs(&vvar.mono, cycles);
        break;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&vvar.seq, __ATOMIC_RELAXED) == seq) return ns;
  }
}

static inline int Served(int clock) {
  return clock == kClockRealtime || clock == kClockMonotonic ||
         clock == kClockMonotonicRaw || clock == kClockRealtimeCoarse ||
         clock == kClockMonotonicCoarse || clock == kClockBoottime;
}

int __vdso_clock_gettime(int clock, struct vdso_timespec* ts) {
  if (Served(clock)) {
    const int64_t ns = ReadNs(clock);
    if (ns >= 0) {
      ts->tv_sec = ns / NSEC_PER_SEC;
      ts->tv_nsec = ns % NSEC_PER_SEC;
      return 0;
    }
  }
  return (int)Syscall2(kSysClockGettime, clock, (long)ts);
}

int __vdso_gettimeofday(struct vdso_timeval* tv, struct vdso_timezone* tz) {
  if (tv != NULL) {
    const int64_t ns = ReadNs(kClockRealtime);
    if (ns < 0) return (int)Syscall2(kSysGettimeofday, (long)tv, (long)tz);
    tv->tv_sec = ns / NSEC_PER_SEC;
    tv->tv_usec = ns % NSEC_PER_SEC / 1000;
  }
  if (tz != NULL) {
    /* The Sentry keeps no time zone: gettimeofday(2) reports UTC too. */
    tz->tz_minuteswest = 0;
    tz->tz_dsttime = 0;
  }
  return 0;
}

int64_t __vdso_time(int64_t* t) {
  const int64_t ns = ReadNs(kClockRealtime);
  if (ns < 0) return Syscall2(kSysTime, (long)t, 0);
  const int64_t secs = ns / NSEC_PER_SEC;
  if (t != NULL) *t = secs;
  return secs;
}

int __vdso_clock_getres(int clock, struct vdso_timespec* res) {
  if (Served(clock)) {
    const int coarse =
        clock == kClockRealtimeCoarse || clock == kClockMonotonicCoarse;
    const int64_t ns = coarse ? vvar.coarse_res_ns : vvar.hres_res_ns;
    if (ns > 0) {
      if (res != NULL) {
        res->tv_sec = ns / NSEC_PER_SEC;
        res->tv_nsec = ns % NSEC_PER_SEC;
      }
      return 0;
    }
  }
  return (int)Syscall2(kSysClockGetres, clock, (long)res);
}

/* Linux's vdso_read_cpunode(): the host kernel keeps (node << 12 | cpu) as
 * the limit of the per-CPU GDT segment __CPUNODE_SEG; LSL reads it without
 * a trap on every x86-64 CPU. */
long __vdso_getcpu(unsigned* cpu, unsigned* node, void* unused) {
  (void)unused;
  unsigned p;
  const unsigned seg = 15 * 8 + 3; /* GDT_ENTRY_CPUNODE, RPL 3 */
  unsigned char ok;
  __asm__ volatile("lsl %[seg], %[p]\n\tsetz %[ok]"
                   : [p] "=r"(p), [ok] "=qm"(ok)
                   : [seg] "r"(seg)
                   : "cc");
  if (!ok) return Syscall3(kSysGetcpu, (long)cpu, (long)node, 0);
  if (cpu != NULL) *cpu = p & 0xfff;
  if (node != NULL) *node = p >> 12;
  return 0;
}

int clock_gettime(int, struct vdso_timespec*)
    __attribute__((weak, alias("__vdso_clock_gettime")));
int gettimeofday(struct vdso_timeval*, struct vdso_timezone*)
    __attribute__((weak, alias("__vdso_gettimeofday")));
int64_t time(int64_t*) __attribute__((weak, alias("__vdso_time")));
int clock_getres(int, struct vdso_timespec*)
    __attribute__((weak, alias("__vdso_clock_getres")));
long getcpu(unsigned*, unsigned*, void*)
    __attribute__((weak, alias("__vdso_getcpu")));
