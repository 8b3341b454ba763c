#include "sentry/vfs/dentry.h"

namespace sandbox::vfs {

std::shared_ptr<Dentry> Dentry::NewRoot(std::shared_ptr<Inode> inode) {
  return std::shared_ptr<Dentry>(new Dentry(nullptr, "/", std::move(inode)));
}

std::shared_ptr<Dentry> Dentry::NewAnonymous(std::shared_ptr<Dentry> parent,
                                             std::shared_ptr<Inode> inode)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {  // not shared yet
  std::string name = "#" + std::to_string(inode->ino());
  std::shared_ptr<Dentry> d(
      new Dentry(std::move(parent), std::move(name), std::move(inode)));
  d->dead_ = true;
  return d;
}

Dentry::Dentry(std::shared_ptr<Dentry> parent, std::string name,
               std::shared_ptr<Inode> inode)
    : inode_(std::move(inode)),
      parent_(std::move(parent)),
      name_(std::move(name)) {}

// No lock needed for parent_/name_: nobody else holds a reference any more,
// and rename needs one to change them.
Dentry::~Dentry() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (parent_ != nullptr) parent_->Uncache(name_);
}

std::shared_ptr<Dentry> Dentry::Parent() const {
  absl::ReaderMutexLock l(&fs().tree_mu());
  return parent_;
}

bool Dentry::IsDead() const {
  absl::ReaderMutexLock l(&fs().tree_mu());
  return dead_;
}

std::shared_ptr<Dentry> Dentry::CachedChild(std::string_view name) {
  absl::MutexLock l(&cache_mu_);
  auto it = children_.find(std::string(name));
  if (it == children_.end()) return nullptr;
  return it->second.lock();
}

// Erases `name` only if its entry is expired: a live entry was put there by
// a newer lookup or rename and must stay.
void Dentry::Uncache(const std::string& name) {
  absl::MutexLock l(&cache_mu_);
  auto it = children_.find(std::string(name));
  if (it != children_.end() && it->second.expired()) children_.erase(it);
}

void Dentry::Cache(const std::string& name,
                   const std::shared_ptr<Dentry>& child) {
  absl::MutexLock l(&cache_mu_);
  children_[name] = child;
}

KResult<std::shared_ptr<Dentry>> Dentry::LookupChild(std::string_view name) {
  if (auto child = CachedChild(name)) return child;
  TRY(std::shared_ptr<Inode> inode, inode_->Lookup(name));
  std::string key(name);
  std::shared_ptr<Dentry> fresh(
      new Dentry(shared_from_this(), key, std::move(inode)));
  absl::MutexLock l(&cache_mu_);
  auto [it, inserted] = children_.try_emplace(std::move(key), fresh);
  if (!inserted) {
    // Another walker (holding tree_mu shared too) cached one first.
    if (auto existing = it->second.lock()) return existing;
    it->second = fresh;
  }
  return fresh;
}

void Dentry::ChildRemoved(const std::string& name) {
  std::shared_ptr<Dentry> child;
  {
    absl::MutexLock l(&cache_mu_);
    auto it = children_.find(std::string(name));
    if (it == children_.end()) return;
    child = it->second.lock();
    children_.erase(it);
  }
  if (child == nullptr) return;
  child->fs().tree_mu().AssertHeld();  // a child shares its parent's fs
  child->dead_ = true;
}

void Dentry::ChildMoved(const std::string& old_name, Dentry& new_parent,
                        const std::string& new_name) {
  new_parent.fs().tree_mu().AssertHeld();
  new_parent.ChildRemoved(new_name);  // the replaced target, if cached
  std::shared_ptr<Dentry> child;
  {
    absl::MutexLock l(&cache_mu_);
    auto it = children_.find(old_name);
    if (it == children_.end()) return;
    child = it->second.lock();
    children_.erase(it);
  }
  if (child == nullptr) return;
  child->fs().tree_mu().AssertHeld();
  child->parent_ = new_parent.shared_from_this();
  child->name_ = new_name;
  new_parent.Cache(new_name, child);
}

void Dentry::ChildrenExchanged(const std::string& a_name, Dentry& b_parent,
                               const std::string& b_name) {
  std::shared_ptr<Dentry> a = CachedChild(a_name);
  std::shared_ptr<Dentry> b = b_parent.CachedChild(b_name);
  {
    absl::MutexLock l(&cache_mu_);
    children_.erase(a_name);
  }
  {
    absl::MutexLock l(&b_parent.cache_mu_);
    b_parent.children_.erase(b_name);
  }
  if (a != nullptr) {
    a->fs().tree_mu().AssertHeld();
    a->parent_ = b_parent.shared_from_this();
    a->name_ = b_name;
    b_parent.Cache(b_name, a);
  }
  if (b != nullptr) {
    b->fs().tree_mu().AssertHeld();
    b->parent_ = shared_from_this();
    b->name_ = a_name;
    Cache(a_name, b);
  }
}

// Every dentry on the chain is in this file system, under the tree_mu the
// caller holds (the analysis cannot see that the lock is the same).
bool Dentry::IsAncestorOf(const Dentry& other) const
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  for (const Dentry* d = &other; d != nullptr; d = d->parent_.get()) {
    if (d == this) return true;
  }
  return false;
}

}  // namespace sandbox::vfs
