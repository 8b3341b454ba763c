// /proc/net/{tcp,udp,...}'s rows and the counters' files.
#include "sentry/net/inet/proc.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <memory>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "sentry/net/inet/mib.h"
#include "sentry/net/namespace.h"
#include "sentry/net/proc_net.h"

namespace sandbox::net::inet {
namespace {

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> v = absl::StrSplit(s, '\n');
  EXPECT_TRUE(!v.empty() && v.back().empty()) << "no final newline";
  if (!v.empty()) v.pop_back();
  return v;
}

TEST(ProcTest, Tcp4Rows) {
  ProcRow l;
  l.local = {IpAddr::LoopbackV4(), 3306};
  l.state = 10;
  l.inode = 12345;
  l.refcount = 1;
  l.rto = 100;
  l.ato = 0;
  l.ssthresh = 0;
  ProcRow e;
  e.local = {IpAddr::LoopbackV4(), 3306};
  e.remote = {IpAddr::LoopbackV4(), 41652};
  e.state = 1;
  e.uid = 1000;
  e.inode = 23456;
  e.rx_queue = 5;
  auto lines = Lines(FormatTcpRows({l, e}, false));
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& s : lines) EXPECT_EQ(s.size(), 149u) << s;
  EXPECT_EQ(lines[0].substr(0, lines[0].find_last_not_of(' ') + 1),
            "  sl  local_address rem_address   st tx_queue rx_queue tr "
            "tm->when retrnsmt   uid  timeout inode");
  EXPECT_EQ(lines[1].substr(0, lines[1].find_last_not_of(' ') + 1),
            "   0: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 "
            "00:00000000 00000000     0        0 12345 1 0000000000000000 100 "
            "0 0 10 0");
  EXPECT_EQ(lines[2].substr(0, lines[2].find_last_not_of(' ') + 1),
            "   1: 0100007F:0CEA 0100007F:A2B4 01 00000000:00000005 "
            "00:00000000 00000000  1000        0 23456 2 0000000000000000 20 "
            "4 0 10 -1");
}

TEST(ProcTest, Tcp6AndUdpRows) {
  ProcRow r;
  r.local = {IpAddr::LoopbackV6(), 80};
  r.remote = {IpAddr::LoopbackV4(), 1};  // shown v4-mapped
  r.state = 1;
  r.inode = 7;
  auto lines = Lines(FormatTcpRows({r}, true));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "  sl  local_address                         remote_address       "
            "                 st tx_queue rx_queue tr tm->when retrnsmt   uid  "
            "timeout inode");
  EXPECT_EQ(lines[1],
            "   0: 00000000000000000000000001000000:0050 "
            "0000000000000000FFFF00000100007F:0001 01 00000000:00000000 "
            "00:00000000 00000000     0        0 7 2 0000000000000000 20 4 0 "
            "10 -1");
  ProcRow u;
  u.local = {IpAddr::AnyV4(), 53};
  u.state = 7;
  u.inode = 99;
  u.drops = 3;
  lines = Lines(FormatDgramRows({{53, u}}, false, false));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].size(), 127u);
  EXPECT_EQ(lines[1].substr(0, lines[1].find_last_not_of(' ') + 1),
            "   53: 00000000:0035 00000000:0000 07 00000000:00000000 "
            "00:00000000 00000000     0        0 99 2 0000000000000000 3");
  lines = Lines(FormatDgramRows({}, true, false));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "  sl  local_address                         remote_address       "
            "                 st tx_queue rx_queue tr tm->when retrnsmt   uid  "
            "timeout inode ref pointer drops");
}

TEST(ProcTest, Snmp) {
  NetNamespace ns;
  Count(ns, TcpMib::kActiveOpens);
  Count(ns, TcpMib::kCurrEstab, 2);
  Count(ns, UdpMib::kNoPorts, false, 4);
  Count(ns, UdpMib::kInDatagrams, true);
  CountIcmpMsg(ns, false, true, 3);
  auto lines = Lines(FormatProcNetSnmp(ns));
  ASSERT_EQ(lines.size(), 12u);
  EXPECT_EQ(lines[0],
            "Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors "
            "ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests "
            "OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs "
            "ReasmFails FragOKs FragFails FragCreates OutTransmits");
  EXPECT_EQ(lines[1], "Ip: 2 64 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0");
  EXPECT_EQ(lines[2],
            "Icmp: InMsgs InErrors InCsumErrors InDestUnreachs InTimeExcds "
            "InParmProbs InSrcQuenchs InRedirects InEchos InEchoReps "
            "InTimestamps InTimestampReps InAddrMasks InAddrMaskReps OutMsgs "
            "OutErrors OutRateLimitGlobal OutRateLimitHost OutDestUnreachs "
            "OutTimeExcds OutParmProbs OutSrcQuenchs OutRedirects OutEchos "
            "OutEchoReps OutTimestamps OutTimestampReps OutAddrMasks "
            "OutAddrMaskReps");
  EXPECT_EQ(lines[4], "IcmpMsg: OutType3");
  EXPECT_EQ(lines[5], "IcmpMsg: 1");
  EXPECT_EQ(lines[6],
            "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens "
            "AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs "
            "InErrs OutRsts InCsumErrors");
  EXPECT_EQ(lines[7], "Tcp: 1 200 120000 -1 1 0 0 0 2 0 0 0 0 0 0");
  EXPECT_EQ(lines[8],
            "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors "
            "SndbufErrors InCsumErrors IgnoredMulti MemErrors");
  EXPECT_EQ(lines[9], "Udp: 0 4 0 0 0 0 0 0 0");
  EXPECT_EQ(lines[10].substr(0, 20), "UdpLite: InDatagrams");

  const std::string s6 = FormatProcNetSnmp6(ns);
  EXPECT_NE(s6.find("Ip6InReceives                   \t0\n"),
            std::string::npos);
  EXPECT_NE(s6.find("Udp6InDatagrams                 \t1\n"),
            std::string::npos);
  EXPECT_NE(s6.find("Icmp6OutRateLimitHost           \t0\n"),
            std::string::npos);
  EXPECT_EQ(s6.find("UdpLite6IgnoredMulti"), std::string::npos);

  Count(ns, TcpExtMib::kListenOverflows, 7);
  lines = Lines(FormatProcNetNetstat(ns));
  ASSERT_EQ(lines.size(), 4u);
  std::vector<std::string> names = absl::StrSplit(lines[0], ' ');
  std::vector<std::string> vals = absl::StrSplit(lines[1], ' ');
  ASSERT_EQ(names.size(), vals.size());
  EXPECT_EQ(names[0], "TcpExt:");
  bool found = false;
  for (size_t i = 0; i < names.size(); i++) {
    if (names[i] == "ListenOverflows") {
      EXPECT_EQ(vals[i], "7");
      found = true;
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(lines[2].substr(0, 18), "IpExt: InNoRoutes ");
}

class RowSocket : public InetSocket {
 public:
  RowSocket(int family, Proto p)
      : InetSocket(family, p == Proto::kTcp ? SOCK_STREAM : SOCK_DGRAM, 0,
                   O_RDWR, {}, p) {}
  ProcRow proc_row() const override {
    ProcRow r;
    r.local = LocalAddr();
    r.inode = ino();
    r.state = 7;
    return r;
  }
};

TEST(ProcTest, CollectsBoundSocketsOfTheFamily) {
  NetNamespace ns;
  auto a = std::make_shared<RowSocket>(AF_INET, Proto::kUdp);
  auto b = std::make_shared<RowSocket>(AF_INET6, Proto::kUdp);
  auto unbound = std::make_shared<RowSocket>(AF_INET, Proto::kUdp);
  a->AttachNamespace(ns);
  b->AttachNamespace(ns);
  unbound->AttachNamespace(ns);
  Caller c;
  ASSERT_TRUE(a->BindTo(c, {IpAddr::LoopbackV4(), 5353}).ok());
  ASSERT_TRUE(b->BindTo(c, {IpAddr::AnyV6(), 5354}).ok());
  auto rows = CollectRows(ns, Proto::kUdp, AF_INET);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].local.port, 5353);
  EXPECT_EQ(rows[0].inode, a->ino());
  rows = CollectRows(ns, Proto::kUdp, AF_INET6);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].local.port, 5354);
  // Registered names.
  RegisterProcFiles();
  auto text = GenerateProcNetFile("udp", ns);
  ASSERT_TRUE(text.has_value());
  EXPECT_NE(text->find(": 0100007F:14E9 00000000:0000 07"), std::string::npos)
      << *text;
  for (const char* n : {"tcp", "tcp6", "udp6", "icmp", "icmp6", "raw", "raw6",
                        "udplite", "udplite6", "snmp", "snmp6", "netstat"}) {
    EXPECT_TRUE(GenerateProcNetFile(n, ns).has_value()) << n;
  }
}

}  // namespace
}  // namespace sandbox::net::inet
