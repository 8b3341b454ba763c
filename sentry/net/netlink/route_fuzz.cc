// Fuzzes the netlink message parser and NETLINK_ROUTE's kernel side: the
// first byte picks the socket's options (strict checking, extended ACKs,
// capped ACKs, CAP_NET_ADMIN, a dump running), the rest is what the guest
// sent. Checks that every reply is a well-formed sequence of netlink
// messages (each nlmsg_len within the datagram, aligned) whatever the
// input, and that the interface table stays consistent.
#include <cstddef>
#include <cstdint>

#include "sentry/net/netlink/message.h"
#include "sentry/net/netlink/route.h"
#include "sentry/net/stack/interfaces.h"

namespace {

using sandbox::net::netlink::Align;
using sandbox::net::netlink::Header;
using sandbox::net::netlink::kHeaderLen;

void CheckWellFormed(const std::string& d) {
  size_t at = 0;
  if (d.size() < kHeaderLen) __builtin_trap();
  while (at < d.size()) {
    if (d.size() - at < kHeaderLen) __builtin_trap();
    Header h;
    memcpy(&h, d.data() + at, sizeof(h));
    if (h.len < kHeaderLen || h.len > d.size() - at) __builtin_trap();
    if (h.len % 4 != 0) __builtin_trap();
    at += Align(h.len);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  sandbox::net::stack::Interfaces ifs;
  sandbox::net::netlink::RouteRequest rq;
  rq.ifs = &ifs;
  rq.portid = 1234;
  rq.strict = data[0] & 1;
  rq.ext_ack = data[0] & 2;
  rq.cap_ack = data[0] & 4;
  rq.net_admin = data[0] & 8;
  rq.dump_running = data[0] & 16;
  rq.dump_size = (data[0] & 32) ? 100 : sandbox::net::netlink::kDumpGoodSize;
  absl::Span<const uint8_t> in(data + 1, size - 1);
  // Every attribute of every message, as the handlers walk them.
  for (const auto& m : sandbox::net::netlink::SplitMessages(in)) {
    auto p = sandbox::net::netlink::ParseAttrs(m.payload);
    for (const auto& a : p.attrs) {
      (void)a.String();
      (void)a.U32();
      (void)sandbox::net::netlink::ParseAttrs(a.data);
    }
  }
  sandbox::net::netlink::RouteResult r =
      sandbox::net::netlink::HandleRoute(rq, in);
  for (const auto& q : r.queued) CheckWellFormed(q.bytes);
  for (const auto& q : r.dump_rest) CheckWellFormed(q);
  if (ifs.Links().size() != 1) __builtin_trap();
  return 0;
}
