// NETLINK_ROUTE's kernel side (Linux's rtnetlink_rcv over net/core/
// rtnetlink.c, net/ipv4/devinet.c, fib_frontend.c, net/ipv6/addrconf.c,
// route.c) for the table of stack::Interfaces: a pure function from the
// bytes a socket sent to the datagrams it receives, testable and fuzzable
// alone.
//
// Handled: RTM_GETLINK (dump, or one link by index or name),
// RTM_GETROUTE requests (`ip route get`: which route a destination takes),
// RTM_NEWLINK/RTM_SETLINK of an existing link (flags: up/down, promisc;
// IFLA_MTU, IFLA_TXQLEN, IFLA_GROUP; CAP_NET_ADMIN), RTM_GETADDR (dumps of
// AF_INET, AF_INET6 or both; one IPv6 address), RTM_GETROUTE dumps, and
// RTM_GETNEIGH dumps (empty: lo has no neighbours). Requests are checked
// as Linux checks them, including NETLINK_GET_STRICT_CHK's header and
// attribute checks; errors come back as NLMSG_ERROR (with the request
// echoed unless NETLINK_CAP_ACK, and Linux's message when NETLINK_EXT_ACK
// is on), dump errors in NLMSG_DONE. Everything else rtnetlink has is
// EOPNOTSUPP, logged once per message type. Changes of the table are
// announced to listeners of RTNLGRP_LINK, *_IFADDR and *_ROUTE
// (Notification; netlink.cc multicasts them).
#ifndef SENTRY_NET_NETLINK_ROUTE_H_
#define SENTRY_NET_NETLINK_ROUTE_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "sentry/net/stack/interfaces.h"

namespace sandbox::net::netlink {

// The number of multicast groups of NETLINK_ROUTE (RTNLGRP_MAX of Linux
// 6.18): bind masks and NETLINK_ADD_MEMBERSHIP are limited to it.
inline constexpr uint32_t kRouteGroups = 39;

// NLMSG_GOODSIZE on 4 KiB pages: the least a dump datagram holds.
inline constexpr size_t kDumpGoodSize = 3776;

struct RouteRequest {
  stack::Interfaces* ifs = nullptr;
  uint32_t portid = 0;        // the sender's port id (replies' nlmsg_pid)
  bool strict = false;        // NETLINK_GET_STRICT_CHK
  bool cap_ack = false;       // NETLINK_CAP_ACK
  bool ext_ack = false;       // NETLINK_EXT_ACK
  bool net_admin = false;     // the sender has CAP_NET_ADMIN
  uint32_t uid = 0;           // the sender's real uid (RTA_UID)
  bool dump_running = false;  // a dump of this socket is not finished
  size_t dump_size = kDumpGoodSize;  // bytes per dump datagram
};

struct RouteReply {
  std::string bytes;
  bool dump = false;  // a dump's datagram (queued whatever the room)
};

struct RouteResult {
  // Datagrams for the sender's receive queue now, in order.
  std::vector<RouteReply> queued;
  // The rest of the dump started (netlink_dump's later rounds, ending
  // with NLMSG_DONE), given to the sender as it reads; empty if no dump
  // was started or it ended in its first datagram.
  std::vector<std::string> dump_rest;
};

// Processes one sendmsg's bytes (netlink_rcv_skb + rtnetlink_rcv_msg).
// At most one dump is started: a dump request while `dump_running` (or
// after one started by the same buffer) is EBUSY.
RouteResult HandleRoute(const RouteRequest& req,
                        absl::Span<const uint8_t> bytes);

// The message rtnetlink multicasts for change `c` (seq 0, port 0), and in
// *group the RTNLGRP_* it goes to.
std::string Notification(const stack::Change& c, uint32_t* group);

}  // namespace sandbox::net::netlink

#endif  // SENTRY_NET_NETLINK_ROUTE_H_
