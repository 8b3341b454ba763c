// Where bound unix sockets are found, and the file-system side of path
// sockets.
//
//  - Abstract names: per network namespace (NetNamespace::Get<
//    AbstractNames>()), and per socket type, as Linux hashes them
//    (unix_abstract_hash mixes in the type, and lookups search that
//    bucket): a stream and a datagram socket may hold the same name, and a
//    connect to a name bound by another type finds nothing (ECONNREFUSED).
//  - Path names: by the socket inode's identity (Linux's bsd_socket_buckets
//    keyed by inode, not per namespace). The bound socket holds the node's
//    location (Address::node), so the inode stays the same object while it
//    is bound; an unlinked node is unreachable, a renamed or hard-linked one
//    still reaches the socket.
//  - Every socket of a namespace, for /proc/net/unix.
//
// Path resolution for connect and sendto goes through FindPathPeer only:
// the one place where a host-backed socket node (host Unix sockets through
// the Gofer, #20 item 6: a socket node in a file system with
// vfs::HostSockets, i.e. a ":uds" bind mount, that no socket of the Sentry
// is bound to) branches off, when the caller asks for it (HostPeer). Bind
// makes a host socket instead of its own node in such a file system
// (CreateSocketNode's HostBind).
//
// Locking: each table's mutex is a leaf (taken with no Endpoint's mu_
// held).
#ifndef SENTRY_NET_UNIX_REGISTRY_H_
#define SENTRY_NET_UNIX_REGISTRY_H_

#include <stdint.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "sentry/base/result.h"
#include "sentry/net/hostunix/host_endpoint.h"
#include "sentry/net/socket.h"
#include "sentry/net/unix/address.h"
#include "sentry/net/unix/endpoint.h"
#include "sentry/vfs/path_walk.h"

namespace sandbox::net::unix {

// The abstract names of one network namespace.
class AbstractNames {
 public:
  // Binds `name` for `ep` (of ep's type): EADDRINUSE if taken.
  KResult<void> Insert(const Name& name, const EndpointRef& ep)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Autobind: the first free "\0xxxxx" name from a random start; ENOSPC
  // when all 2^20 are taken.
  KResult<Name> InsertAutobind(const EndpointRef& ep) ABSL_LOCKS_EXCLUDED(mu_);
  // The live socket bound to `name` for `type`, or null.
  EndpointRef Find(const std::string& name, int type) ABSL_LOCKS_EXCLUDED(mu_);
  // Removes `name` if `ep` holds it.
  void Remove(const std::string& name, int type, const Endpoint* ep)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::pair<int, std::string>, std::weak_ptr<Endpoint>>
      names_ ABSL_GUARDED_BY(mu_);
};

// Every unix socket of one network namespace (for /proc/net/unix).
class SocketList {
 public:
  void Add(Endpoint* ep) ABSL_LOCKS_EXCLUDED(mu_);
  void Remove(Endpoint* ep) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<EndpointRef> Snapshot() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  // Endpoint -> creation sequence (Snapshot lists them in that order).
  absl::flat_hash_map<Endpoint*, uint64_t> list_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

// Path bindings (global).
void InsertPathBinding(const vfs::Inode* inode, const EndpointRef& ep);
void RemovePathBinding(const vfs::Inode* inode, const Endpoint* ep);

// How a caller reaches the file system: the task's root, cwd, credentials
// and umask. ENOENT without one (a Caller without a task: unit tests,
// unless a testing::ScopedFs is active).
struct PathContext {
  const kernel::Credentials* creds = nullptr;
  vfs::VirtualDentry root;
  vfs::VirtualDentry cwd;
  uint32_t umask = 0;
  vfs::ResolveBase base() const { return {*creds, root, cwd}; }
};
KResult<PathContext> PathContextOf(const Caller& c);

// A bind in a file system with host sockets (vfs/host_socket.h): the
// socket's type and guest address going in, the host endpoint coming out.
struct HostBind {
  int type = 0;
  SockAddr guest_addr;
  std::shared_ptr<hostunix::HostEndpoint> endpoint;  // set if it happened
};

// unix_bind_bsd's node: creates the S_IFSOCK inode `path` (mode 0777 &
// ~umask) as mknod does, with the checks and errors of Linux's
// kern_path_create + vfs_mknod, EADDRINUSE if the name exists. `check` runs
// after those checks with the directory locked, before the node is made:
// its error (EINVAL for a socket already bound) is returned as is.
// In a directory whose file system has host sockets and with `host` given,
// the node is a host socket's (hostunix::BindHost) and host->endpoint is
// set. Returns the new node's location.
KResult<vfs::VirtualDentry> CreateSocketNode(
    const PathContext& pc, const std::string& path,
    const std::function<KResult<void>()>& check, HostBind* host = nullptr);

// A socket node on the host (a ":uds" mount) that no socket of the Sentry
// is bound to: where FindPathPeer found it, for hostunix::ConnectHost.
struct HostPeer {
  vfs::VirtualDentry node;              // pins the mount and the inode
  vfs::HostSockets* sockets = nullptr;  // node's file system's
};

// unix_find_bsd: the socket bound at `path` for a connect or send by a
// socket of `type`: the walk's errors, EACCES without write permission on
// the node, ECONNREFUSED when it is not a socket or none is bound there,
// EPROTOTYPE when the bound socket is of another type. With `host`, a
// socket node of a file system with host sockets that no Sentry socket is
// bound to returns null and fills *host (the caller connects on the host).
KResult<EndpointRef> FindPathPeer(const PathContext& pc,
                                  const std::string& path, int type,
                                  HostPeer* host = nullptr);

// unix_find_other: the peer named by `name` for a socket of `type` in
// namespace `ns` (abstract: ECONNREFUSED when unbound). `host` as
// FindPathPeer's (abstract names never reach the host).
KResult<EndpointRef> FindPeer(const Caller& c, NetNamespace& ns,
                              const Name& name, int type,
                              HostPeer* host = nullptr);

namespace testing {
// Gives Callers without a task a file system while it lives (unit tests of
// path sockets; one at a time).
class ScopedFs {
 public:
  explicit ScopedFs(PathContext pc);
  ~ScopedFs();
  ScopedFs(const ScopedFs&) = delete;
  ScopedFs& operator=(const ScopedFs&) = delete;

 private:
  PathContext pc_;
  const PathContext* prev_;
};
}  // namespace testing

}  // namespace sandbox::net::unix

#endif  // SENTRY_NET_UNIX_REGISTRY_H_
