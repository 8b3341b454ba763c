// The Gofer's command line, shared by //gofer:gofer and `runsc gofer`.
//
//   --root=DIR                 host directory served (required)
//   --serve=FD[:PATH][:ro][:suid][:uds]
//                              one connection: an inherited connected
//                              SOCK_STREAM Unix socket, the directory it
//                              serves relative to the root (default the
//                              root), ":ro" to refuse changes (repeatable,
//                              at least one)
//   --volume=FD:SRC[:ro][:suid][:uds]
//                              one connection serving the host directory SRC
//                              (absolute), bound beside the root when
//                              confined and unreachable from it
//                              (repeatable)
//                              Every connection is nosuid on the host
//                              (ServerOptions::suid); ":suid" lets set-id
//                              bits and any owner reach the host files:
//                              UNSAFE, a host user who runs such a file
//                              gets the owner's privileges.
//                              ":uds" serves host Unix sockets there
//                              (ServerOptions::host_sockets): the client
//                              may bind and connect host sockets in the
//                              tree.
//   --bind=SRC:TARGET[:ro]     a host directory bound below the root when
//                              confined (repeatable)
//   --root-ro                  mount the root read-only when confined
//   --userns                   confine in a new user namespace (no root)
//   --no-confine               do not confine (tests only)
//   --no-seccomp               no seccomp filter (debugging only)
#ifndef GOFER_FLAGS_H_
#define GOFER_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gofer/gofer.h"

namespace gofer {

absl::StatusOr<GoferConfig> ParseGoferFlags(
    const std::vector<std::string>& args);

}  // namespace gofer

#endif  // GOFER_FLAGS_H_
