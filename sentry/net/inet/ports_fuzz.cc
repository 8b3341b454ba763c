// Fuzzes PortTable with sequences of operations read from the input (bind,
// connect-bind, connect, listen, disconnect, unbind, drop, lookups) over a
// small port range, with options, families and addresses from the input.
// Nothing may crash, and the table must list exactly the live bindings.
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <memory>
#include <vector>

#include "sentry/net/inet/ports.h"
#include "sentry/net/namespace.h"
#include "sentry/net/socket.h"

namespace {

namespace inet = sandbox::net::inet;
using sandbox::net::NetNamespace;

class FakeSocket : public sandbox::net::Socket {
 public:
  FakeSocket() : Socket(AF_INET, SOCK_STREAM, 0, O_RDWR, {}) {}
};

inet::IpAddr Addr(uint8_t b) {
  switch (b % 6) {
    case 0:
      return inet::IpAddr::AnyV4();
    case 1:
      return inet::IpAddr::LoopbackV4();
    case 2:
      return inet::IpAddr::V4(0x7f000002);
    case 3:
      return inet::IpAddr::AnyV6();
    case 4:
      return inet::IpAddr::LoopbackV6();
    default:
      return inet::IpAddr::V4(0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  NetNamespace ns;
  ns.sysctl().ip_local_port_lo = 40000;
  ns.sysctl().ip_local_port_hi = 40000 + data[0] % 8;
  inet::PortTable t(static_cast<inet::Proto>(data[1] % 3), ns);
  std::vector<inet::Binding> live;
  std::vector<std::shared_ptr<sandbox::net::Socket>> socks;
  for (size_t i = 2; i + 3 < size; i += 4) {
    const uint8_t op = data[i], a = data[i + 1], b = data[i + 2],
                  c = data[i + 3];
    inet::BindRequest r;
    r.local.ip = Addr(a);
    r.local.port = (b & 1) ? 0 : 40000 + (b >> 1) % 10;
    r.v6_socket = !r.local.ip.is_v4() || (a & 0x80);
    r.v6only = c & 1;
    r.reuseaddr = c & 2;
    r.reuseport = c & 4;
    r.uid = (c >> 3) & 1;
    r.bound_dev_if = (c >> 4) % 3;
    r.range_lo = (c & 0x40) ? 40001 : 0;
    const inet::InetAddr remote{Addr(b), static_cast<uint16_t>(c)};
    const size_t pick = live.empty() ? 0 : a % live.size();
    switch (op % 9) {
      case 0: {
        socks.push_back(std::make_shared<FakeSocket>());
        auto x = t.Bind(r, socks.back());
        if (x.ok()) live.push_back(x.value());
        break;
      }
      case 1: {
        auto x = t.BindConnect(r, remote, {});
        if (x.ok()) live.push_back(x.value());
        break;
      }
      case 2:
        if (!live.empty()) (void)t.Connect(live[pick], r.local, remote);
        break;
      case 3:
        if (!live.empty()) (void)t.Listen(live[pick]);
        break;
      case 4:
        if (!live.empty()) t.Disconnect(live[pick]);
        break;
      case 5:
        if (!live.empty()) {
          t.Unbind(live[pick]);
          live.erase(live.begin() + pick);
        }
        break;
      case 6:
        if (!live.empty()) live.erase(live.begin() + pick);  // drop
        break;
      case 7:
        (void)t.FindListener({Addr(a), r.local.port}, remote);
        (void)t.FindReceiver({Addr(a), r.local.port}, remote);
        break;
      default:
        if (!socks.empty()) socks.erase(socks.begin());  // owner dies
        break;
    }
  }
  if (t.List().size() != live.size()) __builtin_trap();
  return 0;
}
