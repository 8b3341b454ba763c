#include "sentry/vfs/filesystem_type.h"

#include <utility>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace sandbox::vfs {

KResult<NewFilesystem> FilesystemType::GetFilesystem(
    const MountContext& ctx, std::string_view source,
    std::string_view data) const {
  (void)ctx, (void)source, (void)data;
  return kENODEV;
}

KResult<bool> FilesystemType::Reconfigure(const MountContext& ctx,
                                          Filesystem& fs,
                                          std::string_view data) const {
  (void)ctx, (void)fs;
  return ParseGenericOptions(data);
}

KResult<void> FilesystemTypeRegistry::Register(
    std::unique_ptr<FilesystemType> type) {
  absl::MutexLock l(&mu_);
  for (const auto& t : types_) {
    if (t->name() == type->name()) return kEBUSY;
  }
  types_.push_back(std::move(type));
  return OkResult();
}

const FilesystemType* FilesystemTypeRegistry::Lookup(
    std::string_view name) const {
  absl::MutexLock l(&mu_);
  for (const auto& t : types_) {
    if (t->name() == name) return t.get();
  }
  return nullptr;
}

std::string FilesystemTypeRegistry::FilesystemsText() const {
  absl::MutexLock l(&mu_);
  std::string out;
  for (const auto& t : types_) {
    if (!t->requires_device()) out += "nodev";
    out += '\t';
    out += t->name();
    out += '\n';
  }
  return out;
}

bool ParseSbFlag(std::string_view key, bool* read_only) {
  if (key == "ro") {
    *read_only = true;
    return true;
  }
  if (key == "rw") {
    *read_only = false;
    return true;
  }
  for (std::string_view k : {"dirsync", "lazytime", "mand", "posixacl", "sync",
                             "silent", "async", "nolazytime", "nomand"}) {
    if (key == k) return true;
  }
  return false;
}

KResult<bool> ParseGenericOptions(std::string_view data) {
  bool read_only = false;
  for (absl::string_view opt :
       absl::StrSplit(absl::string_view(data.data(), data.size()), ',',
                      absl::SkipEmpty())) {
    if (!ParseSbFlag(std::string_view(opt.data(), opt.size()), &read_only)) {
      return kEINVAL;
    }
  }
  return read_only;
}

KResult<NewFilesystem> GenericOptionsType::GetFilesystem(
    const MountContext&, std::string_view, std::string_view data) const {
  NewFilesystem n;
  TRY(n.read_only, ParseGenericOptions(data));
  n.fs = make_();
  return n;
}

}  // namespace sandbox::vfs
