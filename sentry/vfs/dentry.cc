#include "sentry/vfs/dentry.h"

#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace sandbox::vfs {

void DentryCache::Touch(const std::shared_ptr<Dentry>& d) {
  if (d->in_lru_.load(std::memory_order_acquire)) {
    if (!d->referenced_.load(std::memory_order_relaxed)) {
      d->referenced_.store(true, std::memory_order_relaxed);
    }
    return;
  }
  std::vector<std::shared_ptr<Dentry>> dropped;
  {
    absl::MutexLock l(&mu_);
    if (d->in_lru_.load(std::memory_order_relaxed)) return;
    d->referenced_.store(false, std::memory_order_relaxed);
    d->lru_pos_ = lru_.insert(lru_.end(), d);
    d->in_lru_.store(true, std::memory_order_release);
    // Second chance: each entry is looked at most twice per eviction.
    size_t budget = 2 * lru_.size();
    while (lru_.size() > capacity_ && budget-- > 0) {
      auto oldest = lru_.begin();
      Dentry& o = **oldest;
      if (o.referenced_.load(std::memory_order_relaxed)) {
        o.referenced_.store(false, std::memory_order_relaxed);
        lru_.splice(lru_.end(), lru_, oldest);
        continue;
      }
      o.in_lru_.store(false, std::memory_order_release);
      dropped.push_back(std::move(*oldest));
      lru_.erase(oldest);
    }
  }
  // `dropped` is released here, without mu_.
}

void DentryCache::Remove(Dentry& d) {
  std::shared_ptr<Dentry> ref;
  {
    absl::MutexLock l(&mu_);
    if (!d.in_lru_.load(std::memory_order_relaxed)) return;
    ref = std::move(*d.lru_pos_);
    lru_.erase(d.lru_pos_);
    d.in_lru_.store(false, std::memory_order_release);
  }
}

void DentryCache::Clear() {
  std::list<std::shared_ptr<Dentry>> all;
  {
    absl::MutexLock l(&mu_);
    for (auto& d : lru_) d->in_lru_.store(false, std::memory_order_release);
    all.swap(lru_);
  }
  // Newest first, so children go before the parents they hold.
  while (!all.empty()) all.pop_back();
}

size_t DentryCache::size() const {
  absl::MutexLock l(&mu_);
  return lru_.size();
}

std::shared_ptr<Dentry> Dentry::NewRoot(std::shared_ptr<Inode> inode) {
  return std::shared_ptr<Dentry>(new Dentry(nullptr, "/", std::move(inode)));
}

std::shared_ptr<Dentry> Dentry::NewAnonymous(std::shared_ptr<Dentry> parent,
                                             std::shared_ptr<Inode> inode) {
  std::string name = "#" + std::to_string(inode->ino());
  return NewAnonymous(std::move(parent), std::move(inode), std::move(name));
}

std::shared_ptr<Dentry> Dentry::NewAnonymous(
    std::shared_ptr<Dentry> parent, std::shared_ptr<Inode> inode,
    std::string name) ABSL_NO_THREAD_SAFETY_ANALYSIS {  // not shared yet
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
  absl::ReaderMutexLock l(&cache_mu_);
  // Heterogeneous lookup: no std::string is built.
  auto it = children_.find(absl::string_view(name.data(), name.size()));
  if (it == children_.end()) return nullptr;
  return it->second.lock();
}

// Erases `name` only if its entry is expired: a live entry was put there by
// a newer lookup or rename and must stay.
void Dentry::Uncache(const std::string& name) {
  absl::MutexLock l(&cache_mu_);
  auto it = children_.find(absl::string_view(name.data(), name.size()));
  if (it != children_.end() && it->second.expired()) children_.erase(it);
}

void Dentry::Cache(const std::string& name,
                   const std::shared_ptr<Dentry>& child) {
  absl::MutexLock l(&cache_mu_);
  children_[name] = child;
}

KResult<std::shared_ptr<Dentry>> Dentry::LookupChild(std::string_view name) {
  DentryCache* cache = fs().dentry_cache();
  if (auto child = CachedChild(name)) {
    if (cache != nullptr) cache->Touch(child);
    return child;
  }
  TRY(std::shared_ptr<Inode> inode, inode_->Lookup(name));
  std::string key(name);
  std::shared_ptr<Dentry> fresh(
      new Dentry(shared_from_this(), key, std::move(inode)));
  // The losing dentry of a race dies only after cache_mu_ is released: its
  // destructor calls Uncache, which takes cache_mu_ (a self-deadlock, seen
  // with two processes loading the same libraries through the overlay).
  std::shared_ptr<Dentry> loser;
  {
    absl::MutexLock l(&cache_mu_);
    auto [it, inserted] = children_.try_emplace(std::move(key), fresh);
    if (!inserted) {
      // Another walker (holding tree_mu shared too) cached one first.
      if (auto existing = it->second.lock()) {
        loser = std::exchange(fresh, std::move(existing));
      } else {
        it->second = fresh;
      }
    }
  }
  if (cache != nullptr) cache->Touch(fresh);
  return fresh;
}

void Dentry::ChildRemoved(const std::string& name) {
  std::shared_ptr<Dentry> child;
  {
    absl::MutexLock l(&cache_mu_);
    auto it = children_.find(name);
    if (it == children_.end()) return;
    child = it->second.lock();
    children_.erase(it);
  }
  if (child == nullptr) return;
  child->fs().tree_mu().AssertHeld();  // a child shares its parent's fs
  child->dead_ = true;
  // d_delete: the cache lets go at once, so an unlinked file's inode (and
  // its pages) lives only as long as open files hold it.
  if (DentryCache* cache = fs().dentry_cache()) cache->Remove(*child);
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
