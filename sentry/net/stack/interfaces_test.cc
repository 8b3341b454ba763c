#include "sentry/net/stack/interfaces.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sentry/net/stack/ifioctl.h"

namespace sandbox::net::stack {
namespace {

using ::testing::HasSubstr;

TEST(InterfacesTest, StartsWithLoopbackUp) {
  Interfaces ifs;
  std::vector<Link> links = ifs.Links();
  ASSERT_EQ(links.size(), 1u);
  const Link& lo = links[0];
  EXPECT_EQ(lo.index, 1);
  EXPECT_EQ(lo.name, "lo");
  EXPECT_EQ(lo.flags, kIffUp | kIffLoopback | kIffRunning | kIffLowerUp);
  EXPECT_EQ(lo.mtu, 65536u);
  EXPECT_EQ(lo.txqlen, 1000u);
  EXPECT_EQ(lo.qdisc, "noqueue");
  EXPECT_EQ(lo.operstate, kOperUnknown);
  std::vector<Addr> addrs = ifs.Addrs(AF_UNSPEC);
  ASSERT_EQ(addrs.size(), 2u);
  EXPECT_EQ(addrs[0].family, AF_INET);
  EXPECT_EQ(addrs[0].prefixlen, 8);
  EXPECT_EQ(addrs[0].label, "lo");
  EXPECT_EQ(addrs[1].family, AF_INET6);
  EXPECT_EQ(addrs[1].prefixlen, 128);
  EXPECT_EQ(addrs[1].addr[15], 1);
  EXPECT_EQ(ifs.Addrs(AF_INET6).size(), 1u);
}

TEST(InterfacesTest, RoutesFollowLinkState) {
  Interfaces ifs;
  std::vector<Route> r = ifs.Routes(AF_UNSPEC);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].type, kRtnLocal);
  EXPECT_EQ(r[0].dst_len, 8);
  EXPECT_EQ(r[0].dst[0], 127);
  EXPECT_EQ(r[0].dst[3], 0);
  EXPECT_EQ(r[1].dst_len, 32);
  EXPECT_EQ(r[1].dst[3], 1);
  EXPECT_EQ(r[2].type, kRtnBroadcast);
  EXPECT_EQ(r[2].scope, kScopeLink);
  EXPECT_EQ(r[2].dst[1], 255);
  EXPECT_EQ(r[3].family, AF_INET6);
  EXPECT_EQ(r[3].priority, 0u);
  for (const Route& x : r) EXPECT_EQ(x.table, kTableLocal);

  ASSERT_TRUE(ifs.ChangeFlags(1, kIffLoopback).ok());  // down
  EXPECT_EQ(ifs.LinkByIndex(1)->flags, kIffLoopback);
  EXPECT_EQ(ifs.LinkByIndex(1)->operstate, kOperDown);
  EXPECT_EQ(ifs.Addrs(AF_INET6).size(), 0u);
  EXPECT_EQ(ifs.Addrs(AF_INET).size(), 1u);
  EXPECT_EQ(ifs.Routes(AF_UNSPEC).size(), 2u);
  EXPECT_EQ(ifs.LinkByIndex(1)->qdisc, "noqueue");

  ASSERT_TRUE(ifs.ChangeFlags(1, kIffUp).ok());
  EXPECT_EQ(ifs.Addrs(AF_UNSPEC).size(), 2u);
  EXPECT_EQ(ifs.Routes(AF_UNSPEC).size(), 4u);
  EXPECT_EQ(ifs.ChangeFlags(2, kIffUp).error(), kENODEV);
}

TEST(InterfacesTest, PromiscIsCounted) {
  Interfaces ifs;
  ASSERT_TRUE(ifs.ChangeFlags(1, kIffUp | kIffPromisc).ok());
  EXPECT_EQ(ifs.LinkByIndex(1)->promiscuity, 1u);
  EXPECT_TRUE(ifs.LinkByIndex(1)->flags & kIffPromisc);
  ASSERT_TRUE(ifs.ChangeFlags(1, kIffUp | kIffPromisc).ok());
  EXPECT_EQ(ifs.LinkByIndex(1)->promiscuity, 1u);
  ASSERT_TRUE(ifs.ChangeFlags(1, kIffUp).ok());
  EXPECT_EQ(ifs.LinkByIndex(1)->promiscuity, 0u);
  EXPECT_FALSE(ifs.LinkByIndex(1)->flags & kIffPromisc);
}

TEST(InterfacesTest, ProcFiles) {
  Interfaces ifs;
  std::string dev = FormatProcNetDev(ifs);
  EXPECT_THAT(dev, HasSubstr(" face |bytes    packets errs drop fifo frame "
                             "compressed multicast|bytes    packets errs drop "
                             "fifo colls carrier compressed\n"));
  EXPECT_THAT(dev, HasSubstr("    lo:       0       0    0    0    0     0  "
                             "        0         0        0       0    0    0 "
                             "   0     0       0          0\n"));
  EXPECT_EQ(FormatProcNetIfInet6(ifs),
            "00000000000000000000000000000001 01 80 10 80       lo\n");
}

// Guest memory: one buffer at address kBase.
class FakeMemory : public vfs::UserMemory {
 public:
  static constexpr uint64_t kBase = 0x10000;
  std::vector<uint8_t> mem = std::vector<uint8_t>(4096);
  KResult<void> CopyInFull(uint64_t addr, void* dst, size_t n) override {
    if (addr < kBase || addr + n > kBase + mem.size()) return kEFAULT;
    memcpy(dst, mem.data() + (addr - kBase), n);
    return OkResult();
  }
  KResult<void> CopyOutFull(uint64_t addr, const void* src, size_t n) override {
    if (addr < kBase || addr + n > kBase + mem.size()) return kEFAULT;
    memcpy(mem.data() + (addr - kBase), src, n);
    return OkResult();
  }
  ifreq* req() { return reinterpret_cast<ifreq*>(mem.data()); }
};

TEST(IfIoctlTest, GetByName) {
  Interfaces ifs;
  FakeMemory m;
  strcpy(m.req()->ifr_name, "lo");
  ASSERT_TRUE(InterfaceIoctl(ifs, &m, false, SIOCGIFFLAGS, m.kBase).ok());
  EXPECT_EQ(m.req()->ifr_flags, IFF_UP | IFF_LOOPBACK | IFF_RUNNING);
  ASSERT_TRUE(InterfaceIoctl(ifs, &m, false, SIOCGIFINDEX, m.kBase).ok());
  EXPECT_EQ(m.req()->ifr_ifindex, 1);
  ASSERT_TRUE(InterfaceIoctl(ifs, &m, false, SIOCGIFMTU, m.kBase).ok());
  EXPECT_EQ(m.req()->ifr_mtu, 65536);
  ASSERT_TRUE(InterfaceIoctl(ifs, &m, false, SIOCGIFTXQLEN, m.kBase).ok());
  EXPECT_EQ(m.req()->ifr_qlen, 1000);
  ASSERT_TRUE(InterfaceIoctl(ifs, &m, false, SIOCGIFHWADDR, m.kBase).ok());
  EXPECT_EQ(m.req()->ifr_hwaddr.sa_family, kArphrdLoopback);
  strcpy(m.req()->ifr_name, "lo:7");
  ASSERT_TRUE(InterfaceIoctl(ifs, &m, false, SIOCGIFINDEX, m.kBase).ok());
  EXPECT_STREQ(m.req()->ifr_name, "lo:7");
  strcpy(m.req()->ifr_name, "eth0");
  EXPECT_EQ(InterfaceIoctl(ifs, &m, false, SIOCGIFFLAGS, m.kBase).error(),
            kENODEV);
  EXPECT_EQ(InterfaceIoctl(ifs, &m, false, SIOCGIFFLAGS, 8).error(), kEFAULT);
  // SIOCGIFADDR is AF_INET's.
  strcpy(m.req()->ifr_name, "lo");
  EXPECT_EQ(InterfaceIoctl(ifs, &m, false, SIOCGIFADDR, m.kBase).error(),
            kENOTTY);
  ASSERT_TRUE(DevinetIoctl(ifs, &m, SIOCGIFNETMASK, m.kBase).ok());
  EXPECT_EQ(
      reinterpret_cast<sockaddr_in*>(&m.req()->ifr_netmask)->sin_addr.s_addr,
      htonl(0xff000000));
}

TEST(IfIoctlTest, GetName) {
  Interfaces ifs;
  FakeMemory m;
  m.req()->ifr_ifindex = 1;
  ASSERT_TRUE(InterfaceIoctl(ifs, &m, false, SIOCGIFNAME, m.kBase).ok());
  EXPECT_STREQ(m.req()->ifr_name, "lo");
  m.req()->ifr_ifindex = 2;
  EXPECT_EQ(InterfaceIoctl(ifs, &m, false, SIOCGIFNAME, m.kBase).error(),
            kENODEV);
}

TEST(IfIoctlTest, SetFlagsNeedsNetAdmin) {
  Interfaces ifs;
  FakeMemory m;
  strcpy(m.req()->ifr_name, "lo");
  m.req()->ifr_flags = IFF_LOOPBACK;
  EXPECT_EQ(InterfaceIoctl(ifs, &m, false, SIOCSIFFLAGS, m.kBase).error(),
            kEPERM);
  EXPECT_TRUE(ifs.LinkByIndex(1)->up());
  ASSERT_TRUE(InterfaceIoctl(ifs, &m, true, SIOCSIFFLAGS, m.kBase).ok());
  EXPECT_FALSE(ifs.LinkByIndex(1)->up());
  ASSERT_TRUE(InterfaceIoctl(ifs, &m, false, SIOCGIFFLAGS, m.kBase).ok());
  EXPECT_EQ(m.req()->ifr_flags, IFF_LOOPBACK);
}

TEST(IfIoctlTest, IfConf) {
  Interfaces ifs;
  FakeMemory m;
  auto* ic = reinterpret_cast<ifconf*>(m.mem.data());
  ic->ifc_len = 0;
  ic->ifc_buf = nullptr;
  ASSERT_TRUE(InterfaceIoctl(ifs, &m, false, SIOCGIFCONF, m.kBase).ok());
  EXPECT_EQ(ic->ifc_len, static_cast<int>(sizeof(ifreq)));
  ic->ifc_len = 200;
  ic->ifc_buf = reinterpret_cast<char*>(m.kBase + 64);
  ASSERT_TRUE(InterfaceIoctl(ifs, &m, false, SIOCGIFCONF, m.kBase).ok());
  EXPECT_EQ(ic->ifc_len, static_cast<int>(sizeof(ifreq)));
  auto* r = reinterpret_cast<ifreq*>(m.mem.data() + 64);
  EXPECT_STREQ(r->ifr_name, "lo");
  EXPECT_EQ(reinterpret_cast<sockaddr_in*>(&r->ifr_addr)->sin_addr.s_addr,
            htonl(0x7f000001));
  ic->ifc_len = 39;
  ASSERT_TRUE(InterfaceIoctl(ifs, &m, false, SIOCGIFCONF, m.kBase).ok());
  EXPECT_EQ(ic->ifc_len, 0);
  ic->ifc_len = 200;
  ic->ifc_buf = reinterpret_cast<char*>(8);
  EXPECT_EQ(InterfaceIoctl(ifs, &m, false, SIOCGIFCONF, m.kBase).error(),
            kEFAULT);
}

}  // namespace
}  // namespace sandbox::net::stack
