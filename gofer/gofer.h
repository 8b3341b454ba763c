// RunGofer: the Gofer process's entry point as a library function (the
// runsc CLI's `gofer` command and //gofer:gofer call it).
//
// The Gofer is the only process that touches the host's files. It serves
// one connection per mount, each a SOCK_STREAM Unix socket donated by its
// parent, speaking docs/gofer-protocol.md, with one thread per connection.
#ifndef GOFER_GOFER_H_
#define GOFER_GOFER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gofer/confine.h"

namespace gofer {

struct ServedMount {
  int sock_fd = -1;  // Connected socket; RunGofer takes ownership.
  // Directory served, relative to the root ("" = the root itself); reached
  // without following symlinks.
  std::string path;
  bool read_only = false;  // Enforced by the server (EROFS).
  // ServerOptions::suid: set-id bits and any owner reach the host. Unsafe.
  bool suid = false;
  // ServerOptions::host_sockets: BindSocket and ConnectSocket served.
  bool host_sockets = false;
  // If >= 0: serves GoferConfig::volumes[volume] (path must be empty)
  // instead of a directory below the root.
  int volume = -1;
};

struct GoferConfig {
  std::string root;     // Host directory: "/" of the Gofer once confined.
  bool confine = true;  // confine.h; needs CAP_SYS_ADMIN or user_namespace.
  bool user_namespace = false;  // ConfineOptions::user_namespace.
  bool root_read_only = false;
  std::vector<BindMount> submounts;
  // Host directories served beside the root (confine.h Volume), each by
  // the ServedMount that names its index.
  std::vector<Volume> volumes;
  bool seccomp = true;  // seccomp.h.
  std::vector<ServedMount> mounts;
};

// Confines the process (if asked), opens every served directory, installs
// the seccomp filter (if asked) and serves all connections until each
// peer closes its end. Must be called single-threaded. Returns OK when
// every connection ended cleanly, else the first error (set-up errors
// before anything is served).
absl::Status RunGofer(const GoferConfig& config);

}  // namespace gofer

#endif  // GOFER_GOFER_H_
