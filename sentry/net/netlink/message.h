// Netlink message parsing and building: pure functions over bytes, shared
// by every netlink protocol (include/net/netlink.h, lib/nlattr.c).
//
// The bytes come from the guest and are hostile: every length is checked
// against the buffer before use, and parsing never reads past it.
//  - SplitMessages walks a sendmsg buffer as netlink_rcv_skb does.
//  - ParseAttrs walks attributes as nla_parse does (nla_ok), reporting the
//    bytes left over (a warning in Linux's deprecated mode, EINVAL in
//    strict mode).
//  - Builder appends messages and attributes with Linux's alignment
//    (NLMSG_ALIGN, NLA_ALIGN: 4 bytes; nla_len and the last attribute's
//    padding as nla_put leaves them).
#ifndef SENTRY_NET_NETLINK_MESSAGE_H_
#define SENTRY_NET_NETLINK_MESSAGE_H_

#include <stdint.h>
#include <string.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "sentry/base/result.h"

namespace sandbox::net::netlink {

// struct nlmsghdr.
struct Header {
  uint32_t len = 0;
  uint16_t type = 0;
  uint16_t flags = 0;
  uint32_t seq = 0;
  uint32_t pid = 0;
};
static_assert(sizeof(Header) == 16);

inline constexpr size_t kHeaderLen = sizeof(Header);  // NLMSG_HDRLEN
inline constexpr size_t kAttrHeaderLen = 4;           // NLA_HDRLEN
inline constexpr size_t Align(size_t n) { return (n + 3) & ~size_t{3}; }

// Message types and flags (linux/netlink.h).
inline constexpr uint16_t kNlmsgNoop = 1;
inline constexpr uint16_t kNlmsgError = 2;
inline constexpr uint16_t kNlmsgDone = 3;
inline constexpr uint16_t kNlmsgMinType = 0x10;
inline constexpr uint16_t kFRequest = 0x1;
inline constexpr uint16_t kFMulti = 0x2;
inline constexpr uint16_t kFAck = 0x4;
inline constexpr uint16_t kFEcho = 0x8;
inline constexpr uint16_t kFDumpIntr = 0x10;
inline constexpr uint16_t kFDumpFiltered = 0x20;
inline constexpr uint16_t kFRoot = 0x100;
inline constexpr uint16_t kFMatch = 0x200;
inline constexpr uint16_t kFDump = kFRoot | kFMatch;
inline constexpr uint16_t kFReplace = 0x100;  // NEW requests
inline constexpr uint16_t kFExcl = 0x200;
inline constexpr uint16_t kFCreate = 0x400;
inline constexpr uint16_t kFCapped = 0x100;  // NLMSG_ERROR
inline constexpr uint16_t kFAckTlvs = 0x200;
inline constexpr uint16_t kNestedFlag = 0x8000;    // NLA_F_NESTED
inline constexpr uint16_t kAttrTypeMask = 0x3fff;  // NLA_TYPE_MASK
inline constexpr uint16_t kErrAttrMsg = 1;         // NLMSGERR_ATTR_MSG

// One message of a buffer: its header and the nlmsg_len - 16 bytes after.
struct Message {
  Header hdr;
  absl::Span<const uint8_t> payload;
};

// The messages of `buf` as netlink_rcv_skb walks them: while at least a
// header remains; stops at a header whose nlmsg_len is below the header
// size or beyond the bytes left; the next message starts at
// NLMSG_ALIGN(nlmsg_len) (or the end).
std::vector<Message> SplitMessages(absl::Span<const uint8_t> buf);

struct Attr {
  uint16_t type = 0;  // without NLA_F_NESTED / NLA_F_NET_BYTEORDER
  bool nested = false;
  absl::Span<const uint8_t> data;  // nla_len - 4 bytes

  std::optional<uint32_t> U32() const;
  // An NLA_STRING's text: up to the first NUL or the end.
  std::string_view String() const;
};

struct ParsedAttrs {
  std::vector<Attr> attrs;  // in order
  size_t leftover = 0;      // bytes after the last whole attribute
};

// nla_for_each_attr over `buf`.
ParsedAttrs ParseAttrs(absl::Span<const uint8_t> buf);

// The attributes of a message by type (nla_parse: a later one of a type
// replaces an earlier).
class AttrTable {
 public:
  AttrTable() = default;
  explicit AttrTable(const std::vector<Attr>& attrs);
  const Attr* Get(uint16_t type) const;
  bool Has(uint16_t type) const { return Get(type) != nullptr; }
  const std::vector<Attr>& all() const { return all_; }

 private:
  std::vector<Attr> all_;  // last of each type
};

// nlmsg_parse of message `m` whose fixed header is `hdrlen` bytes: EINVAL
// if the payload is shorter than the header; attributes start at
// NLMSG_ALIGN(hdrlen). `strict` (NETLINK_GET_STRICT_CHK requests) also
// refuses left-over bytes and types above `maxtype` with EINVAL.
KResult<AttrTable> ParseMessageAttrs(const Message& m, size_t hdrlen,
                                     uint16_t maxtype, bool strict);

// Copies the fixed header of type T from the start of `payload`, zero-
// filling what the payload lacks (callers check the length they require).
template <typename T>
T FixedHeader(absl::Span<const uint8_t> payload) {
  T v{};
  memcpy(&v, payload.data(), std::min(sizeof(T), payload.size()));
  return v;
}

class Builder {
 public:
  // Starts a message; returns its offset for End.
  size_t Begin(uint16_t type, uint16_t flags, uint32_t seq, uint32_t pid);
  // Appends bytes, then pads to 4.
  void Append(const void* p, size_t n);
  template <typename T>
  void AppendStruct(const T& v) {
    Append(&v, sizeof(v));
  }
  void Attr(uint16_t type, const void* p, size_t n);
  void AttrU8(uint16_t type, uint8_t v) { Attr(type, &v, 1); }
  void AttrU16(uint16_t type, uint16_t v) { Attr(type, &v, 2); }
  void AttrU32(uint16_t type, uint32_t v) { Attr(type, &v, 4); }
  void AttrU64(uint16_t type, uint64_t v) { Attr(type, &v, 8); }
  // With its terminating NUL (nla_put_string).
  void AttrString(uint16_t type, std::string_view s);
  // A nested attribute (without NLA_F_NESTED, as most of rtnetlink puts
  // them, unless `flag`): returns its offset for EndNest.
  size_t BeginNest(uint16_t type, bool flag = false);
  void EndNest(size_t at);
  // Sets the message's nlmsg_len (its bytes from `at`, padding included).
  void End(size_t at);

  size_t size() const { return buf_.size(); }
  std::string& data() { return buf_; }
  std::string Take() { return std::move(buf_); }

 private:
  void SetLen32(size_t at, uint32_t v);
  std::string buf_;
};

// NLMSG_ERROR for request `req` (its header and payload): error `err`
// (a positive errno, 0 for an ACK), from port `pid` to the requester.
// Like netlink_ack: the request's payload is echoed unless it is an ACK
// or `cap_ack`; `ext_msg` (NETLINK_EXT_ACK's NLMSGERR_ATTR_MSG) is added
// when not null.
std::string ErrorMessage(const Message& req, int err, uint32_t pid,
                         bool cap_ack, const char* ext_msg);

// NLMSG_DONE ending a dump: the error (0 or positive errno, put negated)
// and, when `ext_msg` is not null, NLMSGERR_ATTR_MSG.
std::string DoneMessage(uint32_t seq, uint32_t pid, uint16_t flags, int err,
                        const char* ext_msg);

}  // namespace sandbox::net::netlink

#endif  // SENTRY_NET_NETLINK_MESSAGE_H_
