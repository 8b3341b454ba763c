// The SNMP counters of one network namespace (Linux's net->mib: the Ip,
// Icmp, IcmpMsg, Tcp, Udp MIBs of /proc/net/snmp, their IPv6 forms in
// /proc/net/snmp6, and the TcpExt/IpExt counters of /proc/net/netstat),
// with the increment helpers the protocols call.
//
// Thread-safety: every counter is an atomic (relaxed: they are statistics);
// nothing is locked.
#ifndef SENTRY_NET_INET_MIB_H_
#define SENTRY_NET_INET_MIB_H_

#include <stdint.h>

#include <array>
#include <atomic>
#include <string>

#include "sentry/net/namespace.h"

namespace sandbox::net::inet {

// snmp4_tcp_list's counters (RtoAlgorithm..MaxConn are constants).
enum class TcpMib : int {
  kActiveOpens,
  kPassiveOpens,
  kAttemptFails,
  kEstabResets,
  kCurrEstab,  // a gauge: +1 entering ESTABLISHED/CLOSE_WAIT, -1 leaving
  kInSegs,
  kOutSegs,
  kRetransSegs,
  kInErrs,
  kOutRsts,
  kInCsumErrors,
  kCount
};

// snmp4_udp_list / snmp6_udp6_list.
enum class UdpMib : int {
  kInDatagrams,
  kNoPorts,
  kInErrors,
  kOutDatagrams,
  kRcvbufErrors,
  kSndbufErrors,
  kInCsumErrors,
  kIgnoredMulti,
  kMemErrors,
  kCount
};

// snmp4_ipstats_list (IPv4) / snmp6_ipstats_list's first entries (IPv6,
// which has more: see ip6 below).
enum class IpMib : int {
  kInReceives,
  kInHdrErrors,
  kInAddrErrors,
  kForwDatagrams,
  kInUnknownProtos,
  kInDiscards,
  kInDelivers,
  kOutRequests,
  kOutDiscards,
  kOutNoRoutes,
  kReasmTimeout,
  kReasmReqds,
  kReasmOKs,
  kReasmFails,
  kFragOKs,
  kFragFails,
  kFragCreates,
  kOutTransmits,
  kCount
};

// ICMP_MIB_* (and ICMP6_MIB_*).
enum class IcmpMib : int {
  kInMsgs,
  kInErrors,
  kInCsumErrors,
  kOutMsgs,
  kOutErrors,
  kOutRateLimitGlobal,
  kOutRateLimitHost,
  kCount
};

// The TcpExt counters the Sentry's TCP can count (a subset of
// snmp4_net_list; the others stay 0).
enum class TcpExtMib : int {
  kEmbryonicRsts,
  kTW,
  kDelayedACKs,
  kListenOverflows,
  kListenDrops,
  kTCPPureAcks,
  kTCPTimeouts,
  kTCPAbortOnData,
  kTCPAbortOnClose,
  kTCPAbortOnMemory,
  kTCPAbortOnTimeout,
  kTCPAbortOnLinger,
  kTCPRcvCoalesce,
  kTCPOFOQueue,
  kTCPSynRetrans,
  kTCPOrigDataSent,
  kTCPKeepAlive,
  kTCPDelivered,
  kTCPZeroWindowDrop,
  kTCPRcvQDrop,
  kCount
};

struct Mib {
  template <typename E>
  using Counters =
      std::array<std::atomic<int64_t>, static_cast<int>(E::kCount)>;
  Counters<TcpMib> tcp{};
  Counters<UdpMib> udp{}, udp6{};
  Counters<IpMib> ip{}, ip6{};
  Counters<IcmpMib> icmp{}, icmp6{};
  // ICMPMSG: [type] in, [0x100 | type] out.
  std::array<std::atomic<int64_t>, 512> icmpmsg{}, icmp6msg{};
  Counters<TcpExtMib> tcpext{};
};

// The namespace's counters (made on first use).
Mib& MibOf(NetNamespace& ns);

template <typename E>
inline void MibAdd(
    std::array<std::atomic<int64_t>, static_cast<int>(E::kCount)>& c, E e,
    int64_t n = 1) {
  c[static_cast<int>(e)].fetch_add(n, std::memory_order_relaxed);
}

// The increments the protocols make.
inline void Count(NetNamespace& ns, TcpMib e, int64_t n = 1) {
  MibAdd(MibOf(ns).tcp, e, n);
}
inline void Count(NetNamespace& ns, TcpExtMib e, int64_t n = 1) {
  MibAdd(MibOf(ns).tcpext, e, n);
}
// UDP counts in Udp (IPv4 packets) or Udp6 (IPv6 ones), as udp_rcv /
// udpv6_rcv do: by the packet's IP version, not the socket's family.
inline void Count(NetNamespace& ns, UdpMib e, bool ipv6, int64_t n = 1) {
  MibAdd(ipv6 ? MibOf(ns).udp6 : MibOf(ns).udp, e, n);
}
inline void Count(NetNamespace& ns, IpMib e, bool ipv6, int64_t n = 1) {
  MibAdd(ipv6 ? MibOf(ns).ip6 : MibOf(ns).ip, e, n);
}
inline void Count(NetNamespace& ns, IcmpMib e, bool ipv6, int64_t n = 1) {
  MibAdd(ipv6 ? MibOf(ns).icmp6 : MibOf(ns).icmp, e, n);
}
// One ICMP message of `type` received (out = false) or sent.
void CountIcmpMsg(NetNamespace& ns, bool ipv6, bool out, uint8_t type);

// /proc/net/snmp, /proc/net/snmp6 and /proc/net/netstat (snmp_seq_show,
// snmp6_seq_show, netstat_seq_show of Linux 6.x).
std::string FormatProcNetSnmp(NetNamespace& ns);
std::string FormatProcNetSnmp6(NetNamespace& ns);
std::string FormatProcNetNetstat(NetNamespace& ns);

}  // namespace sandbox::net::inet

#endif  // SENTRY_NET_INET_MIB_H_
