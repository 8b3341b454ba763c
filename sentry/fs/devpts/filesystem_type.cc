// devpts as a file system type (vfs/filesystem_type.h): mount(2) -t devpts
// makes a new instance; MS_REMOUNT applies the new options
// (devpts_reconfigure).
#include "sentry/vfs/filesystem_type.h"

#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "sentry/fs/devpts/devpts.h"

namespace sandbox::fs::devpts {
namespace {

// devpts_parse_param, after the generic flags, which are matched by key
// alone as vfs_parse_sb_flag does ("ro=1" is "ro").
KResult<Options> ParseOptions(std::string_view data, bool* read_only) {
  Options o;
  for (absl::string_view opt :
       absl::StrSplit(absl::string_view(data.data(), data.size()), ',',
                      absl::SkipEmpty())) {
    std::string_view key(opt.data(), opt.size());
    std::optional<std::string_view> value;
    if (size_t eq = key.find('='); eq != std::string_view::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    }
    if (vfs::ParseSbFlag(key, read_only)) continue;
    TRY_VOID(o.Parse(key, value));
  }
  return o;
}

class DevptsType final : public vfs::FilesystemType {
 public:
  std::string_view name() const override { return "devpts"; }
  KResult<vfs::NewFilesystem> GetFilesystem(
      const vfs::MountContext& ctx, std::string_view source,
      std::string_view data) const override {
    (void)ctx, (void)source;
    vfs::NewFilesystem n;
    TRY(Options o, ParseOptions(data, &n.read_only));
    n.fs = NewDevptsFilesystem(o);
    n.shown_options = o.Show();
    return n;
  }
  KResult<bool> Reconfigure(const vfs::MountContext& ctx, vfs::Filesystem& fs,
                            std::string_view data) const override {
    (void)ctx;
    bool read_only = false;
    TRY(Options o, ParseOptions(data, &read_only));
    devpts::Reconfigure(fs, o);
    return read_only;
  }
};

}  // namespace

std::unique_ptr<vfs::FilesystemType> NewFilesystemType() {
  return std::make_unique<DevptsType>();
}

}  // namespace sandbox::fs::devpts
