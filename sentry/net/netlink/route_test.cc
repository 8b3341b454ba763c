#include "sentry/net/netlink/route.h"

#include <sys/socket.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sentry/net/netlink/message.h"
#include "sentry/net/stack/interfaces.h"

namespace sandbox::net::netlink {
namespace {

absl::Span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

struct Req {
  Builder b;
  size_t at;
  Req(uint16_t type, uint16_t flags, uint32_t seq, const void* hdr,
      size_t hdrlen) {
    at = b.Begin(type, flags, seq, 0);
    b.Append(hdr, hdrlen);
  }
  std::string Done() {
    b.End(at);
    return b.Take();
  }
};

std::string IfInfo(uint16_t type, uint16_t flags, uint32_t seq, int index = 0,
                   uint32_t ifi_flags = 0, uint32_t change = 0,
                   const char* name = nullptr) {
  struct {
    uint8_t family, pad;
    uint16_t type;
    int32_t index;
    uint32_t flags, change;
  } ifi = {0, 0, 0, index, ifi_flags, change};
  Req r(type, flags, seq, &ifi, sizeof(ifi));
  if (name != nullptr) r.b.AttrString(3, name);
  return r.Done();
}

std::string RtGen(uint16_t type, uint16_t flags, uint32_t seq, uint8_t family,
                  size_t hdrlen, uint32_t table_attr = 0) {
  uint8_t hdr[16] = {family};
  Req r(type, flags, seq, hdr, hdrlen);
  if (table_attr) r.b.AttrU32(15, table_attr);
  return r.Done();
}

std::vector<Message> All(const std::string& d) {
  return SplitMessages(Bytes(d));
}

int ErrorOf(const std::string& d) {
  std::vector<Message> m = All(d);
  EXPECT_EQ(m.size(), 1u);
  if (m.empty() || m[0].payload.size() < 4) return -1;
  int32_t e;
  memcpy(&e, m[0].payload.data(), 4);
  return -e;
}

class RouteTest : public ::testing::Test {
 protected:
  RouteTest() {
    rq.ifs = &ifs;
    rq.portid = 4321;
    rq.net_admin = true;
  }
  RouteResult Send(const std::string& s) { return HandleRoute(rq, Bytes(s)); }
  stack::Interfaces ifs;
  RouteRequest rq;
};

TEST_F(RouteTest, LinkDumpThenDoneAlone) {
  RouteResult r = Send(IfInfo(18, kFRequest | kFDump, 77));
  ASSERT_EQ(r.queued.size(), 1u);
  EXPECT_TRUE(r.queued[0].dump);
  std::vector<Message> m = All(r.queued[0].bytes);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].hdr.type, 16);  // RTM_NEWLINK
  EXPECT_EQ(m[0].hdr.flags, kFMulti);
  EXPECT_EQ(m[0].hdr.seq, 77u);
  EXPECT_EQ(m[0].hdr.pid, 4321u);
  KResult<AttrTable> t = ParseMessageAttrs(m[0], 16, 100, true);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Get(3)->String(), "lo");
  EXPECT_EQ(t->Get(4)->U32(), 65536u);
  EXPECT_EQ(t->Get(13)->U32(), 1000u);
  EXPECT_EQ(t->Get(6)->String(), "noqueue");
  EXPECT_EQ(t->Get(1)->data.size(), 6u);
  ASSERT_TRUE(t->Has(23));  // IFLA_STATS64
  ASSERT_EQ(r.dump_rest.size(), 1u);
  std::vector<Message> d = All(r.dump_rest[0]);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].hdr.type, kNlmsgDone);
  EXPECT_EQ(d[0].hdr.seq, 77u);
  EXPECT_EQ(ErrorOf(r.dump_rest[0]), 0);
}

TEST_F(RouteTest, Inet6LinkDump) {
  // `ip -6 addr`: AF_INET6's own link dump, with few attributes.
  uint8_t ifi[16] = {AF_INET6};
  Builder b;
  size_t at = b.Begin(18, kFRequest | kFDump, 3, 0);
  b.Append(ifi, sizeof(ifi));
  b.End(at);
  RouteResult r = Send(b.Take());
  ASSERT_EQ(r.queued.size(), 1u);
  std::vector<Message> m = All(r.queued[0].bytes);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].payload[0], AF_INET6);
  KResult<AttrTable> t = ParseMessageAttrs(m[0], 16, 100, true);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->Has(3));    // IFLA_IFNAME
  EXPECT_TRUE(t->Has(12));   // IFLA_PROTINFO
  EXPECT_FALSE(t->Has(6));   // no IFLA_QDISC
  EXPECT_FALSE(t->Has(13));  // no IFLA_TXQLEN
}

TEST_F(RouteTest, SecondDumpIsBusy) {
  std::string two =
      IfInfo(18, kFRequest | kFDump, 1) + IfInfo(18, kFRequest | kFDump, 2);
  RouteResult r = Send(two);
  ASSERT_EQ(r.queued.size(), 2u);
  EXPECT_EQ(ErrorOf(r.queued[1].bytes), EBUSY);
  rq.dump_running = true;
  r = Send(IfInfo(18, kFRequest | kFDump, 3));
  ASSERT_EQ(r.queued.size(), 1u);
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), EBUSY);
}

TEST_F(RouteTest, EmptyDumpIsDoneAtOnce) {
  // RTM_GETNEIGH: lo has no neighbours.
  RouteResult r = Send(RtGen(30, kFRequest | kFDump, 5, AF_UNSPEC, 12));
  ASSERT_EQ(r.queued.size(), 1u);
  EXPECT_EQ(All(r.queued[0].bytes)[0].hdr.type, kNlmsgDone);
  EXPECT_TRUE(r.dump_rest.empty());
}

TEST_F(RouteTest, AddrDump) {
  RouteResult r = Send(RtGen(22, kFRequest | kFDump, 9, AF_UNSPEC, 8));
  ASSERT_EQ(r.queued.size(), 1u);
  std::vector<Message> m = All(r.queued[0].bytes);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].payload[0], AF_INET);
  EXPECT_EQ(m[0].payload[1], 8);    // prefixlen
  EXPECT_EQ(m[0].payload[3], 254);  // RT_SCOPE_HOST
  KResult<AttrTable> t = ParseMessageAttrs(m[0], 8, 20, true);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Get(3)->String(), "lo");
  EXPECT_EQ(t->Get(2)->data[0], 127);
  EXPECT_EQ(m[1].payload[0], AF_INET6);
  EXPECT_EQ(m[1].payload[1], 128);
  // An IPv6 dump's NLMSG_DONE joins its last datagram (inet6_dump_addr).
  r = Send(RtGen(22, kFRequest | kFDump, 9, AF_INET6, 8));
  m = All(r.queued[0].bytes);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[1].hdr.type, kNlmsgDone);
  EXPECT_TRUE(r.dump_rest.empty());
}

TEST_F(RouteTest, RouteDumps) {
  // `ip route`: the main table is empty.
  rq.strict = true;
  RouteResult r = Send(RtGen(26, kFRequest | kFDump, 1, AF_INET, 12, 254));
  ASSERT_EQ(r.queued.size(), 1u);
  std::vector<Message> m = All(r.queued[0].bytes);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].hdr.type, kNlmsgDone);
  EXPECT_EQ(m[0].hdr.flags, kFMulti | kFDumpFiltered);
  // `ip route show table all`: the local table of both families.
  r = Send(RtGen(26, kFRequest | kFDump, 2, AF_UNSPEC, 12));
  m = All(r.queued[0].bytes);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].hdr.flags, kFMulti | kFDumpFiltered);
  EXPECT_EQ(m[3].payload[0], AF_INET6);
  ASSERT_EQ(r.dump_rest.size(), 1u);
  EXPECT_EQ(All(r.dump_rest[0])[0].hdr.flags, kFMulti);
  // A table that does not exist.
  rq.ext_ack = true;
  r = Send(RtGen(26, kFRequest | kFDump, 3, AF_INET, 12, 100));
  ASSERT_EQ(r.queued.size(), 1u);
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), ENOENT);
  EXPECT_THAT(r.queued[0].bytes, ::testing::HasSubstr("ipv4: FIB table does "
                                                      "not exist"));
}

TEST_F(RouteTest, StrictChecksHeaders) {
  rq.strict = true;
  // ifi_index in a link dump request.
  RouteResult r = Send(IfInfo(18, kFRequest | kFDump, 1, 1));
  ASSERT_EQ(r.queued.size(), 1u);
  EXPECT_EQ(All(r.queued[0].bytes)[0].hdr.type, kNlmsgDone);
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), EINVAL);
  rq.strict = false;
  r = Send(IfInfo(18, kFRequest | kFDump, 1, 1));
  EXPECT_EQ(All(r.queued[0].bytes)[0].hdr.type, 16);
}

TEST_F(RouteTest, GetLinkByIndexAndName) {
  RouteResult r = Send(IfInfo(18, kFRequest, 6, 1));
  ASSERT_EQ(r.queued.size(), 1u);
  std::vector<Message> m = All(r.queued[0].bytes);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].hdr.type, 16);
  EXPECT_EQ(m[0].hdr.flags, 0);
  r = Send(IfInfo(18, kFRequest, 6, 0, 0, 0, "lo"));
  EXPECT_EQ(All(r.queued[0].bytes)[0].hdr.type, 16);
  r = Send(IfInfo(18, kFRequest, 6, 0, 0, 0, "eth0"));
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), ENODEV);
  r = Send(IfInfo(18, kFRequest, 6, 9));
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), ENODEV);
  r = Send(IfInfo(18, kFRequest, 6));
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), EINVAL);
  r = Send(IfInfo(18, kFRequest, 6, 0, 0, 0, "a-name-longer-than-15"));
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), ERANGE);
}

TEST_F(RouteTest, SetLinkDownAndUp) {
  // What `ip link set lo down` sends.
  RouteResult r = Send(IfInfo(16, kFRequest | kFAck, 8, 1, 0, 1));
  ASSERT_EQ(r.queued.size(), 1u);
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), 0);
  EXPECT_EQ(All(r.queued[0].bytes)[0].hdr.flags, kFCapped);
  EXPECT_FALSE(ifs.LinkByIndex(1)->up());
  EXPECT_EQ(ifs.Addrs(AF_INET6).size(), 0u);
  r = Send(IfInfo(16, kFRequest | kFAck, 9, 1, 1, 1));
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), 0);
  EXPECT_TRUE(ifs.LinkByIndex(1)->up());
  // The probe `ip` sends first: no link named.
  r = Send(IfInfo(16, kFRequest | kFAck, 0));
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), ENODEV);
  EXPECT_EQ(All(r.queued[0].bytes)[0].hdr.len, 16u + 4 + 32);
  // Without CAP_NET_ADMIN.
  rq.net_admin = false;
  r = Send(IfInfo(16, kFRequest | kFAck, 10, 1, 0, 1));
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), EPERM);
  EXPECT_TRUE(ifs.LinkByIndex(1)->up());
}

TEST_F(RouteTest, ControlMessagesAndUnknownTypes) {
  Builder b;
  size_t at = b.Begin(kNlmsgNoop, kFRequest | kFAck, 3, 0);
  b.End(at);
  RouteResult r = Send(b.Take());
  ASSERT_EQ(r.queued.size(), 1u);
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), 0);
  r = Send(RtGen(200, kFRequest, 3, 0, 4));
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), EOPNOTSUPP);
  // No request flag, no ACK asked: nothing.
  r = Send(RtGen(18, 0, 3, 0, 16));
  EXPECT_TRUE(r.queued.empty());
  // Too short for a family byte: ignored.
  Builder e;
  at = e.Begin(18, kFRequest, 3, 0);
  e.End(at);
  EXPECT_TRUE(Send(e.Take()).queued.empty());
}

TEST_F(RouteTest, RouteGet) {
  uint8_t rtm[12] = {AF_INET, 32};
  Builder b;
  size_t at = b.Begin(26, kFRequest, 4, 0);
  b.Append(rtm, sizeof(rtm));
  uint8_t dst[4] = {127, 0, 0, 2};
  b.Attr(1, dst, 4);
  b.End(at);
  std::string req = b.Take();
  RouteResult r = Send(req);
  ASSERT_EQ(r.queued.size(), 1u);
  std::vector<Message> m = All(r.queued[0].bytes);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].hdr.type, 24);
  EXPECT_EQ(m[0].payload[7], 2);    // RTN_LOCAL
  EXPECT_EQ(m[0].payload[4], 254);  // the main table (merged with local)
  KResult<AttrTable> t = ParseMessageAttrs(m[0], 12, 31, true);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Get(4)->U32(), 1u);   // RTA_OIF lo
  EXPECT_EQ(t->Get(7)->data[3], 1);  // RTA_PREFSRC 127.0.0.1
  // Elsewhere: unreachable.
  req[req.size() - 4] = 8;
  r = Send(req);
  EXPECT_EQ(ErrorOf(r.queued[0].bytes), ENETUNREACH);
}

TEST_F(RouteTest, LargeDumpIsSplit) {
  rq.dump_size = 100;  // every message in a datagram of its own
  RouteResult r = Send(RtGen(26, kFRequest | kFDump, 2, AF_UNSPEC, 12));
  ASSERT_EQ(r.queued.size(), 1u);
  EXPECT_EQ(All(r.queued[0].bytes).size(), 1u);
  ASSERT_EQ(r.dump_rest.size(), 4u);  // 3 routes, then DONE
  EXPECT_EQ(All(r.dump_rest[3])[0].hdr.type, kNlmsgDone);
}

}  // namespace
}  // namespace sandbox::net::netlink
