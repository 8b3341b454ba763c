// Linux x86-64 user ABI: the structs the Sentry copies to and from guest
// memory, laid out as the kernel lays them out (not as a libc might), plus
// constants that no host header provides in a usable form. No logic.
#ifndef SENTRY_ABI_LINUX_H_
#define SENTRY_ABI_LINUX_H_

#include <stddef.h>
#include <stdint.h>

namespace sandbox::abi {

// PAGE_SIZE on x86-64.
inline constexpr uint64_t kPageSize = 4096;

// TASK_SIZE_MAX (x86-64, 4-level paging): the first address past user
// space, one page below the end of the lower canonical half.
inline constexpr uint64_t kTaskSizeMax = 0x7ffffffff000;

// access_ok(addr, len): whether [addr, addr + len) lies below kTaskSizeMax,
// computed without overflow (Linux's __access_ok). A zero-length range at
// kTaskSizeMax is allowed.
inline constexpr bool AccessOk(uint64_t addr, uint64_t len) {
  return len <= kTaskSizeMax && addr <= kTaskSizeMax - len;
}

// struct timespec / __kernel_timespec.
struct Timespec {
  int64_t tv_sec;
  int64_t tv_nsec;
};
static_assert(sizeof(Timespec) == 16);

// struct timeval (__kernel_old_timeval).
struct Timeval {
  int64_t tv_sec;
  int64_t tv_usec;
};
static_assert(sizeof(Timeval) == 16);

struct Timezone {
  int32_t tz_minuteswest;
  int32_t tz_dsttime;
};
static_assert(sizeof(Timezone) == 8);

// struct utimbuf (utime(2)): seconds.
struct Utimbuf {
  int64_t actime;
  int64_t modtime;
};
static_assert(sizeof(Utimbuf) == 16);

// struct f_owner_ex (fcntl F_GETOWN_EX/F_SETOWN_EX).
struct FOwnerEx {
  int32_t type;
  int32_t pid;
};
static_assert(sizeof(FOwnerEx) == 8);

// struct stat (arch/x86/include/uapi/asm/stat.h, x86-64).
struct Stat {
  uint64_t st_dev;
  uint64_t st_ino;
  uint64_t st_nlink;
  uint32_t st_mode;
  uint32_t st_uid;
  uint32_t st_gid;
  uint32_t pad0;
  uint64_t st_rdev;
  int64_t st_size;
  int64_t st_blksize;
  int64_t st_blocks;
  Timespec st_atim;
  Timespec st_mtim;
  Timespec st_ctim;
  int64_t unused[3];
};
static_assert(sizeof(Stat) == 144);
static_assert(offsetof(Stat, st_size) == 48);

// struct new_utsname.
inline constexpr size_t kUtsLen = 65;
struct Utsname {
  char sysname[kUtsLen];
  char nodename[kUtsLen];
  char release[kUtsLen];
  char version[kUtsLen];
  char machine[kUtsLen];
  char domainname[kUtsLen];
};
static_assert(sizeof(Utsname) == 390);

// struct sysinfo.
struct Sysinfo {
  int64_t uptime;
  uint64_t loads[3];
  uint64_t totalram;
  uint64_t freeram;
  uint64_t sharedram;
  uint64_t bufferram;
  uint64_t totalswap;
  uint64_t freeswap;
  uint16_t procs;
  uint16_t pad;
  uint32_t pad2;
  uint64_t totalhigh;
  uint64_t freehigh;
  uint32_t mem_unit;
  uint32_t pad3;
};
static_assert(sizeof(Sysinfo) == 112);
static_assert(offsetof(Sysinfo, procs) == 80);
static_assert(offsetof(Sysinfo, totalhigh) == 88);

// struct rlimit64.
struct Rlimit64 {
  uint64_t rlim_cur;
  uint64_t rlim_max;
};
inline constexpr uint64_t kRlimInfinity = ~uint64_t{0};
inline constexpr int kRlimNlimits = 16;

// struct sigaction as rt_sigaction(2) sees it (kernel layout, 64-bit mask).
struct KernelSigaction {
  uint64_t handler;
  uint64_t flags;
  uint64_t restorer;
  uint64_t mask;
};
static_assert(sizeof(KernelSigaction) == 32);
inline constexpr size_t kSigsetSize = 8;
inline constexpr int kNumSignals = 64;
inline constexpr uint64_t kSigDfl = 0;
inline constexpr uint64_t kSigIgn = 1;

// struct iovec.
struct Iovec {
  uint64_t iov_base;
  uint64_t iov_len;
};
static_assert(sizeof(Iovec) == 16);
inline constexpr int kUioMaxIov = 1024;
// The most bytes one read/write moves (MAX_RW_COUNT: INT_MAX & PAGE_MASK).
inline constexpr uint64_t kMaxRwCount = 0x7ffff000;

// struct termios (kernel layout, asm-generic/termbits.h).
struct Termios {
  uint32_t c_iflag;
  uint32_t c_oflag;
  uint32_t c_cflag;
  uint32_t c_lflag;
  uint8_t c_line;
  uint8_t c_cc[19];
};
static_assert(sizeof(Termios) == 36);

struct Winsize {
  uint16_t ws_row;
  uint16_t ws_col;
  uint16_t ws_xpixel;
  uint16_t ws_ypixel;
};
static_assert(sizeof(Winsize) == 8);

// struct robust_list_head: the only length set_robust_list(2) accepts.
inline constexpr size_t kRobustListHeadSize = 24;

// arch_prctl(2) codes.
inline constexpr int kArchSetGs = 0x1001;
inline constexpr int kArchSetFs = 0x1002;
inline constexpr int kArchGetFs = 0x1003;
inline constexpr int kArchGetGs = 0x1004;
inline constexpr int kArchGetCpuid = 0x1011;
inline constexpr int kArchSetCpuid = 0x1012;

// getrandom(2) flags.
inline constexpr unsigned kGrndNonblock = 0x1;
inline constexpr unsigned kGrndRandom = 0x2;
inline constexpr unsigned kGrndInsecure = 0x4;

// Path lengths.
inline constexpr size_t kPathMax = 4096;

}  // namespace sandbox::abi

#endif  // SENTRY_ABI_LINUX_H_
