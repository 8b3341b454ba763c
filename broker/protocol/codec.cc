#include "broker/protocol/codec.h"

#include <arpa/inet.h>

#include <algorithm>

#include "gofer/protocol/wire.h"

namespace sandbox::broker {
namespace {

void PutIp(gofer::Writer& w, const Ip& ip) {
  w.U8(ip.family);
  for (uint8_t b : ip.bytes) w.U8(b);
}

// An address: the family must be AF_INET or AF_INET6, and an IPv4 one has
// zeros past its 4 bytes (one encoding per address).
bool GetIp(gofer::Reader& r, Ip* ip) {
  ip->family = r.U8();
  for (uint8_t& b : ip->bytes) b = r.U8();
  if (!r.ok()) return false;
  if (ip->family == kFamilyInet) {
    return std::all_of(ip->bytes.begin() + 4, ip->bytes.end(),
                       [](uint8_t b) { return b == 0; });
  }
  return ip->family == kFamilyInet6;
}

void PutEndpoint(gofer::Writer& w, const Endpoint& e) {
  PutIp(w, e.ip);
  w.U16(e.port);
}

bool GetEndpoint(gofer::Reader& r, Endpoint* e) {
  if (!GetIp(r, &e->ip)) return false;
  e->port = r.U16();
  return r.ok();
}

std::string_view Cut(const std::string& s, size_t max) {
  return std::string_view(s).substr(0, max);
}

}  // namespace

std::string Encode(const Message& m) {
  gofer::Writer w;
  w.U8(kVersion);
  w.U8(static_cast<uint8_t>(m.type));
  w.U16(0);
  w.U32(m.id);
  switch (m.type) {
    case Type::kConnect:
      w.U8(static_cast<uint8_t>(m.proto));
      PutEndpoint(w, m.endpoint);
      w.Str(Cut(m.name, kMaxName));
      break;
    case Type::kConnectReply:
      w.U32(static_cast<uint32_t>(m.error));
      w.U8(m.error == 0 && m.in_progress ? 1 : 0);
      w.Str(Cut(m.reason, kMaxReason));
      PutEndpoint(w, m.local);
      break;
    case Type::kResolve:
      w.U8(m.family);
      w.Str(Cut(m.name, kMaxName));
      break;
    case Type::kResolveReply: {
      w.U8(static_cast<uint8_t>(m.rcode));
      w.U32(m.ttl);
      const size_t n = std::min(m.addresses.size(), kMaxAddresses);
      w.U32(static_cast<uint32_t>(n));
      for (size_t i = 0; i < n; ++i) PutIp(w, m.addresses[i]);
      break;
    }
    case Type::kAccepted:
    case Type::kUdpFlow:
      PutEndpoint(w, m.endpoint);
      w.U16(m.guest_port);
      break;
  }
  return w.Take();
}

bool Decode(std::string_view record, Message* m) {
  if (record.size() > kMaxRecord) return false;
  gofer::Reader r(record);
  *m = Message();
  const uint8_t version = r.U8();
  const uint8_t type = r.U8();
  const uint16_t flags = r.U16();
  m->id = r.U32();
  if (!r.ok() || version != kVersion || type == 0 || type > kMaxType ||
      flags != 0) {
    return false;
  }
  m->type = static_cast<Type>(type);
  switch (m->type) {
    case Type::kConnect: {
      const uint8_t proto = r.U8();
      if (proto != static_cast<uint8_t>(Proto::kTcp) &&
          proto != static_cast<uint8_t>(Proto::kUdp)) {
        return false;
      }
      m->proto = static_cast<Proto>(proto);
      if (!GetEndpoint(r, &m->endpoint)) return false;
      m->name = r.Str(kMaxName);
      if (m->id == 0) return false;
      break;
    }
    case Type::kConnectReply: {
      m->error = static_cast<int32_t>(r.U32());
      const uint8_t in_progress = r.U8();
      m->reason = r.Str(kMaxReason);
      if (!GetEndpoint(r, &m->local)) return false;
      // errno values are small and positive; in_progress only with a
      // socket.
      if (m->error < 0 || m->error > 4095 || in_progress > 1 ||
          (in_progress == 1 && m->error != 0) || m->id == 0) {
        return false;
      }
      m->in_progress = in_progress == 1;
      break;
    }
    case Type::kResolve:
      m->family = r.U8();
      m->name = r.Str(kMaxName);
      if ((m->family != 0 && m->family != kFamilyInet &&
           m->family != kFamilyInet6) ||
          m->id == 0) {
        return false;
      }
      break;
    case Type::kResolveReply: {
      const uint8_t rcode = r.U8();
      if (rcode != 0 && rcode != 2 && rcode != 3 && rcode != 5) return false;
      m->rcode = static_cast<Rcode>(rcode);
      m->ttl = r.U32();
      const uint32_t n = r.Count(kMaxAddresses, 17);
      m->addresses.resize(n);
      for (Ip& ip : m->addresses) {
        if (!GetIp(r, &ip)) return false;
      }
      if (m->id == 0 || (m->rcode != Rcode::kNoError && n != 0)) return false;
      break;
    }
    case Type::kAccepted:
    case Type::kUdpFlow:
      if (!GetEndpoint(r, &m->endpoint)) return false;
      m->guest_port = r.U16();
      if (m->id != 0 || m->guest_port == 0) return false;
      break;
  }
  return r.Done();
}

std::string IpToString(const Ip& ip) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(ip.family == kFamilyInet ? AF_INET : AF_INET6, ip.bytes.data(), buf,
            sizeof(buf));
  return buf;
}

std::string EndpointToString(const Endpoint& e) {
  if (e.ip.family == kFamilyInet) {
    return IpToString(e.ip) + ":" + std::to_string(e.port);
  }
  return "[" + IpToString(e.ip) + "]:" + std::to_string(e.port);
}

}  // namespace sandbox::broker
