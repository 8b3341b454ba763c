// PortTable: the bind conflict matrix, ephemeral ports, and the lookups.
#include "sentry/net/inet/ports.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <memory>
#include <set>

#include "gtest/gtest.h"
#include "sentry/net/namespace.h"
#include "sentry/net/socket.h"

namespace sandbox::net::inet {
namespace {

class FakeSocket : public Socket {
 public:
  explicit FakeSocket(int family)
      : Socket(family, SOCK_STREAM, 0, O_RDWR, {}) {}
};

IpAddr V4(uint32_t a) { return IpAddr::V4(a); }

// The errno of a result (0: success), without asserting.
template <typename T>
Errno Err(const KResult<T>& r) {
  return r.ok() ? Errno(0) : r.error();
}
const IpAddr kAny4 = IpAddr::AnyV4();
const IpAddr kAny6 = IpAddr::AnyV6();
const IpAddr kLo4 = IpAddr::LoopbackV4();
const IpAddr kLo6 = IpAddr::LoopbackV6();

BindRequest Req(IpAddr ip, uint16_t port, bool v6 = false) {
  BindRequest r;
  r.local = {ip, port};
  r.v6_socket = v6;
  return r;
}

class PortsTest : public ::testing::Test {
 protected:
  NetNamespace ns_;
  PortTable tcp_{Proto::kTcp, ns_};
  PortTable udp_{Proto::kUdp, ns_};
  PortTable ping_{Proto::kPing, ns_};
  // Bindings kept for the test's length (dropping one unbinds it).
  std::vector<Binding> kept_;
  bool Keep(KResult<Binding> r) {
    if (!r.ok()) return false;
    kept_.push_back(r.value());
    return true;
  }
};

// bind(2) of `b` after `a` on one port: whether it succeeds.
bool Coexist(PortTable& t, BindRequest a, BindRequest b) {
  a.local.port = b.local.port = 5000;
  auto x = t.Bind(a, {});
  EXPECT_TRUE(x.ok());
  auto y = t.Bind(b, {});
  if (!y.ok()) {
    EXPECT_EQ(y.error(), kEADDRINUSE);
  }
  return y.ok();
}

TEST_F(PortsTest, AddressOverlapMatrix) {
  struct Case {
    BindRequest a, b;
    bool coexist;
  };
  BindRequest any6only = Req(kAny6, 0, true);
  any6only.v6only = true;
  const Case cases[] = {
      {Req(kLo4, 0), Req(kLo4, 0), false},
      {Req(kLo4, 0), Req(V4(0x7f000002), 0), true},
      {Req(kAny4, 0), Req(kLo4, 0), false},
      {Req(kLo4, 0), Req(kAny4, 0), false},
      {Req(kAny6, 0, true), Req(kAny4, 0), false},
      {Req(kAny4, 0), Req(kAny6, 0, true), false},
      {any6only, Req(kAny4, 0), true},
      {Req(kAny4, 0), any6only, true},
      {Req(kLo6, 0, true), Req(kAny4, 0), true},  // ::1 is IPv6-only
      {Req(kAny4, 0), Req(kLo6, 0, true), true},
      {Req(kLo6, 0, true), Req(kLo4, 0), true},
      {Req(kLo4, 0, true), Req(kLo4, 0), false},  // ::ffff:127.0.0.1
      {Req(kLo4, 0), Req(kLo4, 0, true), false},
      {Req(kAny6, 0, true), Req(kLo6, 0, true), false},
      {Req(kLo6, 0, true), Req(kAny6, 0, true), false},
      {Req(kAny6, 0, true), Req(kAny6, 0, true), false},
      {any6only, Req(kLo4, 0, true), true},  // v6only :: vs mapped
      {Req(kLo4, 0, true), any6only, true},
      {Req(kAny4, 0, true), Req(kLo6, 0, true), true},  // ::ffff:0.0.0.0
      {Req(kAny4, 0, true), Req(kLo4, 0), false},
  };
  int i = 0;
  for (const Case& c : cases) {
    NetNamespace ns;
    PortTable tcp(Proto::kTcp, ns), udp(Proto::kUdp, ns);
    EXPECT_EQ(Coexist(tcp, c.a, c.b), c.coexist) << "tcp case " << i;
    EXPECT_EQ(Coexist(udp, c.a, c.b), c.coexist) << "udp case " << i;
    i++;
  }
}

TEST_F(PortsTest, TcpReuseaddr) {
  BindRequest a = Req(kLo4, 6000), b = Req(kLo4, 6000);
  a.reuseaddr = b.reuseaddr = true;
  auto x = tcp_.Bind(a, {});
  ASSERT_TRUE(x.ok());
  auto y = tcp_.Bind(b, {});
  ASSERT_TRUE(y.ok());  // neither listening
  EXPECT_TRUE(tcp_.Listen(x.value()).ok());
  EXPECT_EQ(Err(tcp_.Listen(y.value())), kEADDRINUSE);
  // A third bind with SO_REUSEADDR now meets a listener.
  EXPECT_EQ(Err(tcp_.Bind(b, {})), kEADDRINUSE);
  // Only one side with SO_REUSEADDR: conflict.
  BindRequest c = Req(kLo4, 6001), d = Req(kLo4, 6001);
  c.reuseaddr = true;
  ASSERT_TRUE(Keep(tcp_.Bind(c, {})));
  EXPECT_EQ(Err(tcp_.Bind(d, {})), kEADDRINUSE);
}

TEST_F(PortsTest, TcpReuseport) {
  BindRequest a = Req(kAny4, 6100), b = Req(kAny4, 6100);
  a.reuseport = b.reuseport = true;
  a.uid = b.uid = 1000;
  auto x = tcp_.Bind(a, {});
  ASSERT_TRUE(x.ok());
  ASSERT_TRUE(tcp_.Listen(x.value()).ok());
  auto y = tcp_.Bind(b, {});
  ASSERT_TRUE(y.ok());
  EXPECT_TRUE(tcp_.Listen(y.value()).ok());
  // Another owner: no sharing.
  BindRequest c = b;
  c.uid = 1001;
  EXPECT_EQ(Err(tcp_.Bind(c, {})), kEADDRINUSE);
  // Without SO_REUSEPORT: no sharing.
  BindRequest d = b;
  d.reuseport = false;
  EXPECT_EQ(Err(tcp_.Bind(d, {})), kEADDRINUSE);
}

TEST_F(PortsTest, UdpReuse) {
  BindRequest a = Req(kAny4, 7000), b = Req(kLo4, 7000);
  a.reuseaddr = b.reuseaddr = true;
  ASSERT_TRUE(Keep(udp_.Bind(a, {})));
  EXPECT_TRUE(Keep(udp_.Bind(b, {})));
  BindRequest c = Req(kLo4, 7000);
  EXPECT_EQ(Err(udp_.Bind(c, {})), kEADDRINUSE);
  BindRequest p1 = Req(kLo4, 7001), p2 = Req(kLo4, 7001);
  p1.reuseport = p2.reuseport = true;
  ASSERT_TRUE(Keep(udp_.Bind(p1, {})));
  EXPECT_TRUE(Keep(udp_.Bind(p2, {})));
  p2.uid = 5;
  EXPECT_EQ(Err(udp_.Bind(p2, {})), kEADDRINUSE);
}

TEST_F(PortsTest, Devices) {
  BindRequest a = Req(kLo4, 7100), b = Req(kLo4, 7100);
  a.bound_dev_if = 1;
  b.bound_dev_if = 2;
  ASSERT_TRUE(Keep(tcp_.Bind(a, {})));
  EXPECT_TRUE(Keep(tcp_.Bind(b, {})));
  EXPECT_EQ(Err(tcp_.Bind(Req(kLo4, 7100), {})), kEADDRINUSE);
}

TEST_F(PortsTest, UnbindAndDropFree) {
  auto x = tcp_.Bind(Req(kLo4, 7200), {});
  ASSERT_TRUE(x.ok());
  EXPECT_FALSE(tcp_.Bind(Req(kLo4, 7200), {}).ok());
  tcp_.Unbind(x.value());
  auto y = tcp_.Bind(Req(kLo4, 7200), {});
  ASSERT_TRUE(y.ok());
  y.value().reset();  // the last reference unbinds
  EXPECT_TRUE(Keep(tcp_.Bind(Req(kLo4, 7200), {})));
  EXPECT_EQ(tcp_.Snapshot(x.value()).req.local.port, 7200);
}

TEST_F(PortsTest, EphemeralInRange) {
  ns_.sysctl().ip_local_port_lo = 40000;
  ns_.sysctl().ip_local_port_hi = 40009;
  for (PortTable* t : {&tcp_, &udp_}) {
    std::set<uint16_t> seen;
    std::vector<Binding> keep;
    for (int i = 0; i < 10; i++) {
      auto b = t->Bind(Req(kAny4, 0), {});
      ASSERT_TRUE(b.ok()) << i;
      const uint16_t p = t->Snapshot(b.value()).req.local.port;
      EXPECT_GE(p, 40000);
      EXPECT_LE(p, 40009);
      EXPECT_TRUE(seen.insert(p).second);
      keep.push_back(b.value());
    }
    EXPECT_EQ(Err(t->Bind(Req(kAny4, 0), {})), kEADDRINUSE);
    // Another address still finds the ports free... not for 0.0.0.0's
    // overlap, but an IPv6-only socket does.
    BindRequest v6 = Req(kLo6, 0, true);
    EXPECT_TRUE(Keep(t->Bind(v6, {})));
  }
}

TEST_F(PortsTest, TcpEphemeralParityAndHalves) {
  ns_.sysctl().ip_local_port_lo = 40000;
  ns_.sysctl().ip_local_port_hi = 40999;
  // bind(2): odd ports first (connect(2) favours the low end's parity).
  for (int i = 0; i < 20; i++) {
    auto b = tcp_.Bind(Req(kAny4, 0), {});
    ASSERT_TRUE(b.ok());
    kept_.push_back(b.value());
    EXPECT_EQ(tcp_.Snapshot(b.value()).req.local.port % 2, 1);
  }
  // SO_REUSEADDR sockets start in the lower half.
  for (int i = 0; i < 20; i++) {
    BindRequest r = Req(kLo6, 0, true);
    r.reuseaddr = true;
    auto b = tcp_.Bind(r, {});
    ASSERT_TRUE(b.ok());
    kept_.push_back(b.value());
    EXPECT_LT(tcp_.Snapshot(b.value()).req.local.port, 40500);
  }
  // connect(2): even ports first.
  for (int i = 0; i < 20; i++) {
    auto b = tcp_.BindConnect(Req(kLo4, 0), {kLo4, 80}, {});
    ASSERT_TRUE(b.ok());
    kept_.push_back(b.value());
    EXPECT_EQ(tcp_.Snapshot(b.value()).req.local.port % 2, 0);
  }
}

TEST_F(PortsTest, EphemeralPerSocketRange) {
  BindRequest r = Req(kAny4, 0);
  r.range_lo = 50000;
  r.range_hi = 50001;
  for (int i = 0; i < 2; i++) {
    auto b = tcp_.Bind(r, {});
    ASSERT_TRUE(b.ok());
    kept_.push_back(b.value());
    const uint16_t p = tcp_.Snapshot(b.value()).req.local.port;
    EXPECT_TRUE(p == 50000 || p == 50001) << p;
  }
  EXPECT_EQ(Err(tcp_.Bind(r, {})), kEADDRINUSE);
  // An end outside the sysctl's range is ignored.
  r.range_lo = 1000;
  r.range_hi = 32769;
  for (int i = 0; i < 2; i++) {
    auto b = tcp_.Bind(r, {});
    ASSERT_TRUE(b.ok());
    kept_.push_back(b.value());
    const uint16_t p = tcp_.Snapshot(b.value()).req.local.port;
    EXPECT_TRUE(p == 32768 || p == 32769) << p;
  }
}

TEST_F(PortsTest, TcpConnectPortsShareByFourTuple) {
  ns_.sysctl().ip_local_port_lo = 41000;
  ns_.sysctl().ip_local_port_hi = 41001;
  const InetAddr r1{kLo4, 80}, r2{kLo4, 81};
  std::vector<Binding> keep;
  for (int i = 0; i < 2; i++) {
    auto b = tcp_.BindConnect(Req(kLo4, 0), r1, {});
    ASSERT_TRUE(b.ok());
    keep.push_back(b.value());
  }
  EXPECT_EQ(Err(tcp_.BindConnect(Req(kLo4, 0), r1, {})), kEADDRNOTAVAIL);
  // Another destination reuses the ports.
  auto b = tcp_.BindConnect(Req(kLo4, 0), r2, {});
  ASSERT_TRUE(b.ok());
  BindingState st = tcp_.Snapshot(b.value());
  ASSERT_TRUE(st.remote.has_value());
  EXPECT_EQ(*st.remote, r2);
  ASSERT_TRUE(st.local.has_value());
  EXPECT_EQ(st.local->port, st.req.local.port);
  // A port bound by bind(2) is not used by connect(2).
  NetNamespace ns;
  ns.sysctl().ip_local_port_lo = 42000;
  ns.sysctl().ip_local_port_hi = 42000;
  PortTable t(Proto::kTcp, ns);
  ASSERT_TRUE(Keep(t.Bind(Req(V4(0x7f000002), 42000), {})));
  EXPECT_EQ(Err(t.BindConnect(Req(kLo4, 0), r1, {})), kEADDRNOTAVAIL);
}

TEST_F(PortsTest, TcpConnectOfBoundChecksFourTuple) {
  BindRequest a = Req(kLo4, 7300), b = Req(kLo4, 7300);
  a.reuseaddr = b.reuseaddr = true;
  auto x = tcp_.Bind(a, {});
  auto y = tcp_.Bind(b, {});
  ASSERT_TRUE(x.ok() && y.ok());
  const InetAddr remote{kLo4, 80};
  EXPECT_TRUE(tcp_.Connect(x.value(), {kLo4, 7300}, remote).ok());
  EXPECT_EQ(Err(tcp_.Connect(y.value(), {kLo4, 7300}, remote)), kEADDRNOTAVAIL);
  EXPECT_TRUE(tcp_.Connect(y.value(), {kLo4, 7300}, {kLo4, 81}).ok());
}

TEST_F(PortsTest, UdpAutobindConnectFails) {
  ns_.sysctl().ip_local_port_lo = 43000;
  ns_.sysctl().ip_local_port_hi = 43000;
  ASSERT_TRUE(Keep(udp_.Bind(Req(kAny4, 43000), {})));
  EXPECT_EQ(Err(udp_.BindConnect(Req(kLo4, 0), {kLo4, 53}, {})), kEAGAIN);
}

TEST_F(PortsTest, Ping) {
  // The ident alone conflicts (ping_get_port), whatever the addresses.
  ASSERT_TRUE(Keep(ping_.Bind(Req(kLo4, 9), {})));
  EXPECT_EQ(Err(ping_.Bind(Req(V4(0x7f000002), 9), {})), kEADDRINUSE);
  auto e = ping_.Bind(Req(kAny4, 0), {});
  ASSERT_TRUE(e.ok());
  EXPECT_NE(ping_.Snapshot(e.value()).req.local.port, 0);
}

TEST_F(PortsTest, InheritSharesListenerPort) {
  auto l = tcp_.Bind(Req(kAny4, 7400), {});
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE(tcp_.Listen(l.value()).ok());
  Binding child = tcp_.Inherit(l.value(), {kLo4, 0}, {kLo4, 50000}, {});
  BindingState st = tcp_.Snapshot(child);
  EXPECT_EQ(st.req.local.port, 7400);
  EXPECT_EQ(st.local->port, 7400);
  tcp_.Unbind(l.value());
  // The accepted connection keeps the port (no SO_REUSEADDR).
  EXPECT_EQ(Err(tcp_.Bind(Req(kAny4, 7400), {})), kEADDRINUSE);
  BindRequest r = Req(kAny4, 7400);
  r.reuseaddr = true;
  // Both need SO_REUSEADDR: the child inherited none.
  EXPECT_EQ(Err(tcp_.Bind(r, {})), kEADDRINUSE);
  EXPECT_EQ(tcp_.List().size(), 1u);
}

struct Sockets {
  std::vector<std::shared_ptr<Socket>> all;
  std::weak_ptr<Socket> New(int family) {
    all.push_back(std::make_shared<FakeSocket>(family));
    return all.back();
  }
};

TEST_F(PortsTest, ListenerScoring) {
  Sockets s;
  auto w6 = s.New(AF_INET6), w4 = s.New(AF_INET), lo = s.New(AF_INET);
  BindRequest r6 = Req(kAny6, 8000, true);
  r6.reuseaddr = true;
  BindRequest r4 = Req(kAny4, 8000);
  r4.reuseaddr = true;
  BindRequest rl = Req(kLo4, 8000);
  rl.reuseaddr = true;
  // Listen each right after binding (no SO_REUSEPORT: they must not
  // overlap... they do, so use a reuseport group-free trick: separate
  // tables per case).
  {
    PortTable t(Proto::kTcp, ns_);
    auto b6 = t.Bind(r6, w6);
    ASSERT_TRUE(b6.ok());
    ASSERT_TRUE(t.Listen(b6.value()).ok());
    const InetAddr src{kLo4, 1234};
    EXPECT_EQ(t.FindListener({kLo4, 8000}, src), w6.lock());
    EXPECT_EQ(t.FindListener({kLo6, 8000}, {kLo6, 1}), w6.lock());
    EXPECT_EQ(t.FindListener({kLo4, 8001}, src), nullptr);
  }
  {
    // AF_INET wildcard over AF_INET6 wildcard; a specific address over
    // both. SO_REUSEPORT lets them listen together (distinct groups:
    // different families and addresses).
    PortTable t(Proto::kTcp, ns_);
    r6.reuseport = r4.reuseport = rl.reuseport = true;
    auto b6 = t.Bind(r6, w6);
    auto b4 = t.Bind(r4, w4);
    ASSERT_TRUE(b6.ok() && b4.ok());
    ASSERT_TRUE(t.Listen(b6.value()).ok());
    ASSERT_TRUE(t.Listen(b4.value()).ok());
    const InetAddr src{kLo4, 1234};
    EXPECT_EQ(t.FindListener({kLo4, 8000}, src), w4.lock());
    EXPECT_EQ(t.FindListener({kLo6, 8000}, {kLo6, 1}), w6.lock());
    auto bl = t.Bind(rl, lo);
    ASSERT_TRUE(bl.ok());
    // Not listening yet: not found.
    EXPECT_EQ(t.FindListener({kLo4, 8000}, src), w4.lock());
    ASSERT_TRUE(t.Listen(bl.value()).ok());
    EXPECT_EQ(t.FindListener({kLo4, 8000}, src), lo.lock());
    EXPECT_EQ(t.FindListener({V4(0x7f000002), 8000}, src), w4.lock());
  }
  {
    // An IPV6_V6ONLY wildcard listener takes no IPv4 connection.
    PortTable t(Proto::kTcp, ns_);
    BindRequest r = Req(kAny6, 8000, true);
    r.v6only = true;
    auto b = t.Bind(r, w6);
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE(t.Listen(b.value()).ok());
    EXPECT_EQ(t.FindListener({kLo4, 8000}, {kLo4, 1}), nullptr);
    EXPECT_EQ(t.FindListener({kLo6, 8000}, {kLo6, 1}), w6.lock());
  }
}

TEST_F(PortsTest, ReuseportSpreads) {
  Sockets s;
  std::vector<Binding> keep;
  std::set<Socket*> members;
  for (int i = 0; i < 4; i++) {
    BindRequest r = Req(kLo4, 8100);
    r.reuseport = true;
    auto w = s.New(AF_INET);
    members.insert(w.lock().get());
    auto b = tcp_.Bind(r, w);
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE(tcp_.Listen(b.value()).ok());
    keep.push_back(b.value());
  }
  std::set<Socket*> chosen;
  for (uint16_t port = 30000; port < 30064; port++) {
    auto got = tcp_.FindListener({kLo4, 8100}, {kLo4, port});
    ASSERT_NE(got, nullptr);
    EXPECT_TRUE(members.count(got.get()));
    chosen.insert(got.get());
    // The same flow always reaches the same socket.
    EXPECT_EQ(tcp_.FindListener({kLo4, 8100}, {kLo4, port}), got);
  }
  EXPECT_GT(chosen.size(), 1u);
  // UDP too.
  keep.clear();
  for (int i = 0; i < 4; i++) {
    BindRequest r = Req(kAny4, 8101);
    r.reuseport = true;
    auto b = udp_.Bind(r, s.all[i]);
    ASSERT_TRUE(b.ok());
    keep.push_back(b.value());
  }
  chosen.clear();
  for (uint16_t port = 30000; port < 30064; port++) {
    chosen.insert(udp_.FindReceiver({kLo4, 8101}, {kLo4, port}).get());
  }
  EXPECT_GT(chosen.size(), 1u);
  EXPECT_EQ(chosen.count(nullptr), 0u);
}

TEST_F(PortsTest, ReceiverScoring) {
  Sockets s;
  auto wild = s.New(AF_INET), conn = s.New(AF_INET), six = s.New(AF_INET6);
  BindRequest a = Req(kAny4, 9000), b = Req(kAny4, 9000);
  a.reuseaddr = b.reuseaddr = true;
  auto bw = udp_.Bind(a, wild);
  auto bc = udp_.Bind(b, conn);
  ASSERT_TRUE(bw.ok() && bc.ok());
  ASSERT_TRUE(udp_.Connect(bc.value(), {kLo4, 9000}, {kLo4, 5353}).ok());
  // The connected socket only for its peer; the wildcard for the rest.
  EXPECT_EQ(udp_.FindReceiver({kLo4, 9000}, {kLo4, 5353}), conn.lock());
  EXPECT_EQ(udp_.FindReceiver({kLo4, 9000}, {kLo4, 5354}), wild.lock());
  EXPECT_EQ(udp_.FindReceiver({V4(0x7f000002), 9000}, {kLo4, 5353}),
            wild.lock());
  udp_.Disconnect(bc.value());
  EXPECT_EQ(udp_.Snapshot(bc.value()).remote, std::nullopt);
  // IPv6 destinations reach only AF_INET6 sockets.
  EXPECT_EQ(udp_.FindReceiver({kLo6, 9000}, {kLo6, 1}), nullptr);
  auto b6 = udp_.Bind(Req(kLo6, 9000, true), six);
  ASSERT_TRUE(b6.ok());
  EXPECT_EQ(udp_.FindReceiver({kLo6, 9000}, {kLo6, 1}), six.lock());
  // A dead owner is skipped.
  s.all.clear();
  EXPECT_EQ(udp_.FindReceiver({kLo6, 9000}, {kLo6, 1}), nullptr);
}

TEST_F(PortsTest, PingLookupByFamily) {
  Sockets s;
  auto w4 = s.New(AF_INET), w6 = s.New(AF_INET6);
  BindRequest a = Req(kAny4, 77), b = Req(kAny6, 78, true);
  ASSERT_TRUE(Keep(ping_.Bind(a, w4)));
  ASSERT_TRUE(Keep(ping_.Bind(b, w6)));
  EXPECT_EQ(ping_.FindReceiver({kLo4, 77}, {kLo4, 0}), w4.lock());
  EXPECT_EQ(ping_.FindReceiver({kLo6, 77}, {kLo6, 0}), nullptr);
  EXPECT_EQ(ping_.FindReceiver({kLo6, 78}, {kLo6, 0}), w6.lock());
}

TEST_F(PortsTest, ListInBindOrder) {
  auto a = tcp_.Bind(Req(kLo4, 9500), {});
  auto b = tcp_.Bind(Req(kLo4, 9400), {});
  ASSERT_TRUE(a.ok() && b.ok());
  auto l = tcp_.List();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].req.local.port, 9500);
  EXPECT_EQ(l[1].req.local.port, 9400);
}

}  // namespace
}  // namespace sandbox::net::inet
