// Confinement of the Gofer process, applied before it serves anything.
//
// Steps, in order (each must succeed, else the Gofer exits):
//   0. Optionally (user_namespace, for a Gofer started without root) a new
//      user namespace first, mapping only the caller's uid and gid to 0.
//   1. New mount, IPC, UTS and network namespaces (no network at all);
//      mount propagation from the new namespace to the host cut (MS_SLAVE).
//   2. The served root is bind-mounted NON-recursively onto a directory of
//      a private staging tmpfs (mounted over /tmp, or /mnt, /run, /var, in
//      the new namespace only), so host submounts below the root (/proc,
//      /sys, /dev when the root is "/") are not in the new tree (unless a
//      user namespace locked them there: then they are bound too, and stay
//      unreachable because no walk crosses a mount point); each
//      chosen submount is then bound
//      (non-recursively) onto a target opened beneath the root with no
//      symlink followed. Every mount is nodev and nosuid; read-only ones
//      are remounted MS_RDONLY. When the non-recursive bind is refused
//      (submounts locked by a user namespace, e.g. inside Bazel's test
//      sandbox), the recursive bind's unlocked submounts are detached
//      again, so the tree is as close as allowed to the non-recursive one.
//      Volumes (options.volumes) are bound beside the new root, opened
//      O_PATH, and survive only through those descriptors.
//   3. pivot_root into the new root and detach the old one (the staging
//      tmpfs with it): nothing of the host is reachable by path any more.
//   4. Only the capabilities file serving needs stay (DAC_OVERRIDE,
//      DAC_READ_SEARCH, FOWNER, and CHOWN only when a connection is
//      ":suid") in the effective and permitted sets; the bounding set is
//      emptied of the rest, the ambient and inheritable sets cleared, and
//      no_new_privs set. Never CAP_FSETID: the host's own rules clear
//      set-id bits on writes, chown and chmod to a group not ours.
// The seccomp allowlist (seccomp.h) comes last, after the served
// directories are opened.
//
// Preconditions: the process is single-threaded and has CAP_SYS_ADMIN (or
// is root), or asks for a user namespace where the host allows
// unprivileged ones; otherwise Confine fails with a Status naming the step.
#ifndef GOFER_CONFINE_H_
#define GOFER_CONFINE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gofer/protocol/unique_fd.h"
#include "gofer/server/hidden.h"

namespace gofer {

struct BindMount {
  std::string source;  // Host path.
  std::string target;  // Path below the root, e.g. "data/x"; must exist.
  bool read_only = false;
};

// A host directory served beside the root (runsc do --bind): bound
// non-recursively (nodev, nosuid, read-only if asked) in the staging tmpfs
// and kept open when the old root is detached, so it is reachable only
// through the descriptor Confine returns, never from the served root.
struct Volume {
  std::string source;  // Host path (trusted configuration).
  bool read_only = false;
};

struct ConfineOptions {
  std::string root;  // Host directory that becomes "/".
  bool root_read_only = false;
  std::vector<BindMount> submounts;
  // Step 0. In it the Gofer can reach only what the caller's uid can, and
  // can chown only to the caller's uid and gid (others are EINVAL).
  bool user_namespace = false;
  std::vector<Volume> volumes;
  // Step 4: keep CAP_CHOWN (a connection may give files any owner).
  bool keep_chown = false;
};

// On success *volume_roots (if not null) holds one O_PATH directory FD per
// options.volumes entry, in order, and *hidden (if not null) what the
// served trees leave out (server/hidden.h): every host mount point below
// the root and below each volume, and the host root's tmp and run, each
// with an empty stand-in on a read-only tmpfs held only by descriptors.
absl::Status Confine(const ConfineOptions& options,
                     std::vector<UniqueFd>* volume_roots = nullptr,
                     std::shared_ptr<const Hidden>* hidden = nullptr);

// Step 4 alone (also used when the Gofer runs unconfined for tests):
// keeps only the file-serving capabilities (CAP_CHOWN only if keep_chown).
// Without CAP_SETPCAP the bounding set cannot shrink; that is not an error.
absl::Status DropCapabilities(bool keep_chown = false);

}  // namespace gofer

#endif  // GOFER_CONFINE_H_
