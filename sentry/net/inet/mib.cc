#include "sentry/net/inet/mib.h"

#include <string.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sandbox::net::inet {
namespace {

// The names of Linux 6.x's lists (net/ipv4/proc.c, net/ipv6/proc.c).
constexpr const char* kIpNames[] = {
    "InReceives",      "InHdrErrors", "InAddrErrors", "ForwDatagrams",
    "InUnknownProtos", "InDiscards",  "InDelivers",   "OutRequests",
    "OutDiscards",     "OutNoRoutes", "ReasmTimeout", "ReasmReqds",
    "ReasmOKs",        "ReasmFails",  "FragOKs",      "FragFails",
    "FragCreates",     "OutTransmits"};
static_assert(std::size(kIpNames) == static_cast<size_t>(IpMib::kCount));

constexpr const char* kTcpNames[] = {
    "ActiveOpens", "PassiveOpens", "AttemptFails", "EstabResets",
    "CurrEstab",   "InSegs",       "OutSegs",      "RetransSegs",
    "InErrs",      "OutRsts",      "InCsumErrors"};
static_assert(std::size(kTcpNames) == static_cast<size_t>(TcpMib::kCount));

constexpr const char* kUdpNames[] = {
    "InDatagrams",  "NoPorts",      "InErrors",
    "OutDatagrams", "RcvbufErrors", "SndbufErrors",
    "InCsumErrors", "IgnoredMulti", "MemErrors"};
static_assert(std::size(kUdpNames) == static_cast<size_t>(UdpMib::kCount));

// icmpmibmap: name and ICMP type.
struct IcmpName {
  const char* name;
  int type;
};
constexpr IcmpName kIcmpMap[] = {
    {"DestUnreachs", 3}, {"TimeExcds", 11},   {"ParmProbs", 12},
    {"SrcQuenchs", 4},   {"Redirects", 5},    {"Echos", 8},
    {"EchoReps", 0},     {"Timestamps", 13},  {"TimestampReps", 14},
    {"AddrMasks", 17},   {"AddrMaskReps", 18}};

// snmp4_net_list (TcpExt).
constexpr const char* kTcpExtNames[] = {"SyncookiesSent",
                                        "SyncookiesRecv",
                                        "SyncookiesFailed",
                                        "EmbryonicRsts",
                                        "PruneCalled",
                                        "RcvPruned",
                                        "OfoPruned",
                                        "OutOfWindowIcmps",
                                        "LockDroppedIcmps",
                                        "ArpFilter",
                                        "TW",
                                        "TWRecycled",
                                        "TWKilled",
                                        "PAWSActive",
                                        "PAWSEstab",
                                        "DelayedACKs",
                                        "DelayedACKLocked",
                                        "DelayedACKLost",
                                        "ListenOverflows",
                                        "ListenDrops",
                                        "TCPHPHits",
                                        "TCPPureAcks",
                                        "TCPHPAcks",
                                        "TCPRenoRecovery",
                                        "TCPSackRecovery",
                                        "TCPSACKReneging",
                                        "TCPSACKReorder",
                                        "TCPRenoReorder",
                                        "TCPTSReorder",
                                        "TCPFullUndo",
                                        "TCPPartialUndo",
                                        "TCPDSACKUndo",
                                        "TCPLossUndo",
                                        "TCPLostRetransmit",
                                        "TCPRenoFailures",
                                        "TCPSackFailures",
                                        "TCPLossFailures",
                                        "TCPFastRetrans",
                                        "TCPSlowStartRetrans",
                                        "TCPTimeouts",
                                        "TCPLossProbes",
                                        "TCPLossProbeRecovery",
                                        "TCPRenoRecoveryFail",
                                        "TCPSackRecoveryFail",
                                        "TCPRcvCollapsed",
                                        "TCPBacklogCoalesce",
                                        "TCPDSACKOldSent",
                                        "TCPDSACKOfoSent",
                                        "TCPDSACKRecv",
                                        "TCPDSACKOfoRecv",
                                        "TCPAbortOnData",
                                        "TCPAbortOnClose",
                                        "TCPAbortOnMemory",
                                        "TCPAbortOnTimeout",
                                        "TCPAbortOnLinger",
                                        "TCPAbortFailed",
                                        "TCPMemoryPressures",
                                        "TCPMemoryPressuresChrono",
                                        "TCPSACKDiscard",
                                        "TCPDSACKIgnoredOld",
                                        "TCPDSACKIgnoredNoUndo",
                                        "TCPSpuriousRTOs",
                                        "TCPMD5NotFound",
                                        "TCPMD5Unexpected",
                                        "TCPMD5Failure",
                                        "TCPSackShifted",
                                        "TCPSackMerged",
                                        "TCPSackShiftFallback",
                                        "TCPBacklogDrop",
                                        "PFMemallocDrop",
                                        "TCPMinTTLDrop",
                                        "TCPDeferAcceptDrop",
                                        "IPReversePathFilter",
                                        "TCPTimeWaitOverflow",
                                        "TCPReqQFullDoCookies",
                                        "TCPReqQFullDrop",
                                        "TCPRetransFail",
                                        "TCPRcvCoalesce",
                                        "TCPOFOQueue",
                                        "TCPOFODrop",
                                        "TCPOFOMerge",
                                        "TCPChallengeACK",
                                        "TCPSYNChallenge",
                                        "TCPFastOpenActive",
                                        "TCPFastOpenActiveFail",
                                        "TCPFastOpenPassive",
                                        "TCPFastOpenPassiveFail",
                                        "TCPFastOpenListenOverflow",
                                        "TCPFastOpenCookieReqd",
                                        "TCPFastOpenBlackhole",
                                        "TCPSpuriousRtxHostQueues",
                                        "BusyPollRxPackets",
                                        "TCPAutoCorking",
                                        "TCPFromZeroWindowAdv",
                                        "TCPToZeroWindowAdv",
                                        "TCPWantZeroWindowAdv",
                                        "TCPSynRetrans",
                                        "TCPOrigDataSent",
                                        "TCPHystartTrainDetect",
                                        "TCPHystartTrainCwnd",
                                        "TCPHystartDelayDetect",
                                        "TCPHystartDelayCwnd",
                                        "TCPACKSkippedSynRecv",
                                        "TCPACKSkippedPAWS",
                                        "TCPACKSkippedSeq",
                                        "TCPACKSkippedFinWait2",
                                        "TCPACKSkippedTimeWait",
                                        "TCPACKSkippedChallenge",
                                        "TCPWinProbe",
                                        "TCPKeepAlive",
                                        "TCPMTUPFail",
                                        "TCPMTUPSuccess",
                                        "TCPDelivered",
                                        "TCPDeliveredCE",
                                        "TCPAckCompressed",
                                        "TCPZeroWindowDrop",
                                        "TCPRcvQDrop",
                                        "TCPWqueueTooBig",
                                        "TCPFastOpenPassiveAltKey",
                                        "TcpTimeoutRehash",
                                        "TcpDuplicateDataRehash",
                                        "TCPDSACKRecvSegs",
                                        "TCPDSACKIgnoredDubious",
                                        "TCPMigrateReqSuccess",
                                        "TCPMigrateReqFailure",
                                        "TCPPLBRehash"};

// The names of TcpExtMib's entries, in its order.
constexpr const char* kTcpExtCounted[] = {
    "EmbryonicRsts",     "TW",
    "DelayedACKs",       "ListenOverflows",
    "ListenDrops",       "TCPPureAcks",
    "TCPTimeouts",       "TCPAbortOnData",
    "TCPAbortOnClose",   "TCPAbortOnMemory",
    "TCPAbortOnTimeout", "TCPAbortOnLinger",
    "TCPRcvCoalesce",    "TCPOFOQueue",
    "TCPSynRetrans",     "TCPOrigDataSent",
    "TCPKeepAlive",      "TCPDelivered",
    "TCPZeroWindowDrop", "TCPRcvQDrop"};
static_assert(std::size(kTcpExtCounted) ==
              static_cast<size_t>(TcpExtMib::kCount));

// snmp4_ipextstats_list (IpExt).
constexpr const char* kIpExtNames[] = {
    "InNoRoutes",    "InTruncatedPkts", "InMcastPkts",   "OutMcastPkts",
    "InBcastPkts",   "OutBcastPkts",    "InOctets",      "OutOctets",
    "InMcastOctets", "OutMcastOctets",  "InBcastOctets", "OutBcastOctets",
    "InCsumErrors",  "InNoECTPkts",     "InECT1Pkts",    "InECT0Pkts",
    "InCEPkts",      "ReasmOverlaps"};

// snmp6_ipstats_list: name and, for the counters kept, the IpMib entry
// (-1: always 0).
struct Ip6Name {
  const char* name;
  int entry;
};
constexpr Ip6Name kIp6Names[] = {
    {"Ip6InReceives", static_cast<int>(IpMib::kInReceives)},
    {"Ip6InHdrErrors", static_cast<int>(IpMib::kInHdrErrors)},
    {"Ip6InTooBigErrors", -1},
    {"Ip6InNoRoutes", -1},
    {"Ip6InAddrErrors", static_cast<int>(IpMib::kInAddrErrors)},
    {"Ip6InUnknownProtos", static_cast<int>(IpMib::kInUnknownProtos)},
    {"Ip6InTruncatedPkts", -1},
    {"Ip6InDiscards", static_cast<int>(IpMib::kInDiscards)},
    {"Ip6InDelivers", static_cast<int>(IpMib::kInDelivers)},
    {"Ip6OutForwDatagrams", static_cast<int>(IpMib::kForwDatagrams)},
    {"Ip6OutRequests", static_cast<int>(IpMib::kOutRequests)},
    {"Ip6OutDiscards", static_cast<int>(IpMib::kOutDiscards)},
    {"Ip6OutNoRoutes", static_cast<int>(IpMib::kOutNoRoutes)},
    {"Ip6ReasmTimeout", static_cast<int>(IpMib::kReasmTimeout)},
    {"Ip6ReasmReqds", static_cast<int>(IpMib::kReasmReqds)},
    {"Ip6ReasmOKs", static_cast<int>(IpMib::kReasmOKs)},
    {"Ip6ReasmFails", static_cast<int>(IpMib::kReasmFails)},
    {"Ip6FragOKs", static_cast<int>(IpMib::kFragOKs)},
    {"Ip6FragFails", static_cast<int>(IpMib::kFragFails)},
    {"Ip6FragCreates", static_cast<int>(IpMib::kFragCreates)},
    {"Ip6InMcastPkts", -1},
    {"Ip6OutMcastPkts", -1},
    {"Ip6InOctets", -1},
    {"Ip6OutOctets", -1},
    {"Ip6InMcastOctets", -1},
    {"Ip6OutMcastOctets", -1},
    {"Ip6InBcastOctets", -1},
    {"Ip6OutBcastOctets", -1},
    {"Ip6InNoECTPkts", -1},
    {"Ip6InECT1Pkts", -1},
    {"Ip6InECT0Pkts", -1},
    {"Ip6InCEPkts", -1},
    {"Ip6OutTransmits", static_cast<int>(IpMib::kOutTransmits)},
};

// snmp6_seq_show_icmpv6msg's named types.
constexpr IcmpName kIcmp6Map[] = {{"DestUnreachs", 1},
                                  {"PktTooBigs", 2},
                                  {"TimeExcds", 3},
                                  {"ParmProblems", 4},
                                  {"Echos", 128},
                                  {"EchoReplies", 129},
                                  {"GroupMembQueries", 130},
                                  {"GroupMembResponses", 131},
                                  {"GroupMembReductions", 132},
                                  {"RouterSolicits", 133},
                                  {"RouterAdvertisements", 134},
                                  {"NeighborSolicits", 135},
                                  {"NeighborAdvertisements", 136},
                                  {"Redirects", 137},
                                  {"MLDv2Reports", 143}};

int64_t Get(const std::atomic<int64_t>& a) {
  return a.load(std::memory_order_relaxed);
}

// seq_printf("%-32s\t%lu\n").
void Item6(std::string& out, const std::string& name, int64_t v) {
  absl::StrAppendFormat(&out, "%-32s\t%u\n", name, static_cast<uint64_t>(v));
}

}  // namespace

Mib& MibOf(NetNamespace& ns) { return ns.Get<Mib>(); }

void CountIcmpMsg(NetNamespace& ns, bool ipv6, bool out, uint8_t type) {
  Mib& m = MibOf(ns);
  auto& a = ipv6 ? m.icmp6msg : m.icmpmsg;
  a[(out ? 0x100 : 0) | type].fetch_add(1, std::memory_order_relaxed);
}

std::string FormatProcNetSnmp(NetNamespace& ns) {
  Mib& m = MibOf(ns);
  std::string out = "Ip: Forwarding DefaultTTL";
  for (const char* n : kIpNames) absl::StrAppend(&out, " ", n);
  // Forwarding: 2 (not a router); DefaultTTL: net.ipv4.ip_default_ttl.
  absl::StrAppend(&out, "\nIp: 2 ", ns.sysctl().ip_default_ttl.load());
  for (const auto& c : m.ip) {
    absl::StrAppend(&out, " ", static_cast<uint64_t>(Get(c)));
  }
  // icmp_put.
  absl::StrAppend(&out, "\nIcmp: InMsgs InErrors InCsumErrors");
  for (const auto& e : kIcmpMap) absl::StrAppend(&out, " In", e.name);
  absl::StrAppend(&out,
                  " OutMsgs OutErrors OutRateLimitGlobal OutRateLimitHost");
  for (const auto& e : kIcmpMap) absl::StrAppend(&out, " Out", e.name);
  auto icmp = [&](IcmpMib e) {
    return static_cast<uint64_t>(Get(m.icmp[static_cast<int>(e)]));
  };
  absl::StrAppend(&out, "\nIcmp: ", icmp(IcmpMib::kInMsgs), " ",
                  icmp(IcmpMib::kInErrors), " ", icmp(IcmpMib::kInCsumErrors));
  for (const auto& e : kIcmpMap) {
    absl::StrAppend(&out, " ", static_cast<uint64_t>(Get(m.icmpmsg[e.type])));
  }
  absl::StrAppend(&out, " ", icmp(IcmpMib::kOutMsgs), " ",
                  icmp(IcmpMib::kOutErrors), " ",
                  icmp(IcmpMib::kOutRateLimitGlobal), " ",
                  icmp(IcmpMib::kOutRateLimitHost));
  for (const auto& e : kIcmpMap) {
    absl::StrAppend(&out, " ",
                    static_cast<uint64_t>(Get(m.icmpmsg[0x100 | e.type])));
  }
  // icmpmsg_put: the nonzero types, 16 a line pair.
  {
    std::string names, vals;
    int count = 0;
    auto flush = [&] {
      if (count == 0) return;
      absl::StrAppend(&out, "\nIcmpMsg:", names, "\nIcmpMsg:", vals);
      names.clear();
      vals.clear();
      count = 0;
    };
    for (int i = 0; i < 512; i++) {
      const int64_t v = Get(m.icmpmsg[i]);
      if (v != 0) {
        absl::StrAppend(&names, " ", (i & 0x100) ? "Out" : "In", "Type",
                        i & 0xff);
        absl::StrAppend(&vals, " ", static_cast<uint64_t>(v));
        count++;
      }
      if (count == 16) flush();
    }
    flush();
  }
  // snmp_seq_show_tcp_udp.
  absl::StrAppend(&out, "\nTcp: RtoAlgorithm RtoMin RtoMax MaxConn");
  for (const char* n : kTcpNames) absl::StrAppend(&out, " ", n);
  absl::StrAppend(&out, "\nTcp: 1 200 120000 -1");
  for (const auto& c : m.tcp) {
    absl::StrAppend(&out, " ", static_cast<uint64_t>(Get(c)));
  }
  absl::StrAppend(&out, "\nUdp:");
  for (const char* n : kUdpNames) absl::StrAppend(&out, " ", n);
  absl::StrAppend(&out, "\nUdp:");
  for (const auto& c : m.udp) {
    absl::StrAppend(&out, " ", static_cast<uint64_t>(Get(c)));
  }
  absl::StrAppend(&out, "\nUdpLite:");
  for (const char* n : kUdpNames) absl::StrAppend(&out, " ", n);
  absl::StrAppend(&out, "\nUdpLite:");
  for (size_t i = 0; i < std::size(kUdpNames); i++) absl::StrAppend(&out, " 0");
  out += "\n";
  return out;
}

std::string FormatProcNetSnmp6(NetNamespace& ns) {
  Mib& m = MibOf(ns);
  std::string out;
  for (const auto& e : kIp6Names) {
    Item6(out, e.name, e.entry < 0 ? 0 : Get(m.ip6[e.entry]));
  }
  auto icmp6 = [&](IcmpMib e) { return Get(m.icmp6[static_cast<int>(e)]); };
  Item6(out, "Icmp6InMsgs", icmp6(IcmpMib::kInMsgs));
  Item6(out, "Icmp6InErrors", icmp6(IcmpMib::kInErrors));
  Item6(out, "Icmp6OutMsgs", icmp6(IcmpMib::kOutMsgs));
  Item6(out, "Icmp6OutErrors", icmp6(IcmpMib::kOutErrors));
  Item6(out, "Icmp6InCsumErrors", icmp6(IcmpMib::kInCsumErrors));
  Item6(out, "Icmp6OutRateLimitHost", icmp6(IcmpMib::kOutRateLimitHost));
  // snmp6_seq_show_icmpv6msg: by name for every i of both directions
  // whose type has one (in index order: In types, then Out types), then
  // the nonzero ones by number.
  for (int i = 0; i < 512; i++) {
    for (const auto& e : kIcmp6Map) {
      if (e.type != (i & 0xff)) continue;
      Item6(out, absl::StrCat("Icmp6", (i & 0x100) ? "Out" : "In", e.name),
            Get(m.icmp6msg[i]));
    }
  }
  for (int i = 0; i < 512; i++) {
    const int64_t v = Get(m.icmp6msg[i]);
    if (v == 0) continue;
    Item6(out,
          absl::StrCat("Icmp6", (i & 0x100) ? "Out" : "In", "Type", i & 0xff),
          v);
  }
  for (size_t i = 0; i < std::size(kUdpNames); i++) {
    Item6(out, absl::StrCat("Udp6", kUdpNames[i]), Get(m.udp6[i]));
  }
  // snmp6_udplite6_list has no IgnoredMulti.
  for (const char* n : kUdpNames) {
    if (strcmp(n, "IgnoredMulti") == 0) continue;
    Item6(out, absl::StrCat("UdpLite6", n), 0);
  }
  return out;
}

std::string FormatProcNetNetstat(NetNamespace& ns) {
  Mib& m = MibOf(ns);
  std::string out = "TcpExt:";
  for (const char* n : kTcpExtNames) absl::StrAppend(&out, " ", n);
  absl::StrAppend(&out, "\nTcpExt:");
  for (const char* n : kTcpExtNames) {
    int64_t v = 0;
    for (size_t i = 0; i < std::size(kTcpExtCounted); i++) {
      if (strcmp(kTcpExtCounted[i], n) == 0) v = Get(m.tcpext[i]);
    }
    absl::StrAppend(&out, " ", static_cast<uint64_t>(v));
  }
  absl::StrAppend(&out, "\nIpExt:");
  for (const char* n : kIpExtNames) absl::StrAppend(&out, " ", n);
  absl::StrAppend(&out, "\nIpExt:");
  for (size_t i = 0; i < std::size(kIpExtNames); i++) {
    absl::StrAppend(&out, " 0");
  }
  out += "\n";
  return out;
}

}  // namespace sandbox::net::inet
