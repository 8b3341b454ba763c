// The broker protocol (docs/broker-protocol.md): what the Sentry and the
// broker (the one process that opens host Internet sockets for the sandbox)
// say to each other over one AF_UNIX SOCK_SEQPACKET socketpair. One record
// is one message: an 8-byte header and its fields, declared once in
// Message::Fields and Ip/Endpoint::Fields (gofer/protocol/fields.h's field
// kinds: little-endian, u32-length strings), which drive both Encode and
// Decode; a descriptor rides on the record as SCM_RIGHTS, at most one per
// message.
//
// Requests (Sentry -> broker) carry an id the reply repeats; the broker
// also sends unsolicited messages (id 0): a connection accepted on a
// published port, a UDP flow of a published UDP port. Neither side trusts
// the other: every field is bounds-checked when decoded (codec.h), and a
// message whose descriptor count is not the one its type declares is
// refused (its descriptors closed).
#ifndef BROKER_PROTOCOL_MESSAGES_H_
#define BROKER_PROTOCOL_MESSAGES_H_

#include <stdint.h>

#include <array>
#include <string>
#include <vector>

namespace sandbox::broker {

inline constexpr uint8_t kVersion = 1;
// The largest record either side sends or accepts.
inline constexpr size_t kMaxRecord = 4096;
// A DNS name's longest text form (RFC 1035: 255 octets on the wire).
inline constexpr size_t kMaxName = 253;
// A denial reason's longest text.
inline constexpr size_t kMaxReason = 512;
// The most addresses one ResolveReply carries.
inline constexpr size_t kMaxAddresses = 32;
// Header: u8 version, u8 type, u16 flags (0), u32 id.
inline constexpr size_t kHeaderSize = 8;

enum class Type : uint8_t {
  kConnect = 1,       // Sentry -> broker: ConnectReq fields
  kConnectReply = 2,  // broker -> Sentry: error or a socket (1 fd)
  kResolve = 3,       // Sentry -> broker: a name to resolve
  kResolveReply = 4,  // broker -> Sentry: rcode and addresses
  kAccepted = 5,      // broker -> Sentry, unsolicited: a TCP connection
                      // accepted on a published port (1 fd)
  kUdpFlow = 6,       // broker -> Sentry, unsolicited: one host peer's
                      // datagrams to a published UDP port (1 fd)
};
inline constexpr uint8_t kMaxType = 6;

enum class Proto : uint8_t { kTcp = 1, kUdp = 2 };

// The values of Linux's AF_INET and AF_INET6 (fixed ABI).
inline constexpr uint8_t kFamilyInet = 2;
inline constexpr uint8_t kFamilyInet6 = 10;

// An IP address: IPv4 in bytes 0..3 (network order) with bytes 4..15 zero;
// IPv6 in all 16.
struct Ip {
  uint8_t family = kFamilyInet;
  std::array<uint8_t, 16> bytes{};
  template <class V>
  constexpr void Fields(V& v) {
    v(family, bytes);
  }
  // AF_INET or AF_INET6, and an IPv4 address has zeros past its 4 bytes
  // (one encoding per address).
  bool Valid() const {
    if (family == kFamilyInet) {
      for (size_t i = 4; i < bytes.size(); ++i) {
        if (bytes[i] != 0) return false;
      }
      return true;
    }
    return family == kFamilyInet6;
  }
  bool operator==(const Ip& o) const {
    return family == o.family && bytes == o.bytes;
  }
};

// An address and port (host order).
struct Endpoint {
  Ip ip;
  uint16_t port = 0;
  template <class V>
  constexpr void Fields(V& v) {
    v(ip, port);
  }
  bool operator==(const Endpoint& o) const {
    return ip == o.ip && port == o.port;
  }
};

// DNS response codes a ResolveReply carries (RFC 1035 4.1.1).
enum class Rcode : uint8_t {
  kNoError = 0,
  kServFail = 2,
  kNxDomain = 3,
  kRefused = 5,
};

// One message. Only the fields of `type` are encoded; decoding leaves the
// others at their defaults, so decode(encode(m)) == m for a valid m and
// encode(decode(b)) == b for every b that decodes (canonical encoding).
struct Message {
  Type type = Type::kConnect;
  uint32_t id = 0;  // requests and replies: nonzero; unsolicited: 0

  // kConnect: a socket of `proto` connected to `endpoint` (TCP: connect(2)
  // started, non-blocking; UDP: a connected datagram socket). `name`: the
  // DNS name the address came from, if the Sentry knows one (for the
  // policy's log line; may be empty).
  // kAccepted, kUdpFlow: `endpoint` is the host peer, `guest_port` the
  // sandbox port it was published to.
  Proto proto = Proto::kTcp;
  Endpoint endpoint;
  std::string name;  // kConnect, kResolve: at most kMaxName bytes
  uint16_t guest_port = 0;

  // kConnectReply: 0 and one descriptor (in_progress: connect(2) said
  // EINPROGRESS, wait for POLLOUT and read SO_ERROR), or a positive errno
  // and no descriptor; `reason` says why when the policy denied it.
  // `local`: the host socket's own address (getsockname after connect).
  int32_t error = 0;
  bool in_progress = false;
  std::string reason;
  Endpoint local;

  // kResolve: `family` 0 (both), kFamilyInet or kFamilyInet6.
  uint8_t family = 0;

  // kResolveReply.
  Rcode rcode = Rcode::kNoError;
  uint32_t ttl = 0;
  std::vector<Ip> addresses;

  // The record: the header (u8 version, u8 type, u16 flags 0, u32 id),
  // then the fields of `type`.
  template <class V>
  void Fields(V& v) {
    v.template Const<uint8_t>(kVersion);
    v(type);
    v.template Const<uint16_t>(0);
    v(id);
    switch (type) {
      case Type::kConnect:
        v(proto, endpoint);
        v.Str(name, kMaxName);
        break;
      case Type::kConnectReply:
        v(error);
        v.Flag(in_progress);
        v.Str(reason, kMaxReason);
        v(local);
        break;
      case Type::kResolve:
        v(family);
        v.Str(name, kMaxName);
        break;
      case Type::kResolveReply:
        v(rcode, ttl);
        v.List(addresses, kMaxAddresses);
        break;
      case Type::kAccepted:
      case Type::kUdpFlow:
        v(endpoint, guest_port);
        break;
    }
  }
  // The rules between fields (codec.cc): a known type, enums in range, an
  // id on requests and replies and none on unsolicited messages, ...
  bool Valid() const;
};

// How many descriptors a message of `type` carries.
inline int FdsFor(const Message& m) {
  switch (m.type) {
    case Type::kConnectReply:
      return m.error == 0 ? 1 : 0;
    case Type::kAccepted:
    case Type::kUdpFlow:
      return 1;
    default:
      return 0;
  }
}

}  // namespace sandbox::broker

#endif  // BROKER_PROTOCOL_MESSAGES_H_
