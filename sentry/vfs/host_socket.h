// HostSockets: host Unix sockets in a file system that serves them (the
// gofer file system of a bind mount marked for it: runsc do
// --bind=HOST:GUEST:uds). The Sentry never names a host path: the file
// system asks its Gofer, which makes the host socket beside the node (or
// connects to the host node) and donates the descriptor.
//
// The AF_UNIX family (sentry/net/unix) asks Filesystem::host_sockets() of
// the directory a bind(2) creates its node in, and of the node a
// connect(2) or sendto(2) resolves to when no socket of the Sentry is bound
// there: null (every other file system, and bind mounts without ":uds")
// means sockets there are the Sentry's own (bind makes an in-Sentry node,
// connect to a host socket file is ECONNREFUSED, as for a socket file with
// nobody bound in this kernel).
//
// Thread-safety: the implementation is thread-safe. Lock order: BindSocket
// is called with the file system's tree_mu held exclusively (where
// CreateChild would be); ConnectSocket without VFS locks.
#ifndef SENTRY_VFS_HOST_SOCKET_H_
#define SENTRY_VFS_HOST_SOCKET_H_

#include <memory>
#include <string_view>

#include "gofer/protocol/unique_fd.h"
#include "sentry/base/result.h"
#include "sentry/vfs/inode.h"

namespace sandbox::vfs {

// An owned host descriptor, closed on destruction. Move-only: the Gofer
// protocol's (the descriptors come from it).
using OwnedFd = ::gofer::UniqueFd;

// What BindSocket made: the node (as CreateChild returns it) and the host
// socket bound at it.
struct HostSocketBinding {
  std::shared_ptr<Inode> node;  // S_IFSOCK, now in the directory
  OwnedFd fd;  // bound, not listening; O_NONBLOCK, close-on-exec
};

class HostSockets {
 public:
  virtual ~HostSockets() = default;
  // bind(2) of an AF_UNIX socket of `type` (SOCK_STREAM, SOCK_DGRAM,
  // SOCK_SEQPACKET) at `name` in `dir` (a directory of this file system),
  // after the VFS's checks (the name absent, write and search permission on
  // dir): the node gets attrs' permission bits (umask applied) and owner.
  // EADDRINUSE if the host has the name after all; EROFS, ENOSPC, ... as
  // the host reports.
  virtual KResult<HostSocketBinding> BindSocket(Inode& dir,
                                                std::string_view name,
                                                const NewInodeAttrs& attrs,
                                                int type) = 0;
  // connect(2) to the socket node `node` of this file system (S_IFSOCK,
  // reached by the caller's walk, write permission checked): a new host
  // socket of `type` connected to what listens there on the host
  // (O_NONBLOCK, close-on-exec). ECONNREFUSED when nothing does (or the
  // node is no longer that socket), EPROTOTYPE for another type, EAGAIN
  // when its backlog is full (a blocking caller waits and tries again).
  virtual KResult<OwnedFd> ConnectSocket(Inode& node, int type) = 0;
};

}  // namespace sandbox::vfs

#endif  // SENTRY_VFS_HOST_SOCKET_H_
