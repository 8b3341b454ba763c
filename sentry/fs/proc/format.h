// Pure formatters for /proc files: Linux's exact layouts, from plain data,
// so they are unit-tested without a kernel (format_test.cc).
#ifndef SENTRY_FS_PROC_FORMAT_H_
#define SENTRY_FS_PROC_FORMAT_H_

#include <stdint.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sentry/kernel/limits.h"
#include "sentry/mm/memory_manager.h"

namespace sandbox::fs::proc {

// /proc/pid/limits (fs/proc/base.c proc_pid_limits).
std::string FormatLimits(const kernel::LimitSet& limits);

// /proc/uptime: "<up>.<cs> <idle>.<cs>\n".
std::string FormatUptime(int64_t uptime_ns, int64_t idle_ns);

// /proc/loadavg: "0.00 0.00 0.00 running/total last_pid\n".
std::string FormatLoadavg(int running, int total, int last_pid);

// One "Name:  <n> kB" line of /proc/meminfo (show_val_kb: the name and
// colon padded to 16 columns, the value right-aligned in 8).
std::string MeminfoLine(const char* name, uint64_t kb);
// /proc/meminfo from the memory totals in bytes.
std::string FormatMeminfo(uint64_t total, uint64_t free, uint64_t available);

// CPUID as the platform answers it: (leaf, subleaf) -> eax, ebx, ecx, edx.
using CpuidFn = std::function<void(uint32_t, uint32_t, uint32_t[4])>;
// The "flags" of /proc/cpuinfo for these CPUID answers: the names Linux
// gives the CPUID feature bits (arch/x86/include/asm/cpufeatures.h), in
// Linux's order. Linux's synthetic flags (constant_tsc, ...) are not
// derived from CPUID and are not shown.
std::vector<std::string> CpuFlags(const CpuidFn& cpuid);
// /proc/cpuinfo for `ncpus` CPUs. A non-empty `host_flags` (what the host
// kernel prints) filters the flags: one the host kernel does not show is not
// shown either.
std::string FormatCpuinfo(const CpuidFn& cpuid, int ncpus,
                          const std::vector<std::string>& host_flags = {});
// The "flags" of the first CPU in a /proc/cpuinfo text; empty if none.
std::vector<std::string> ParseCpuinfoFlags(std::string_view cpuinfo);

// One /proc/pid/mountinfo line's data and the two formats.
struct MountEntry {
  uint64_t id = 0, parent_id = 0;
  uint32_t dev_major = 0, dev_minor = 0;
  std::string root;         // the mount's root inside its file system: "/"
  std::string mount_point;  // as seen from the reader's root
  uint32_t flags = 0;       // vfs::kMount*
  std::string fs_type;
  std::string source;
  // Optional fields ("shared:1", "master:2", "unbindable"; empty: none)
  // and the super block's options after ro/rw ("size=1024k,mode=755").
  std::string propagation;
  std::string fs_options;
};
// Mount options as Linux shows them:
// rw|ro[,nosuid][,nodev][,noexec][,noatime][,nodiratime][,relatime].
std::string MountOptions(uint32_t flags);
// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw\n"
// (optional fields from `propagation`).
std::string FormatMountinfoLine(const MountEntry& m);
// "/dev/root / ext4 rw,relatime 0 0\n"
std::string FormatMountsLine(const MountEntry& m);

// One /proc/pid/maps line without the newline (show_map_vma): the name,
// if any, padded to column 73.
std::string FormatMapsLine(const mm::VmaInfo& v);
// The VmFlags of /proc/pid/smaps: two-letter mnemonics each followed by a
// space, in Linux's order (rd wr ex sh mr mw me ms gd lo dc ac wf).
std::string VmFlags(const mm::VmaInfo& v);

// Escapes ' ', '\t', '\n' and '\\' as octal (seq_path's " \t\n\\").
std::string EscapePath(const std::string& path);

// A random RFC 4122 version 4 UUID ("xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx").
std::string NewUuid();

}  // namespace sandbox::fs::proc

#endif  // SENTRY_FS_PROC_FORMAT_H_
