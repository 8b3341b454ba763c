// AF_UNIX sockets (Linux's net/unix): SOCK_STREAM, SOCK_DGRAM (and
// SOCK_RAW, which Linux turns into SOCK_DGRAM) and SOCK_SEQPACKET;
// unnamed, path and abstract addresses; SCM_RIGHTS with the collector of
// unreachable cycles, SCM_CREDENTIALS, SO_PEERCRED, SO_PEEK_OFF.
//
// The family registers with the socket layer through Register (called by
// RegisterBuiltinFamilies). The rest of this header is what /proc/net/unix
// and leak checks read.
#ifndef SENTRY_NET_UNIX_UNIX_H_
#define SENTRY_NET_UNIX_UNIX_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "sentry/net/namespace.h"

namespace sandbox::net::unix {

// Registers AF_UNIX with the socket layer (net::RegisterFamily).
void Register();

// One line of /proc/net/unix (unix_seq_show).
struct UnixSocketInfo {
  uint32_t refcount = 0;  // RefCount
  uint32_t flags = 0;     // Flags: __SO_ACCEPTCON (1 << 16) when listening
  int type = 0;           // Type: SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET
  int state = 0;          // St: SS_UNCONNECTED (1) ... SS_DISCONNECTING (4)
  uint64_t inode = 0;     // Inode: the sockfs inode (0 before accept)
  std::string path;       // Path: "" unnamed, "/p", or "@name" (NUL -> @)
};

// The sockets of `ns` (runs the collector first, so that sockets kept only
// by unreachable cycles are gone).
std::vector<UnixSocketInfo> ListSockets(NetNamespace& ns);
// /proc/net/unix's text: the header line and one line per socket, with
// Linux's formats ("%pK" prints zeros, as for an unprivileged reader).
std::string FormatProcNetUnix(NetNamespace& ns);

// Leak counters.
struct Counters {
  int64_t open_sockets = 0;      // unix sockets not yet released
  int64_t live_endpoints = 0;    // socket states not yet freed
  int64_t inflight_files = 0;    // descriptions in flight (SCM_RIGHTS)
  int64_t inflight_sockets = 0;  // unix sockets among them
};
Counters GetCounters();

// Collects unreachable cycles of sockets in flight now (unix_gc).
void CollectGarbage();

}  // namespace sandbox::net::unix

#endif  // SENTRY_NET_UNIX_UNIX_H_
