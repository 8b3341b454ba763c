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

KResult<VirtualDentry> Resolve(const ResolveBase& base, std::string_view path,
                               const ResolveOptions& opts) {
  PathWalker w(base, opts.resolve);
  TRY_VOID(w.Start(path, opts.allow_empty));
  TRY_VOID(w.WalkParent());
  return w.ResolveLast(opts.follow_final, opts.must_be_dir);
}

}  // namespace sandbox::vfs
