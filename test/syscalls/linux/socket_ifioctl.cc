// The interface ioctls every socket answers (dev_ioctl): on AF_UNIX and
// AF_NETLINK sockets, for lo. SIOCGIFADDR and friends belong to AF_INET
// sockets: ENOTTY elsewhere. getifaddrs(3) and if_nameindex(3), which ride
// on netlink, see lo too.
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/test_util.h"

namespace sandbox::testutil {
namespace {

constexpr uint16_t kArphrdLoopback = 772;

class IfIoctlTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    fd_.reset(GetParam() == AF_UNIX ? socket(AF_UNIX, SOCK_STREAM, 0)
                                    : socket(AF_NETLINK, SOCK_RAW, 0));
    ASSERT_TRUE(fd_.valid()) << strerror(errno);
  }
  ifreq Lo() {
    ifreq r = {};
    strcpy(r.ifr_name, "lo");
    return r;
  }
  FileDescriptor fd_;
};

TEST_P(IfIoctlTest, IndexAndName) {
  ifreq r = Lo();
  ASSERT_THAT(ioctl(fd_.get(), SIOCGIFINDEX, &r), SyscallSucceeds());
  EXPECT_EQ(r.ifr_ifindex, static_cast<int>(if_nametoindex("lo")));
  int index = r.ifr_ifindex;
  ifreq n = {};
  n.ifr_ifindex = index;
  ASSERT_THAT(ioctl(fd_.get(), SIOCGIFNAME, &n), SyscallSucceeds());
  EXPECT_STREQ(n.ifr_name, "lo");
  n.ifr_ifindex = 0x7ffffff0;
  EXPECT_THAT(ioctl(fd_.get(), SIOCGIFNAME, &n), SyscallFailsWithErrno(ENODEV));
  // An alias suffix names the device; the name comes back unchanged.
  ifreq alias = {};
  strcpy(alias.ifr_name, "lo:3");
  ASSERT_THAT(ioctl(fd_.get(), SIOCGIFINDEX, &alias), SyscallSucceeds());
  EXPECT_EQ(alias.ifr_ifindex, index);
  EXPECT_STREQ(alias.ifr_name, "lo:3");
}

TEST_P(IfIoctlTest, FlagsMtuTxqlenHwaddr) {
  ifreq r = Lo();
  ASSERT_THAT(ioctl(fd_.get(), SIOCGIFFLAGS, &r), SyscallSucceeds());
  EXPECT_EQ(r.ifr_flags & (IFF_UP | IFF_LOOPBACK | IFF_RUNNING),
            IFF_UP | IFF_LOOPBACK | IFF_RUNNING);
  r = Lo();
  ASSERT_THAT(ioctl(fd_.get(), SIOCGIFMTU, &r), SyscallSucceeds());
  EXPECT_EQ(r.ifr_mtu, 65536);
  r = Lo();
  ASSERT_THAT(ioctl(fd_.get(), SIOCGIFTXQLEN, &r), SyscallSucceeds());
  EXPECT_EQ(r.ifr_qlen, 1000);
  r = Lo();
  ASSERT_THAT(ioctl(fd_.get(), SIOCGIFHWADDR, &r), SyscallSucceeds());
  EXPECT_EQ(r.ifr_hwaddr.sa_family, kArphrdLoopback);
  EXPECT_EQ(std::string(r.ifr_hwaddr.sa_data, 6), std::string(6, '\0'));
  r = Lo();
  ASSERT_THAT(ioctl(fd_.get(), SIOCGIFMETRIC, &r), SyscallSucceeds());
  EXPECT_EQ(r.ifr_metric, 0);
  r = Lo();
  memset(&r.ifr_map, 0x55, sizeof(r.ifr_map));
  ASSERT_THAT(ioctl(fd_.get(), SIOCGIFMAP, &r), SyscallSucceeds());
  EXPECT_EQ(r.ifr_map.mem_start, 0u);
  EXPECT_EQ(r.ifr_map.irq, 0);
}

TEST_P(IfIoctlTest, Errors) {
  ifreq r = {};
  strcpy(r.ifr_name, "nosuchdev0");
  EXPECT_THAT(ioctl(fd_.get(), SIOCGIFFLAGS, &r),
              SyscallFailsWithErrno(ENODEV));
  EXPECT_THAT(ioctl(fd_.get(), SIOCGIFINDEX, &r),
              SyscallFailsWithErrno(ENODEV));
  // A name without its NUL: only IFNAMSIZ - 1 bytes count.
  memset(r.ifr_name, 'l', sizeof(r.ifr_name));
  EXPECT_THAT(ioctl(fd_.get(), SIOCGIFINDEX, &r),
              SyscallFailsWithErrno(ENODEV));
  EXPECT_THAT(ioctl(fd_.get(), SIOCGIFFLAGS, reinterpret_cast<void*>(8)),
              SyscallFailsWithErrno(EFAULT));
  // AF_INET's commands.
  r = Lo();
  EXPECT_THAT(ioctl(fd_.get(), SIOCGIFADDR, &r), SyscallFailsWithErrno(ENOTTY));
  EXPECT_THAT(ioctl(fd_.get(), SIOCGIFNETMASK, &r),
              SyscallFailsWithErrno(ENOTTY));
  EXPECT_THAT(ioctl(fd_.get(), SIOCGIFSLAVE, &r),
              SyscallFailsWithErrno(EINVAL));
  // The device-private range on a device without it.
  EXPECT_THAT(ioctl(fd_.get(), SIOCDEVPRIVATE, &r),
              SyscallFailsWithErrno(EOPNOTSUPP));
  // Changing flags needs CAP_NET_ADMIN; a bad pointer is EFAULT first.
  EXPECT_THAT(ioctl(fd_.get(), SIOCSIFFLAGS, reinterpret_cast<void*>(8)),
              SyscallFailsWithErrno(EFAULT));
}

TEST_P(IfIoctlTest, SetFlagsWithoutNetAdminIsEperm) {
  int status = InForkedChild([&] {
    if (!DropCapabilities(false)) _exit(2);
    ifreq r = Lo();
    r.ifr_flags = IFF_LOOPBACK;  // would take lo down
    if (ioctl(fd_.get(), SIOCSIFFLAGS, &r) != -1 || errno != EPERM) _exit(1);
    if (ioctl(fd_.get(), SIOCGIFFLAGS, &r) != 0 || !(r.ifr_flags & IFF_UP)) {
      _exit(3);
    }
  });
  EXPECT_EQ(status, 0);
}

TEST_P(IfIoctlTest, IfConf) {
  // The size needed.
  ifconf ic = {};
  ASSERT_THAT(ioctl(fd_.get(), SIOCGIFCONF, &ic), SyscallSucceeds());
  ASSERT_GT(ic.ifc_len, 0);
  EXPECT_EQ(ic.ifc_len % sizeof(ifreq), 0u);
  int need = ic.ifc_len;
  std::vector<ifreq> reqs(need / sizeof(ifreq) + 2);
  ic.ifc_len = reqs.size() * sizeof(ifreq);
  ic.ifc_req = reqs.data();
  ASSERT_THAT(ioctl(fd_.get(), SIOCGIFCONF, &ic), SyscallSucceeds());
  EXPECT_EQ(ic.ifc_len, need);
  bool lo = false;
  for (int i = 0; i < need / static_cast<int>(sizeof(ifreq)); ++i) {
    const ifreq& r = reqs[i];
    EXPECT_EQ(r.ifr_addr.sa_family, AF_INET);
    if (std::string(r.ifr_name) == "lo") {
      lo = true;
      EXPECT_EQ(
          reinterpret_cast<const sockaddr_in*>(&r.ifr_addr)->sin_addr.s_addr,
          htonl(INADDR_LOOPBACK));
    }
  }
  EXPECT_TRUE(lo);
  // Too small for one entry: none; a negative length: none.
  ic.ifc_len = sizeof(ifreq) - 1;
  ASSERT_THAT(ioctl(fd_.get(), SIOCGIFCONF, &ic), SyscallSucceeds());
  EXPECT_EQ(ic.ifc_len, 0);
  ic.ifc_len = -5;
  ASSERT_THAT(ioctl(fd_.get(), SIOCGIFCONF, &ic), SyscallSucceeds());
  EXPECT_EQ(ic.ifc_len, 0);
  // Bad buffers.
  ic.ifc_len = 200;
  ic.ifc_buf = reinterpret_cast<char*>(8);
  EXPECT_THAT(ioctl(fd_.get(), SIOCGIFCONF, &ic),
              SyscallFailsWithErrno(EFAULT));
  EXPECT_THAT(ioctl(fd_.get(), SIOCGIFCONF, reinterpret_cast<void*>(8)),
              SyscallFailsWithErrno(EFAULT));
}

INSTANTIATE_TEST_SUITE_P(Families, IfIoctlTest,
                         ::testing::Values(AF_UNIX, AF_NETLINK),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return p.param == AF_UNIX ? "Unix" : "Netlink";
                         });

TEST(IfNameIndexTest, ListsLoopback) {
  struct if_nameindex* ni = if_nameindex();
  ASSERT_NE(ni, nullptr) << strerror(errno);
  bool lo = false;
  for (struct if_nameindex* p = ni; p->if_index != 0; ++p) {
    if (std::string(p->if_name) == "lo") {
      lo = true;
      EXPECT_EQ(p->if_index, if_nametoindex("lo"));
    }
  }
  if_freenameindex(ni);
  EXPECT_TRUE(lo);
  EXPECT_NE(if_nametoindex("lo"), 0u);
  char name[IF_NAMESIZE];
  ASSERT_NE(if_indextoname(if_nametoindex("lo"), name), nullptr);
  EXPECT_STREQ(name, "lo");
  EXPECT_EQ(if_nametoindex("nosuchdev0"), 0u);
}

TEST(GetifaddrsTest, ListsLoopbackAddresses) {
  ifaddrs* ifa = nullptr;
  ASSERT_THAT(getifaddrs(&ifa), SyscallSucceeds());
  bool v4 = false, v6 = false;
  for (ifaddrs* p = ifa; p != nullptr; p = p->ifa_next) {
    if (std::string(p->ifa_name) != "lo" || p->ifa_addr == nullptr) continue;
    EXPECT_TRUE(p->ifa_flags & IFF_LOOPBACK);
    EXPECT_TRUE(p->ifa_flags & IFF_UP);
    if (p->ifa_addr->sa_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(p->ifa_addr);
      auto* m = reinterpret_cast<sockaddr_in*>(p->ifa_netmask);
      if (a->sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
        v4 = true;
        ASSERT_NE(m, nullptr);
        EXPECT_EQ(m->sin_addr.s_addr, htonl(0xff000000));
      }
    } else if (p->ifa_addr->sa_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(p->ifa_addr);
      if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr)) v6 = true;
    }
  }
  freeifaddrs(ifa);
  EXPECT_TRUE(v4);
  EXPECT_TRUE(v6);
}

}  // namespace
}  // namespace sandbox::testutil
