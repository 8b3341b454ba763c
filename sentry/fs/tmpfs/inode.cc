#include "sentry/fs/tmpfs/inode.h"

#include <sys/xattr.h>

#include "sentry/fs/tmpfs/tmpfs.h"

namespace sandbox::fs::tmpfs {

TmpfsInode::~TmpfsInode() { static_cast<Filesystem&>(fs()).ReleaseInode(); }

KResult<std::string> TmpfsInode::GetXattr(const std::string& name) {
  absl::ReaderMutexLock l(&mu_);
  auto it = xattrs_.find(name);
  if (it == xattrs_.end()) return kENODATA;
  return it->second;
}

KResult<void> TmpfsInode::SetXattr(const std::string& name,
                                   std::string_view value, int flags) {
  absl::MutexLock l(&mu_);
  auto it = xattrs_.find(name);
  if (it != xattrs_.end() && (flags & XATTR_CREATE)) return kEEXIST;
  if (it == xattrs_.end() && (flags & XATTR_REPLACE)) return kENODATA;
  size_t old = it == xattrs_.end() ? 0 : name.size() + it->second.size();
  size_t bytes = xattr_bytes_ - old + name.size() + value.size();
  if (bytes > kXattrBytesMax) return kENOSPC;
  xattrs_[name] = std::string(value);
  xattr_bytes_ = bytes;
  return OkResult();
}

KResult<std::vector<std::string>> TmpfsInode::ListXattr() {
  absl::ReaderMutexLock l(&mu_);
  std::vector<std::string> names;
  names.reserve(xattrs_.size());
  for (const auto& [name, value] : xattrs_) names.push_back(name);
  return names;
}

KResult<void> TmpfsInode::RemoveXattr(const std::string& name) {
  absl::MutexLock l(&mu_);
  auto it = xattrs_.find(name);
  if (it == xattrs_.end()) return kENODATA;
  xattr_bytes_ -= name.size() + it->second.size();
  xattrs_.erase(it);
  return OkResult();
}

}  // namespace sandbox::fs::tmpfs
