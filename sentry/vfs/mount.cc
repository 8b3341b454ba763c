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

std::shared_ptr<Mount> Mount::CreateInternal(std::shared_ptr<Filesystem> fs,
                                             std::shared_ptr<Dentry> root) {
  std::shared_ptr<Mount> m = Create(std::move(fs), std::move(root), 0);
  m->internal_ = true;
  return m;
}

Mount::Mount(std::shared_ptr<Filesystem> fs, std::shared_ptr<Dentry> root,
             uint32_t flags, std::string source, std::string fs_options)
    : fs_(std::move(fs)),
      root_(std::move(root)),
      id_(next_mount_id.fetch_add(1, std::memory_order_relaxed)),
      flags_(flags),
      source_(std::move(source)),
      fs_options_(std::move(fs_options)) {}

Mount::~Mount() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  // Only children left connected by a lazy umount (UmountChildrenLocked)
  // can be here: an attached child holds its parent. Their mount points'
  // references are dropped now (atomics: no lock, so this may run under
  // MountLock); nothing writes their fields any more.
  for (auto& [d, child] : children_) {
    if (child->mountpoint_ != nullptr) child->mountpoint_->DropMountRef();
  }
}

VirtualDentry Mount::MountPoint() const {
  absl::ReaderMutexLock l(&MountLock());
  return {ParentLocked(), mountpoint_};
}

bool Mount::CanChangeLockedFlags(uint32_t f) const {
  const uint32_t l = locks();
  const uint32_t old = flags();
  if ((l & kLockReadOnly) && !(f & kMountReadOnly)) return false;
  if ((l & kLockNoDev) && !(f & kMountNoDev)) return false;
  if ((l & kLockNoSuid) && !(f & kMountNoSuid)) return false;
  if ((l & kLockNoExec) && !(f & kMountNoExec)) return false;
  if ((l & kLockAtime) && (old & kMountAtimeMask) != (f & kMountAtimeMask)) {
    return false;
  }
  return true;
}

void Mount::LockTree() {
  absl::MutexLock l(&MountLock());
  std::vector<Mount*> stack = {this};
  while (!stack.empty()) {
    Mount* m = stack.back();
    stack.pop_back();
    const uint32_t f = m->flags();
    uint32_t locks = kLockMounted | kLockAtime;
    if (f & kMountReadOnly) locks |= kLockReadOnly;
    if (f & kMountNoDev) locks |= kLockNoDev;
    if (f & kMountNoSuid) locks |= kLockNoSuid;
    if (f & kMountNoExec) locks |= kLockNoExec;
    m->locks_.fetch_or(locks, std::memory_order_relaxed);
    for (auto& [d, child] : m->children_) stack.push_back(child.get());
  }
}

bool Mount::HasLockedChildrenLocked(const Dentry* below) const
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  // Precondition (not expressible as an annotation): below->fs().tree_mu()
  // held, so the parent links read here cannot change. Mount points of this
  // mount's children are dentries of that same file system.
  for (const auto& [d, child] : children_) {
    if (!child->locked()) continue;
    for (const Dentry* p = child->mountpoint_.get(); p != nullptr;
         p = p->parent().get()) {
      if (p == below) return true;
    }
  }
  return false;
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

void Mount::DetachTree(bool keep_locked) {
  std::shared_ptr<Mount> self;  // released after the lock (declared first)
  std::shared_ptr<Dentry> point;
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
  if (mountpoint_ != nullptr) mountpoint_->DropMountRef();
  point = std::move(mountpoint_);
  parent_.reset();
  UmountChildrenLocked(keep_locked);
}

void Mount::UmountChildrenLocked(bool keep_locked) {
  // A child whose last reference is its map entry is freed by the erase,
  // under the lock: ~Mount takes no lock.
  for (auto it = children_.begin(); it != children_.end();) {
    Mount* child = it->second.get();
    child->UmountChildrenLocked(keep_locked);
    if (keep_locked && child->locked()) {
      // disconnect_mount: stays attached at its mount point, which keeps
      // its mount reference until this mount dies (~Mount). The strong
      // parent link goes (this one owns the child: no cycle).
      child->umounted_parent_ = weak_from_this();
      child->parent_.reset();
      ++it;
      continue;
    }
    if (child->mountpoint_ != nullptr) child->mountpoint_->DropMountRef();
    child->mountpoint_.reset();
    child->parent_.reset();
    child->umounted_parent_.reset();
    children_.erase(it++);
  }
}

std::string Mount::RootPath() const {
  std::vector<std::string> names;
  {
    absl::ReaderMutexLock l(&fs_->tree_mu());
    for (const Dentry* d = root_.get(); d != nullptr;) {
      d->fs().tree_mu().AssertReaderHeld();  // one file system: fs_'s
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
  // clone_mnt keeps the lock bits; __do_loopback unlocks the new top.
  copy->locks_.store(source.mount->locks() & ~kLockMounted,
                     std::memory_order_relaxed);
  std::vector<Sub> subs;
  {
    // tree_mu shared first (lock order): the mount points' ancestry is
    // stable for has_locked_children.
    absl::ReaderMutexLock tl(&source.dentry->fs().tree_mu());
    absl::MutexLock l(&MountLock());
    if (source.mount->propagation_ == Propagation::kUnbindable) {
      return kEINVAL;
    }
    // A plain bind must not uncover what a locked mount covers.
    if (!recursive &&
        source.mount->HasLockedChildrenLocked(source.dentry.get())) {
      return kEINVAL;
    }
    // clone_mnt: a copy of a shared mount is its peer; of a slave, a slave
    // of the same master.
    copy->propagation_ = source.mount->propagation_;
    copy->peer_group_ = source.mount->peer_group_;
    copy->master_group_ = source.mount->master_group_;
    if (recursive) {
      for (auto& [d, child] : source.mount->children_) {
        subs.push_back({child, child->mountpoint_});
      }
    }
  }
  for (Sub& sub : subs) {
    if (!IsSubdir(sub.point, source.dentry.get())) continue;
    KResult<std::shared_ptr<Mount>> c = CloneSubtree(sub.mount);
    // copy_tree: a mount both unbindable and locked cannot be left out
    // (that would uncover what it covers) nor copied.
    if (c.ok() && *c == nullptr) continue;  // unbindable: skipped
    KResult<void> attached = OkResult();
    if (!c.ok()) {
      attached = c.error();
    } else {
      attached = Attach({copy, sub.point}, *c);
      if (!attached.ok()) (*c)->DetachTree(false);
    }
    if (!attached.ok()) {
      copy->DetachTree(false);  // the copies made so far point at `copy`
      return attached.error();
    }
  }
  return copy;
}

KResult<std::shared_ptr<Mount>> Mount::CloneSubtree(
    const std::shared_ptr<Mount>& m) {
  {
    absl::ReaderMutexLock l(&MountLock());
    if (m->propagation_ == Propagation::kUnbindable) {
      if (m->locked()) return kEPERM;
      return std::shared_ptr<Mount>();
    }
  }
  TRY(std::shared_ptr<Mount> c, CloneTree({m, m->root_}, true));
  // Below the top, copies keep kLockMounted (clone_mnt).
  c->locks_.store(m->locks(), std::memory_order_relaxed);
  return c;
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
    if (m->locked()) return kEINVAL;
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

MountNamespace::~MountNamespace() { root_->DetachTree(false); }

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
