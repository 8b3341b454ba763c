// proc as a file system type (vfs/filesystem_type.h): mount(2) -t proc
// makes a new instance for the kernel the type was registered by; only
// the generic options are accepted.
#include "sentry/vfs/filesystem_type.h"

#include <memory>
#include <string_view>

#include "sentry/fs/proc/proc.h"

namespace sandbox::fs::proc {
namespace {

class ProcType final : public vfs::FilesystemType {
 public:
  explicit ProcType(kernel::Kernel& kernel) : kernel_(kernel) {}
  std::string_view name() const override { return "proc"; }
  KResult<vfs::NewFilesystem> GetFilesystem(
      const vfs::MountContext& ctx, std::string_view source,
      std::string_view data) const override {
    (void)ctx, (void)source;
    vfs::NewFilesystem n;
    TRY(n.read_only, vfs::ParseGenericOptions(data));
    n.fs = NewProcFilesystem(kernel_);
    return n;
  }

 private:
  kernel::Kernel& kernel_;
};

}  // namespace

std::unique_ptr<vfs::FilesystemType> NewFilesystemType(kernel::Kernel& kernel) {
  return std::make_unique<ProcType>(kernel);
}

}  // namespace sandbox::fs::proc
