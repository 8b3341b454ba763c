// BindSocket and ConnectSocket (revision 2): host Unix sockets in a tree
// served with ServerOptions::host_sockets (runsc do --bind=HOST:GUEST:uds).
//
// The host's bind(2) and connect(2) take a path, not a directory FD. The
// Gofer has no /proc once confined, so both go through the working
// directory: fchdir to the directory's O_PATH descriptor and a one-name
// relative sun_path, under SocketNameMutex() held exclusively (the working
// directory is the process's; nothing else in the Gofer resolves anything
// against it). Afterwards the working directory is this connection's
// root, never a directory outside the served trees.
//
// Confinement: bind(2) never follows a symlink at its last (here: only)
// component: an existing name, a symlink included, is EADDRINUSE. connect(2)
// does follow one, so ConnectSocket checks that the name is still the
// walked socket node (lstat: same dev and ino, S_IFSOCK) and connects while
// holding the mutex that every handler able to put a symlink under a name
// (Symlink, Link, Rename) holds shared: the check holds until connect has
// used the name. A host process racing to swap the name is the host's own
// business (it can connect there itself).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gofer/server/session.h"

namespace gofer {

absl::Mutex& SocketNameMutex() {
  static absl::Mutex* mu = new absl::Mutex();
  return *mu;
}

namespace {

// A sockaddr_un naming `name` relative to the working directory.
socklen_t RelativeAddr(const std::string& name, sockaddr_un* sa) {
  std::memset(sa, 0, sizeof(*sa));
  sa->sun_family = AF_UNIX;
  std::memcpy(sa->sun_path, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() +
                                1);
}

// Runs fn() with the working directory at `dir`, then moves it to
// `home`. Returns fn's result, or the errno of the first fchdir.
template <typename Fn>
int InDirectory(int dir, int home, Fn&& fn)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(SocketNameMutex()) {
  if (fchdir(dir) != 0) return errno;
  int err = fn();
  (void)fchdir(home);
  return err;
}

// A new non-blocking host AF_UNIX socket of `type` (validated).
int NewSocket(uint32_t type, UniqueFd* out) {
  int s =
      socket(AF_UNIX, static_cast<int>(type) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  out->reset(s);
  return 0;
}

}  // namespace

int Session::BindSocket(const BindSocketReq& req, InodeResp* resp,
                        UniqueFd* fd) {
  if (!options_.host_sockets) return EOPNOTSUPP;
  std::shared_ptr<Node> dir;
  int err = FindDir(req.dir, &dir);
  if (err == 0) err = ValidateName(req.name);
  if (err != 0) return err;
  if (!ValidSocketType(req.type)) return ESOCKTNOSUPPORT;
  if (req.name.size() > kMaxSocketNameLen) return ENAMETOOLONG;
  if (options_.read_only) {
    err = CreateRofsError(*dir, req.name);
    return err == EEXIST ? EADDRINUSE : err;
  }
  if (HiddenName(*dir, req.name)) return EADDRINUSE;
  if (nodes_.size() >= options_.max_handles) return EMFILE;
  UniqueFd sock;
  if ((err = NewSocket(req.type, &sock)) != 0) return err;
  const uint32_t mode = HostMode(S_IFSOCK, req.mode) & 0777;
  absl::MutexLock names(&SocketNameMutex());
  sockaddr_un sa;
  const socklen_t len = RelativeAddr(req.name, &sa);
  err = InDirectory(dir->get(), root_.get(), [&] {
    // bind(2) makes the node with 0777 & ~umask: the umask is the
    // process's, and only this (locked) code changes it from 0.
    umask(~mode & 0777);
    int rc = bind(sock.get(), reinterpret_cast<sockaddr*>(&sa), len);
    int e = rc == 0 ? 0 : errno;
    umask(0);
    return e;
  });
  if (err != 0) return err == EEXIST ? EADDRINUSE : err;
  err = FinishCreate(dir, req.name, nullptr, NewOwner(req.uid, own_uid_),
                     NewOwner(req.gid, own_gid_), 0, &resp->inode);
  if (err != 0) return err;
  if ((resp->inode.stat.mode & S_IFMT) != S_IFSOCK) {
    // Not the node bind made (swapped on the host since): leave it.
    nodes_.erase(resp->inode.handle);
    return ESTALE;
  }
  *fd = std::move(sock);
  return 0;
}

int Session::ConnectSocket(const ConnectSocketReq& req, Empty*, UniqueFd* fd) {
  if (!options_.host_sockets) return EOPNOTSUPP;
  std::shared_ptr<Node> node = Find(req.handle);
  if (node == nullptr) return EBADF;
  if (!ValidSocketType(req.type)) return ESOCKTNOSUPPORT;
  // Linux's unix_find_bsd: a path that is no socket is ECONNREFUSED.
  if (node->type != S_IFSOCK || node->parent_fd == nullptr) {
    return ECONNREFUSED;
  }
  if (node->name.size() > kMaxSocketNameLen) return ENAMETOOLONG;
  UniqueFd sock;
  int err = NewSocket(req.type, &sock);
  if (err != 0) return err;
  absl::MutexLock names(&SocketNameMutex());
  struct stat st;
  if (fstatat(node->parent_fd->get(), node->name.c_str(), &st,
              AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? ECONNREFUSED : errno;
  }
  // The name no longer the node walked (renamed, replaced, a symlink):
  // nothing this connection may reach.
  if (!S_ISSOCK(st.st_mode) || !node->Same(st)) return ECONNREFUSED;
  sockaddr_un sa;
  const socklen_t len = RelativeAddr(node->name, &sa);
  err = InDirectory(node->parent_fd->get(), root_.get(), [&] {
    return connect(sock.get(), reinterpret_cast<sockaddr*>(&sa), len) == 0
               ? 0
               : errno;
  });
  // A non-blocking connect to a full backlog is EAGAIN (the client waits
  // and asks again); Unix sockets never give EINPROGRESS.
  if (err != 0) return err;
  *fd = std::move(sock);
  return 0;
}

}  // namespace gofer
