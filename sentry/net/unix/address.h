// AF_UNIX addresses (struct sockaddr_un) as Linux's af_unix.c reads and
// reports them: unnamed (no name), path ("/tmp/s": a socket inode found
// through the VFS) and abstract (a leading NUL, then any bytes: a name in
// the network namespace's table).
//
// Lengths follow Linux exactly:
//  - bind/connect/sendto take 2 < len <= sizeof(sockaddr_un) (110) with
//    sun_family AF_UNIX, else EINVAL (unix_validate_addr); bind with
//    exactly len 2 (the family alone) autobinds;
//  - a path name stops at its first NUL or at len (unix_mkname_bsd), and
//    its reported length is offsetof(sun_path) + strlen + 1: a 108-byte
//    path reports 111;
//  - an abstract name is every byte of sun_path up to len, NULs included;
//    its reported length is the length it was bound with;
//  - an autobound name is a NUL and five hex digits (length 8);
//  - an unnamed socket reports only the family (length 2).
#ifndef SENTRY_NET_UNIX_ADDRESS_H_
#define SENTRY_NET_UNIX_ADDRESS_H_

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <string_view>

#include "sentry/base/result.h"
#include "sentry/net/message.h"
#include "sentry/vfs/mount.h"

namespace sandbox::net::unix {

inline constexpr uint32_t kSunPathOffset = 2;    // offsetof(sun_path)
inline constexpr uint32_t kSockaddrUnLen = 110;  // sizeof(sockaddr_un)
inline constexpr uint32_t kAutobindLen = kSunPathOffset + 6;

// A name given to bind/connect/sendto, after unix_validate_addr.
struct Name {
  bool abstract = false;
  // Abstract: sun_path's bytes [0, len - 2), the leading NUL included.
  // Path: the path without its terminating NUL (never empty).
  std::string bytes;
  // The length Linux records for it (getsockname's length).
  uint32_t len = 0;
};

// unix_validate_addr + the split into path and abstract names: EINVAL for
// a length outside (2, 110] or a family other than AF_UNIX.
KResult<Name> ParseName(const SockAddr& addr);

// Whether `addr` asks bind(2) to autobind (only the family, AF_UNIX).
bool IsAutobindRequest(const SockAddr& addr);

// The autobind name for `n` (0 <= n < 2^20): "\0" and five hex digits.
Name AutobindName(uint32_t n);

// A bound name (immutable, shared by a listener and the sockets it
// accepted, as Linux's struct unix_address and the path it holds).
struct Address {
  Name name;
  // Path sockets: the socket inode's location, held so that the binding is
  // found by the inode's identity for as long as the socket is bound.
  vfs::VirtualDentry node;

  // As getsockname/getpeername/recvfrom report it.
  SockAddr ToSockAddr() const;
  // /proc/net/unix's Path column: the path, or "@" and the abstract name
  // with every NUL shown as "@".
  std::string ProcName() const;
};

// The address of an unnamed socket (the family only).
SockAddr UnnamedSockAddr();

}  // namespace sandbox::net::unix

#endif  // SENTRY_NET_UNIX_ADDRESS_H_
