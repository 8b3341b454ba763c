// The sandbox's own name server (network mode "host" with an egress
// policy): a UDP socket of the sandbox's loopback stack, bound at
// kNameServerAddr:53, served by one Sentry thread that answers each query
// with AnswerQuery (resolver.h: through the broker, which answers only the
// names the policy allows and pins their addresses). The sandbox's
// /etc/resolv.conf names it (WriteResolvConf), so the guest's resolver
// asks it and a name the policy allows then connects.
#ifndef SENTRY_NET_HOSTINET_NAME_SERVER_H_
#define SENTRY_NET_HOSTINET_NAME_SERVER_H_

#include <string>

#include "sentry/base/result.h"
#include "sentry/net/namespace.h"
#include "sentry/vfs/path_walk.h"

namespace sandbox::net::hostinet {

inline constexpr char kNameServerAddr[] = "127.0.0.53";

// Binds the server's socket and starts its thread (start-up, after the
// families are registered and the broker client started; the thread
// inherits the seccomp filter installed later). False (logged) if it
// cannot bind.
bool StartNameServer(NetNamespace& ns);
void StopNameServer();

// Replaces the sandbox's /etc/resolv.conf (a symlink or file of the host
// root's overlay) with one naming the server. Best effort: the error is
// returned for the log (a read-only root: EROFS).
KResult<void> WriteResolvConf(const vfs::ResolveBase& base);

}  // namespace sandbox::net::hostinet

#endif  // SENTRY_NET_HOSTINET_NAME_SERVER_H_
