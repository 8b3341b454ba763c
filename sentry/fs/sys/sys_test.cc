#include "sentry/fs/sys/sys.h"

#include <fcntl.h>

#include "gtest/gtest.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/operations.h"

namespace sandbox::fs::sys {
namespace {

std::string ReadAll(vfs::ResolveBase& base, const std::string& path) {
  auto f = vfs::OpenAt(base, path, O_RDONLY, 0, 0);
  EXPECT_TRUE(f.ok()) << path;
  if (!f.ok()) return "";
  vfs::IoContext ctx;
  char buf[256];
  size_t n = (*f)->Read(ctx, absl::MakeSpan(reinterpret_cast<uint8_t*>(buf),
                                            sizeof(buf)))
                 .value();
  return std::string(buf, n);
}

TEST(SysTest, CpuListText) {
  EXPECT_EQ(CpuListText(1), "0\n");
  EXPECT_EQ(CpuListText(4), "0-3\n");
}

TEST(SysTest, Files) {
  auto ns = vfs::MountNamespace::Create(NewSysFilesystem(), 0);
  kernel::Credentials root = kernel::Credentials::Root();
  vfs::ResolveBase base{root, ns->Root(), ns->Root()};
  std::string online = ReadAll(base, "/devices/system/cpu/online");
  EXPECT_EQ(online.substr(0, 1), "0");
  EXPECT_EQ(ReadAll(base, "/devices/system/cpu/possible"), online);
  EXPECT_EQ(ReadAll(base, "/kernel/mm/transparent_hugepage/enabled"),
            "always [madvise] never\n");
  EXPECT_TRUE(S_ISDIR(vfs::StatAt(base, "/fs/cgroup", 0).value().st_mode));
  EXPECT_EQ(vfs::StatFsAt(base, "/").value().type, kSysfsMagic);
}

}  // namespace
}  // namespace sandbox::fs::sys
