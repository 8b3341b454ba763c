// The socket families registered with the socket layer (Linux's
// net_families[] and sock_register), and socket(2)/socketpair(2)'s choice
// of one.
//
// A family registers once, at start-up (RegisterBuiltinFamilies in
// families.h calls each family's Register), before any socket call: the
// table is read without a lock afterwards.
//
// CreateSocket checks what Linux's __sock_create checks before the family
// is asked: the domain range (EAFNOSUPPORT for domain >= AF_MAX or < 0),
// the type range (EINVAL for type >= SOCK_MAX or < 0); an unregistered
// family is EAFNOSUPPORT, logged once with its number. The family decides
// the rest (ESOCKTNOSUPPORT, EPROTONOSUPPORT, EPROTOTYPE).
#ifndef SENTRY_NET_FAMILY_H_
#define SENTRY_NET_FAMILY_H_

#include <stdint.h>

#include <memory>
#include <utility>

#include "sentry/base/result.h"
#include "sentry/net/socket.h"

namespace sandbox::net {

using SocketRef = std::shared_ptr<Socket>;
using SocketPair = std::pair<SocketRef, SocketRef>;

struct Family {
  int domain = 0;         // AF_UNIX, AF_NETLINK, ...
  const char* name = "";  // for logs ("unix", "netlink")
  // socket(2): a new socket of `type` (without SOCK_NONBLOCK/CLOEXEC),
  // `protocol`, with open flags `flags` (O_RDWR | maybe O_NONBLOCK).
  KResult<SocketRef> (*create)(Caller& c, int type, int protocol,
                               uint32_t flags) = nullptr;
  // socketpair(2), or null: EOPNOTSUPP (sock_no_socketpair).
  KResult<SocketPair> (*pair)(Caller& c, int type, int protocol,
                              uint32_t flags) = nullptr;
};

// Adds a family (once per domain; start-up only).
void RegisterFamily(const Family& f);
// Whether `domain` is registered.
bool FamilyRegistered(int domain);

// socket(2) after the syscall layer split off SOCK_NONBLOCK/SOCK_CLOEXEC
// (and refused other flag bits with EINVAL): `type` is the bare type.
KResult<SocketRef> CreateSocket(Caller& c, int domain, int type, int protocol,
                                uint32_t flags);
// socketpair(2), likewise.
KResult<SocketPair> CreateSocketPair(Caller& c, int domain, int type,
                                     int protocol, uint32_t flags);

}  // namespace sandbox::net

#endif  // SENTRY_NET_FAMILY_H_
