// Server-side nodes and the host operations every handler builds on.
//
// Confinement invariants (docs/gofer-protocol.md, "Confinement"):
// - Every host call is relative to a node's O_PATH descriptor; no path
//   with a '/' is ever passed to the host, and no call starts at "/" or at
//   the working directory.
// - A node is reached only by one-component walks with openat2
//   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
//   RESOLVE_NO_XDEV and O_PATH | O_NOFOLLOW: a symlink is returned as
//   itself and never followed, and no mount point inside the tree is entered.
// - Re-opening a non-directory for I/O goes through (parent fd, name) with
//   O_NOFOLLOW | O_NONBLOCK and is checked against the node's (dev, ino):
//   a file swapped in under the name since the walk gives ESTALE.
#ifndef GOFER_SERVER_NODE_H_
#define GOFER_SERVER_NODE_H_

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "gofer/protocol/messages.h"
#include "gofer/protocol/unique_fd.h"
#include "gofer/server/hidden.h"

namespace gofer {

// Open flags a client may ask for; O_CREAT/O_EXCL belong to Create, and
// O_PATH, O_TMPFILE, O_NOFOLLOW etc. are the server's own business.
inline constexpr int kClientOpenFlags = O_ACCMODE | O_TRUNC | O_APPEND |
                                        O_DSYNC | O_SYNC | O_DIRECT |
                                        O_NOATIME | O_DIRECTORY;

// One walked file. Owned by the handle table (and by children, as parent).
struct Node {
  // O_PATH | O_NOFOLLOW; immutable. Shared with children as their parent.
  std::shared_ptr<const UniqueFd> fd;
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint32_t type = 0;  // S_IFMT bits; immutable.
  // The directory this node was walked from (its fd, dev, ino) and its name
  // there; parent_fd is null for a root. Updated when this connection
  // renames the file. Only the fd is shared, so nodes never form cycles.
  std::shared_ptr<const UniqueFd> parent_fd;
  uint64_t parent_dev = 0;
  uint64_t parent_ino = 0;
  std::string name;
  // Directories: the descriptor Getdents reads, opened on first use.
  UniqueFd dir_fd;

  int get() const { return fd->get(); }
  bool IsDir() const { return type == S_IFDIR; }
  bool Same(const struct stat& st) const {
    return st.st_dev == dev && st.st_ino == ino;
  }
};

// Returns 0 or the errno for an invalid name component: EINVAL (empty,
// ".", "..", contains '/' or NUL), ENAMETOOLONG (over kMaxNameLen).
int ValidateName(std::string_view name);

// Opens one component below dirfd without following symlinks or crossing
// mounts (see above). flags must include O_PATH | O_NOFOLLOW or be an
// ordinary open; O_CLOEXEC is added. cross_mounts drops RESOLVE_NO_XDEV
// (only set-up code uses it, to reach the directories it serves).
// Returns the fd or -errno.
int OpenBeneath(int dirfd, const std::string& name, int flags, mode_t mode,
                bool cross_mounts = false);

// Opens a relative path below dirfd as O_PATH, one OpenBeneath per
// component (empty components skipped; "" is dirfd itself), crossing
// mount points (set-up code only). Returns 0 or an errno (EINVAL for a
// "." or ".." component).
int OpenPathBeneath(int dirfd, std::string_view path, UniqueFd* out);

// Walks name from dir into a new node. With `hidden`, an entry it hides
// (a host mount point, a mount boundary: hidden.h) becomes a node of its
// empty stand-in, and *st that stand-in's lstat. Returns 0 or an errno.
int WalkOne(const std::shared_ptr<Node>& dir, const std::string& name,
            std::shared_ptr<Node>* out, struct stat* st,
            const Hidden* hidden = nullptr);

// Makes a node from an O_PATH fd already opened (for roots). Returns 0 or
// an errno.
int NodeFromFd(UniqueFd fd, std::shared_ptr<Node>* out, struct stat* st);

// Opens the node's file for I/O with flags (an access mode plus status
// flags). Directories are opened through "."; other files through (parent,
// name) and verified. Devices are never opened (EACCES), nor sockets
// (ENXIO) or symlinks (ELOOP). Returns the fd or -errno.
int ReopenNode(const Node& node, int flags);

// Sets the permission bits of a node: fchmodat2(fd, "", AT_EMPTY_PATH) on
// its O_PATH fd (Linux 6.6+), else fchmod on a re-opened regular file or
// directory. Symlinks: EOPNOTSUPP. Returns 0 or an errno.
int ChmodNode(const Node& node, uint32_t mode);

// Host stat -> wire Stat.
Stat ToWire(const struct stat& st);

}  // namespace gofer

#endif  // GOFER_SERVER_NODE_H_
