// /proc/net/{tcp,tcp6,udp,udp6,icmp,icmp6} (Linux's tcp4_seq_show/
// get_tcp4_sock, tcp6_seq_show/get_tcp6_sock, udp4_seq_show/
// udp4_format_sock, udp6_seq_show/__ip6_dgram_sock_seq_show, and the ping
// tables' ping_v4_seq_show/ping_v6_seq_show), /proc/net/{raw,raw6,udplite,
// udplite6} (header only: no such sockets), and the counters' files
// (mib.h). RegisterProcFiles adds them all (inet::Register calls it),
// except those a protocol registered already (its own generator wins).
//
// Rows come from the protocols' port tables (PortTable::List, in bind
// order) and each socket's InetSocket::proc_row(); a socket appears in
// the file of its family (an AF_INET6 socket's IPv4 traffic too, with
// v4-mapped addresses, as on Linux).
#ifndef SENTRY_NET_INET_PROC_H_
#define SENTRY_NET_INET_PROC_H_

#include <string>
#include <utility>
#include <vector>

#include "sentry/net/inet/inet_socket.h"
#include "sentry/net/inet/ports.h"
#include "sentry/net/namespace.h"

namespace sandbox::net::inet {

// The text of /proc/net/tcp (v6 = false) or tcp6 for `rows`, header first.
std::string FormatTcpRows(const std::vector<ProcRow>& rows, bool v6);
// /proc/net/udp, udp6 (ping = false) or icmp, icmp6 (ping = true): each
// row with its hash bucket (the "sl" column).
std::string FormatDgramRows(const std::vector<std::pair<int, ProcRow>>& rows,
                            bool v6, bool ping);

// The rows of `proto`'s sockets of `family` in `ns`.
std::vector<ProcRow> CollectRows(NetNamespace& ns, Proto proto, int family);

void RegisterProcFiles();

}  // namespace sandbox::net::inet

#endif  // SENTRY_NET_INET_PROC_H_
