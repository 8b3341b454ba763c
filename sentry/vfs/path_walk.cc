#include "sentry/vfs/path_walk.h"

#include "sentry/vfs/permissions.h"

namespace sandbox::vfs {

PathWalker::PathWalker(const ResolveBase& base, uint64_t resolve_flags)
    : creds_(base.creds),
      resolve_(resolve_flags),
      root_(base.root),
      start_(base.start) {
  if (resolve_ & (kResolveBeneath | kResolveInRoot)) root_ = start_;
}

KResult<void> PathWalker::Start(std::string_view path, bool allow_empty) {
  if (resolve_ & ~kResolveAll) return kEINVAL;
  if ((resolve_ & kResolveBeneath) && (resolve_ & kResolveInRoot)) {
    return kEINVAL;
  }
  if (path.size() >= kPathMax) return kENAMETOOLONG;
  // A C string from the guest cannot hold a NUL; an in-Sentry caller that
  // passes one gets EINVAL rather than a name no guest can spell.
  if (path.find('\0') != std::string_view::npos) return kEINVAL;
  if (path.empty()) {
    if (!allow_empty) return kENOENT;
    cur_ = start_;
    done_ = true;
    return OkResult();
  }
  stack_.emplace_back(std::string(path), 0);
  if (path[0] == '/') return JumpRoot();
  cur_ = start_;
  if (!cur_.dentry->inode().IsDir()) return kENOTDIR;
  return OkResult();
}

KResult<void> PathWalker::JumpRoot() {
  if (resolve_ & kResolveBeneath) return kEXDEV;
  if ((resolve_ & kResolveNoXdev) && cur_.ok() && cur_.mount != root_.mount) {
    return kEXDEV;
  }
  cur_ = root_;
  return OkResult();
}

bool PathWalker::HasMoreComponents() const {
  for (const auto& [s, pos] : stack_) {
    if (s.find_first_not_of('/', pos) != std::string::npos) return true;
  }
  return false;
}

bool PathWalker::NextComponent(Component* out) {
  while (!stack_.empty()) {
    auto& [s, pos] = stack_.back();
    size_t begin = s.find_first_not_of('/', pos);
    if (begin == std::string::npos) {
      stack_.pop_back();
      continue;
    }
    size_t end = s.find('/', begin);
    if (end == std::string::npos) end = s.size();
    out->name.assign(s, begin, end - begin);
    out->trailing_slash = end < s.size();
    pos = end;
    out->is_last = !HasMoreComponents();
    // A trailing slash counts only on the very last component.
    if (!out->is_last) out->trailing_slash = false;
    return true;
  }
  return false;
}

KResult<std::shared_ptr<Dentry>> PathWalker::Lookup(const VirtualDentry& dir,
                                                    const std::string& name) {
  if (name.size() > kNameMax) return kENAMETOOLONG;
  absl::ReaderMutexLock l(&dir.dentry->fs().tree_mu());
  if (dir.dentry->dead()) return kENOENT;
  return dir.dentry->LookupChild(name);
}

KResult<VirtualDentry> PathWalker::FollowMounts(VirtualDentry vd) const {
  while (vd.dentry->mount_count() > 0) {
    std::shared_ptr<Mount> child;
    {
      absl::ReaderMutexLock l(&MountLock());
      child = vd.mount->ChildAtLocked(vd.dentry.get());
    }
    if (child == nullptr) break;
    if (resolve_ & kResolveNoXdev) return kEXDEV;
    vd = {child, child->root()};
  }
  return vd;
}

KResult<void> PathWalker::DotDot() {
  for (;;) {
    if (cur_ == root_) {
      if (resolve_ & kResolveBeneath) return kEXDEV;
      return OkResult();  // `..` at the root stays there
    }
    if (cur_.dentry != cur_.mount->root()) {
      std::shared_ptr<Dentry> parent = cur_.dentry->Parent();
      if (parent == nullptr) return OkResult();
      cur_.dentry = std::move(parent);
      break;
    }
    std::shared_ptr<Mount> parent;
    std::shared_ptr<Dentry> point;
    {
      absl::ReaderMutexLock l(&MountLock());
      parent = cur_.mount->ParentLocked();
      point = cur_.mount->MountPointLocked();
    }
    if (parent == nullptr) return OkResult();  // namespace root, detached
    if (resolve_ & kResolveNoXdev) return kEXDEV;
    cur_ = {std::move(parent), std::move(point)};
  }
  TRY(cur_, FollowMounts(std::move(cur_)));
  return OkResult();
}

KResult<void> PathWalker::PushSymlink(const VirtualDentry& link) {
  if (resolve_ & kResolveNoSymlinks) return kELOOP;
  if (++links_ > kMaxSymlinks) return kELOOP;
  TRY(std::string target, link.dentry->inode().Readlink());
  if (target.empty()) return kENOENT;
  bool absolute = target[0] == '/';
  stack_.emplace_back(std::move(target), 0);
  if (absolute) {
    if (resolve_ & kResolveInRoot) {
      cur_ = root_;
      return OkResult();
    }
    return JumpRoot();
  }
  return OkResult();
}

KResult<void> PathWalker::FollowLink(const VirtualDentry& link, bool* jumped) {
  *jumped = false;
  if (!link.dentry->inode().IsMagicLink()) return PushSymlink(link);
  // pick_link, then nd_jump_link.
  if (resolve_ & kResolveNoSymlinks) return kELOOP;
  if (++links_ > kMaxSymlinks) return kELOOP;
  if (resolve_ & kResolveNoMagiclinks) return kELOOP;
  TRY(VirtualDentry target, link.dentry->inode().MagicLink());
  if (!target.ok()) return kENOENT;
  if ((resolve_ & kResolveNoXdev) && target.mount != cur_.mount) return kEXDEV;
  if (resolve_ & (kResolveBeneath | kResolveInRoot)) return kEXDEV;
  cur_ = std::move(target);
  *jumped = true;
  return OkResult();
}

KResult<void> PathWalker::Step(const std::string& name) {
  if (name == ".") return OkResult();
  if (name == "..") return DotDot();
  TRY(std::shared_ptr<Dentry> child, Lookup(cur_, name));
  TRY(VirtualDentry next, FollowMounts({cur_.mount, std::move(child)}));
  if (next.dentry->inode().IsSymlink()) {
    bool jumped = false;
    TRY_VOID(FollowLink(next, &jumped));
    // More components follow a jump: it must have landed on a directory.
    if (jumped && !cur_.dentry->inode().IsDir()) return kENOTDIR;
    return OkResult();
  }
  cur_ = std::move(next);
  if (!cur_.dentry->inode().IsDir()) return kENOTDIR;  // more components follow
  return OkResult();
}

KResult<void> PathWalker::WalkParent() {
  last_.clear();
  last_type_ = LastType::kRoot;
  if (done_) return OkResult();
  Component c;
  while (NextComponent(&c)) {
    TRY_VOID(CheckPermission(creds_, kMayExec, cur_.dentry->inode()));
    if (c.is_last) {
      last_ = std::move(c.name);
      trailing_slash_ |= c.trailing_slash;
      last_type_ = last_ == "."    ? LastType::kDot
                   : last_ == ".." ? LastType::kDotDot
                                   : LastType::kNormal;
      return OkResult();
    }
    TRY_VOID(Step(c.name));
  }
  return OkResult();  // no components left: "/" or a symlink to "/"
}

KResult<void> PathWalker::FollowLastSymlink(const VirtualDentry& link) {
  bool jumped = false;
  TRY_VOID(FollowLink(link, &jumped));
  if (jumped) {
    last_.clear();
    last_type_ = LastType::kBind;
    return OkResult();
  }
  return WalkParent();
}

KResult<VirtualDentry> PathWalker::ResolveLast(bool follow, bool must_be_dir) {
  for (;;) {
    switch (last_type_) {
      case LastType::kRoot:
      case LastType::kDot:
      case LastType::kBind:
        break;
      case LastType::kDotDot:
        TRY_VOID(DotDot());
        break;
      case LastType::kNormal: {
        TRY(std::shared_ptr<Dentry> child, Lookup(cur_, last_));
        TRY(VirtualDentry next, FollowMounts({cur_.mount, std::move(child)}));
        if (next.dentry->inode().IsSymlink() && (follow || trailing_slash_)) {
          TRY_VOID(FollowLastSymlink(next));
          continue;
        }
        cur_ = std::move(next);
        break;
      }
    }
    break;
  }
  if ((must_be_dir || trailing_slash_) && !cur_.dentry->inode().IsDir()) {
    return kENOTDIR;
  }
  last_type_ = LastType::kDot;  // resolved: a second call returns cur_
  return cur_;
}

namespace {

// What the fast walk decided.
enum class FastWalk {
  kDone,   // *out is the result
  kError,  // *err is the errno the slow walk would give too
  kSlow,   // something only the PathWalker handles: walk again with it
};

// Holds one file system's tree_mu shared; Switch moves to another one
// (never two at once: the VFS lock order).
class TreeReadLock {
 public:
  explicit TreeReadLock(Filesystem* fs) : mu_(&fs->tree_mu()) {
    mu_->ReaderLock();
  }
  ~TreeReadLock() { mu_->ReaderUnlock(); }
  TreeReadLock(const TreeReadLock&) = delete;
  TreeReadLock& operator=(const TreeReadLock&) = delete;
  // (The analysis cannot follow a lock that changes mutex: the one caller,
  // FastWalkLocked, is outside the analysis for the same reason.)
  void Switch(Filesystem* fs) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    absl::Mutex* next = &fs->tree_mu();
    if (next == mu_) return;
    mu_->ReaderUnlock();
    mu_ = next;
    mu_->ReaderLock();
  }

 private:
  absl::Mutex* mu_;
};

// The common walk in one pass: no RESOLVE_* flags, only normal components
// ("." and ".." go to the PathWalker), no symlink except an unfollowed
// last one, no trailing slash. It makes exactly the PathWalker's checks in
// its order (search permission on every directory walked from, NAME_MAX,
// dead directory, lookup, mounts crossed, ENOTDIR for a non-directory with
// more components), so a result, or an ENOENT from a lookup, is the one the
// PathWalker would give; anything else unusual returns kSlow before any
// side effect but a dentry lookup (which the slow walk repeats, finding it
// cached).
//
// Cost: the PathWalker takes the file system's tree_mu once per component
// and copies a VirtualDentry (two reference counts each way) per step.
// Here tree_mu is held shared from one mount crossing to the next (a walk
// only ever holds one file system's, as the PathWalker), the mount of the
// walk is borrowed from `base` (or the crossed mount, held once), and the
// only per-component references are the looked-up child's and the drop
// of the previous one. No allocation unless a dentry is looked up for the
// first time.
//
// The thread-safety analysis cannot follow the lock through TreeReadLock
// to each dentry's fs(): every dentry used under it is in the file system
// whose tree_mu `tree` holds (children share their parent's file system;
// `tree` switches on every mount crossing).
FastWalk FastResolve(const ResolveBase& base, std::string_view path,
                     const ResolveOptions& opts, VirtualDentry* out,
                     Errno* err) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (opts.resolve != 0 || path.empty() || path.size() >= kPathMax ||
      path.back() == '/' || path.find('\0') != std::string_view::npos) {
    return FastWalk::kSlow;
  }
  const bool absolute = path[0] == '/';
  const VirtualDentry& from = absolute ? base.root : base.start;
  if (!from.ok()) return FastWalk::kSlow;
  const std::shared_ptr<Mount>* mount = &from.mount;
  std::shared_ptr<Mount> crossed;  // the last mount crossed into, if any
  std::shared_ptr<Dentry> held;    // cur when it came from a lookup
  Dentry* cur = from.dentry.get();
  if (!absolute && !cur->inode().IsDir()) return FastWalk::kSlow;

  TreeReadLock tree(&cur->fs());
  size_t pos = 0;
  for (;;) {
    while (pos < path.size() && path[pos] == '/') ++pos;
    if (pos == path.size()) break;  // "/", "//": the root itself
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view name = path.substr(pos, end - pos);
    pos = end;
    // The path does not end in '/', so a component is the last one exactly
    // when it reaches the end.
    const bool last = end == path.size();
    if (name == "." || name == "..") return FastWalk::kSlow;
    if (!CheckPermission(base.creds, kMayExec, cur->inode()).ok()) {
      return FastWalk::kSlow;
    }
    if (name.size() > kNameMax || cur->dead()) return FastWalk::kSlow;
    KResult<std::shared_ptr<Dentry>> found = cur->LookupChild(name);
    if (!found.ok()) {
      if (found.error() != kENOENT) return FastWalk::kSlow;
      *err = kENOENT;
      return FastWalk::kError;
    }
    std::shared_ptr<Dentry> child = std::move(found).value();
    // Mounts stacked on the child (FollowMounts).
    while (child->mount_count() > 0) {
      std::shared_ptr<Mount> m;
      {
        absl::ReaderMutexLock l(&MountLock());
        m = (*mount)->ChildAtLocked(child.get());
      }
      if (m == nullptr) break;
      child = m->root();
      crossed = std::move(m);
      mount = &crossed;
      tree.Switch(&child->fs());
    }
    Inode& inode = child->inode();
    if (inode.IsSymlink()) {
      if (!last || opts.follow_final) return FastWalk::kSlow;
    } else if (!last && !inode.IsDir()) {
      return FastWalk::kSlow;  // ENOTDIR
    }
    held = std::move(child);
    cur = held.get();
    if (last) break;
  }
  if (opts.must_be_dir && !cur->inode().IsDir()) return FastWalk::kSlow;
  out->mount = *mount;
  out->dentry = held != nullptr ? std::move(held) : from.dentry;
  return FastWalk::kDone;
}

}  // namespace

KResult<VirtualDentry> Resolve(const ResolveBase& base, std::string_view path,
                               const ResolveOptions& opts) {
  {
    VirtualDentry vd;
    Errno err = kENOENT;
    switch (FastResolve(base, path, opts, &vd, &err)) {
      case FastWalk::kDone:
        return vd;
      case FastWalk::kError:
        return err;
      case FastWalk::kSlow:
        break;
    }
  }
  PathWalker w(base, opts.resolve);
  TRY_VOID(w.Start(path, opts.allow_empty));
  TRY_VOID(w.WalkParent());
  return w.ResolveLast(opts.follow_final, opts.must_be_dir);
}

}  // namespace sandbox::vfs
