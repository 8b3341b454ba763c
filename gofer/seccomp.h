// The Gofer's seccomp allowlist (libseccomp): the host calls serving needs,
// nothing else; any other call kills the process (SECCOMP_RET_KILL_PROCESS).
// No socket, connect, execve, ptrace, mount or plain open by path: every
// open is openat2 (or openat with O_NOFOLLOW) relative to a directory FD.
//
// With host_sockets (a connection serves host Unix sockets: ":uds"), also
// what BindSocket and ConnectSocket need (gofer/server/handlers_socket.cc):
// socket(AF_UNIX, ...) only, bind, connect, fchdir and umask; never listen
// or accept (the Sentry listens on the sockets donated to it).
//
// Install it after the served directories are opened and before serving.
// Threads created later inherit it; threads already running do not (call
// it while single-threaded).
#ifndef GOFER_SECCOMP_H_
#define GOFER_SECCOMP_H_

#include "absl/status/status.h"

namespace gofer {

absl::Status InstallSeccomp(bool host_sockets = false);

}  // namespace gofer

#endif  // GOFER_SECCOMP_H_
