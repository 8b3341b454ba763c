#include "broker/protocol/codec.h"

#include <arpa/inet.h>

#include "gofer/protocol/fields.h"
#include "gofer/protocol/wire.h"

namespace sandbox::broker {

bool Message::Valid() const {
  switch (type) {
    case Type::kConnect:
      return (proto == Proto::kTcp || proto == Proto::kUdp) && id != 0;
    case Type::kConnectReply:
      // errno values are small and positive; in_progress only with a
      // socket.
      return error >= 0 && error <= 4095 && !(in_progress && error != 0) &&
             id != 0;
    case Type::kResolve:
      return (family == 0 || family == kFamilyInet || family == kFamilyInet6) &&
             id != 0;
    case Type::kResolveReply:
      return (rcode == Rcode::kNoError || rcode == Rcode::kServFail ||
              rcode == Rcode::kNxDomain || rcode == Rcode::kRefused) &&
             id != 0 && (rcode == Rcode::kNoError || addresses.empty());
    case Type::kAccepted:
    case Type::kUdpFlow:
      return id == 0 && guest_port != 0;
  }
  return false;  // An unknown type.
}

std::string Encode(const Message& m) {
  gofer::Writer w;
  if (m.in_progress && m.error != 0) {  // in_progress only with a socket.
    Message c = m;
    c.in_progress = false;
    gofer::EncodeFields<Message, gofer::Bounds::kCutToBounds>(w, c);
  } else {
    gofer::EncodeFields<Message, gofer::Bounds::kCutToBounds>(w, m);
  }
  return w.Take();
}

bool Decode(std::string_view record, Message* m) {
  if (record.size() > kMaxRecord) return false;
  gofer::Reader r(record);
  *m = Message();
  gofer::DecodeFields(r, m);
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
