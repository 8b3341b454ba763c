// Unlink (and rmdir), Rename (with RENAME_NOREPLACE / RENAME_EXCHANGE).
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include <cerrno>
#include <vector>

#include "gofer/server/session.h"

namespace gofer {

int Session::Unlink(const UnlinkReq& req, Empty*) {
  std::shared_ptr<Node> dir;
  int err = FindDir(req.dir, &dir);
  if (err == 0) err = ValidateName(req.name);
  if (err != 0) return err;
  if (req.flags != 0 && req.flags != AT_REMOVEDIR) return EINVAL;
  // Linux checks for a writable mount before looking the name up.
  if (options_.read_only) return EROFS;
  if (HiddenName(*dir, req.name)) return EBUSY;  // a host mount point
  if (unlinkat(dir->get(), req.name.c_str(), static_cast<int>(req.flags)) !=
      0) {
    return errno;
  }
  return 0;
}

// Rename: after the host rename, nodes of this connection named (old_dir,
// old_name) are renamed too (and, for EXCHANGE, those named (new_dir,
// new_name) the other way), so later re-opens by (parent, name) find them.
// Nodes of a replaced file keep their stale name; their re-opens see
// another (dev, ino) and fail with ESTALE.
int Session::Rename(const RenameReq& req, Empty*) {
  absl::ReaderMutexLock names(&SocketNameMutex());
  std::shared_ptr<Node> old_dir, new_dir;
  int err = FindDir(req.old_dir, &old_dir);
  if (err == 0) err = FindDir(req.new_dir, &new_dir);
  if (err == 0) err = ValidateName(req.old_name);
  if (err == 0) err = ValidateName(req.new_name);
  if (err != 0) return err;
  if ((req.flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) != 0 ||
      req.flags == (RENAME_NOREPLACE | RENAME_EXCHANGE)) {
    return EINVAL;
  }
  if (options_.read_only) return EROFS;
  if (HiddenName(*old_dir, req.old_name) ||
      HiddenName(*new_dir, req.new_name)) {
    return EBUSY;  // a host mount point (Linux: EBUSY)
  }
  if (renameat2(old_dir->get(), req.old_name.c_str(), new_dir->get(),
                req.new_name.c_str(), req.flags) != 0) {
    return errno;
  }
  auto named = [](const Node& n, const Node& dir, const std::string& name) {
    return n.parent_fd != nullptr && n.parent_dev == dir.dev &&
           n.parent_ino == dir.ino && n.name == name;
  };
  std::vector<Node*> moved, swapped;
  for (auto& [handle, node] : nodes_) {
    if (named(*node, *old_dir, req.old_name)) {
      moved.push_back(node.get());
    } else if ((req.flags & RENAME_EXCHANGE) &&
               named(*node, *new_dir, req.new_name)) {
      swapped.push_back(node.get());
    }
  }
  auto rename = [](Node* n, const Node& dir, const std::string& name) {
    n->parent_fd = dir.fd;
    n->parent_dev = dir.dev;
    n->parent_ino = dir.ino;
    n->name = name;
  };
  for (Node* n : moved) rename(n, *new_dir, req.new_name);
  for (Node* n : swapped) rename(n, *old_dir, req.old_name);
  return 0;
}

}  // namespace gofer
