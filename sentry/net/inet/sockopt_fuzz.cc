// Fuzzes what a guest hands the Internet families as bytes: sockaddr_in/
// sockaddr_in6 for every family and use (ParseSockAddr, round-tripped
// through ToSockAddr), and SOL_IP/SOL_IPV6 option values (SetSockOpt, then
// GetSockOpt into a buffer of a size from the input) on TCP and UDP
// sockets of both families. Nothing may crash or write past a buffer.
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <memory>
#include <vector>

#include "sentry/net/inet/address.h"
#include "sentry/net/inet/inet_socket.h"

namespace {

using sandbox::net::Caller;
using sandbox::net::SockAddr;
namespace inet = sandbox::net::inet;

class FuzzSocket : public inet::InetSocket {
 public:
  FuzzSocket(int family, int type, inet::Proto p)
      : InetSocket(family, type, 0, O_RDWR, {}, p) {}
  inet::ProcRow proc_row() const override { return {}; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const uint8_t sel = data[0];
  const int name = data[1];
  const size_t out_len = data[2] % 64;
  const uint8_t* val = data + 3;
  const size_t n = size - 3;

  SockAddr a = SockAddr::From(val, static_cast<uint32_t>(n));
  for (int family : {AF_INET, AF_INET6}) {
    for (auto use : {inet::AddrUse::kBind, inet::AddrUse::kConnect,
                     inet::AddrUse::kSendTo, inet::AddrUse::kDgramConnect}) {
      auto r = inet::ParseSockAddr(family, a, use);
      if (r.ok()) {
        SockAddr back = inet::ToSockAddr(family, r.value());
        if (back.len > SockAddr::kMaxLen) __builtin_trap();
      }
    }
  }

  const int family = (sel & 1) ? AF_INET6 : AF_INET;
  const bool tcp = sel & 2;
  auto s =
      std::make_shared<FuzzSocket>(family, tcp ? SOCK_STREAM : SOCK_DGRAM,
                                   tcp ? inet::Proto::kTcp : inet::Proto::kUdp);
  const int level = (sel & 4) ? 41 : 0;  // SOL_IPV6 : SOL_IP
  Caller c;
  (void)s->SetSockOpt(c, level, name, {val, n});
  std::vector<uint8_t> out(out_len + 1, 0xa5);
  auto got = s->GetSockOpt(c, level, name, {out.data(), out_len});
  if (got.ok() && got.value() > out_len) __builtin_trap();
  if (out[out_len] != 0xa5) __builtin_trap();
  return 0;
}
