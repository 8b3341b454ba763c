#include "sentry/net/netlink/message.h"

#include <algorithm>

namespace sandbox::net::netlink {

std::vector<Message> SplitMessages(absl::Span<const uint8_t> buf) {
  std::vector<Message> out;
  size_t at = 0;
  while (buf.size() - at >= kHeaderLen) {
    Header h;
    memcpy(&h, buf.data() + at, sizeof(h));
    size_t left = buf.size() - at;
    if (h.len < kHeaderLen || h.len > left) break;
    out.push_back({h, buf.subspan(at + kHeaderLen, h.len - kHeaderLen)});
    at += std::min(Align(h.len), left);
  }
  return out;
}

std::optional<uint32_t> Attr::U32() const {
  if (data.size() < 4) return std::nullopt;
  uint32_t v;
  memcpy(&v, data.data(), 4);
  return v;
}

std::string_view Attr::String() const {
  std::string_view s(reinterpret_cast<const char*>(data.data()), data.size());
  return s.substr(0, s.find('\0'));
}

ParsedAttrs ParseAttrs(absl::Span<const uint8_t> buf) {
  ParsedAttrs out;
  size_t at = 0;
  while (buf.size() - at >= kAttrHeaderLen) {
    uint16_t len, type;
    memcpy(&len, buf.data() + at, 2);
    memcpy(&type, buf.data() + at + 2, 2);
    size_t left = buf.size() - at;
    if (len < kAttrHeaderLen || len > left) break;
    out.attrs.push_back(
        {static_cast<uint16_t>(type & kAttrTypeMask), (type & kNestedFlag) != 0,
         buf.subspan(at + kAttrHeaderLen, len - kAttrHeaderLen)});
    at += std::min(Align(len), left);
  }
  out.leftover = buf.size() - at;
  return out;
}

AttrTable::AttrTable(const std::vector<Attr>& attrs) {
  for (const Attr& a : attrs) {
    auto it = std::find_if(all_.begin(), all_.end(),
                           [&](const Attr& x) { return x.type == a.type; });
    if (it != all_.end()) {
      *it = a;
    } else {
      all_.push_back(a);
    }
  }
}

const Attr* AttrTable::Get(uint16_t type) const {
  for (const Attr& a : all_) {
    if (a.type == type) return &a;
  }
  return nullptr;
}

KResult<AttrTable> ParseMessageAttrs(const Message& m, size_t hdrlen,
                                     uint16_t maxtype, bool strict) {
  if (m.payload.size() < hdrlen) return kEINVAL;
  size_t start = std::min(Align(hdrlen), m.payload.size());
  ParsedAttrs p = ParseAttrs(m.payload.subspan(start));
  if (strict) {
    if (p.leftover != 0) return kEINVAL;
    for (const Attr& a : p.attrs) {
      if (a.type > maxtype) return kEINVAL;
    }
  }
  return AttrTable(p.attrs);
}

size_t Builder::Begin(uint16_t type, uint16_t flags, uint32_t seq,
                      uint32_t pid) {
  size_t at = buf_.size();
  Header h{static_cast<uint32_t>(kHeaderLen), type, flags, seq, pid};
  buf_.append(reinterpret_cast<const char*>(&h), sizeof(h));
  return at;
}

void Builder::Append(const void* p, size_t n) {
  buf_.append(static_cast<const char*>(p), n);
  buf_.resize(Align(buf_.size()), '\0');
}

void Builder::Attr(uint16_t type, const void* p, size_t n) {
  uint16_t len = static_cast<uint16_t>(kAttrHeaderLen + n);
  buf_.append(reinterpret_cast<const char*>(&len), 2);
  buf_.append(reinterpret_cast<const char*>(&type), 2);
  Append(p, n);
}

void Builder::AttrString(uint16_t type, std::string_view s) {
  std::string z(s);
  Attr(type, z.c_str(), z.size() + 1);
}

size_t Builder::BeginNest(uint16_t type, bool flag) {
  size_t at = buf_.size();
  uint16_t len = kAttrHeaderLen;
  uint16_t t = type | (flag ? kNestedFlag : 0);
  buf_.append(reinterpret_cast<const char*>(&len), 2);
  buf_.append(reinterpret_cast<const char*>(&t), 2);
  return at;
}

void Builder::EndNest(size_t at) {
  uint16_t len = static_cast<uint16_t>(buf_.size() - at);
  memcpy(buf_.data() + at, &len, 2);
}

void Builder::SetLen32(size_t at, uint32_t v) {
  memcpy(buf_.data() + at, &v, 4);
}

void Builder::End(size_t at) {
  SetLen32(at, static_cast<uint32_t>(buf_.size() - at));
}

std::string ErrorMessage(const Message& req, int err, uint32_t pid,
                         bool cap_ack, const char* ext_msg) {
  uint16_t flags = 0;
  bool echo = err != 0 && !cap_ack;
  if (!echo) flags |= kFCapped;
  if (ext_msg != nullptr) flags |= kFAckTlvs;
  Builder b;
  size_t at = b.Begin(kNlmsgError, flags, req.hdr.seq, pid);
  int32_t e = -err;
  b.Append(&e, sizeof(e));
  b.Append(&req.hdr, sizeof(req.hdr));
  if (echo) b.Append(req.payload.data(), req.payload.size());
  if (ext_msg != nullptr) b.AttrString(kErrAttrMsg, ext_msg);
  b.End(at);
  return b.Take();
}

std::string DoneMessage(uint32_t seq, uint32_t pid, uint16_t flags, int err,
                        const char* ext_msg) {
  Builder b;
  if (ext_msg != nullptr) flags |= kFAckTlvs;
  size_t at = b.Begin(kNlmsgDone, flags, seq, pid);
  int32_t e = -err;
  b.Append(&e, sizeof(e));
  if (ext_msg != nullptr) b.AttrString(kErrAttrMsg, ext_msg);
  b.End(at);
  return b.Take();
}

}  // namespace sandbox::net::netlink
