#include "sentry/fs/proc/format.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "sentry/vfs/mount.h"

namespace sandbox::fs::proc {
namespace {

TEST(FormatTest, LimitsHeaderAndRowsAsLinux) {
  std::string text = FormatLimits(kernel::LimitSet::Defaults());
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  ASSERT_EQ(lines.size(), 18u);  // header, 16 limits, "" after the last \n
  EXPECT_EQ(
      lines[0],
      "Limit                     Soft Limit           Hard Limit           "
      "Units     ");
  EXPECT_EQ(lines[1],
            "Max cpu time              unlimited            unlimited          "
            "  seconds   ");
  EXPECT_EQ(lines[4],
            "Max stack size            8388608              unlimited          "
            "  bytes     ");
  EXPECT_EQ(lines[8],
            "Max open files            1024                 4096               "
            "  files     ");
  // No unit: the line ends after the hard limit's padding.
  EXPECT_EQ(lines[14],
            "Max nice priority         0                    0                  "
            "  ");
}

TEST(FormatTest, UptimeLoadavgMeminfo) {
  EXPECT_EQ(FormatUptime(12345678901, 5000000), "12.34 0.00\n");
  EXPECT_EQ(FormatLoadavg(1, 3, 42), "0.00 0.00 0.00 1/3 42\n");
  EXPECT_EQ(MeminfoLine("MemTotal", 16318440), "MemTotal:       16318440 kB\n");
  EXPECT_EQ(MeminfoLine("Active(anon)", 5), "Active(anon):          5 kB\n");
  std::string m = FormatMeminfo(uint64_t{8} << 30, uint64_t{2} << 30, 0);
  EXPECT_EQ(m.substr(0, 28), "MemTotal:        8388608 kB\n");
}

// A fake CPU: GenuineIntel with fpu, sse2 (leaf 1 EDX 0, 26), pni (ECX 0),
// avx2 (7.0 EBX 5), lm (0x80000001 EDX 29).
void FakeCpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
  r[0] = r[1] = r[2] = r[3] = 0;
  switch (leaf) {
    case 0:
      r[0] = 7;
      memcpy(&r[1], "Genu", 4);
      memcpy(&r[3], "ineI", 4);
      memcpy(&r[2], "ntel", 4);
      break;
    case 1:
      r[0] = 0x00050654;  // family 6, model 0x55, stepping 4
      r[1] = 8 << 8;      // clflush 64
      r[3] = 1 | (1 << 26);
      r[2] = 1;
      break;
    case 7:
      if (sub == 0) r[1] = 1 << 5;
      break;
    case 0x80000000:
      r[0] = 0x80000004;
      break;
    case 0x80000002:
      memcpy(r, "  Fake CPU 1GHz ", 16);
      break;
    case 0x80000003:
      memcpy(r, "                ", 16);
      break;
    case 0x80000001:
      r[3] = 1 << 29;
      break;
  }
}

TEST(FormatTest, CpuFlagsInLinuxOrder) {
  EXPECT_EQ(CpuFlags(FakeCpuid),
            (std::vector<std::string>{"fpu", "sse2", "lm", "pni", "avx2"}));
  std::string info = FormatCpuinfo(FakeCpuid, 2);
  EXPECT_NE(info.find("processor\t: 0\nvendor_id\t: GenuineIntel\n"
                      "cpu family\t: 6\nmodel\t\t: 85\n"),
            std::string::npos);
  EXPECT_NE(info.find("stepping\t: 4\n"), std::string::npos);
  EXPECT_NE(info.find("model name\t: Fake CPU 1GHz\n"), std::string::npos);
  EXPECT_NE(info.find("flags\t\t: fpu sse2 lm pni avx2\n"), std::string::npos);
  EXPECT_NE(info.find("processor\t: 1\n"), std::string::npos);
  EXPECT_NE(info.find("clflush size\t: 64\n"), std::string::npos);
}

// A flag the host kernel does not print (it cleared the feature while CPUID
// still reports it) is not shown; flags the host shows but CPUID lacks are
// not invented.
TEST(FormatTest, CpuinfoFlagsFollowTheHostKernel) {
  std::string info =
      FormatCpuinfo(FakeCpuid, 1, {"fpu", "lm", "pni", "avx2", "rdseed"});
  EXPECT_NE(info.find("flags\t\t: fpu lm pni avx2\n"), std::string::npos)
      << info;
  EXPECT_EQ(ParseCpuinfoFlags(info),
            (std::vector<std::string>{"fpu", "lm", "pni", "avx2"}));
  EXPECT_EQ(ParseCpuinfoFlags("processor\t: 0\nflags\t\t: a  b\n"
                              "flags\t\t: c\n"),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(ParseCpuinfoFlags("garbage\nflags without colon\n").empty());
}

TEST(FormatTest, MountLines) {
  MountEntry e;
  e.id = 23;
  e.parent_id = 1;
  e.dev_major = 0;
  e.dev_minor = 21;
  e.root = "/";
  e.mount_point = "/my dir";
  e.flags = vfs::kMountNoSuid | vfs::kMountNoDev | vfs::kMountNoExec;
  e.fs_type = "proc";
  e.source = "proc";
  EXPECT_EQ(FormatMountinfoLine(e),
            "23 1 0:21 / /my\\040dir rw,nosuid,nodev,noexec,relatime - proc "
            "proc rw\n");
  EXPECT_EQ(FormatMountsLine(e),
            "proc /my\\040dir proc rw,nosuid,nodev,noexec,relatime 0 0\n");
  e.flags = vfs::kMountReadOnly;
  EXPECT_EQ(MountOptions(e.flags), "ro,relatime");
}

TEST(FormatTest, MapsLineAndVmFlags) {
  mm::VmaInfo v;
  v.start = 0x7ffc0000;
  v.end = 0x7ffc2000;
  v.prot = v.max_prot = PROT_READ | PROT_WRITE;
  v.grows_down = true;
  v.name = "[stack]";
  std::string line = FormatMapsLine(v);
  EXPECT_EQ(line.substr(0, 40), "7ffc0000-7ffc2000 rw-p 00000000 00:00 0 ");
  EXPECT_EQ(line.substr(40, 33), std::string(33, ' '));
  EXPECT_EQ(line.substr(72), " [stack]\n");
  EXPECT_EQ(VmFlags(v), "rd wr mr mw gd ac ");
  v.name.clear();
  v.shared = true;
  v.prot = PROT_READ;
  EXPECT_EQ(FormatMapsLine(v), "7ffc0000-7ffc2000 r--s 00000000 00:00 0 \n");
  EXPECT_EQ(VmFlags(v), "rd sh mr mw ms gd ");
  // A file's mapping: its device (st_dev encoding), inode and offset.
  v.dev = makedev(0xfe, 1);
  v.ino = 247498;
  v.offset = 0x2000;
  v.name = "/usr/bin/head";
  line = FormatMapsLine(v);
  EXPECT_EQ(line.substr(0, 47),
            "7ffc0000-7ffc2000 r--s 00002000 fe:01 247498   ");
  EXPECT_EQ(line.substr(72), " /usr/bin/head\n");
}

TEST(FormatTest, UuidShape) {
  std::string a = NewUuid(), b = NewUuid();
  ASSERT_EQ(a.size(), 36u);
  EXPECT_EQ(a[8], '-');
  EXPECT_EQ(a[14], '4');
  EXPECT_NE(std::string("89ab").find(a[19]), std::string::npos);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace sandbox::fs::proc
