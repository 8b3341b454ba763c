// The per-connection server loop.
#ifndef GOFER_SERVER_SERVER_H_
#define GOFER_SERVER_SERVER_H_

#include "gofer/protocol/unique_fd.h"
#include "gofer/server/session.h"

namespace gofer {

// Serves one connection until the peer closes it or breaks the framing.
// sock: a connected SOCK_STREAM Unix socket; root: the directory served.
// Every request gets exactly one reply, in order: an error reply for a
// request it cannot decode, an unknown type (EOPNOTSUPP), another version
// (EPROTONOSUPPORT), any FD sent with it (EINVAL; the FDs are closed).
// On a bad magic or an oversized payload it replies EPROTO / EMSGSIZE and
// closes the connection, since message boundaries are lost.
// Returns 0 at a clean end of stream, else the errno that ended it.
int ServeConnection(UniqueFd sock, UniqueFd root, ServerOptions options);

}  // namespace gofer

#endif  // GOFER_SERVER_SERVER_H_
