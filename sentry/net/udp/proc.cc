// /proc/net/udp, udp6, icmp and icmp6 (udp4_seq_show, udp6_seq_show,
// ping_v4_seq_show, ping_v6_seq_show): one row per bound socket of the
// namespace's UDP / ping table, AF_INET sockets in the v4 files, AF_INET6
// ones in the v6 files.
#include <stdio.h>
#include <sys/socket.h>

#include <string>

#include "sentry/net/inet/ports.h"
#include "sentry/net/proc_net.h"
#include "sentry/net/udp/udp.h"

namespace sandbox::net::udp {
namespace {

// An address as the kernel prints its __be32 words with %08X (the bytes of
// each 32-bit word in little-endian order).
std::string HexWords(const inet::IpAddr& ip, bool v6) {
  const auto& b = ip.bytes();
  char buf[40];
  std::string out;
  for (int w = v6 ? 0 : 3; w < 4; ++w) {
    const uint32_t v = uint32_t{b[4 * w]} | uint32_t{b[4 * w + 1]} << 8 |
                       uint32_t{b[4 * w + 2]} << 16 |
                       uint32_t{b[4 * w + 3]} << 24;
    snprintf(buf, sizeof(buf), "%08X", v);
    out += buf;
  }
  return out;
}

std::string Generate(NetNamespace& ns, inet::Proto proto, bool v6) {
  std::string out;
  if (v6) {
    out =
        "  sl  local_address                         remote_address           "
        "             st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
        "inode ref pointer drops\n";
  } else {
    std::string h = proto == inet::Proto::kUdp
                        ? "   sl  local_address rem_address   st tx_queue "
                          "rx_queue tr tm->when retrnsmt   uid  timeout "
                          "inode ref pointer drops"
                        : "  sl  local_address rem_address   st tx_queue "
                          "rx_queue tr tm->when retrnsmt   uid  timeout "
                          "inode ref pointer drops";
    h.resize(127, ' ');  // seq_setwidth(seq, 127) + seq_pad
    out = h + "\n";
  }
  for (const inet::BindingState& s : inet::PortTable::Of(ns, proto).List()) {
    std::shared_ptr<Socket> owner = s.owner.lock();
    DgramSocket* d = AsDgramSocket(owner.get());
    if (d == nullptr || (d->family() == AF_INET6) != v6) continue;
    const inet::ProcRow r = d->proc_row();
    char line[512];
    // The bucket: the port's slot in a 128-slot udp_table.
    const int bucket = r.local.port & 127;
    const int n = snprintf(
        line, sizeof(line),
        "%5d: %s:%04X %s:%04X %02X %08llX:%08llX %02X:%08lX %08X %5u %8d "
        "%llu %d %016llx %llu",
        bucket, HexWords(r.local.ip, v6).c_str(), r.local.port,
        HexWords(r.remote.ip, v6).c_str(), r.remote.port, r.state,
        static_cast<unsigned long long>(r.tx_queue),
        static_cast<unsigned long long>(r.rx_queue), 0, 0L, 0, r.uid, 0,
        static_cast<unsigned long long>(r.inode), r.refcount, 0ULL,
        static_cast<unsigned long long>(r.drops));
    std::string l(line, n > 0 ? static_cast<size_t>(n) : 0);
    if (!v6 && l.size() < 127) l.resize(127, ' ');
    out += l + "\n";
  }
  return out;
}

}  // namespace

void RegisterProcFiles() {
  RegisterProcNetFile("udp", [](NetNamespace& ns) {
    return Generate(ns, inet::Proto::kUdp, false);
  });
  RegisterProcNetFile("udp6", [](NetNamespace& ns) {
    return Generate(ns, inet::Proto::kUdp, true);
  });
  RegisterProcNetFile("icmp", [](NetNamespace& ns) {
    return Generate(ns, inet::Proto::kPing, false);
  });
  RegisterProcNetFile("icmp6", [](NetNamespace& ns) {
    return Generate(ns, inet::Proto::kPing, true);
  });
}

}  // namespace sandbox::net::udp
