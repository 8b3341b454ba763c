#include "gofer/server/node.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace gofer {

int ValidateName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return EINVAL;
  if (name.find('/') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos) {
    return EINVAL;
  }
  if (name.size() > kMaxNameLen) return ENAMETOOLONG;
  return 0;
}

int OpenBeneath(int dirfd, const std::string& name, int flags, mode_t mode,
                bool cross_mounts) {
  // Callers validated name: one component, so the only lookup is its own.
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC | O_NOFOLLOW);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  if (!cross_mounts) how.resolve |= RESOLVE_NO_XDEV;
  // SAFETY: how is a fully initialized open_how of the size passed.
  long fd = syscall(SYS_openat2, dirfd, name.c_str(), &how, sizeof(how));
  if (fd >= 0) return static_cast<int>(fd);
  if (errno != ENOSYS) return -errno;
  // Kernels before 5.6: a single component with O_NOFOLLOW cannot follow a
  // symlink either; only the mount check is lost.
  int r = openat(dirfd, name.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, mode);
  return r >= 0 ? r : -errno;
}

int OpenPathBeneath(int dirfd, std::string_view path, UniqueFd* out) {
  int fd = OpenBeneath(dirfd, ".", O_PATH | O_DIRECTORY, 0);
  if (fd < 0) return -fd;
  UniqueFd cur(fd);
  while (!path.empty()) {
    size_t end = path.find('/');
    std::string name(path.substr(0, end));
    path = end == std::string_view::npos ? "" : path.substr(end + 1);
    if (name.empty()) continue;
    int err = ValidateName(name);
    if (err != 0) return err;
    fd = OpenBeneath(cur.get(), name, O_PATH | O_NOFOLLOW, 0,
                     /*cross_mounts=*/true);
    if (fd < 0) return -fd;
    cur.reset(fd);
  }
  *out = std::move(cur);
  return 0;
}

int NodeFromFd(UniqueFd fd, std::shared_ptr<Node>* out, struct stat* st) {
  if (fstat(fd.get(), st) != 0) return errno;
  auto node = std::make_shared<Node>();
  node->fd = std::make_shared<const UniqueFd>(std::move(fd));
  node->dev = st->st_dev;
  node->ino = st->st_ino;
  node->type = st->st_mode & S_IFMT;
  *out = std::move(node);
  return 0;
}

namespace {

// A node for `stand_in` (hidden.h), walked as `name` from `dir`.
int StandInNode(const StandIn& stand_in, std::shared_ptr<Node>* out,
                struct stat* st) {
  int fd = fcntl(stand_in.fd->get(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return errno;
  int err = NodeFromFd(UniqueFd(fd), out, st);
  if (err != 0) return err;
  // Re-opens (ReopenNode) go through the stand-in's own directory.
  (*out)->parent_fd = stand_in.parent_fd;
  (*out)->parent_dev = 0;
  (*out)->parent_ino = 0;
  (*out)->name = stand_in.name;
  return 0;
}

}  // namespace

int WalkOne(const std::shared_ptr<Node>& dir, const std::string& name,
            std::shared_ptr<Node>* out, struct stat* st, const Hidden* hidden) {
  if (!dir->IsDir()) return ENOTDIR;
  int fd = OpenBeneath(dir->get(), name, O_PATH | O_NOFOLLOW, 0);
  if (fd == -EXDEV && hidden != nullptr) {
    // A mount point in the Gofer's own tree: never entered, never shown.
    if (const StandIn* s = hidden->Find(dir->dev, dir->ino, name, nullptr)) {
      return StandInNode(*s, out, st);
    }
  }
  if (fd < 0) return -fd;
  int err = NodeFromFd(UniqueFd(fd), out, st);
  if (err != 0) return err;
  if (hidden != nullptr) {
    if (const StandIn* s = hidden->Find(dir->dev, dir->ino, name, st)) {
      out->reset();
      return StandInNode(*s, out, st);
    }
  }
  (*out)->parent_fd = dir->fd;
  (*out)->parent_dev = dir->dev;
  (*out)->parent_ino = dir->ino;
  (*out)->name = name;
  return 0;
}

int ReopenNode(const Node& node, int flags) {
  flags |= O_NOCTTY | O_NONBLOCK;
  switch (node.type) {
    case S_IFDIR:
      if ((flags & O_ACCMODE) != O_RDONLY) return -EISDIR;
      return OpenBeneath(node.get(), ".", flags | O_DIRECTORY, 0);
    case S_IFREG:
    case S_IFIFO:
      break;
    case S_IFLNK:
      return -ELOOP;
    case S_IFSOCK:
      return -ENXIO;
    default:  // Character and block devices: never opened (as nodev).
      return -EACCES;
  }
  if (flags & O_DIRECTORY) return -ENOTDIR;
  if (node.parent_fd == nullptr) return -ESTALE;
  int fd = OpenBeneath(node.parent_fd->get(), node.name, flags, 0);
  if (fd < 0) return fd == -ENOENT ? -ESTALE : fd;
  UniqueFd owned(fd);
  struct stat st;
  if (fstat(fd, &st) != 0) return -errno;
  if (!node.Same(st)) return -ESTALE;
  return owned.release();
}

int ChmodNode(const Node& node, uint32_t mode) {
  if (node.type == S_IFLNK) return EOPNOTSUPP;
  constexpr long kSysFchmodat2 = 452;  // Not in Debian 12's headers.
  if (syscall(kSysFchmodat2, node.get(), "", mode & 07777, AT_EMPTY_PATH) ==
      0) {
    return 0;
  }
  if (errno != ENOSYS) return errno;
  if (node.type != S_IFREG && node.type != S_IFDIR) return EOPNOTSUPP;
  int fd = ReopenNode(node, O_RDONLY);
  if (fd < 0) return -fd;
  UniqueFd owned(fd);
  return fchmod(fd, mode & 07777) == 0 ? 0 : errno;
}

Stat ToWire(const struct stat& st) {
  Stat s;
  s.dev = st.st_dev;
  s.ino = st.st_ino;
  s.mode = st.st_mode;
  s.nlink = static_cast<uint32_t>(st.st_nlink);
  s.uid = st.st_uid;
  s.gid = st.st_gid;
  s.rdev = st.st_rdev;
  s.size = static_cast<uint64_t>(st.st_size);
  s.blksize = static_cast<uint32_t>(st.st_blksize);
  s.blocks = static_cast<uint64_t>(st.st_blocks);
  s.atime = {st.st_atim.tv_sec, static_cast<uint32_t>(st.st_atim.tv_nsec)};
  s.mtime = {st.st_mtim.tv_sec, static_cast<uint32_t>(st.st_mtim.tv_nsec)};
  s.ctime = {st.st_ctim.tv_sec, static_cast<uint32_t>(st.st_ctim.tv_nsec)};
  return s;
}

}  // namespace gofer
