// Create (donates a host FD), Mkdir, Mknod, Symlink, Link.
//
// Each creates exactly one name in a directory node; the new file gets the
// requested permission bits whatever the process umask, and the requested
// owner when uid/gid are not kNoId, both within what the connection allows
// on the host (ServerOptions::suid: no set-id bits on non-directories, no
// owner but the Gofer's own ids). A failure after the host created the
// name removes it again, so a failed request leaves nothing behind.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "gofer/server/session.h"

namespace gofer {
namespace {

// Sets the permission bits when the umask changed them.
int FixMode(const Node& node, uint32_t have, uint32_t want) {
  if ((have & 07777) == want) return 0;
  return ChmodNode(node, want);
}

// The common checks of every creation: directory handle, valid name,
// writable tree. Returns 0 or an errno.
int CheckCreate(int find_err, const std::string& name) {
  if (find_err != 0) return find_err;
  return ValidateName(name);
}

}  // namespace

int Session::Create(const CreateReq& req, InodeResp* resp, UniqueFd* fd) {
  std::shared_ptr<Node> dir;
  int err = CheckCreate(FindDir(req.dir, &dir), req.name);
  if (err != 0) return err;
  // O_CREAT and O_EXCL are implied, and accepted.
  constexpr uint32_t kAllowed =
      (kClientOpenFlags & ~O_DIRECTORY) | O_CREAT | O_EXCL;
  if ((req.flags & ~kAllowed) != 0 || (req.flags & O_ACCMODE) == O_ACCMODE) {
    return EINVAL;
  }
  if (options_.read_only) return CreateRofsError(*dir, req.name);
  if (nodes_.size() >= options_.max_handles) return EMFILE;
  uint32_t mode = HostMode(S_IFREG, req.mode);
  int f = OpenBeneath(dir->get(), req.name,
                      static_cast<int>(req.flags) | O_CREAT | O_EXCL, mode);
  if (f < 0) return -f;
  UniqueFd file(f);
  struct stat created;
  if (fstat(f, &created) != 0) err = errno;
  if (err == 0 && (created.st_mode & 07777) != mode && fchmod(f, mode) != 0) {
    err = errno;
  }
  if (err != 0) {
    unlinkat(dir->get(), req.name.c_str(), 0);
    return err;
  }
  err = FinishCreate(dir, req.name, &created, NewOwner(req.uid, own_uid_),
                     NewOwner(req.gid, own_gid_), 0, &resp->inode);
  if (err != 0) return err;
  *fd = std::move(file);
  return 0;
}

int Session::Mkdir(const MkdirReq& req, InodeResp* resp) {
  std::shared_ptr<Node> dir;
  int err = CheckCreate(FindDir(req.dir, &dir), req.name);
  if (err != 0) return err;
  if (options_.read_only) return CreateRofsError(*dir, req.name);
  if (nodes_.size() >= options_.max_handles) return EMFILE;
  uint32_t mode = HostMode(S_IFDIR, req.mode);
  if (mkdirat(dir->get(), req.name.c_str(), mode) != 0) return errno;
  err = FinishCreate(dir, req.name, nullptr, NewOwner(req.uid, own_uid_),
                     NewOwner(req.gid, own_gid_), AT_REMOVEDIR, &resp->inode);
  if (err != 0) return err;
  std::shared_ptr<Node> node = Find(resp->inode.handle);
  if (node->type != S_IFDIR) err = ESTALE;
  if (err == 0) err = FixMode(*node, resp->inode.stat.mode, mode);
  if (err != 0) {
    nodes_.erase(resp->inode.handle);
    unlinkat(dir->get(), req.name.c_str(), AT_REMOVEDIR);
    return err;
  }
  resp->inode.stat.mode = S_IFDIR | mode;
  return 0;
}

// Mknod: regular files, FIFOs and sockets only. Devices are EPERM (the
// Gofer never creates device nodes, as without CAP_MKNOD); a directory
// type is EPERM and an unknown type EINVAL, as mknod(2).
int Session::Mknod(const MknodReq& req, InodeResp* resp) {
  std::shared_ptr<Node> dir;
  int err = CheckCreate(FindDir(req.dir, &dir), req.name);
  if (err != 0) return err;
  uint32_t type = req.mode & S_IFMT;
  if (type == 0) type = S_IFREG;
  switch (type) {
    case S_IFREG:
    case S_IFIFO:
    case S_IFSOCK:
      break;
    case S_IFCHR:
    case S_IFBLK:
    case S_IFDIR:
      return EPERM;
    default:
      return EINVAL;
  }
  if (options_.read_only) return CreateRofsError(*dir, req.name);
  if (nodes_.size() >= options_.max_handles) return EMFILE;
  uint32_t mode = HostMode(type, req.mode);
  if (mknodat(dir->get(), req.name.c_str(), type | mode, 0) != 0) {
    return errno;
  }
  err = FinishCreate(dir, req.name, nullptr, NewOwner(req.uid, own_uid_),
                     NewOwner(req.gid, own_gid_), 0, &resp->inode);
  if (err != 0) return err;
  std::shared_ptr<Node> node = Find(resp->inode.handle);
  if (node->type != type) err = ESTALE;
  if (err == 0) err = FixMode(*node, resp->inode.stat.mode, mode);
  if (err != 0) {
    nodes_.erase(resp->inode.handle);
    unlinkat(dir->get(), req.name.c_str(), 0);
    return err;
  }
  resp->inode.stat.mode = type | mode;
  return 0;
}

int Session::Symlink(const SymlinkReq& req, InodeResp* resp) {
  absl::ReaderMutexLock names(&SocketNameMutex());
  std::shared_ptr<Node> dir;
  int err = CheckCreate(FindDir(req.dir, &dir), req.name);
  if (err != 0) return err;
  if (req.target.empty()) return ENOENT;
  if (req.target.size() > kMaxPathLen) return ENAMETOOLONG;
  if (req.target.find('\0') != std::string::npos) return EINVAL;
  if (options_.read_only) return CreateRofsError(*dir, req.name);
  if (nodes_.size() >= options_.max_handles) return EMFILE;
  if (symlinkat(req.target.c_str(), dir->get(), req.name.c_str()) != 0) {
    return errno;
  }
  return FinishCreate(dir, req.name, nullptr, NewOwner(req.uid, own_uid_),
                      NewOwner(req.gid, own_gid_), 0, &resp->inode);
}

// Link: a new name for an existing non-directory of this connection. The
// host link is made from the node itself when the Gofer may (AT_EMPTY_PATH),
// else from (parent, name) and verified to be the same file.
int Session::Link(const LinkReq& req, InodeResp* resp) {
  absl::ReaderMutexLock names(&SocketNameMutex());
  std::shared_ptr<Node> dir;
  int err = CheckCreate(FindDir(req.dir, &dir), req.name);
  if (err != 0) return err;
  std::shared_ptr<Node> target = Find(req.target);
  if (target == nullptr) return EBADF;
  // As Linux: the new name is checked (EEXIST, EROFS) before the target's
  // type.
  if (options_.read_only) return CreateRofsError(*dir, req.name);
  if (target->IsDir()) {
    struct stat st;
    return fstatat(dir->get(), req.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0
               ? EEXIST
               : EPERM;
  }
  if (nodes_.size() >= options_.max_handles) return EMFILE;
  struct stat tst;
  if (fstat(target->get(), &tst) != 0) return errno;
  if (linkat(target->get(), "", dir->get(), req.name.c_str(), AT_EMPTY_PATH) !=
      0) {
    err = errno;
    if (err != ENOENT || target->parent_fd == nullptr || tst.st_nlink == 0) {
      return err;
    }
    // No CAP_DAC_READ_SEARCH: link by name, verified by FinishCreate.
    if (linkat(target->parent_fd->get(), target->name.c_str(), dir->get(),
               req.name.c_str(), 0) != 0) {
      return errno;
    }
  }
  return FinishCreate(dir, req.name, &tst, kNoId, kNoId, 0, &resp->inode);
}

}  // namespace gofer
