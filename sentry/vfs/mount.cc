#include "sentry/vfs/mount.h"

#include <atomic>
#include <vector>

namespace sandbox::vfs {
namespace {

std::atomic<uint64_t> next_mount_id{1};

}  // namespace

absl::Mutex& MountLock() {
  static absl::Mutex* mu = new absl::Mutex;
  return *mu;
}

std::shared_ptr<Mount> Mount::Create(std::shared_ptr<Filesystem> fs,
                                     std::shared_ptr<Dentry> root,
                                     uint32_t flags) {
  return std::shared_ptr<Mount>(
      new Mount(std::move(fs), std::move(root), flags));
}

Mount::Mount(std::shared_ptr<Filesystem> fs, std::shared_ptr<Dentry> root,
             uint32_t flags)
    : fs_(std::move(fs)),
      root_(std::move(root)),
      id_(next_mount_id.fetch_add(1, std::memory_order_relaxed)),
      flags_(flags) {}

VirtualDentry Mount::MountPoint() const {
  absl::ReaderMutexLock l(&MountLock());
  return {parent_, mountpoint_};
}

std::shared_ptr<Mount> Mount::ChildAtLocked(const Dentry* dentry) const {
  auto it = children_.find(dentry);
  return it == children_.end() ? nullptr : it->second;
}

KResult<void> Mount::Attach(const VirtualDentry& point,
                            std::shared_ptr<Mount> child) {
  absl::MutexLock l(&MountLock());
  if (child->parent_ != nullptr) return kEBUSY;
  auto [it, inserted] =
      point.mount->children_.try_emplace(point.dentry.get(), child);
  if (!inserted) return kEBUSY;
  child->parent_ = point.mount;
  child->mountpoint_ = point.dentry;
  point.dentry->AddMountRef();
  return OkResult();
}

KResult<void> Mount::Detach() {
  std::shared_ptr<Mount> self;
  std::shared_ptr<Dentry> point;
  {
    absl::MutexLock l(&MountLock());
    if (!children_.empty()) return kEBUSY;
    if (parent_ == nullptr) return kEINVAL;
    self = parent_->children_[mountpoint_.get()];
    parent_->children_.erase(mountpoint_.get());
    mountpoint_->DropMountRef();
    point = std::move(mountpoint_);
    parent_.reset();
  }
  // `self` and `point` are released here, outside the lock.
  return OkResult();
}

void Mount::DetachTree() {
  absl::MutexLock l(&MountLock());
  DetachTreeLocked();
}

void Mount::DetachTreeLocked() {
  // Children first; their Mount objects may be freed when the map entry
  // goes, which takes no lock (~Mount is trivial beyond shared_ptr fields).
  std::vector<std::shared_ptr<Mount>> children;
  for (auto& [d, m] : children_) children.push_back(m);
  for (auto& m : children) m->DetachTreeLocked();
  children_.clear();
  if (mountpoint_ != nullptr) mountpoint_->DropMountRef();
  mountpoint_.reset();
  parent_.reset();
}

std::shared_ptr<MountNamespace> MountNamespace::Create(
    std::shared_ptr<Filesystem> fs, uint32_t flags) {
  std::shared_ptr<Dentry> root = fs->root();
  return std::shared_ptr<MountNamespace>(
      new MountNamespace(Mount::Create(std::move(fs), std::move(root), flags)));
}

MountNamespace::~MountNamespace() { root_->DetachTree(); }

KResult<std::shared_ptr<Mount>> MountNamespace::MountAt(
    const VirtualDentry& point, std::shared_ptr<Filesystem> fs,
    uint32_t flags) {
  if (!point.dentry->inode().IsDir()) return kENOTDIR;
  std::shared_ptr<Dentry> root = fs->root();
  std::shared_ptr<Mount> m =
      Mount::Create(std::move(fs), std::move(root), flags);
  // tree_mu exclusive: rmdir/rename of the mount point cannot run meanwhile.
  absl::MutexLock l(&point.dentry->fs().tree_mu());
  if (point.dentry->dead()) return kENOENT;
  TRY_VOID(Mount::Attach(point, m));
  return m;
}

}  // namespace sandbox::vfs
