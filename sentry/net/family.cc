#include "sentry/net/family.h"

#include <sys/socket.h>

#include <array>
#include <atomic>

#include "sentry/kernel/log.h"

namespace sandbox::net {
namespace {

constexpr int kAfMax = 46;    // AF_MAX (linux/socket.h, 6.x)
constexpr int kSockMax = 11;  // SOCK_MAX (SOCK_PACKET + 1)

struct Table {
  std::array<Family, kAfMax> families = {};
  std::array<std::atomic<bool>, kAfMax> logged = {};
};

Table& GetTable() {
  static Table* t = new Table;
  return *t;
}

KResult<const Family*> Lookup(int domain, int type) {
  if (domain < 0 || domain >= kAfMax) return kEAFNOSUPPORT;
  if (type < 0 || type >= kSockMax) return kEINVAL;
  Table& t = GetTable();
  const Family& f = t.families[domain];
  if (f.create == nullptr) {
    if (!t.logged[domain].exchange(true)) {
      kernel::LogUnsupported(
          "socket: address family %d is not supported "
          "(EAFNOSUPPORT)",
          domain);
    }
    return kEAFNOSUPPORT;
  }
  return &f;
}

}  // namespace

void RegisterFamily(const Family& f) {
  if (f.domain < 0 || f.domain >= kAfMax) return;
  GetTable().families[f.domain] = f;
}

bool FamilyRegistered(int domain) {
  return domain >= 0 && domain < kAfMax &&
         GetTable().families[domain].create != nullptr;
}

KResult<SocketRef> CreateSocket(Caller& c, int domain, int type, int protocol,
                                uint32_t flags) {
  TRY(const Family* f, Lookup(domain, type));
  return f->create(c, type, protocol, flags);
}

KResult<SocketPair> CreateSocketPair(Caller& c, int domain, int type,
                                     int protocol, uint32_t flags) {
  TRY(const Family* f, Lookup(domain, type));
  if (f->pair == nullptr) return kEOPNOTSUPP;
  return f->pair(c, type, protocol, flags);
}

}  // namespace sandbox::net
