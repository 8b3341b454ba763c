#include "sentry/fs/proc/format.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sentry/abi/linux.h"
#include "sentry/vfs/mount.h"

namespace sandbox::fs::proc {
namespace {

struct LimitName {
  const char* name;
  const char* unit;  // null: no unit column
};
// fs/proc/base.c lnames[], indexed by RLIMIT_*.
constexpr LimitName kLimitNames[] = {
    {"Max cpu time", "seconds"},        {"Max file size", "bytes"},
    {"Max data size", "bytes"},         {"Max stack size", "bytes"},
    {"Max core file size", "bytes"},    {"Max resident set", "bytes"},
    {"Max processes", "processes"},     {"Max open files", "files"},
    {"Max locked memory", "bytes"},     {"Max address space", "bytes"},
    {"Max file locks", "locks"},        {"Max pending signals", "signals"},
    {"Max msgqueue size", "bytes"},     {"Max nice priority", nullptr},
    {"Max realtime priority", nullptr}, {"Max realtime timeout", "us"},
};

// Register indexes in a CPUID answer.
enum Reg { kEax = 0, kEbx = 1, kEcx = 2, kEdx = 3 };

struct FlagWord {
  uint32_t leaf, subleaf;
  Reg reg;
  // Names of bits 0..31 (cpufeatures.h); null or "" for hidden bits.
  const char* names[32];
};

// Linux's capability words in their order (word 0, 1, 4, 6, 9, 10, 16, 18);
// the words Linux synthesizes (3, 7, 8, ...) are not CPUID bits.
const FlagWord kFlagWords[] = {
    {1, 0, kEdx, {"fpu", "vme",  "de",   "pse",   "tsc", "msr",     "pae",
                  "mce", "cx8",  "apic", "",      "sep", "mtrr",    "pge",
                  "mca", "cmov", "pat",  "pse36", "pn",  "clflush", "",
                  "dts", "acpi", "mmx",  "fxsr",  "sse", "sse2",    "ss",
                  "ht",  "tm",   "ia64", "pbe"}},
    {0x80000001,
     0,
     kEdx,
     {"", "",         "",        "",        "",   "",   "",         "",
      "", "",         "",        "syscall", "",   "",   "",         "",
      "", "",         "",        "mp",      "nx", "",   "mmxext",   "",
      "", "fxsr_opt", "pdpe1gb", "rdtscp",  "",   "lm", "3dnowext", "3dnow"}},
    {1,
     0,
     kEcx,
     {"pni",    "pclmulqdq", "dtes64", "monitor", "ds_cpl",
      "vmx",    "smx",       "est",    "tm2",     "ssse3",
      "cid",    "sdbg",      "fma",    "cx16",    "xtpr",
      "pdcm",   "",          "pcid",   "dca",     "sse4_1",
      "sse4_2", "x2apic",    "movbe",  "popcnt",  "tsc_deadline_timer",
      "aes",    "xsave",     "",       "avx",     "f16c",
      "rdrand", "hypervisor"}},
    {0x80000001,
     0,
     kEcx,
     {"lahf_lm",
      "cmp_legacy",
      "svm",
      "extapic",
      "cr8_legacy",
      "abm",
      "sse4a",
      "misalignsse",
      "3dnowprefetch",
      "osvw",
      "ibs",
      "xop",
      "skinit",
      "wdt",
      "",
      "lwp",
      "fma4",
      "tce",
      "",
      "nodeid_msr",
      "",
      "tbm",
      "topoext",
      "perfctr_core",
      "perfctr_nb",
      "",
      "bpext",
      "ptsc",
      "perfctr_llc",
      "mwaitx",
      "",
      ""}},
    {7, 0, kEbx, {"fsgsbase", "tsc_adjust", "sgx",      "bmi1",       "hle",
                  "avx2",     "",           "smep",     "bmi2",       "erms",
                  "invpcid",  "rtm",        "cqm",      "",           "mpx",
                  "rdt_a",    "avx512f",    "avx512dq", "rdseed",     "adx",
                  "smap",     "avx512ifma", "",         "clflushopt", "clwb",
                  "intel_pt", "avx512pf",   "avx512er", "avx512cd",   "sha_ni",
                  "avx512bw", "avx512vl"}},
    {0xd, 1, kEax, {"xsaveopt", "xsavec", "xgetbv1", "xsaves"}},
    {7,
     0,
     kEcx,
     {"",
      "avx512vbmi",
      "umip",
      "pku",
      "ospke",
      "waitpkg",
      "avx512_vbmi2",
      "",
      "gfni",
      "vaes",
      "vpclmulqdq",
      "avx512_vnni",
      "avx512_bitalg",
      "tme",
      "avx512_vpopcntdq",
      "",
      "la57",
      "",
      "",
      "",
      "",
      "",
      "rdpid",
      "bus_lock_detect",
      "",
      "cldemote",
      "",
      "movdiri",
      "movdir64b",
      "enqcmd",
      "sgx_lc",
      ""}},
    {7,
     0,
     kEdx,
     {"",
      "",
      "avx512_4vnniw",
      "avx512_4fmaps",
      "fsrm",
      "",
      "",
      "",
      "avx512_vp2intersect",
      "",
      "md_clear",
      "",
      "",
      "",
      "serialize",
      "",
      "tsxldtrk",
      "",
      "pconfig",
      "arch_lbr",
      "ibt",
      "",
      "amx_bf16",
      "avx512_fp16",
      "amx_tile",
      "amx_int8",
      "",
      "",
      "flush_l1d",
      "arch_capabilities",
      "",
      ""}},
};

std::string RegString(uint32_t r) {
  char s[4];
  memcpy(s, &r, 4);
  return std::string(s, 4);
}

}  // namespace

std::string FormatLimits(const kernel::LimitSet& limits) {
  std::string out = absl::StrFormat("%-25s %-20s %-20s %-10s\n", "Limit",
                                    "Soft Limit", "Hard Limit", "Units");
  for (int i = 0; i < abi::kRlimNlimits; ++i) {
    const abi::Rlimit64& l = limits.Get(i);
    absl::StrAppendFormat(&out, "%-25s ", kLimitNames[i].name);
    for (uint64_t v : {l.rlim_cur, l.rlim_max}) {
      if (v == abi::kRlimInfinity) {
        absl::StrAppendFormat(&out, "%-20s ", "unlimited");
      } else {
        absl::StrAppendFormat(&out, "%-20u ", v);
      }
    }
    if (kLimitNames[i].unit != nullptr) {
      absl::StrAppendFormat(&out, "%-10s\n", kLimitNames[i].unit);
    } else {
      out += "\n";
    }
  }
  return out;
}

std::string FormatUptime(int64_t uptime_ns, int64_t idle_ns) {
  auto cs = [](int64_t ns) {
    return absl::StrFormat("%d.%02d", ns / 1000000000,
                           (ns % 1000000000) / 10000000);
  };
  return absl::StrCat(cs(uptime_ns), " ", cs(idle_ns), "\n");
}

std::string FormatLoadavg(int running, int total, int last_pid) {
  return absl::StrFormat("0.00 0.00 0.00 %d/%d %d\n", running, total, last_pid);
}

std::string MeminfoLine(const char* name, uint64_t kb) {
  return absl::StrFormat("%-16s%8u kB\n", absl::StrCat(name, ":"), kb);
}

std::string FormatMeminfo(uint64_t total, uint64_t free, uint64_t available) {
  std::string out;
  struct {
    const char* name;
    uint64_t bytes;
  } lines[] = {
      {"MemTotal", total},
      {"MemFree", free},
      {"MemAvailable", available},
      {"Buffers", 0},
      {"Cached", 0},
      {"SwapCached", 0},
      {"Active", 0},
      {"Inactive", 0},
      {"Active(anon)", 0},
      {"Inactive(anon)", 0},
      {"Active(file)", 0},
      {"Inactive(file)", 0},
      {"Unevictable", 0},
      {"Mlocked", 0},
      {"SwapTotal", 0},
      {"SwapFree", 0},
      {"Dirty", 0},
      {"Writeback", 0},
      {"AnonPages", 0},
      {"Mapped", 0},
      {"Shmem", 0},
      {"KReclaimable", 0},
      {"Slab", 0},
      {"SReclaimable", 0},
      {"SUnreclaim", 0},
      {"KernelStack", 0},
      {"PageTables", 0},
      {"NFS_Unstable", 0},
      {"Bounce", 0},
      {"WritebackTmp", 0},
      {"CommitLimit", total / 2},
      {"Committed_AS", total - free},
      {"VmallocTotal", uint64_t{34359738367} * 1024},
      {"VmallocUsed", 0},
      {"VmallocChunk", 0},
  };
  for (const auto& l : lines) out += MeminfoLine(l.name, l.bytes / 1024);
  return out;
}

std::vector<std::string> CpuFlags(const CpuidFn& cpuid) {
  uint32_t r0[4];
  cpuid(0, 0, r0);
  uint32_t max_leaf = r0[kEax];
  uint32_t e0[4];
  cpuid(0x80000000, 0, e0);
  uint32_t max_ext = e0[kEax];
  std::vector<std::string> flags;
  for (const FlagWord& w : kFlagWords) {
    bool ext = w.leaf >= 0x80000000;
    if ((ext && w.leaf > max_ext) || (!ext && w.leaf > max_leaf)) continue;
    uint32_t r[4];
    cpuid(w.leaf, w.subleaf, r);
    for (int bit = 0; bit < 32; ++bit) {
      const char* name = w.names[bit];
      if (name == nullptr || name[0] == '\0') continue;
      if ((r[w.reg] >> bit) & 1) flags.emplace_back(name);
    }
  }
  return flags;
}

std::vector<std::string> ParseCpuinfoFlags(std::string_view cpuinfo) {
  // Debian's Abseil has its own string_view type.
  absl::string_view text(cpuinfo.data(), cpuinfo.size());
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "flags")) continue;
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    return absl::StrSplit(line.substr(colon + 1), ' ', absl::SkipEmpty());
  }
  return {};
}

std::string FormatCpuinfo(const CpuidFn& cpuid, int ncpus,
                          const std::vector<std::string>& host_flags) {
  uint32_t r[4];
  cpuid(0, 0, r);
  uint32_t max_leaf = r[kEax];
  std::string vendor =
      RegString(r[kEbx]) + RegString(r[kEdx]) + RegString(r[kEcx]);
  cpuid(1, 0, r);
  uint32_t sig = r[kEax];
  uint32_t family = (sig >> 8) & 0xf;
  uint32_t model = (sig >> 4) & 0xf;
  if (family == 0xf) family += (sig >> 20) & 0xff;
  if (family >= 6) model += ((sig >> 16) & 0xf) << 4;
  uint32_t stepping = sig & 0xf;
  uint32_t clflush = ((r[kEbx] >> 8) & 0xff) * 8;
  std::string model_name;
  uint32_t e[4];
  cpuid(0x80000000, 0, e);
  uint32_t max_ext = e[kEax];
  if (max_ext >= 0x80000004) {
    for (uint32_t leaf = 0x80000002; leaf <= 0x80000004; ++leaf) {
      cpuid(leaf, 0, e);
      for (uint32_t v : e) model_name += RegString(v);
    }
    model_name = model_name.c_str();  // up to the NUL
    // Linux strips the padding some CPUs put on either side.
    size_t first = model_name.find_first_not_of(' ');
    size_t last = model_name.find_last_not_of(' ');
    model_name = first == std::string::npos
                     ? ""
                     : model_name.substr(first, last - first + 1);
  }
  if (model_name.empty()) model_name = "unknown";
  std::string addr_sizes;
  if (max_ext >= 0x80000008) {
    cpuid(0x80000008, 0, e);
    addr_sizes = absl::StrFormat("%u bits physical, %u bits virtual",
                                 e[kEax] & 0xff, (e[kEax] >> 8) & 0xff);
  }
  uint32_t mhz = 0;
  if (max_leaf >= 0x16) {
    cpuid(0x16, 0, e);
    mhz = e[kEax] & 0xffff;
  }
  std::vector<std::string> names = CpuFlags(cpuid);
  if (!host_flags.empty()) {
    absl::flat_hash_set<std::string_view> host(host_flags.begin(),
                                               host_flags.end());
    names.erase(std::remove_if(names.begin(), names.end(),
                               [&host](const std::string& n) {
                                 return !host.contains(n);
                               }),
                names.end());
  }
  std::string flags = absl::StrJoin(names, " ");
  std::string out;
  for (int i = 0; i < ncpus; ++i) {
    absl::StrAppendFormat(&out, "processor\t: %d\n", i);
    absl::StrAppendFormat(&out, "vendor_id\t: %s\n", vendor);
    absl::StrAppendFormat(&out, "cpu family\t: %u\n", family);
    absl::StrAppendFormat(&out, "model\t\t: %u\n", model);
    absl::StrAppendFormat(&out, "model name\t: %s\n", model_name);
    absl::StrAppendFormat(&out, "stepping\t: %u\n", stepping);
    absl::StrAppendFormat(&out, "cpu MHz\t\t: %u.000\n", mhz);
    absl::StrAppendFormat(&out, "physical id\t: 0\n");
    absl::StrAppendFormat(&out, "siblings\t: %d\n", ncpus);
    absl::StrAppendFormat(&out, "core id\t\t: %d\n", i);
    absl::StrAppendFormat(&out, "cpu cores\t: %d\n", ncpus);
    absl::StrAppendFormat(&out, "apicid\t\t: %d\n", i);
    absl::StrAppendFormat(&out, "initial apicid\t: %d\n", i);
    out += "fpu\t\t: yes\nfpu_exception\t: yes\n";
    absl::StrAppendFormat(&out, "cpuid level\t: %u\n", max_leaf);
    out += "wp\t\t: yes\n";
    absl::StrAppendFormat(&out, "flags\t\t: %s\n", flags);
    out += "bugs\t\t:\n";
    absl::StrAppendFormat(&out, "bogomips\t: %u.00\n", mhz * 2);
    absl::StrAppendFormat(&out, "clflush size\t: %u\n", clflush);
    absl::StrAppendFormat(&out, "cache_alignment\t: %u\n", clflush);
    if (!addr_sizes.empty()) {
      absl::StrAppendFormat(&out, "address sizes\t: %s\n", addr_sizes);
    }
    out += "power management:\n\n";
  }
  return out;
}

std::string MountOptions(uint32_t flags) {
  std::string s = (flags & vfs::kMountReadOnly) ? "ro" : "rw";
  if (flags & vfs::kMountNoSuid) s += ",nosuid";
  if (flags & vfs::kMountNoDev) s += ",nodev";
  if (flags & vfs::kMountNoExec) s += ",noexec";
  if (flags & vfs::kMountNoAtime) s += ",noatime";
  if (flags & vfs::kMountNoDiratime) s += ",nodiratime";
  if (!(flags & (vfs::kMountNoAtime | vfs::kMountStrictAtime))) {
    s += ",relatime";
  }
  return s;
}

std::string FormatMapsLine(const mm::VmaInfo& v) {
  // The device as MAJOR:MINOR of st_dev's encoding (new_encode_dev).
  std::string line = absl::StrFormat(
      "%08x-%08x %c%c%c%c %08x %02x:%02x %u ", v.start, v.end,
      (v.prot & PROT_READ) ? 'r' : '-', (v.prot & PROT_WRITE) ? 'w' : '-',
      (v.prot & PROT_EXEC) ? 'x' : '-', v.shared ? 's' : 'p', v.offset,
      major(v.dev), minor(v.dev), v.ino);
  if (!v.name.empty()) {
    if (line.size() < 72) line.append(72 - line.size(), ' ');
    line += ' ';
    line += v.name;
  }
  line += '\n';
  return line;
}

std::string VmFlags(const mm::VmaInfo& v) {
  std::string out;
  auto add = [&out](bool on, const char* mnemonic) {
    if (on) absl::StrAppend(&out, mnemonic, " ");
  };
  add(v.prot & PROT_READ, "rd");
  add(v.prot & PROT_WRITE, "wr");
  add(v.prot & PROT_EXEC, "ex");
  add(v.shared && (v.max_prot & PROT_WRITE), "sh");
  add(v.max_prot & PROT_READ, "mr");
  add(v.max_prot & PROT_WRITE, "mw");
  add(v.max_prot & PROT_EXEC, "me");
  add(v.shared, "ms");
  add(v.grows_down, "gd");
  add(v.locked, "lo");
  add(v.dont_fork, "dc");
  // VM_ACCOUNT: private writable mappings are charged to commit.
  add(!v.shared && (v.max_prot & PROT_WRITE), "ac");
  add(v.wipe_on_fork, "wf");
  return out;
}

std::string EscapePath(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\') {
      absl::StrAppendFormat(&out, "\\%03o", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatMountinfoLine(const MountEntry& m) {
  return absl::StrFormat(
      "%u %u %u:%u %s %s %s %s- %s %s %s%s%s\n", m.id, m.parent_id, m.dev_major,
      m.dev_minor, EscapePath(m.root), EscapePath(m.mount_point),
      MountOptions(m.flags),
      m.propagation.empty() ? "" : absl::StrCat(m.propagation, " "), m.fs_type,
      EscapePath(m.source), (m.flags & vfs::kMountReadOnly) ? "ro" : "rw",
      m.fs_options.empty() ? "" : ",", m.fs_options);
}

std::string FormatMountsLine(const MountEntry& m) {
  return absl::StrFormat("%s %s %s %s%s%s 0 0\n", EscapePath(m.source),
                         EscapePath(m.mount_point), m.fs_type,
                         MountOptions(m.flags), m.fs_options.empty() ? "" : ",",
                         m.fs_options);
}

std::string NewUuid() {
  uint8_t b[16] = {};
  size_t done = 0;
  while (done < sizeof(b)) {
    ssize_t n = getrandom(b + done, sizeof(b) - done, 0);
    if (n < 0 && errno != EINTR) break;  // leaves zero bytes: still unique
    if (n > 0) done += static_cast<size_t>(n);
  }
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  return absl::StrFormat(
      "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
      b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
      b[12], b[13], b[14], b[15]);
}

}  // namespace sandbox::fs::proc
