#include "broker/dns/message.h"

#include <string.h>

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sandbox::broker::dns {
namespace {

// Header flag bits (RFC 1035 §4.1.1), in the 16-bit flags word.
constexpr uint16_t kFlagQr = 0x8000;
constexpr uint16_t kFlagAa = 0x0400;
constexpr uint16_t kFlagTc = 0x0200;
constexpr uint16_t kFlagRd = 0x0100;
constexpr uint16_t kFlagRa = 0x0080;
// The offset of the question's name, the target of answers' pointers.
constexpr uint16_t kQuestionNamePointer = 0xc000 | kHeaderSize;

uint16_t Get16(std::span<const uint8_t> m, size_t at) {
  return static_cast<uint16_t>((m[at] << 8) | m[at + 1]);
}

uint32_t Get32(std::span<const uint8_t> m, size_t at) {
  return (uint32_t{m[at]} << 24) | (uint32_t{m[at + 1]} << 16) |
         (uint32_t{m[at + 2]} << 8) | uint32_t{m[at + 3]};
}

void Put16(std::vector<uint8_t>* out, uint16_t v) {
  out->push_back(static_cast<uint8_t>(v >> 8));
  out->push_back(static_cast<uint8_t>(v));
}

void Put32(std::vector<uint8_t>* out, uint32_t v) {
  Put16(out, static_cast<uint16_t>(v >> 16));
  Put16(out, static_cast<uint16_t>(v));
}

Header DecodeHeader(std::span<const uint8_t> m) {
  Header h;
  h.id = Get16(m, 0);
  const uint16_t flags = Get16(m, 2);
  h.qr = flags & kFlagQr;
  h.opcode = (flags >> 11) & 0xf;
  h.aa = flags & kFlagAa;
  h.tc = flags & kFlagTc;
  h.rd = flags & kFlagRd;
  h.ra = flags & kFlagRa;
  h.rcode = flags & 0xf;
  h.qdcount = Get16(m, 4);
  h.ancount = Get16(m, 6);
  h.nscount = Get16(m, 8);
  h.arcount = Get16(m, 10);
  return h;
}

void EncodeHeader(const Header& h, std::vector<uint8_t>* out) {
  Put16(out, h.id);
  uint16_t flags =
      static_cast<uint16_t>((h.opcode & 0xf) << 11) | (h.rcode & 0xf);
  if (h.qr) flags |= kFlagQr;
  if (h.aa) flags |= kFlagAa;
  if (h.tc) flags |= kFlagTc;
  if (h.rd) flags |= kFlagRd;
  if (h.ra) flags |= kFlagRa;
  Put16(out, flags);
  Put16(out, h.qdcount);
  Put16(out, h.ancount);
  Put16(out, h.nscount);
  Put16(out, h.arcount);
}

bool IsPlain(uint8_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
         (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
}

// Decodes the name at `at` into text form. On success *next is the offset
// just past the name as it appears at `at` (past the first pointer if it
// has one). Loop-safe: each pointer must point strictly before the start
// of the run of labels it ends, so the runs' starts strictly decrease;
// kMaxPointers and kMaxWireName bound the work anyway.
bool DecodeName(std::span<const uint8_t> m, size_t at, std::string* text,
                size_t* next) {
  text->clear();
  size_t pos = at;
  size_t run_start = at;
  size_t wire = 0;
  int pointers = 0;
  bool jumped = false;
  while (true) {
    if (pos >= m.size()) return false;
    const uint8_t len = m[pos];
    if ((len & 0xc0) == 0xc0) {
      if (pos + 1 >= m.size()) return false;
      const size_t target = ((len & 0x3f) << 8) | m[pos + 1];
      if (target >= run_start || ++pointers > kMaxPointers) return false;
      if (!jumped) *next = pos + 2;
      jumped = true;
      pos = run_start = target;
      continue;
    }
    if ((len & 0xc0) != 0) return false;  // 0x40, 0x80: obsolete or unknown
    if (len == 0) {
      if (wire + 1 > kMaxWireName) return false;
      if (!jumped) *next = pos + 1;
      return true;
    }
    wire += 1 + len;
    if (wire + 1 > kMaxWireName) return false;
    if (len > m.size() - pos - 1) return false;
    if (!text->empty()) text->push_back('.');
    for (size_t i = 0; i < len; ++i) {
      const uint8_t c = m[pos + 1 + i];
      if (IsPlain(c)) {
        text->push_back(static_cast<char>(c));
      } else {
        text->push_back('\\');
        text->push_back(static_cast<char>('0' + c / 100));
        text->push_back(static_cast<char>('0' + c / 10 % 10));
        text->push_back(static_cast<char>('0' + c % 10));
      }
    }
    pos += 1 + len;
  }
}

// Decodes a question at *at (name, type, class), advancing *at.
bool DecodeQuestion(std::span<const uint8_t> m, size_t* at, Question* q) {
  size_t next = 0;
  if (!DecodeName(m, *at, &q->name, &next)) return false;
  if (next > m.size() || m.size() - next < 4) return false;
  q->qtype = Get16(m, next);
  q->qclass = Get16(m, next + 2);
  *at = next + 4;
  return true;
}

char Lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string_view StripDot(std::string_view s) {
  if (!s.empty() && s.back() == '.') s.remove_suffix(1);
  return s;
}

absl::Status BadName(std::string_view name, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("DNS name `", absl::string_view(name.data(), name.size()),
                   "`: ", absl::string_view(why.data(), why.size())));
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> EncodeName(std::string_view name) {
  std::vector<uint8_t> out;
  const std::string_view whole = name;
  if (name == ".") name = "";
  std::vector<uint8_t> label;
  size_t i = 0;
  auto finish_label = [&]() -> absl::Status {
    if (label.empty()) return BadName(whole, "empty label");
    if (label.size() > kMaxLabel) {
      return BadName(whole, "label longer than 63 octets");
    }
    out.push_back(static_cast<uint8_t>(label.size()));
    out.insert(out.end(), label.begin(), label.end());
    label.clear();
    if (out.size() + 1 > kMaxWireName) {
      return BadName(whole, "longer than 255 octets");
    }
    return absl::OkStatus();
  };
  while (i < name.size()) {
    const char c = name[i];
    if (c == '.') {
      absl::Status s = finish_label();
      if (!s.ok()) return s;
      ++i;
      if (i == name.size()) break;  // one trailing dot
      continue;
    }
    if (c == '\\') {
      if (i + 1 >= name.size()) return BadName(whole, "`\\` at the end");
      const char d = name[i + 1];
      if (d >= '0' && d <= '9') {
        if (name.size() - i < 4) {
          return BadName(whole, "`\\DDD` needs three digits");
        }
        int v = 0;
        for (size_t k = 1; k <= 3; ++k) {
          const char e = name[i + k];
          if (e < '0' || e > '9') {
            return BadName(whole, "`\\DDD` needs three digits");
          }
          v = v * 10 + (e - '0');
        }
        if (v > 255) return BadName(whole, "`\\DDD` above 255");
        label.push_back(static_cast<uint8_t>(v));
        i += 4;
      } else {
        label.push_back(static_cast<uint8_t>(d));
        i += 2;
      }
      continue;
    }
    label.push_back(static_cast<uint8_t>(c));
    ++i;
  }
  if (!label.empty()) {
    absl::Status s = finish_label();
    if (!s.ok()) return s;
  }
  out.push_back(0);
  return out;
}

bool NameEquals(std::string_view a, std::string_view b) {
  a = StripDot(a);
  b = StripDot(b);
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::optional<ParsedQuery> ParseQuery(std::span<const uint8_t> msg) {
  if (msg.size() < kHeaderSize) return std::nullopt;
  ParsedQuery q;
  q.header = DecodeHeader(msg);
  if (q.header.qr) return std::nullopt;
  if (q.header.qdcount != 1) {
    q.error = q.header.opcode != static_cast<uint8_t>(Opcode::kQuery)
                  ? Rcode::kNotImp
                  : Rcode::kFormErr;
    return q;
  }
  size_t at = kHeaderSize;
  Question question;
  if (DecodeQuestion(msg, &at, &question)) {
    q.question = std::move(question);
  }
  if (q.header.opcode != static_cast<uint8_t>(Opcode::kQuery)) {
    q.error = Rcode::kNotImp;
  } else if (!q.question) {
    q.error = Rcode::kFormErr;
  }
  return q;
}

std::vector<uint8_t> BuildResponse(const ParsedQuery& query, Rcode rcode,
                                   std::span<const AddressAnswer> answers,
                                   size_t max_size) {
  max_size = std::clamp(max_size, kHeaderSize, kMaxTcpSize);
  Header h;
  h.id = query.header.id;
  h.qr = true;
  h.opcode = query.header.opcode;
  h.rd = query.header.rd;
  h.ra = true;
  h.rcode = static_cast<uint8_t>(rcode);

  std::vector<uint8_t> body;
  bool have_question = false;
  if (query.question) {
    absl::StatusOr<std::vector<uint8_t>> name =
        EncodeName(query.question->name);
    if (name.ok() && kHeaderSize + name->size() + 4 <= max_size) {
      body = std::move(*name);
      Put16(&body, query.question->qtype);
      Put16(&body, query.question->qclass);
      have_question = true;
      h.qdcount = 1;
    } else if (name.ok()) {
      h.tc = true;
    }
  }
  if (rcode == Rcode::kNoError && !answers.empty()) {
    if (!have_question) {
      h.tc = true;  // answers need the question's name to point to
    } else {
      for (const AddressAnswer& a : answers) {
        const size_t rdlen = a.v6 ? 16 : 4;
        const size_t rr = 2 + 10 + rdlen;
        if (kHeaderSize + body.size() + rr > max_size) {
          h.tc = true;
          break;
        }
        Put16(&body, kQuestionNamePointer);
        Put16(&body, a.v6 ? kTypeAAAA : kTypeA);
        Put16(&body, kClassIN);
        Put32(&body, a.ttl);
        Put16(&body, static_cast<uint16_t>(rdlen));
        body.insert(body.end(), a.bytes.begin(), a.bytes.begin() + rdlen);
        ++h.ancount;
      }
    }
  }
  std::vector<uint8_t> out;
  out.reserve(kHeaderSize + body.size());
  EncodeHeader(h, &out);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

absl::StatusOr<std::vector<uint8_t>> BuildQuery(uint16_t id,
                                                std::string_view name,
                                                uint16_t qtype) {
  absl::StatusOr<std::vector<uint8_t>> wire = EncodeName(name);
  if (!wire.ok()) return wire.status();
  Header h;
  h.id = id;
  h.rd = true;
  h.qdcount = 1;
  std::vector<uint8_t> out;
  EncodeHeader(h, &out);
  out.insert(out.end(), wire->begin(), wire->end());
  Put16(&out, qtype);
  Put16(&out, kClassIN);
  return out;
}

absl::StatusOr<Response> ParseResponse(std::span<const uint8_t> msg) {
  if (msg.size() < kHeaderSize) {
    return absl::InvalidArgumentError("DNS response shorter than a header");
  }
  Response r;
  r.header = DecodeHeader(msg);
  if (!r.header.qr) return absl::InvalidArgumentError("not a DNS response");
  if (r.header.qdcount > 1) {
    return absl::InvalidArgumentError("DNS response with several questions");
  }
  size_t at = kHeaderSize;
  if (r.header.qdcount == 1) {
    Question q;
    if (!DecodeQuestion(msg, &at, &q)) {
      if (r.header.tc) return r;
      return absl::InvalidArgumentError("malformed question in DNS response");
    }
    r.question = std::move(q);
  }
  for (uint32_t i = 0; i < r.header.ancount; ++i) {
    // A cut in a truncated response ends the answers; elsewhere it is an
    // error.
    auto cut = [&](const char* what) -> absl::StatusOr<Response> {
      if (r.header.tc) return std::move(r);
      return absl::InvalidArgumentError(
          absl::StrCat("DNS answer ", i, ": ", what));
    };
    Record rec;
    size_t next = 0;
    if (!DecodeName(msg, at, &rec.name, &next)) return cut("malformed name");
    if (next > msg.size() || msg.size() - next < 10) {
      return cut("record runs past the end");
    }
    rec.type = Get16(msg, next);
    const uint16_t klass = Get16(msg, next + 2);
    rec.ttl = Get32(msg, next + 4);
    // RFC 2181 §8: a TTL with the top bit set is taken as zero.
    if (rec.ttl & 0x80000000u) rec.ttl = 0;
    const uint16_t rdlen = Get16(msg, next + 8);
    const size_t rdata = next + 10;
    if (msg.size() - rdata < rdlen) return cut("rdata runs past the end");
    at = rdata + rdlen;
    if (klass != kClassIN) continue;
    if (rec.type == kTypeA || rec.type == kTypeAAAA) {
      const size_t want = rec.type == kTypeA ? 4 : 16;
      if (rdlen != want) {
        return absl::InvalidArgumentError(
            absl::StrCat("DNS answer ", i, ": address of ", rdlen, " bytes"));
      }
      memcpy(rec.address.data(), msg.data() + rdata, want);
    } else if (rec.type == kTypeCNAME) {
      size_t end = 0;
      if (!DecodeName(msg, rdata, &rec.cname, &end) || end != at) {
        return absl::InvalidArgumentError(
            absl::StrCat("DNS answer ", i, ": malformed CNAME"));
      }
    } else {
      continue;
    }
    if (r.answers.size() < kMaxAnswers) r.answers.push_back(std::move(rec));
  }
  return r;
}

bool AnswersQuery(const Response& resp, uint16_t id, std::string_view name,
                  uint16_t qtype) {
  return resp.header.id == id && resp.question &&
         NameEquals(resp.question->name, name) &&
         resp.question->qtype == qtype && resp.question->qclass == kClassIN;
}

Addresses ExtractAddresses(const Response& resp, std::string_view name,
                           uint16_t qtype) {
  Addresses out;
  if (qtype != kTypeA && qtype != kTypeAAAA) return out;
  std::string current(StripDot(name));
  uint32_t ttl = UINT32_MAX;
  for (int link = 0; link <= kMaxCnameChain; ++link) {
    for (const Record& rec : resp.answers) {
      if (rec.type != qtype || !NameEquals(rec.name, current)) continue;
      AddressAnswer a;
      a.v6 = qtype == kTypeAAAA;
      a.bytes = rec.address;
      a.ttl = rec.ttl;
      const bool dup = std::any_of(
          out.addresses.begin(), out.addresses.end(),
          [&](const AddressAnswer& b) { return b.bytes == a.bytes; });
      if (!dup) out.addresses.push_back(a);
      ttl = std::min(ttl, rec.ttl);
    }
    if (!out.addresses.empty()) break;
    const Record* cname = nullptr;
    for (const Record& rec : resp.answers) {
      if (rec.type == kTypeCNAME && NameEquals(rec.name, current)) {
        cname = &rec;
        break;
      }
    }
    if (cname == nullptr) break;
    ttl = std::min(ttl, cname->ttl);
    current = cname->cname;
  }
  if (out.addresses.empty()) return out;
  out.ttl = ttl;
  for (AddressAnswer& a : out.addresses) a.ttl = ttl;
  return out;
}

std::vector<uint8_t> FrameTcp(std::span<const uint8_t> msg) {
  if (msg.size() > kMaxTcpSize) return {};
  std::vector<uint8_t> out;
  out.reserve(2 + msg.size());
  Put16(&out, static_cast<uint16_t>(msg.size()));
  out.insert(out.end(), msg.begin(), msg.end());
  return out;
}

}  // namespace sandbox::broker::dns
