// Path resolution as Linux's namei does it (fs/namei.c), driven by the VFS:
// components are looked up one at a time through Dentry::LookupChild, mount
// points are crossed on the way down and on `..`, and symlinks are
// expanded in place (at most kMaxSymlinks per resolution, ELOOP beyond).
//
// Magic links (Inode::IsMagicLink: /proc/PID/fd/N, cwd, root, exe) are
// followed by jumping to their location (nd_jump_link): they count against
// the link budget and RESOLVE_NO_SYMLINKS like any symlink, and fail with
// ELOOP under RESOLVE_NO_MAGICLINKS, EXDEV under RESOLVE_BENEATH or
// RESOLVE_IN_ROOT, and EXDEV under RESOLVE_NO_XDEV when the jump changes
// mounts.
//
// Errors, in Linux's order: ENAMETOOLONG (path >= PATH_MAX, component >
// NAME_MAX), ENOENT (empty path without AT_EMPTY_PATH, missing component,
// empty symlink target), ENOTDIR (a non-directory with more components, a
// relative path from a non-directory, a trailing slash or O_DIRECTORY on a
// non-directory), EACCES (no search permission on a directory walked
// through), ELOOP (too many links, RESOLVE_NO_SYMLINKS), EXDEV
// (RESOLVE_BENEATH escapes, RESOLVE_NO_XDEV crossings).
//
// Locking: each component lookup holds the file system's tree_mu shared;
// crossing a mount holds MountLock() shared. The PathWalker holds no lock
// between components, so a concurrent rename may move a directory already
// walked through, as in Linux.
//
// Resolve() first tries a fast walk (path_walk.cc, FastResolve) for the
// common case: no RESOLVE_* flags, only normal components, no symlink but
// an unfollowed last one, no trailing slash. It holds tree_mu shared from
// one mount crossing to the next (one file system's at a time, as here),
// borrows the mount from the ResolveBase, takes one reference per
// component, and makes the PathWalker's checks in its order; anything else
// (and any error but a lookup's ENOENT) falls back to the PathWalker.
// Search permission reads Inode::Perm() without the inode's lock (Linux's
// RCU-walk does the same).
#ifndef SENTRY_VFS_PATH_WALK_H_
#define SENTRY_VFS_PATH_WALK_H_

#include <stdint.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sentry/base/result.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/mount.h"

namespace sandbox::vfs {

// openat2(2) RESOLVE_* flags (linux/openat2.h).
inline constexpr uint64_t kResolveNoXdev = 0x01;
inline constexpr uint64_t kResolveNoMagiclinks = 0x02;
inline constexpr uint64_t kResolveNoSymlinks = 0x04;
inline constexpr uint64_t kResolveBeneath = 0x08;
inline constexpr uint64_t kResolveInRoot = 0x10;
inline constexpr uint64_t kResolveCached = 0x20;
inline constexpr uint64_t kResolveAll = 0x3f;

// Who resolves, and from where. The syscall layer fills it from the task:
// root = FsContext::Root(), start = the dirfd's VfsFile::vd() or, for
// AT_FDCWD, FsContext::Cwd().
struct ResolveBase {
  const kernel::Credentials& creds;
  VirtualDentry root;
  VirtualDentry start;
};

struct ResolveOptions {
  bool follow_final = true;  // !AT_SYMLINK_NOFOLLOW, !O_NOFOLLOW
  bool must_be_dir = false;  // O_DIRECTORY
  bool allow_empty = false;  // AT_EMPTY_PATH
  uint64_t resolve = 0;      // RESOLVE_*
};

// The kind of the last component (Linux LAST_NORM/DOT/DOTDOT/ROOT, and
// LAST_BIND: a final magic link was followed, dir() is its target).
enum class LastType { kNormal, kDot, kDotDot, kRoot, kBind };

// Walks a path in steps; the building block of every path operation.
//
//   PathWalker w(base, opts.resolve);
//   TRY_VOID(w.Start(path, /*allow_empty=*/false));
//   TRY_VOID(w.WalkParent());        // w.dir(), w.last(), w.last_type()
//   ... look up w.last() in w.dir() under the fs lock, or:
//   TRY(VirtualDentry vd, w.ResolveLast(follow, must_be_dir));
class PathWalker {
 public:
  PathWalker(const ResolveBase& base, uint64_t resolve_flags);

  // Sets the starting point. EINVAL for unknown RESOLVE_* bits or a NUL in
  // the path,
  // ENAMETOOLONG, ENOENT for an empty path (unless allow_empty: then the
  // walk is done and ResolveLast returns the start), ENOTDIR for a relative
  // path from a non-directory, EXDEV for an absolute path with
  // RESOLVE_BENEATH.
  KResult<void> Start(std::string_view path, bool allow_empty);

  // Walks every component but the last, following symlinks, checking search
  // permission on each directory including the last one's parent.
  KResult<void> WalkParent();

  // After WalkParent: the last component's directory, name and kind.
  const VirtualDentry& dir() const { return cur_; }
  const std::string& last() const { return last_; }
  LastType last_type() const { return last_type_; }
  // Whether the last component was followed by a slash ("a/" or a symlink
  // target ending in "/"); the result must then be a directory.
  bool trailing_slash() const { return trailing_slash_; }

  // Resolves the last component in dir(): follows a final symlink if
  // `follow` or a trailing slash asks (then WalkParent runs again on the
  // target), crosses mounts, and checks `must_be_dir`.
  KResult<VirtualDentry> ResolveLast(bool follow, bool must_be_dir);

  // For O_CREAT through a final symlink: replaces the last component with
  // the target of `link` (a symlink found as last() in dir()) and walks the
  // target's parent. ELOOP/ENOENT/EXDEV as for any symlink. For a magic
  // link, dir() becomes its target and last_type() kBind.
  KResult<void> FollowLastSymlink(const VirtualDentry& link);

  // Crosses the mounts stacked at `vd` (EXDEV under RESOLVE_NO_XDEV).
  KResult<VirtualDentry> FollowMounts(VirtualDentry vd) const;

 private:
  struct Component {
    std::string name;
    bool is_last = false;
    bool trailing_slash = false;
  };
  // Next component, or nullopt-like {empty name} when none remain.
  bool NextComponent(Component* out);
  bool HasMoreComponents() const;
  KResult<void> Step(const std::string& name);
  KResult<void> DotDot();
  KResult<void> JumpRoot();
  KResult<void> PushSymlink(const VirtualDentry& link);
  // Follows `link` (a symlink reached from cur_): text links are pushed,
  // magic links jump (cur_ = their target). Sets *jumped accordingly.
  KResult<void> FollowLink(const VirtualDentry& link, bool* jumped);
  KResult<std::shared_ptr<Dentry>> Lookup(const VirtualDentry& dir,
                                          const std::string& name);

  const kernel::Credentials& creds_;
  const uint64_t resolve_;
  // The root that `/`, absolute symlinks and `..` stop at: the task's root,
  // or the start for RESOLVE_BENEATH / RESOLVE_IN_ROOT.
  VirtualDentry root_;
  VirtualDentry start_;
  VirtualDentry cur_;
  int links_ = 0;
  bool done_ = false;  // AT_EMPTY_PATH with an empty path

  // Strings still to walk (the path, then symlink targets pushed on top),
  // each with the position of its next unread character.
  std::vector<std::pair<std::string, size_t>> stack_;

  std::string last_;
  LastType last_type_ = LastType::kRoot;
  bool trailing_slash_ = false;
};

// Resolves `path` to a location (stat, chdir, open without O_CREAT...).
KResult<VirtualDentry> Resolve(const ResolveBase& base, std::string_view path,
                               const ResolveOptions& opts);

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_PATH_WALK_H_
