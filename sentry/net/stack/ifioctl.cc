#include "sentry/net/stack/ifioctl.h"

#include <string.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>

#include "sentry/kernel/log.h"

namespace sandbox::net::stack {
namespace {

// linux/sockios.h.
constexpr uint32_t kSiocGifname = 0x8910;
constexpr uint32_t kSiocSiflink = 0x8911;
constexpr uint32_t kSiocGifconf = 0x8912;
constexpr uint32_t kSiocGifflags = 0x8913;
constexpr uint32_t kSiocSifflags = 0x8914;
constexpr uint32_t kSiocGifaddr = 0x8915;
constexpr uint32_t kSiocGifdstaddr = 0x8917;
constexpr uint32_t kSiocGifbrdaddr = 0x8919;
constexpr uint32_t kSiocGifnetmask = 0x891b;
constexpr uint32_t kSiocGifmetric = 0x891d;
constexpr uint32_t kSiocSifmetric = 0x891e;
constexpr uint32_t kSiocGifmem = 0x891f;
constexpr uint32_t kSiocGifmtu = 0x8921;
constexpr uint32_t kSiocSifmtu = 0x8922;
constexpr uint32_t kSiocSifname = 0x8923;
constexpr uint32_t kSiocSifhwaddr = 0x8924;
constexpr uint32_t kSiocGifhwaddr = 0x8927;
constexpr uint32_t kSiocGifslave = 0x8929;
constexpr uint32_t kSiocAddmulti = 0x8931;
constexpr uint32_t kSiocDelmulti = 0x8932;
constexpr uint32_t kSiocGifindex = 0x8933;
constexpr uint32_t kSiocSifhwbroadcast = 0x8937;
constexpr uint32_t kSiocGiftxqlen = 0x8942;
constexpr uint32_t kSiocSiftxqlen = 0x8943;
constexpr uint32_t kSiocGifmap = 0x8970;
constexpr uint32_t kSiocSifmap = 0x8971;
constexpr uint32_t kSiocDevprivate = 0x89f0;  // .. + 15

// struct ifreq (40 bytes on x86-64): the name, then a 24-byte union.
struct IfReq {
  char name[kIfNameSize];
  uint8_t u[24];
};
static_assert(sizeof(IfReq) == 40);
// struct ifconf: int ifc_len, then the buffer pointer (16 bytes).
struct IfConf {
  int32_t len;
  uint32_t pad;
  uint64_t buf;
};
static_assert(sizeof(IfConf) == 16);

template <typename T>
void Put(IfReq& r, const T& v, size_t at = 0) {
  memcpy(r.u + at, &v, sizeof(v));
}
template <typename T>
T Get(const IfReq& r, size_t at = 0) {
  T v;
  memcpy(&v, r.u + at, sizeof(v));
  return v;
}

bool IsDevPrivate(uint32_t cmd) {
  return cmd >= kSiocDevprivate && cmd <= kSiocDevprivate + 15;
}

// dev_ifconf with inet_gifconf: one ifreq per IPv4 address (label, then
// a sockaddr_in with the local address).
KResult<uint64_t> IfConfIoctl(Interfaces& ifs, vfs::UserMemory& mem,
                              uint64_t arg) {
  IfConf ic;
  TRY_VOID(mem.CopyInFull(arg, &ic, sizeof(ic)));
  int32_t total = 0;
  for (const Addr& a : ifs.Addrs(AF_INET)) {
    if (ic.buf == 0) {
      total += sizeof(IfReq);
      continue;
    }
    if (ic.len - total < static_cast<int32_t>(sizeof(IfReq))) break;
    IfReq r = {};
    memcpy(r.name, a.label.data(), std::min(a.label.size(), kIfNameSize - 1));
    uint16_t fam = AF_INET;
    Put(r, fam);
    memcpy(r.u + 4, a.addr.data(), 4);
    TRY_VOID(mem.CopyOutFull(ic.buf + total, &r, sizeof(r)));
    total += sizeof(IfReq);
  }
  TRY_VOID(mem.CopyOutFull(arg, &total, sizeof(total)));
  return 0;
}

}  // namespace

bool IsInterfaceIoctl(uint32_t cmd) {
  switch (cmd) {
    case kSiocGifname:
    case kSiocSiflink:
    case kSiocGifconf:
    case kSiocGifflags:
    case kSiocSifflags:
    case kSiocGifmetric:
    case kSiocSifmetric:
    case kSiocGifmem:
    case kSiocGifmtu:
    case kSiocSifmtu:
    case kSiocSifname:
    case kSiocSifhwaddr:
    case kSiocGifhwaddr:
    case kSiocGifslave:
    case kSiocAddmulti:
    case kSiocDelmulti:
    case kSiocGifindex:
    case kSiocSifhwbroadcast:
    case kSiocGiftxqlen:
    case kSiocSiftxqlen:
    case kSiocGifmap:
    case kSiocSifmap:
      return true;
    default:
      return IsDevPrivate(cmd);
  }
}

KResult<uint64_t> InterfaceIoctl(Interfaces& ifs, vfs::UserMemory* mem,
                                 bool net_admin, uint32_t cmd, uint64_t arg) {
  if (!IsInterfaceIoctl(cmd)) return kENOTTY;
  if (mem == nullptr) return kEFAULT;
  if (cmd == kSiocGifconf) return IfConfIoctl(ifs, *mem, arg);
  if (cmd == kSiocSiflink || cmd == kSiocGifmem) return kENOTTY;

  IfReq r;
  TRY_VOID(mem->CopyInFull(arg, &r, sizeof(r)));
  auto copy_out = [&]() -> KResult<uint64_t> {
    TRY_VOID(mem->CopyOutFull(arg, &r, sizeof(r)));
    return 0;
  };

  if (cmd == kSiocGifname) {
    // dev_ifname: by ifr_ifindex.
    r.name[kIfNameSize - 1] = 0;
    std::optional<Link> l = ifs.LinkByIndex(Get<int32_t>(r));
    if (!l) return kENODEV;
    memset(r.name, 0, kIfNameSize);
    memcpy(r.name, l->name.data(), std::min(l->name.size(), kIfNameSize - 1));
    return copy_out();
  }

  // The others name the device; an alias suffix (":N") is ignored.
  r.name[kIfNameSize - 1] = 0;
  char* colon = strchr(r.name, ':');
  if (colon != nullptr) *colon = 0;
  std::string name(r.name);
  if (colon != nullptr) *colon = ':';

  bool set = false;
  switch (cmd) {
    case kSiocSifflags:
    case kSiocSifmetric:
    case kSiocSifmtu:
    case kSiocSifname:
    case kSiocSifhwaddr:
    case kSiocAddmulti:
    case kSiocDelmulti:
    case kSiocSifhwbroadcast:
    case kSiocSiftxqlen:
    case kSiocSifmap:
      if (!net_admin) return kEPERM;
      set = true;
      break;
    default:
      break;
  }
  std::optional<Link> l = ifs.LinkByName(name);
  if (!l) return kENODEV;
  if (IsDevPrivate(cmd)) return kEOPNOTSUPP;  // no ndo_siocdevprivate

  if (set) {
    switch (cmd) {
      case kSiocSifflags:
        TRY_VOID(ifs.ChangeFlags(l->index, Get<uint16_t>(r)));
        return 0;
      case kSiocSifmtu: {
        int32_t mtu = Get<int32_t>(r);
        if (mtu < 0) return kEINVAL;
        TRY_VOID(ifs.SetMtu(l->index, mtu));
        return 0;
      }
      case kSiocSiftxqlen: {
        int32_t q = Get<int32_t>(r);
        if (q < 0) return kEINVAL;
        TRY_VOID(ifs.SetTxqlen(l->index, q));
        return 0;
      }
      case kSiocSifmetric:
      case kSiocSifhwaddr:  // lo has no ndo_set_mac_address
      case kSiocSifmap:     // nor ndo_set_config
        return kEOPNOTSUPP;
      case kSiocAddmulti:
      case kSiocDelmulti:  // lo has no ndo_set_rx_mode
        return kEINVAL;
      case kSiocSifhwbroadcast:
        if (Get<uint16_t>(r) != l->type) return kEINVAL;
        kernel::LogUnsupported("ioctl SIOCSIFHWBROADCAST on %s: not supported",
                               name);
        return kEOPNOTSUPP;
      case kSiocSifname:
        if (l->up()) return kEBUSY;
        kernel::LogUnsupported(
            "ioctl SIOCSIFNAME on %s: renaming interfaces "
            "is not supported",
            name);
        return kEOPNOTSUPP;
      default:
        return kENOTTY;
    }
  }

  switch (cmd) {
    case kSiocGifflags: {
      int16_t f = static_cast<int16_t>(l->flags);
      Put(r, f);
      break;
    }
    case kSiocGifmetric:
      Put(r, int32_t{0});
      break;
    case kSiocGifmtu:
      Put(r, static_cast<int32_t>(l->mtu));
      break;
    case kSiocGifslave:
      return kEINVAL;
    case kSiocGifmap:
      // dev_getifmap: struct ifmap (mem_start, mem_end, base_addr, irq,
      // dma, port), all zero for lo.
      memset(r.u, 0, sizeof(r.u));
      break;
    case kSiocGifindex:
      Put(r, static_cast<int32_t>(l->index));
      break;
    case kSiocGiftxqlen:
      Put(r, static_cast<int32_t>(l->txqlen));
      break;
    case kSiocGifhwaddr: {
      // dev_get_mac_address: sa_family = dev->type, sa_data = the address
      // (addr_len bytes; the rest of sa_data as the caller left it).
      Put(r, l->type);
      memcpy(r.u + 2, l->address.data(), l->address.size());
      break;
    }
    default:
      return kENOTTY;
  }
  return copy_out();
}

KResult<uint64_t> DevinetIoctl(Interfaces& ifs, vfs::UserMemory* mem,
                               uint32_t cmd, uint64_t arg) {
  if (cmd != kSiocGifaddr && cmd != kSiocGifnetmask && cmd != kSiocGifbrdaddr &&
      cmd != kSiocGifdstaddr) {
    return kENOTTY;
  }
  if (mem == nullptr) return kEFAULT;
  IfReq r;
  TRY_VOID(mem->CopyInFull(arg, &r, sizeof(r)));
  r.name[kIfNameSize - 1] = 0;
  // devinet_ioctl matches the label, alias suffix included.
  std::string label(r.name);
  std::string dev = label.substr(0, label.find(':'));
  std::optional<Link> l = ifs.LinkByName(dev);
  if (!l) return kENODEV;
  const Addr* found = nullptr;
  std::vector<Addr> addrs = ifs.Addrs(AF_INET);
  for (const Addr& a : addrs) {
    if (a.index == l->index && a.label == label) {
      found = &a;
      break;
    }
  }
  if (found == nullptr) return kEADDRNOTAVAIL;
  memset(r.u, 0, 16);
  uint16_t fam = AF_INET;
  Put(r, fam);
  uint8_t v[4] = {};
  if (cmd == kSiocGifaddr || cmd == kSiocGifdstaddr) {
    memcpy(v, found->addr.data(), 4);
  } else if (cmd == kSiocGifnetmask) {
    uint32_t m = found->prefixlen == 0 ? 0 : ~0u << (32 - found->prefixlen);
    v[0] = m >> 24, v[1] = m >> 16, v[2] = m >> 8, v[3] = m;
  }  // SIOCGIFBRDADDR: lo has no broadcast address (0.0.0.0).
  memcpy(r.u + 4, v, 4);
  TRY_VOID(mem->CopyOutFull(arg, &r, sizeof(r)));
  return 0;
}

}  // namespace sandbox::net::stack
