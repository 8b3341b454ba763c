#include "sentry/net/inet/proc.h"

#include <sys/socket.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/net/inet/mib.h"
#include "sentry/net/proc_net.h"

namespace sandbox::net::inet {
namespace {

// %08X of an in_addr's s_addr as a little-endian host loads it.
std::string HexV4(const IpAddr& ip) {
  const uint32_t v = ip.is_v4() ? ip.v4() : 0;
  return absl::StrFormat("%08X", __builtin_bswap32(v));
}

// %08X%08X%08X%08X of in6_addr's s6_addr32 words (loaded little-endian).
std::string HexV6(const IpAddr& ip) {
  const auto& b = ip.bytes();
  std::string out;
  for (int w = 0; w < 4; w++) {
    const uint32_t v = uint32_t{b[w * 4]} | uint32_t{b[w * 4 + 1]} << 8 |
                       uint32_t{b[w * 4 + 2]} << 16 |
                       uint32_t{b[w * 4 + 3]} << 24;
    absl::StrAppendFormat(&out, "%08X", v);
  }
  return out;
}

// seq_setwidth(width) + seq_pad('\n'): a line short of `width` gets
// spaces up to it.
void PadLine(std::string& out, std::string line, size_t width) {
  if (line.size() < width) line.append(width - line.size(), ' ');
  out += line;
  out += '\n';
}

constexpr size_t kTcp4Width = 149;  // TMPSZ - 1
constexpr size_t kDgram4Width = 127;
constexpr int kUdpHashMask = 255;  // UDP_HTABLE_SIZE_MIN - 1
constexpr int kPingHashMask = 63;  // PING_HTABLE_MASK

constexpr char kTcp4Header[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
    "retrnsmt   uid  timeout inode";
constexpr char kTcp6Header[] =
    "  sl  local_address                         remote_address               "
    "         st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
    "inode\n";
constexpr char kUdp4Header[] =
    "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
    "retrnsmt   uid  timeout inode ref pointer drops";
constexpr char kPing4Header[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
    "retrnsmt   uid  timeout inode ref pointer drops";
constexpr char kDgram6Header[] =  // IPV6_SEQ_DGRAM_HEADER
    "  sl  local_address                         remote_address               "
    "         st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
    "inode ref pointer drops\n";

// %pK for a reader without CAP_SYSLOG under kptr_restrict: zeros.
constexpr char kPointer[] = "0000000000000000";

std::string Empty(NetNamespace&, const char* header, size_t width) {
  std::string out;
  if (width > 0) {
    PadLine(out, header, width);
  } else {
    out = header;
  }
  return out;
}

}  // namespace

std::string FormatTcpRows(const std::vector<ProcRow>& rows, bool v6) {
  std::string out;
  if (v6) {
    out = kTcp6Header;
  } else {
    PadLine(out, kTcp4Header, kTcp4Width);
  }
  int i = 0;
  for (const ProcRow& r : rows) {
    const std::string src = v6 ? HexV6(r.local.ip) : HexV4(r.local.ip);
    const std::string dst = v6 ? HexV6(r.remote.ip) : HexV4(r.remote.ip);
    std::string line = absl::StrFormat(
        "%4d: %s:%04X %s:%04X %02X %08X:%08X %02X:%08X %08X %5u %8d %u %d "
        "%s %u %u %u %u %d",
        i++, src, r.local.port, dst, r.remote.port, r.state,
        static_cast<uint32_t>(r.tx_queue), static_cast<uint32_t>(r.rx_queue),
        r.timer_active, static_cast<uint64_t>(r.timer_when), r.retransmits,
        r.uid, r.probes, r.inode, r.refcount, kPointer, r.rto, r.ato,
        r.quick_pingpong, r.cwnd, r.ssthresh);
    if (v6) {
      out += line;
      out += '\n';
    } else {
      PadLine(out, std::move(line), kTcp4Width);
    }
  }
  return out;
}

std::string FormatDgramRows(const std::vector<std::pair<int, ProcRow>>& rows,
                            bool v6, bool ping) {
  std::string out;
  if (v6) {
    out = kDgram6Header;
  } else {
    PadLine(out, ping ? kPing4Header : kUdp4Header, kDgram4Width);
  }
  for (const auto& [bucket, r] : rows) {
    const std::string src = v6 ? HexV6(r.local.ip) : HexV4(r.local.ip);
    const std::string dst = v6 ? HexV6(r.remote.ip) : HexV4(r.remote.ip);
    std::string line = absl::StrFormat(
        "%5d: %s:%04X %s:%04X %02X %08X:%08X %02X:%08X %08X %5u %8d %u %d %s "
        "%u",
        bucket, src, r.local.port, dst, r.remote.port, r.state,
        static_cast<uint32_t>(r.tx_queue), static_cast<uint32_t>(r.rx_queue), 0,
        0, 0, r.uid, 0, r.inode, r.refcount, kPointer,
        static_cast<uint32_t>(r.drops));
    if (v6) {
      out += line;
      out += '\n';
    } else {
      PadLine(out, std::move(line), kDgram4Width);
    }
  }
  return out;
}

std::vector<ProcRow> CollectRows(NetNamespace& ns, Proto proto, int family) {
  std::vector<ProcRow> rows, listeners;
  for (const BindingState& st : PortTable::Of(ns, proto).List()) {
    std::shared_ptr<Socket> s = st.owner.lock();
    if (s == nullptr || s->family() != family) continue;
    auto* is = dynamic_cast<InetSocket*>(s.get());
    if (is == nullptr) continue;
    ProcRow r = is->proc_row();
    // The listening hash is shown before the established one.
    (st.listening ? listeners : rows).push_back(std::move(r));
  }
  listeners.insert(listeners.end(), rows.begin(), rows.end());
  return listeners;
}

namespace {

std::string Dgram(NetNamespace& ns, Proto proto, bool v6) {
  const bool ping = proto == Proto::kPing;
  std::vector<std::pair<int, ProcRow>> rows;
  for (ProcRow& r : CollectRows(ns, proto, v6 ? AF_INET6 : AF_INET)) {
    const int bucket = r.local.port & (ping ? kPingHashMask : kUdpHashMask);
    rows.emplace_back(bucket, std::move(r));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.first < b.first;
  });
  return FormatDgramRows(rows, v6, ping);
}

// Adds `name` unless a protocol registered its own generator first (the
// protocols' Register run before inet::Register).
void RegisterIfAbsent(const char* name, ProcNetGenerator gen) {
  for (const std::string& n : ProcNetFileNames()) {
    if (n == name) return;
  }
  RegisterProcNetFile(name, std::move(gen));
}

}  // namespace

void RegisterProcFiles() {
  RegisterIfAbsent("tcp", [](NetNamespace& ns) {
    return FormatTcpRows(CollectRows(ns, Proto::kTcp, AF_INET), false);
  });
  RegisterIfAbsent("tcp6", [](NetNamespace& ns) {
    return FormatTcpRows(CollectRows(ns, Proto::kTcp, AF_INET6), true);
  });
  RegisterIfAbsent(
      "udp", [](NetNamespace& ns) { return Dgram(ns, Proto::kUdp, false); });
  RegisterIfAbsent(
      "udp6", [](NetNamespace& ns) { return Dgram(ns, Proto::kUdp, true); });
  RegisterIfAbsent(
      "icmp", [](NetNamespace& ns) { return Dgram(ns, Proto::kPing, false); });
  RegisterIfAbsent(
      "icmp6", [](NetNamespace& ns) { return Dgram(ns, Proto::kPing, true); });
  // No UDP-Lite or raw sockets: the header lines alone.
  RegisterIfAbsent("udplite", [](NetNamespace& ns) {
    return Empty(ns, kUdp4Header, kDgram4Width);
  });
  RegisterIfAbsent(
      "udplite6", [](NetNamespace& ns) { return Empty(ns, kDgram6Header, 0); });
  RegisterIfAbsent("raw", [](NetNamespace& ns) {
    return Empty(ns, kUdp4Header, kDgram4Width);
  });
  RegisterIfAbsent(
      "raw6", [](NetNamespace& ns) { return Empty(ns, kDgram6Header, 0); });
  RegisterIfAbsent("snmp", &FormatProcNetSnmp);
  RegisterIfAbsent("snmp6", &FormatProcNetSnmp6);
  RegisterIfAbsent("netstat", &FormatProcNetNetstat);
}

}  // namespace sandbox::net::inet
