// AF_NETLINK sockets: NETLINK_ROUTE dumps and requests (RTM_GETLINK,
// RTM_GETADDR, RTM_GETROUTE, RTM_NEWLINK), their framing (sequence numbers,
// port ids, NLM_F_MULTI, NLMSG_DONE, NLMSG_ERROR and ACKs, truncation),
// port ids and binding, SOL_NETLINK options, NETLINK_KOBJECT_UEVENT.
//
// Natively the host's interfaces are seen: the cases look for lo and its
// addresses, never for the absence of others. Cases that take lo down run
// natively in a new network namespace; in the sandbox (no unshare(2):
// ENOSYS) in its own, which they leave as they found it.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr int kSolNetlink = 270;
constexpr uint32_t kIffLowerUp = 0x10000;  // IFF_LOWER_UP (linux/if.h)

struct Msg {
  nlmsghdr hdr;
  std::string payload;  // nlmsg_len - 16 bytes
};

// The messages of one datagram; a malformed one is a test failure.
std::vector<Msg> Split(const std::string& d) {
  std::vector<Msg> out;
  size_t at = 0;
  while (at < d.size()) {
    if (d.size() - at < sizeof(nlmsghdr)) {
      ADD_FAILURE() << "short tail of " << d.size() - at << " bytes";
      break;
    }
    nlmsghdr h;
    memcpy(&h, d.data() + at, sizeof(h));
    if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > d.size() - at) {
      ADD_FAILURE() << "bad nlmsg_len " << h.nlmsg_len;
      break;
    }
    out.push_back({h, d.substr(at + sizeof(h), h.nlmsg_len - sizeof(h))});
    at += NLMSG_ALIGN(h.nlmsg_len);
  }
  return out;
}

struct Attr {
  uint16_t type;
  std::string data;
};

std::vector<Attr> Attrs(const std::string& p, size_t hdrlen) {
  std::vector<Attr> out;
  size_t at = NLMSG_ALIGN(hdrlen);
  while (at + 4 <= p.size()) {
    uint16_t len, type;
    memcpy(&len, p.data() + at, 2);
    memcpy(&type, p.data() + at + 2, 2);
    if (len < 4 || len > p.size() - at) {
      ADD_FAILURE() << "bad nla_len " << len;
      break;
    }
    out.push_back({static_cast<uint16_t>(type & NLA_TYPE_MASK),
                   p.substr(at + 4, len - 4)});
    at += NLA_ALIGN(len);
  }
  return out;
}

const Attr* Find(const std::vector<Attr>& a, uint16_t type) {
  for (const Attr& x : a) {
    if (x.type == type) return &x;
  }
  return nullptr;
}

uint32_t U32(const Attr* a) {
  uint32_t v = 0;
  if (a != nullptr && a->data.size() >= 4) memcpy(&v, a->data.data(), 4);
  return v;
}

std::string Request(uint16_t type, uint16_t flags, uint32_t seq,
                    const void* hdr, size_t hdrlen,
                    const std::string& attrs = "") {
  nlmsghdr h = {};
  h.nlmsg_len = NLMSG_LENGTH(NLMSG_ALIGN(hdrlen) + attrs.size());
  h.nlmsg_type = type;
  h.nlmsg_flags = flags;
  h.nlmsg_seq = seq;
  std::string s(reinterpret_cast<const char*>(&h), sizeof(h));
  s.append(static_cast<const char*>(hdr), hdrlen);
  s.resize(NLMSG_LENGTH(NLMSG_ALIGN(hdrlen)), '\0');
  s += attrs;
  return s;
}

std::string AttrBytes(uint16_t type, const void* data, size_t n) {
  uint16_t len = 4 + n;
  std::string s(reinterpret_cast<const char*>(&len), 2);
  s.append(reinterpret_cast<const char*>(&type), 2);
  s.append(static_cast<const char*>(data), n);
  s.resize(NLA_ALIGN(s.size()), '\0');
  return s;
}

std::string LinkRequest(uint16_t flags, uint32_t seq, int index = 0,
                        const std::string& attrs = "") {
  ifinfomsg ifi = {};
  ifi.ifi_index = index;
  return Request(RTM_GETLINK, flags, seq, &ifi, sizeof(ifi), attrs);
}

// A NETLINK_ROUTE socket, bound (autobind).
struct RouteSocket {
  FileDescriptor fd;
  uint32_t portid = 0;
  explicit RouteSocket(int type = SOCK_RAW) {
    fd.reset(socket(AF_NETLINK, type | SOCK_CLOEXEC, NETLINK_ROUTE));
    EXPECT_TRUE(fd.valid()) << strerror(errno);
    sockaddr_nl a = {};
    a.nl_family = AF_NETLINK;
    EXPECT_THAT(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)),
                SyscallSucceeds());
    socklen_t len = sizeof(a);
    EXPECT_THAT(getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len),
                SyscallSucceeds());
    portid = a.nl_pid;
  }
  void Send(const std::string& s) {
    EXPECT_THAT(send(fd.get(), s.data(), s.size(), 0),
                SyscallSucceedsWithValue(static_cast<ssize_t>(s.size())));
  }
  // One datagram (waiting at most 5 s), or nullopt.
  std::optional<std::string> Recv(size_t size = 32768, int flags = 0,
                                  int* msg_flags = nullptr) {
    pollfd p = {fd.get(), POLLIN, 0};
    if (poll(&p, 1, 5000) != 1) return std::nullopt;
    std::string buf(size, '\0');
    iovec iov = {buf.data(), size};
    sockaddr_nl from = {};
    msghdr m = {};
    m.msg_name = &from;
    m.msg_namelen = sizeof(from);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    ssize_t n = recvmsg(fd.get(), &m, flags | MSG_DONTWAIT);
    if (n < 0) return std::nullopt;
    EXPECT_EQ(m.msg_namelen, sizeof(sockaddr_nl));
    EXPECT_EQ(from.nl_family, AF_NETLINK);
    EXPECT_EQ(from.nl_pid, 0u);  // from the kernel
    if (msg_flags != nullptr) *msg_flags = m.msg_flags;
    buf.resize(std::min<size_t>(n, size));
    return buf;
  }
  // Every message of a dump up to and including NLMSG_DONE; checks the
  // framing: seq and pid echoed, NLM_F_MULTI, DONE alone in its datagram.
  std::vector<Msg> Dump(uint32_t seq) {
    std::vector<Msg> out;
    for (int i = 0; i < 1000; ++i) {
      std::optional<std::string> d = Recv();
      if (!d) {
        ADD_FAILURE() << "dump ended without NLMSG_DONE";
        return out;
      }
      std::vector<Msg> ms = Split(*d);
      for (const Msg& m : ms) {
        EXPECT_EQ(m.hdr.nlmsg_seq, seq);
        EXPECT_EQ(m.hdr.nlmsg_pid, portid);
        EXPECT_TRUE(m.hdr.nlmsg_flags & NLM_F_MULTI) << m.hdr.nlmsg_type;
        out.push_back(m);
        if (m.hdr.nlmsg_type == NLMSG_DONE) {
          EXPECT_EQ(&m, &ms.back()) << "NLMSG_DONE is not last";
          return out;
        }
      }
    }
    ADD_FAILURE() << "endless dump";
    return out;
  }
  bool Empty() {
    char c;
    return recv(fd.get(), &c, 1, MSG_DONTWAIT | MSG_PEEK) < 0 &&
           errno == EAGAIN;
  }
  void SetOpt(int name, int v) {
    EXPECT_THAT(setsockopt(fd.get(), kSolNetlink, name, &v, sizeof(v)),
                SyscallSucceeds());
  }
};

int ErrorOf(const Msg& m) {
  int32_t e = 1;
  if (m.payload.size() >= 4) memcpy(&e, m.payload.data(), 4);
  return -e;
}

TEST(NetlinkTest, SocketTypesAndProtocols) {
  for (int type : {SOCK_RAW, SOCK_DGRAM}) {
    for (int proto : {NETLINK_ROUTE, NETLINK_KOBJECT_UEVENT}) {
      FileDescriptor fd(socket(AF_NETLINK, type, proto));
      EXPECT_TRUE(fd.valid()) << type << " " << proto << strerror(errno);
    }
  }
  EXPECT_THAT(socket(AF_NETLINK, SOCK_STREAM, NETLINK_ROUTE),
              SyscallFailsWithErrno(ESOCKTNOSUPPORT));
  EXPECT_THAT(socket(AF_NETLINK, SOCK_SEQPACKET, NETLINK_ROUTE),
              SyscallFailsWithErrno(ESOCKTNOSUPPORT));
  EXPECT_THAT(socket(AF_NETLINK, SOCK_RAW, 32),
              SyscallFailsWithErrno(EPROTONOSUPPORT));
  int sv[2];
  EXPECT_THAT(socketpair(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE, sv),
              SyscallFailsWithErrno(EOPNOTSUPP));
}

TEST(NetlinkTest, OperationsTheFamilyLacks) {
  FileDescriptor fd(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
  ASSERT_TRUE(fd.valid());
  EXPECT_THAT(listen(fd.get(), 1), SyscallFailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(accept(fd.get(), nullptr, nullptr),
              SyscallFailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(shutdown(fd.get(), SHUT_RDWR), SyscallFailsWithErrno(EOPNOTSUPP));
  char c = 0;
  EXPECT_THAT(send(fd.get(), &c, 1, MSG_OOB),
              SyscallFailsWithErrno(EOPNOTSUPP));
  EXPECT_THAT(recv(fd.get(), &c, 1, MSG_OOB | MSG_DONTWAIT),
              SyscallFailsWithErrno(EOPNOTSUPP));
}

TEST(NetlinkTest, AutobindUsesTheTgidThenNegativeIds) {
  FileDescriptor a(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
  FileDescriptor b(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
  ASSERT_TRUE(a.valid() && b.valid());
  sockaddr_nl n = {};
  socklen_t len = sizeof(n);
  ASSERT_THAT(getsockname(a.get(), reinterpret_cast<sockaddr*>(&n), &len),
              SyscallSucceeds());
  EXPECT_EQ(len, sizeof(sockaddr_nl));
  EXPECT_EQ(n.nl_family, AF_NETLINK);
  EXPECT_EQ(n.nl_pid, 0u);  // not bound yet
  sockaddr_nl z = {};
  z.nl_family = AF_NETLINK;
  ASSERT_THAT(bind(a.get(), reinterpret_cast<sockaddr*>(&z), sizeof(z)),
              SyscallSucceeds());
  ASSERT_THAT(getsockname(a.get(), reinterpret_cast<sockaddr*>(&n), &len),
              SyscallSucceeds());
  EXPECT_EQ(n.nl_pid, static_cast<uint32_t>(getpid()));
  // The tgid is taken: a negative id.
  ASSERT_THAT(bind(b.get(), reinterpret_cast<sockaddr*>(&z), sizeof(z)),
              SyscallSucceeds());
  ASSERT_THAT(getsockname(b.get(), reinterpret_cast<sockaddr*>(&n), &len),
              SyscallSucceeds());
  EXPECT_LT(static_cast<int32_t>(n.nl_pid), -4096);
  // A bound socket keeps its id; a taken id is EADDRINUSE.
  sockaddr_nl other = z;
  other.nl_pid = 12345;
  EXPECT_THAT(bind(a.get(), reinterpret_cast<sockaddr*>(&other), sizeof(other)),
              SyscallFailsWithErrno(EINVAL));
  FileDescriptor c(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
  sockaddr_nl taken = z;
  taken.nl_pid = getpid();
  EXPECT_THAT(bind(c.get(), reinterpret_cast<sockaddr*>(&taken), sizeof(taken)),
              SyscallFailsWithErrno(EADDRINUSE));
  // Short addresses and other families.
  EXPECT_THAT(bind(c.get(), reinterpret_cast<sockaddr*>(&z), sizeof(z) - 1),
              SyscallFailsWithErrno(EINVAL));
  sockaddr_nl bad = z;
  bad.nl_family = AF_UNIX;
  EXPECT_THAT(bind(c.get(), reinterpret_cast<sockaddr*>(&bad), sizeof(bad)),
              SyscallFailsWithErrno(EINVAL));
  // The same id is free in another protocol.
  FileDescriptor u(socket(AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT));
  EXPECT_THAT(bind(u.get(), reinterpret_cast<sockaddr*>(&taken), sizeof(taken)),
              SyscallSucceeds());
  // Closing frees an id.
  a.reset();
  EXPECT_THAT(bind(c.get(), reinterpret_cast<sockaddr*>(&taken), sizeof(taken)),
              SyscallSucceeds());
}

TEST(NetlinkTest, SendAutobinds) {
  FileDescriptor fd(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
  ASSERT_TRUE(fd.valid());
  EXPECT_THAT(send(fd.get(), "", 0, 0), SyscallFailsWithErrno(ENODATA));
  std::string req = LinkRequest(NLM_F_REQUEST | NLM_F_DUMP, 1);
  ASSERT_THAT(send(fd.get(), req.data(), req.size(), 0), SyscallSucceeds());
  sockaddr_nl n = {};
  socklen_t len = sizeof(n);
  ASSERT_THAT(getsockname(fd.get(), reinterpret_cast<sockaddr*>(&n), &len),
              SyscallSucceeds());
  EXPECT_NE(n.nl_pid, 0u);
}

TEST(NetlinkTest, LinkDumpHasLoopback) {
  RouteSocket s;
  s.Send(LinkRequest(NLM_F_REQUEST | NLM_F_DUMP, 4242));
  std::vector<Msg> ms = s.Dump(4242);
  ASSERT_FALSE(ms.empty());
  EXPECT_EQ(ErrorOf(ms.back()), 0);  // NLMSG_DONE's payload
  bool found = false;
  for (const Msg& m : ms) {
    if (m.hdr.nlmsg_type != RTM_NEWLINK) continue;
    ASSERT_GE(m.payload.size(), sizeof(ifinfomsg));
    ifinfomsg ifi;
    memcpy(&ifi, m.payload.data(), sizeof(ifi));
    std::vector<Attr> a = Attrs(m.payload, sizeof(ifi));
    const Attr* name = Find(a, IFLA_IFNAME);
    ASSERT_NE(name, nullptr);
    if (std::string(name->data.c_str()) != "lo") continue;
    found = true;
    EXPECT_EQ(name->data, std::string("lo\0", 3));
    EXPECT_EQ(ifi.ifi_type, 772);  // ARPHRD_LOOPBACK
    EXPECT_EQ(ifi.ifi_index, static_cast<int>(if_nametoindex("lo")));
    EXPECT_TRUE(ifi.ifi_flags & IFF_LOOPBACK);
    EXPECT_TRUE(ifi.ifi_flags & IFF_UP);
    EXPECT_TRUE(ifi.ifi_flags & IFF_RUNNING);
    EXPECT_EQ(U32(Find(a, IFLA_MTU)), 65536u);
    EXPECT_NE(Find(a, IFLA_TXQLEN), nullptr);
    ASSERT_NE(Find(a, IFLA_QDISC), nullptr);
    EXPECT_EQ(std::string(Find(a, IFLA_QDISC)->data.c_str()), "noqueue");
    ASSERT_NE(Find(a, IFLA_ADDRESS), nullptr);
    EXPECT_EQ(Find(a, IFLA_ADDRESS)->data, std::string(6, '\0'));
    ASSERT_NE(Find(a, IFLA_OPERSTATE), nullptr);
    EXPECT_EQ(Find(a, IFLA_OPERSTATE)->data[0], 0);  // IF_OPER_UNKNOWN
    ASSERT_NE(Find(a, IFLA_STATS64), nullptr);
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(s.Empty());
}

// RTEXT_FILTER_SKIP_STATS (what iproute2 asks when it looks a name up)
// leaves the link counters in.
TEST(NetlinkTest, GetLinkByNameIsOneReply) {
  RouteSocket s;
  uint32_t mask = RTEXT_FILTER_SKIP_STATS;
  s.Send(LinkRequest(
      NLM_F_REQUEST, 7, 0,
      AttrBytes(IFLA_IFNAME, "lo", 3) + AttrBytes(IFLA_EXT_MASK, &mask, 4)));
  std::optional<std::string> d = s.Recv();
  ASSERT_TRUE(d);
  std::vector<Msg> ms = Split(*d);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].hdr.nlmsg_type, RTM_NEWLINK);
  EXPECT_EQ(ms[0].hdr.nlmsg_flags, 0);  // not a dump: no NLM_F_MULTI
  EXPECT_EQ(ms[0].hdr.nlmsg_seq, 7u);
  std::vector<Attr> a = Attrs(ms[0].payload, sizeof(ifinfomsg));
  EXPECT_NE(Find(a, IFLA_STATS64), nullptr);
  ASSERT_NE(Find(a, IFLA_IFNAME), nullptr);
  EXPECT_EQ(std::string(Find(a, IFLA_IFNAME)->data.c_str()), "lo");
  EXPECT_NE(Find(a, IFLA_MTU), nullptr);
  EXPECT_TRUE(s.Empty());  // no NLMSG_DONE for a single reply
}

TEST(NetlinkTest, GetLinkErrorsEchoTheRequest) {
  RouteSocket s;
  std::string req = LinkRequest(NLM_F_REQUEST, 8, 0x7ffffff0);
  s.Send(req);
  std::optional<std::string> d = s.Recv();
  ASSERT_TRUE(d);
  std::vector<Msg> ms = Split(*d);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].hdr.nlmsg_type, NLMSG_ERROR);
  EXPECT_EQ(ms[0].hdr.nlmsg_seq, 8u);
  EXPECT_EQ(ms[0].hdr.nlmsg_pid, s.portid);
  EXPECT_EQ(ErrorOf(ms[0]), ENODEV);
  // nlmsgerr: the error, then the whole request.
  EXPECT_EQ(ms[0].hdr.nlmsg_len, NLMSG_LENGTH(4 + req.size()));
  EXPECT_EQ(ms[0].payload.substr(4), req);
  // No index and no name.
  s.Send(LinkRequest(NLM_F_REQUEST, 9));
  d = s.Recv();
  ASSERT_TRUE(d);
  EXPECT_EQ(ErrorOf(Split(*d)[0]), EINVAL);
  // A name too long for IFNAMSIZ.
  s.Send(LinkRequest(NLM_F_REQUEST, 10, 0,
                     AttrBytes(IFLA_IFNAME, "0123456789abcdefg", 18)));
  d = s.Recv();
  ASSERT_TRUE(d);
  EXPECT_EQ(ErrorOf(Split(*d)[0]), ERANGE);
}

TEST(NetlinkTest, AckAndCapAck) {
  RouteSocket s;
  nlmsghdr noop = {sizeof(nlmsghdr), NLMSG_NOOP, NLM_F_REQUEST | NLM_F_ACK, 31,
                   0};
  s.Send(std::string(reinterpret_cast<char*>(&noop), sizeof(noop)));
  std::optional<std::string> d = s.Recv();
  ASSERT_TRUE(d);
  std::vector<Msg> ms = Split(*d);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].hdr.nlmsg_type, NLMSG_ERROR);
  EXPECT_EQ(ms[0].hdr.nlmsg_flags, NLM_F_CAPPED);
  EXPECT_EQ(ms[0].hdr.nlmsg_len, NLMSG_LENGTH(sizeof(nlmsgerr)));
  EXPECT_EQ(ErrorOf(ms[0]), 0);
  EXPECT_EQ(ms[0].hdr.nlmsg_seq, 31u);
  // With NETLINK_CAP_ACK an error is capped too.
  s.SetOpt(NETLINK_CAP_ACK, 1);
  s.Send(LinkRequest(NLM_F_REQUEST, 32, 0x7ffffff0));
  d = s.Recv();
  ASSERT_TRUE(d);
  ms = Split(*d);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ErrorOf(ms[0]), ENODEV);
  EXPECT_EQ(ms[0].hdr.nlmsg_flags, NLM_F_CAPPED);
  EXPECT_EQ(ms[0].hdr.nlmsg_len, NLMSG_LENGTH(sizeof(nlmsgerr)));
  // A message without NLM_F_REQUEST is only acknowledged.
  s.Send(LinkRequest(NLM_F_ACK, 33));
  d = s.Recv();
  ASSERT_TRUE(d);
  EXPECT_EQ(ErrorOf(Split(*d)[0]), 0);
  EXPECT_TRUE(s.Empty());
}

TEST(NetlinkTest, UnknownTypeIsEopnotsupp) {
  RouteSocket s;
  uint8_t fam[4] = {};
  s.Send(Request(200, NLM_F_REQUEST, 5, fam, sizeof(fam)));
  std::optional<std::string> d = s.Recv();
  ASSERT_TRUE(d);
  EXPECT_EQ(ErrorOf(Split(*d)[0]), EOPNOTSUPP);
}

TEST(NetlinkTest, MalformedBuffersAreIgnored) {
  RouteSocket s;
  // Too short for a header; nlmsg_len below the header or past the end.
  EXPECT_THAT(send(s.fd.get(), "\x01\x02\x03", 3, 0),
              SyscallSucceedsWithValue(3));
  nlmsghdr h = {15, RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, 1, 0};
  EXPECT_THAT(send(s.fd.get(), &h, sizeof(h), 0), SyscallSucceedsWithValue(16));
  h.nlmsg_len = 100;
  EXPECT_THAT(send(s.fd.get(), &h, sizeof(h), 0), SyscallSucceedsWithValue(16));
  EXPECT_TRUE(s.Empty());
  // What follows a message with nlmsg_len 0 is not looked at: iproute2
  // sends its requests in a zeroed buffer.
  std::string req = LinkRequest(NLM_F_REQUEST | NLM_F_ACK, 2, 1);
  req += std::string(120, '\0');
  s.Send(req);
  std::optional<std::string> d = s.Recv();
  ASSERT_TRUE(d);
  EXPECT_EQ(Split(*d)[0].hdr.nlmsg_type, RTM_NEWLINK);
  d = s.Recv();
  ASSERT_TRUE(d);
  EXPECT_EQ(ErrorOf(Split(*d)[0]), 0);  // the ACK
  EXPECT_TRUE(s.Empty());
}

TEST(NetlinkTest, AddrDumpHasLoopbackAddresses) {
  RouteSocket s;
  ifaddrmsg ifa = {};
  s.Send(
      Request(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 77, &ifa, sizeof(ifa)));
  bool v4 = false, v6 = false;
  int lo = if_nametoindex("lo");
  for (const Msg& m : s.Dump(77)) {
    if (m.hdr.nlmsg_type != RTM_NEWADDR) continue;
    ASSERT_GE(m.payload.size(), sizeof(ifa));
    ifaddrmsg got;
    memcpy(&got, m.payload.data(), sizeof(got));
    if (static_cast<int>(got.ifa_index) != lo) continue;
    std::vector<Attr> a = Attrs(m.payload, sizeof(got));
    const Attr* addr = Find(a, IFA_ADDRESS);
    ASSERT_NE(addr, nullptr);
    if (got.ifa_family == AF_INET &&
        addr->data == std::string("\x7f\x00\x00\x01", 4)) {
      v4 = true;
      EXPECT_EQ(got.ifa_prefixlen, 8);
      EXPECT_EQ(got.ifa_scope, RT_SCOPE_HOST);
      EXPECT_TRUE(got.ifa_flags & IFA_F_PERMANENT);
      ASSERT_NE(Find(a, IFA_LABEL), nullptr);
      EXPECT_EQ(std::string(Find(a, IFA_LABEL)->data.c_str()), "lo");
      ASSERT_NE(Find(a, IFA_LOCAL), nullptr);
      EXPECT_EQ(Find(a, IFA_LOCAL)->data, addr->data);
      ASSERT_NE(Find(a, IFA_CACHEINFO), nullptr);
      EXPECT_EQ(Find(a, IFA_CACHEINFO)->data.size(), sizeof(ifa_cacheinfo));
    }
    in6_addr one = IN6ADDR_LOOPBACK_INIT;
    if (got.ifa_family == AF_INET6 &&
        addr->data == std::string(reinterpret_cast<char*>(&one), 16)) {
      v6 = true;
      EXPECT_EQ(got.ifa_prefixlen, 128);
      EXPECT_EQ(got.ifa_scope, RT_SCOPE_HOST);
    }
  }
  EXPECT_TRUE(v4);
  EXPECT_TRUE(v6);
  // One family only.
  ifa.ifa_family = AF_INET6;
  s.Send(
      Request(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 78, &ifa, sizeof(ifa)));
  for (const Msg& m : s.Dump(78)) {
    if (m.hdr.nlmsg_type == RTM_NEWADDR) EXPECT_EQ(m.payload[0], AF_INET6);
  }
}

TEST(NetlinkTest, RouteDumpHasTheLocalRoutes) {
  RouteSocket s;
  rtmsg rtm = {};
  rtm.rtm_family = AF_INET;
  s.Send(
      Request(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, 5, &rtm, sizeof(rtm)));
  bool local = false;
  int lo = if_nametoindex("lo");
  for (const Msg& m : s.Dump(5)) {
    if (m.hdr.nlmsg_type != RTM_NEWROUTE) continue;
    rtmsg r;
    ASSERT_GE(m.payload.size(), sizeof(r));
    memcpy(&r, m.payload.data(), sizeof(r));
    EXPECT_EQ(r.rtm_family, AF_INET);
    std::vector<Attr> a = Attrs(m.payload, sizeof(r));
    const Attr* dst = Find(a, RTA_DST);
    if (r.rtm_type == RTN_LOCAL && r.rtm_dst_len == 32 && dst != nullptr &&
        dst->data == std::string("\x7f\x00\x00\x01", 4)) {
      local = true;
      EXPECT_EQ(r.rtm_table, RT_TABLE_LOCAL);
      EXPECT_EQ(U32(Find(a, RTA_TABLE)), static_cast<uint32_t>(RT_TABLE_LOCAL));
      EXPECT_EQ(r.rtm_scope, RT_SCOPE_HOST);
      EXPECT_EQ(r.rtm_protocol, RTPROT_KERNEL);
      EXPECT_EQ(static_cast<int>(U32(Find(a, RTA_OIF))), lo);
    }
  }
  EXPECT_TRUE(local);
}

TEST(NetlinkTest, StrictDumpFiltersAndErrors) {
  RouteSocket s;
  s.SetOpt(NETLINK_GET_STRICT_CHK, 1);
  s.SetOpt(NETLINK_EXT_ACK, 1);
  // A table that does not exist: the dump ends with its error.
  rtmsg rtm = {};
  rtm.rtm_family = AF_INET;
  uint32_t table = 3917;
  s.Send(Request(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, 6, &rtm, sizeof(rtm),
                 AttrBytes(RTA_TABLE, &table, 4)));
  std::vector<Msg> ms = s.Dump(6);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].hdr.nlmsg_type, NLMSG_DONE);
  EXPECT_EQ(ErrorOf(ms[0]), ENOENT);
  EXPECT_TRUE(ms[0].hdr.nlmsg_flags & NLM_F_ACK_TLVS);
  EXPECT_THAT(ms[0].payload, ::testing::HasSubstr("FIB table does not exist"));
  // A link dump may not name an index under strict checking.
  s.Send(LinkRequest(NLM_F_REQUEST | NLM_F_DUMP, 7, 1));
  ms = s.Dump(7);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ErrorOf(ms[0]), EINVAL);
  // Filtering by table marks the dump.
  table = RT_TABLE_LOCAL;
  s.Send(Request(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, 8, &rtm, sizeof(rtm),
                 AttrBytes(RTA_TABLE, &table, 4)));
  ms = s.Dump(8);
  ASSERT_GE(ms.size(), 2u);
  for (const Msg& m : ms) {
    EXPECT_TRUE(m.hdr.nlmsg_flags & NLM_F_DUMP_FILTERED);
    if (m.hdr.nlmsg_type == RTM_NEWROUTE) {
      EXPECT_EQ(static_cast<uint8_t>(m.payload[4]), RT_TABLE_LOCAL);
    }
  }
}

TEST(NetlinkTest, TruncationAndPeek) {
  RouteSocket s;
  s.Send(LinkRequest(NLM_F_REQUEST | NLM_F_DUMP, 9));
  // The length of the next datagram, as iproute2 asks for it.
  int flags = 0;
  ASSERT_TRUE(s.Recv(0, MSG_PEEK | MSG_TRUNC, &flags));
  EXPECT_TRUE(flags & MSG_TRUNC);
  ssize_t full = recv(s.fd.get(), nullptr, 0, MSG_PEEK | MSG_TRUNC);
  ASSERT_GT(full, static_cast<ssize_t>(sizeof(nlmsghdr) + sizeof(ifinfomsg)));
  std::string buf(full, '\0');
  EXPECT_THAT(recv(s.fd.get(), buf.data(), full, MSG_PEEK),
              SyscallSucceedsWithValue(full));
  // Cut to the buffer: MSG_TRUNC set, the rest gone.
  std::optional<std::string> d = s.Recv(24, 0, &flags);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->size(), 24u);
  EXPECT_TRUE(flags & MSG_TRUNC);
  EXPECT_EQ(d->substr(0, 24), buf.substr(0, 24));
  // Then the next datagram.
  std::vector<Msg> rest;
  for (int i = 0; i < 100; ++i) {
    std::optional<std::string> n = s.Recv();
    ASSERT_TRUE(n);
    std::vector<Msg> ms = Split(*n);
    if (!ms.empty() && ms.back().hdr.nlmsg_type == NLMSG_DONE) break;
  }
  EXPECT_TRUE(s.Empty());
}

TEST(NetlinkTest, RecvWithMsgTruncReturnsTheRealLength) {
  RouteSocket s;
  s.Send(LinkRequest(NLM_F_REQUEST, 12, 0, AttrBytes(IFLA_IFNAME, "lo", 3)));
  ssize_t full = recv(s.fd.get(), nullptr, 0, MSG_PEEK | MSG_TRUNC);
  ASSERT_GT(full, 32);
  char small[32];
  EXPECT_THAT(recv(s.fd.get(), small, sizeof(small), MSG_TRUNC),
              SyscallSucceedsWithValue(full));
  EXPECT_TRUE(s.Empty());
}

TEST(NetlinkTest, SecondDumpBeforeTheFirstEndsIsBusy) {
  RouteSocket s;
  s.Send(LinkRequest(NLM_F_REQUEST | NLM_F_DUMP, 21) +
         LinkRequest(NLM_F_REQUEST | NLM_F_DUMP, 22));
  int done21 = 0, busy22 = 0, other = 0;
  for (int i = 0; i < 100 && (done21 == 0 || busy22 == 0); ++i) {
    std::optional<std::string> d = s.Recv();
    ASSERT_TRUE(d);
    for (const Msg& m : Split(*d)) {
      if (m.hdr.nlmsg_type == NLMSG_DONE && m.hdr.nlmsg_seq == 21) {
        ++done21;
      } else if (m.hdr.nlmsg_type == NLMSG_ERROR && m.hdr.nlmsg_seq == 22) {
        EXPECT_EQ(ErrorOf(m), EBUSY);
        EXPECT_EQ(done21, 0) << "EBUSY comes before the first dump's DONE";
        ++busy22;
      } else if (m.hdr.nlmsg_seq != 21) {
        ++other;
      }
    }
  }
  EXPECT_EQ(done21, 1);
  EXPECT_EQ(busy22, 1);
  EXPECT_EQ(other, 0);
  EXPECT_TRUE(s.Empty());
}

TEST(NetlinkTest, ReadAndWrite) {
  RouteSocket s;
  std::string req =
      LinkRequest(NLM_F_REQUEST, 40, 0, AttrBytes(IFLA_IFNAME, "lo", 3));
  ASSERT_THAT(write(s.fd.get(), req.data(), req.size()),
              SyscallSucceedsWithValue(static_cast<ssize_t>(req.size())));
  pollfd p = {s.fd.get(), POLLIN | POLLOUT, 0};
  ASSERT_THAT(poll(&p, 1, 5000), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents, POLLIN | POLLOUT);
  char buf[8192];
  ssize_t n = read(s.fd.get(), buf, sizeof(buf));
  ASSERT_GT(n, 0);
  std::vector<Msg> ms = Split(std::string(buf, n));
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].hdr.nlmsg_seq, 40u);
  p.revents = 0;
  ASSERT_THAT(poll(&p, 1, 0), SyscallSucceedsWithValue(1));
  EXPECT_EQ(p.revents, POLLOUT);
  ASSERT_THAT(fcntl(s.fd.get(), F_SETFL, O_NONBLOCK), SyscallSucceeds());
  EXPECT_THAT(read(s.fd.get(), buf, sizeof(buf)),
              SyscallFailsWithErrno(EAGAIN));
}

TEST(NetlinkTest, NetlinkOptions) {
  FileDescriptor fd(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
  ASSERT_TRUE(fd.valid());
  int v = -1;
  socklen_t len = sizeof(v);
  for (int opt :
       {NETLINK_EXT_ACK, NETLINK_CAP_ACK, NETLINK_GET_STRICT_CHK,
        NETLINK_NO_ENOBUFS, NETLINK_BROADCAST_ERROR, NETLINK_PKTINFO}) {
    len = sizeof(v);
    ASSERT_THAT(getsockopt(fd.get(), kSolNetlink, opt, &v, &len),
                SyscallSucceeds());
    EXPECT_EQ(v, 0) << opt;
    EXPECT_EQ(len, sizeof(int));
    int two = 2;
    ASSERT_THAT(setsockopt(fd.get(), kSolNetlink, opt, &two, sizeof(two)),
                SyscallSucceeds());
    ASSERT_THAT(getsockopt(fd.get(), kSolNetlink, opt, &v, &len),
                SyscallSucceeds());
    EXPECT_EQ(v, 1) << opt;
  }
  len = 2;
  EXPECT_THAT(getsockopt(fd.get(), kSolNetlink, NETLINK_EXT_ACK, &v, &len),
              SyscallFailsWithErrno(EINVAL));
  len = sizeof(v);
  EXPECT_THAT(getsockopt(fd.get(), kSolNetlink, 99, &v, &len),
              SyscallFailsWithErrno(ENOPROTOOPT));
  EXPECT_THAT(setsockopt(fd.get(), kSolNetlink, 99, &v, sizeof(v)),
              SyscallFailsWithErrno(ENOPROTOOPT));
  EXPECT_THAT(
      getsockopt(fd.get(), kSolNetlink, NETLINK_ADD_MEMBERSHIP, &v, &len),
      SyscallFailsWithErrno(ENOPROTOOPT));
  // Groups: 0 and beyond the protocol's are EINVAL.
  int g = 0;
  EXPECT_THAT(
      setsockopt(fd.get(), kSolNetlink, NETLINK_ADD_MEMBERSHIP, &g, sizeof(g)),
      SyscallFailsWithErrno(EINVAL));
  g = 1000;
  EXPECT_THAT(
      setsockopt(fd.get(), kSolNetlink, NETLINK_ADD_MEMBERSHIP, &g, sizeof(g)),
      SyscallFailsWithErrno(EINVAL));
  g = RTNLGRP_IPV4_IFADDR;  // 5
  ASSERT_THAT(
      setsockopt(fd.get(), kSolNetlink, NETLINK_ADD_MEMBERSHIP, &g, sizeof(g)),
      SyscallSucceeds());
  g = 33;
  ASSERT_THAT(
      setsockopt(fd.get(), kSolNetlink, NETLINK_ADD_MEMBERSHIP, &g, sizeof(g)),
      SyscallSucceeds());
  uint32_t groups[2] = {};
  len = sizeof(groups);
  ASSERT_THAT(
      getsockopt(fd.get(), kSolNetlink, NETLINK_LIST_MEMBERSHIPS, groups, &len),
      SyscallSucceeds());
  EXPECT_EQ(len, 8u);
  EXPECT_EQ(groups[0], 1u << 4);
  EXPECT_EQ(groups[1], 1u);
  g = 5;
  ASSERT_THAT(
      setsockopt(fd.get(), kSolNetlink, NETLINK_DROP_MEMBERSHIP, &g, sizeof(g)),
      SyscallSucceeds());
  len = sizeof(groups);
  ASSERT_THAT(
      getsockopt(fd.get(), kSolNetlink, NETLINK_LIST_MEMBERSHIPS, groups, &len),
      SyscallSucceeds());
  EXPECT_EQ(groups[0], 0u);
}

TEST(NetlinkTest, BindGroups) {
  FileDescriptor fd(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
  ASSERT_TRUE(fd.valid());
  sockaddr_nl a = {};
  a.nl_family = AF_NETLINK;
  a.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR;
  ASSERT_THAT(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)),
              SyscallSucceeds());
  sockaddr_nl n = {};
  socklen_t len = sizeof(n);
  ASSERT_THAT(getsockname(fd.get(), reinterpret_cast<sockaddr*>(&n), &len),
              SyscallSucceeds());
  EXPECT_EQ(n.nl_groups,
            static_cast<uint32_t>(RTMGRP_LINK | RTMGRP_IPV4_IFADDR));
  // Binding again with the same id changes the groups.
  a.nl_pid = n.nl_pid;
  a.nl_groups = RTMGRP_LINK;
  ASSERT_THAT(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)),
              SyscallSucceeds());
  ASSERT_THAT(getsockname(fd.get(), reinterpret_cast<sockaddr*>(&n), &len),
              SyscallSucceeds());
  EXPECT_EQ(n.nl_groups, static_cast<uint32_t>(RTMGRP_LINK));
}

TEST(NetlinkTest, UserPortsAndConnect) {
  if (geteuid() != 0) GTEST_SKIP() << "unicast to a user port needs root";
  RouteSocket a, b;
  sockaddr_nl to = {};
  to.nl_family = AF_NETLINK;
  to.nl_pid = b.portid;
  ssize_t n = sendto(a.fd.get(), "hello", 5, 0,
                     reinterpret_cast<sockaddr*>(&to), sizeof(to));
  if (n < 0 && errno == EPERM) {
    GTEST_SKIP() << "no CAP_NET_ADMIN over this network namespace";
  }
  ASSERT_THAT(n, SyscallSucceedsWithValue(5));
  char buf[16];
  sockaddr_nl from = {};
  socklen_t len = sizeof(from);
  ASSERT_THAT(recvfrom(b.fd.get(), buf, sizeof(buf), MSG_DONTWAIT,
                       reinterpret_cast<sockaddr*>(&from), &len),
              SyscallSucceedsWithValue(5));
  EXPECT_EQ(from.nl_pid, a.portid);
  EXPECT_EQ(std::string(buf, 5), "hello");
  // A port nobody has.
  to.nl_pid = 0x7ffffff1;
  EXPECT_THAT(sendto(a.fd.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(&to),
                     sizeof(to)),
              SyscallFailsWithErrno(ECONNREFUSED));
  EXPECT_THAT(sendto(a.fd.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(&to),
                     sizeof(to) - 1),
              SyscallFailsWithErrno(EINVAL));
  // connect names the default destination; AF_UNSPEC removes it.
  to.nl_pid = b.portid;
  ASSERT_THAT(connect(a.fd.get(), reinterpret_cast<sockaddr*>(&to), sizeof(to)),
              SyscallSucceeds());
  sockaddr_nl peer = {};
  len = sizeof(peer);
  ASSERT_THAT(getpeername(a.fd.get(), reinterpret_cast<sockaddr*>(&peer), &len),
              SyscallSucceeds());
  EXPECT_EQ(peer.nl_pid, b.portid);
  ASSERT_THAT(send(a.fd.get(), "again", 5, 0), SyscallSucceedsWithValue(5));
  ASSERT_THAT(recv(b.fd.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallSucceedsWithValue(5));
  sockaddr unspec = {};
  unspec.sa_family = AF_UNSPEC;
  ASSERT_THAT(connect(a.fd.get(), &unspec, sizeof(unspec)), SyscallSucceeds());
  ASSERT_THAT(getpeername(a.fd.get(), reinterpret_cast<sockaddr*>(&peer), &len),
              SyscallSucceeds());
  EXPECT_EQ(peer.nl_pid, 0u);
}

// Replies that find the receive queue full are dropped, and the next
// recvmsg reports ENOBUFS once (netlink_overrun); the socket then works.
TEST(NetlinkTest, FloodOfAcksOverrunsTheQueue) {
  RouteSocket s;
  int small = 4096;
  ASSERT_THAT(
      setsockopt(s.fd.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)),
      SyscallSucceeds());
  std::string batch;
  constexpr int kCount = 2000;
  for (int i = 0; i < kCount; ++i) {
    nlmsghdr h = {sizeof(nlmsghdr), NLMSG_NOOP, NLM_F_REQUEST | NLM_F_ACK,
                  static_cast<uint32_t>(i), 0};
    batch.append(reinterpret_cast<char*>(&h), sizeof(h));
  }
  s.Send(batch);
  char buf[256];
  EXPECT_THAT(recv(s.fd.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallFailsWithErrno(ENOBUFS));
  int got = 0;
  uint32_t last = 0;
  while (recv(s.fd.get(), buf, sizeof(buf), MSG_DONTWAIT) > 0) {
    nlmsghdr h;
    memcpy(&h, buf, sizeof(h));
    EXPECT_EQ(h.nlmsg_type, NLMSG_ERROR);
    if (got > 0) EXPECT_GT(h.nlmsg_seq, last);
    last = h.nlmsg_seq;
    ++got;
  }
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_GT(got, 0);
  EXPECT_LT(got, kCount);
  // The error was reported once; requests work again.
  s.Send(LinkRequest(NLM_F_REQUEST, 5000, 0, AttrBytes(IFLA_IFNAME, "lo", 3)));
  std::optional<std::string> d = s.Recv();
  ASSERT_TRUE(d);
  EXPECT_EQ(Split(*d)[0].hdr.nlmsg_seq, 5000u);
}

TEST(NetlinkTest, RecvTimeout) {
  RouteSocket s;
  timeval tv = {0, 100000};
  ASSERT_THAT(setsockopt(s.fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
              SyscallSucceeds());
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  char c;
  EXPECT_THAT(recv(s.fd.get(), &c, 1, 0), SyscallFailsWithErrno(EAGAIN));
  clock_gettime(CLOCK_MONOTONIC, &b);
  int64_t ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
  EXPECT_GE(ms, 90);
}

TEST(NetlinkTest, UeventOpensBindsAndReceivesNothing) {
  FileDescriptor fd(
      socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT));
  ASSERT_TRUE(fd.valid());
  sockaddr_nl a = {};
  a.nl_family = AF_NETLINK;
  a.nl_groups = 1;
  ASSERT_THAT(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)),
              SyscallSucceeds());
  sockaddr_nl n = {};
  socklen_t len = sizeof(n);
  ASSERT_THAT(getsockname(fd.get(), reinterpret_cast<sockaddr*>(&n), &len),
              SyscallSucceeds());
  EXPECT_EQ(n.nl_groups, 1u);
  pollfd p = {fd.get(), POLLIN, 0};
  EXPECT_THAT(poll(&p, 1, 50), SyscallSucceedsWithValue(0));
  char buf[64];
  EXPECT_THAT(recv(fd.get(), buf, sizeof(buf), MSG_DONTWAIT),
              SyscallFailsWithErrno(EAGAIN));
}

// Runs `fn` in a child where changing lo is harmless (see the file
// comment); false (with the reason) if there is no such place.
bool InPrivateNetwork(const std::function<bool()>& fn, std::string* why) {
  pid_t pid = fork();
  if (pid < 0) {
    *why = "fork failed";
    return false;
  }
  if (pid == 0) {
    if (unshare(CLONE_NEWNET) != 0) {
      if (errno != ENOSYS) _exit(77);
      // The sandbox: its own namespace; fn restores lo.
    } else {
      // A fresh namespace's lo is down: start as the sandbox does.
      FileDescriptor s(socket(AF_UNIX, SOCK_DGRAM, 0));
      ifreq r = {};
      strcpy(r.ifr_name, "lo");
      r.ifr_flags = IFF_UP | IFF_LOOPBACK;
      if (ioctl(s.get(), SIOCSIFFLAGS, &r) != 0) _exit(78);
    }
    _exit(fn() ? 0 : 1);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid) {
    *why = "waitpid failed";
    return false;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    *why = "no private network namespace (unshare(CLONE_NEWNET) failed)";
    return false;
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "child status " << status;
  return true;
}

#define CHILD_CHECK(c)                                                      \
  do {                                                                      \
    if (!(c)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
      ok = false;                                                           \
    }                                                                       \
  } while (0)

// lo's flags and whether ::1 is there, through netlink.
struct LoState {
  uint32_t flags = 0;
  bool v6 = false;
  int routes = 0;  // AF_UNSPEC route dump, table local
};

LoState ReadLo(RouteSocket& s, uint32_t seq) {
  LoState st;
  s.Send(LinkRequest(NLM_F_REQUEST, seq, 0, AttrBytes(IFLA_IFNAME, "lo", 3)));
  if (std::optional<std::string> d = s.Recv()) {
    std::vector<Msg> ms = Split(*d);
    if (!ms.empty() && ms[0].payload.size() >= sizeof(ifinfomsg)) {
      ifinfomsg ifi;
      memcpy(&ifi, ms[0].payload.data(), sizeof(ifi));
      st.flags = ifi.ifi_flags;
    }
  }
  ifaddrmsg ifa = {};
  ifa.ifa_family = AF_INET6;
  s.Send(Request(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, seq + 1, &ifa,
                 sizeof(ifa)));
  for (const Msg& m : s.Dump(seq + 1)) {
    if (m.hdr.nlmsg_type == RTM_NEWADDR) st.v6 = true;
  }
  rtmsg rtm = {};
  s.Send(Request(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, seq + 2, &rtm,
                 sizeof(rtm)));
  for (const Msg& m : s.Dump(seq + 2)) {
    if (m.hdr.nlmsg_type == RTM_NEWROUTE) ++st.routes;
  }
  return st;
}

TEST(NetlinkTest, SetLinkDownAndUp) {
  std::string why;
  bool ran = InPrivateNetwork(
      [] {
        bool ok = true;
        RouteSocket s;
        LoState up = ReadLo(s, 100);
        CHILD_CHECK(up.flags & IFF_UP);
        CHILD_CHECK(up.flags & kIffLowerUp);
        CHILD_CHECK(up.v6);
        CHILD_CHECK(up.routes == 4);
        // A listener of link and IPv6 address changes.
        RouteSocket mon;
        sockaddr_nl g = {};
        g.nl_family = AF_NETLINK;
        g.nl_pid = mon.portid;
        g.nl_groups = RTMGRP_LINK | RTMGRP_IPV6_IFADDR;
        CHILD_CHECK(bind(mon.fd.get(), reinterpret_cast<sockaddr*>(&g),
                         sizeof(g)) == 0);
        // What `ip link set lo down` sends.
        ifinfomsg ifi = {};
        ifi.ifi_index = if_nametoindex("lo");
        ifi.ifi_change = IFF_UP;
        s.Send(Request(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, 110, &ifi,
                       sizeof(ifi)));
        std::optional<std::string> d = s.Recv();
        CHILD_CHECK(d && ErrorOf(Split(*d)[0]) == 0);
        // Announced: the link, then ::1's removal.
        std::optional<std::string> ev = mon.Recv();
        CHILD_CHECK(ev && Split(*ev).size() == 1 &&
                    Split(*ev)[0].hdr.nlmsg_type == RTM_NEWLINK &&
                    !(Split(*ev)[0].payload[8] & IFF_UP));
        bool deladdr = false;
        for (int i = 0; i < 5 && !deladdr; ++i) {
          ev = mon.Recv();
          if (!ev) break;
          for (const Msg& m : Split(*ev)) {
            if (m.hdr.nlmsg_type == RTM_DELADDR) deladdr = true;
          }
        }
        CHILD_CHECK(deladdr);
        LoState down = ReadLo(s, 120);
        CHILD_CHECK(!(down.flags & IFF_UP));
        CHILD_CHECK(down.flags & IFF_LOOPBACK);
        CHILD_CHECK(!(down.flags & IFF_RUNNING));
        CHILD_CHECK(!down.v6);
        CHILD_CHECK(down.routes == 2);
        // Every socket sees it (SIOCGIFFLAGS on AF_UNIX).
        FileDescriptor u(socket(AF_UNIX, SOCK_STREAM, 0));
        ifreq r = {};
        strcpy(r.ifr_name, "lo");
        CHILD_CHECK(ioctl(u.get(), SIOCGIFFLAGS, &r) == 0);
        CHILD_CHECK(r.ifr_flags == IFF_LOOPBACK);
        // And up again.
        ifi.ifi_flags = IFF_UP;
        s.Send(Request(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, 130, &ifi,
                       sizeof(ifi)));
        d = s.Recv();
        CHILD_CHECK(d && ErrorOf(Split(*d)[0]) == 0);
        LoState again = ReadLo(s, 140);
        CHILD_CHECK(again.flags == up.flags);
        CHILD_CHECK(again.v6);
        CHILD_CHECK(again.routes == 4);
        return ok;
      },
      &why);
  if (!ran) GTEST_SKIP() << why;
}

TEST(NetlinkTest, SetLinkNeedsNetAdmin) {
  std::string why;
  bool ran = InPrivateNetwork(
      [] {
        bool ok = true;
        if (!DropCapabilities(false)) return false;
        RouteSocket s;
        ifinfomsg ifi = {};
        ifi.ifi_index = if_nametoindex("lo");
        ifi.ifi_change = IFF_UP;
        s.Send(Request(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, 1, &ifi,
                       sizeof(ifi)));
        std::optional<std::string> d = s.Recv();
        CHILD_CHECK(d && ErrorOf(Split(*d)[0]) == EPERM);
        FileDescriptor u(socket(AF_UNIX, SOCK_STREAM, 0));
        ifreq r = {};
        strcpy(r.ifr_name, "lo");
        r.ifr_flags = IFF_LOOPBACK;
        CHILD_CHECK(ioctl(u.get(), SIOCSIFFLAGS, &r) == -1 && errno == EPERM);
        CHILD_CHECK(ioctl(u.get(), SIOCGIFFLAGS, &r) == 0);
        CHILD_CHECK(r.ifr_flags & IFF_UP);
        return ok;
      },
      &why);
  if (!ran) GTEST_SKIP() << why;
}

}  // namespace
}  // namespace sandbox::testutil
