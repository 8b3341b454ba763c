#include "sentry/vfs/fs_context.h"

namespace sandbox::vfs {

std::shared_ptr<FsContext> FsContext::Fork() const {
  absl::ReaderMutexLock l(&mu_);
  return std::make_shared<FsContext>(root_, cwd_, umask());
}

VirtualDentry FsContext::Root() const {
  absl::ReaderMutexLock l(&mu_);
  return root_;
}

VirtualDentry FsContext::Cwd() const {
  absl::ReaderMutexLock l(&mu_);
  return cwd_;
}

void FsContext::RootAndCwd(VirtualDentry* root, VirtualDentry* cwd) const {
  absl::ReaderMutexLock l(&mu_);
  *root = root_;
  *cwd = cwd_;
}

void FsContext::SetRoot(VirtualDentry vd) {
  VirtualDentry old;
  absl::MutexLock l(&mu_);
  old = std::move(root_);
  root_ = std::move(vd);
}

void FsContext::SetCwd(VirtualDentry vd) {
  VirtualDentry old;
  absl::MutexLock l(&mu_);
  old = std::move(cwd_);
  cwd_ = std::move(vd);
}

}  // namespace sandbox::vfs
