#include "sentry/vfs/mount.h"

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sentry/vfs/inode.h"

namespace sandbox::vfs {
namespace {

std::atomic<uint64_t> next_mount_id{1};
// Peer group IDs (mountinfo's shared:N), allocated as Linux does: when a
// mount first becomes shared.
std::atomic<uint64_t> next_peer_group{1};

// Whether `d` is `ancestor` or below it (is_subdir). Takes tree_mu shared
// per step (Dentry::Parent).
bool IsSubdir(std::shared_ptr<Dentry> d, const Dentry* ancestor) {
  while (d != nullptr) {
    if (d.get() == ancestor) return true;
    d = d->Parent();
  }
  return false;
}

}  // namespace

absl::Mutex& MountLock() {
  static absl::Mutex* mu = new absl::Mutex;
  return *mu;
}

std::shared_ptr<Mount> Mount::Create(std::shared_ptr<Filesystem> fs,
                                     std::shared_ptr<Dentry> root,
                                     uint32_t flags) {
  std::string source(fs->type_name());
  return Create(std::move(fs), std::move(root), flags, std::move(source), "");
}

std::shared_ptr<Mount> Mount::Create(std::shared_ptr<Filesystem> fs,
                                     std::shared_ptr<Dentry> root,
                                     uint32_t flags, std::string source,
                                     std::string fs_options) {
  return std::shared_ptr<Mount>(new Mount(std::move(fs), std::move(root), flags,
                                          std::move(source),
                                          std::move(fs_options)));
}

Mount::Mount(std::shared_ptr<Filesystem> fs, std::shared_ptr<Dentry> root,
             uint32_t flags, std::string source, std::string fs_options)
    : fs_(std::move(fs)),
      root_(std::move(root)),
      id_(next_mount_id.fetch_add(1, std::memory_order_relaxed)),
      flags_(flags),
      source_(std::move(source)),
      fs_options_(std::move(fs_options)) {}

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
  std::shared_ptr<Mount> self;  // released after the lock (declared first)
  absl::MutexLock l(&MountLock());
  if (parent_ != nullptr) {
    // Out of the parent's table first, so no walk or mountinfo reader finds
    // a child without a parent.
    auto it = parent_->children_.find(mountpoint_.get());
    if (it != parent_->children_.end() && it->second.get() == this) {
      self = std::move(it->second);
      parent_->children_.erase(it);
    }
  }
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

std::string Mount::RootPath() const {
  std::vector<std::string> names;
  {
    absl::ReaderMutexLock l(&fs_->tree_mu());
    for (const Dentry* d = root_.get(); d != nullptr;) {
      std::shared_ptr<Dentry> parent = d->parent();
      if (parent == nullptr) break;
      names.push_back(d->name());
      d = parent.get();  // kept alive by the child's strong reference
    }
  }
  if (names.empty()) return "/";
  std::string out;
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    absl::StrAppend(&out, "/", *it);
  }
  return out;
}

std::string Mount::PropagationFields() const {
  absl::ReaderMutexLock l(&MountLock());
  switch (propagation_) {
    case Propagation::kShared:
      return absl::StrCat("shared:", peer_group_);
    case Propagation::kSlave:
      return absl::StrCat("master:", master_group_);
    case Propagation::kUnbindable:
      return "unbindable";
    case Propagation::kPrivate:
      break;
  }
  return "";
}

Propagation Mount::propagation() const {
  absl::ReaderMutexLock l(&MountLock());
  return propagation_;
}

void Mount::SetPropagation(Propagation p, bool recursive) {
  absl::MutexLock l(&MountLock());
  SetPropagationLocked(p, recursive);
}

void Mount::SetPropagationLocked(Propagation p, bool recursive) {
  switch (p) {
    case Propagation::kShared:
      if (propagation_ != Propagation::kShared) {
        peer_group_ = next_peer_group.fetch_add(1, std::memory_order_relaxed);
      }
      master_group_ = 0;
      break;
    case Propagation::kSlave:
      // do_make_slave: a shared mount with other peers becomes a slave of
      // its peer group; one without peers, or a private one, has no master
      // and becomes private; a slave stays one.
      if (propagation_ == Propagation::kShared && HasPeerLocked()) {
        master_group_ = peer_group_;
      } else if (propagation_ != Propagation::kSlave) {
        p = Propagation::kPrivate;
      }
      peer_group_ = 0;
      break;
    case Propagation::kPrivate:
    case Propagation::kUnbindable:
      peer_group_ = master_group_ = 0;
      break;
  }
  propagation_ = p;
  if (!recursive) return;
  for (auto& [d, child] : children_) child->SetPropagationLocked(p, true);
}

bool Mount::HasPeerLocked() const {
  // The peers that matter are in this tree (one namespace): walk it from
  // its root.
  const Mount* root = this;
  while (root->parent_ != nullptr) root = root->parent_.get();
  std::vector<const Mount*> stack = {root};
  while (!stack.empty()) {
    const Mount* m = stack.back();
    stack.pop_back();
    if (m != this && m->propagation_ == Propagation::kShared &&
        m->peer_group_ == peer_group_) {
      return true;
    }
    for (const auto& [d, child] : m->children_) stack.push_back(child.get());
  }
  return false;
}

KResult<std::shared_ptr<Mount>> Mount::CloneTree(const VirtualDentry& source,
                                                 bool recursive) {
  struct Sub {
    std::shared_ptr<Mount> mount;
    std::shared_ptr<Dentry> point;
  };
  std::shared_ptr<Mount> copy =
      Create(source.mount->fs_, source.dentry, source.mount->flags(),
             source.mount->source_, source.mount->fs_options_);
  std::vector<Sub> subs;
  {
    absl::MutexLock l(&MountLock());
    if (source.mount->propagation_ == Propagation::kUnbindable) {
      return kEINVAL;
    }
    // clone_mnt: a copy of a shared mount is its peer; of a slave, a slave
    // of the same master.
    copy->propagation_ = source.mount->propagation_;
    copy->peer_group_ = source.mount->peer_group_;
    copy->master_group_ = source.mount->master_group_;
    if (recursive) {
      for (auto& [d, child] : source.mount->children_) {
        if (child->propagation_ == Propagation::kUnbindable) continue;
        subs.push_back({child, child->mountpoint_});
      }
    }
  }
  for (Sub& sub : subs) {
    if (!IsSubdir(sub.point, source.dentry.get())) continue;
    TRY(std::shared_ptr<Mount> c,
        CloneTree({sub.mount, sub.mount->root_}, true));
    // The copy sits at the same dentry, in the copy of its parent.
    TRY_VOID(Attach({copy, sub.point}, std::move(c)));
  }
  return copy;
}

KResult<void> Mount::Graft(const VirtualDentry& point,
                           std::shared_ptr<Mount> m) {
  if (point.dentry->inode().IsDir() != m->root_->inode().IsDir()) {
    return kENOTDIR;
  }
  // tree_mu exclusive: rmdir/rename of the mount point cannot run meanwhile.
  absl::MutexLock l(&point.dentry->fs().tree_mu());
  if (point.dentry->dead()) return kENOENT;
  return Attach(point, std::move(m));
}

KResult<void> Mount::Move(const VirtualDentry& source,
                          const VirtualDentry& point) {
  const std::shared_ptr<Mount>& m = source.mount;
  if (source.dentry != m->root_) return kEINVAL;
  if (point.dentry->inode().IsDir() != m->root_->inode().IsDir()) {
    return kENOTDIR;
  }
  absl::MutexLock tl(&point.dentry->fs().tree_mu());
  if (point.dentry->dead()) return kENOENT;
  std::shared_ptr<Mount> old_parent;
  std::shared_ptr<Dentry> old_point;
  {
    absl::MutexLock l(&MountLock());
    if (m->parent_ == nullptr) return kEINVAL;
    if (m->parent_->propagation_ == Propagation::kShared) return kEINVAL;
    for (Mount* p = point.mount.get(); p != nullptr; p = p->parent_.get()) {
      if (p == m.get()) return kELOOP;
    }
    if (point.mount->children_.contains(point.dentry.get())) return kEBUSY;
    old_parent = std::move(m->parent_);
    old_point = std::move(m->mountpoint_);
    std::shared_ptr<Mount> self = old_parent->children_[old_point.get()];
    old_parent->children_.erase(old_point.get());
    old_point->DropMountRef();
    point.mount->children_.emplace(point.dentry.get(), std::move(self));
    m->parent_ = point.mount;
    m->mountpoint_ = point.dentry;
    point.dentry->AddMountRef();
  }
  // The old parent and mount point are released here, outside the lock.
  return OkResult();
}

bool Mount::UnusedLocked(long caller_refs) const {
  // References: the parent's children_ entry, each child's parent_, and the
  // caller's. Anything else is an open file, a cwd or root, or a walk in
  // progress (which, as a transient mnt_count in Linux, makes EBUSY too).
  long table = parent_ != nullptr ? 1 : 0;
  long refs = weak_from_this().use_count();
  return refs <= table + static_cast<long>(children_.size()) + caller_refs;
}

bool Mount::Unused(long caller_refs) const {
  absl::ReaderMutexLock l(&MountLock());
  return UnusedLocked(caller_refs);
}

KResult<void> Mount::Umount(long caller_refs) {
  std::shared_ptr<Mount> self;
  std::shared_ptr<Dentry> point;
  {
    absl::MutexLock l(&MountLock());
    if (parent_ == nullptr) return kEINVAL;
    if (!children_.empty() || !UnusedLocked(caller_refs)) return kEBUSY;
    self = parent_->children_[mountpoint_.get()];
    parent_->children_.erase(mountpoint_.get());
    mountpoint_->DropMountRef();
    point = std::move(mountpoint_);
    parent_.reset();
  }
  // `self` and `point` are released here, outside the lock.
  return OkResult();
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
