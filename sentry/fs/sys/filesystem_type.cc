// sysfs as a file system type (vfs/filesystem_type.h): mount(2) -t sysfs
// makes a new instance; only the generic options are accepted.
#include "sentry/vfs/filesystem_type.h"

#include <memory>
#include <string_view>

#include "sentry/fs/sys/sys.h"

namespace sandbox::fs::sys {
namespace {

class SysfsType final : public vfs::FilesystemType {
 public:
  std::string_view name() const override { return "sysfs"; }
  KResult<vfs::NewFilesystem> GetFilesystem(
      const vfs::MountContext& ctx, std::string_view source,
      std::string_view data) const override {
    (void)ctx, (void)source;
    vfs::NewFilesystem n;
    TRY(n.read_only, vfs::ParseGenericOptions(data));
    n.fs = NewSysFilesystem();
    return n;
  }
};

}  // namespace

std::unique_ptr<vfs::FilesystemType> NewFilesystemType() {
  return std::make_unique<SysfsType>();
}

}  // namespace sandbox::fs::sys
