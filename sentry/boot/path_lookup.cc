#include "sentry/boot/path_lookup.h"

#include <errno.h>
#include <limits.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/loader/vfs_reader.h"

namespace sandbox::boot {

std::optional<std::string> PathFromEnv(const std::vector<std::string>& envp) {
  for (const std::string& e : envp) {
    if (absl::StartsWith(e, "PATH=")) return e.substr(5);
  }
  return std::nullopt;
}

KResult<FoundProgram> FindProgram(const vfs::ResolveBase& base,
                                  std::string_view name,
                                  const std::optional<std::string>& path) {
  if (name.empty()) return kENOENT;
  if (name.find('/') != std::string_view::npos) {
    TRY(std::shared_ptr<vfs::VfsFile> f, loader::OpenExecutable(base, name));
    return FoundProgram{std::string(name), std::move(f)};
  }
  if (name.size() > NAME_MAX) return kENAMETOOLONG;
  bool saw_eacces = false;
  const std::string search = path.has_value() ? *path : kDefaultPath;
  for (absl::string_view dir : absl::StrSplit(search, ':')) {
    // An empty element (leading, trailing or doubled ':') is the cwd;
    // else "DIR/NAME" (glibc adds the '/' even after one).
    std::string candidate =
        dir.empty() ? std::string(name)
                    : absl::StrCat(dir, "/",
                                   absl::string_view(name.data(), name.size()));
    KResult<std::shared_ptr<vfs::VfsFile>> f =
        loader::OpenExecutable(base, candidate);
    if (f.ok()) return FoundProgram{std::move(candidate), std::move(f).value()};
    const Errno e = f.error();
    if (e == kEACCES) {
      saw_eacces = true;
    } else if (e != kENOENT && e != kENOTDIR && e != Errno(ESTALE) &&
               e != kENODEV && e != kETIMEDOUT) {
      return e;
    }
  }
  return saw_eacces ? kEACCES : kENOENT;
}

}  // namespace sandbox::boot
