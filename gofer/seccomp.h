// The Gofer's seccomp allowlist (libseccomp): the host calls serving needs,
// nothing else; any other call kills the process (SECCOMP_RET_KILL_PROCESS).
// No socket, connect, execve, ptrace, mount or plain open by path: every
// open is openat2 (or openat with O_NOFOLLOW) relative to a directory FD.
//
// Install it after the served directories are opened and before serving.
// Threads created later inherit it; threads already running do not (call
// it while single-threaded).
#ifndef GOFER_SECCOMP_H_
#define GOFER_SECCOMP_H_

#include "absl/status/status.h"

namespace gofer {

absl::Status InstallSeccomp();

}  // namespace gofer

#endif  // GOFER_SECCOMP_H_
