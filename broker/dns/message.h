// DNS messages (RFC 1035 §4), as much as a stub resolver and its upstream
// client need: parse a query and build its response (the sandbox's
// resolver), build a query and parse the upstream's response (the broker).
//
// All input is hostile. The decoders read only inside the given span,
// follow at most kMaxPointers compression pointers per name, each to an
// offset strictly before the pointer's own label (RFC 1035 §4.1.4 points
// to a prior occurrence; this also makes loops impossible), reject names
// longer than 255 wire octets, and bound how many records they keep.
//
// Names in text form: labels joined by ".", no trailing dot, the root is
// "". Each label's bytes other than [A-Za-z0-9_-] (so ".", "\\", spaces,
// non-ASCII...) are written as "\DDD" (RFC 1035 §5.1 decimal escapes), so a
// text name never confuses its label boundaries; the case is kept as
// received (resolvers may randomize it: a response echoes the question's
// bytes). EncodeName takes the same form back ("\DDD" and "\X").
#ifndef BROKER_DNS_MESSAGE_H_
#define BROKER_DNS_MESSAGE_H_

#include <stddef.h>
#include <stdint.h>

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace sandbox::broker::dns {

// RR types and class (RFC 1035 §3.2.2, RFC 3596).
inline constexpr uint16_t kTypeA = 1;
inline constexpr uint16_t kTypeNS = 2;
inline constexpr uint16_t kTypeCNAME = 5;
inline constexpr uint16_t kTypeSOA = 6;
inline constexpr uint16_t kTypePTR = 12;
inline constexpr uint16_t kTypeMX = 15;
inline constexpr uint16_t kTypeTXT = 16;
inline constexpr uint16_t kTypeAAAA = 28;
inline constexpr uint16_t kTypeOPT = 41;
inline constexpr uint16_t kTypeANY = 255;
inline constexpr uint16_t kClassIN = 1;

inline constexpr size_t kHeaderSize = 12;
// A UDP message without EDNS (RFC 1035 §4.2.1); the TCP limit (§4.2.2).
inline constexpr size_t kMaxUdpSize = 512;
inline constexpr size_t kMaxTcpSize = 65535;
// Wire octets of a name, length bytes and the root's 0 included (§3.1).
inline constexpr size_t kMaxWireName = 255;
inline constexpr size_t kMaxLabel = 63;
// Compression pointers followed in one name.
inline constexpr int kMaxPointers = 16;
// Answer records ParseResponse keeps (more are skipped, still decoded).
inline constexpr size_t kMaxAnswers = 64;
// CNAME links ExtractAddresses follows.
inline constexpr int kMaxCnameChain = 8;

enum class Opcode : uint8_t { kQuery = 0, kIQuery = 1, kStatus = 2 };
enum class Rcode : uint8_t {
  kNoError = 0,
  kFormErr = 1,
  kServFail = 2,
  kNxDomain = 3,
  kNotImp = 4,
  kRefused = 5,
};

// The 12-byte header (§4.1.1), decoded.
struct Header {
  uint16_t id = 0;
  bool qr = false;  // response
  uint8_t opcode = 0;
  bool aa = false;
  bool tc = false;
  bool rd = false;
  bool ra = false;
  uint8_t rcode = 0;
  uint16_t qdcount = 0;
  uint16_t ancount = 0;
  uint16_t nscount = 0;
  uint16_t arcount = 0;
};

struct Question {
  std::string name;  // text form (above)
  uint16_t qtype = 0;
  uint16_t qclass = 0;
};

// ParseQuery's result. A query that cannot be answered normally still
// yields its header so the server can answer FORMERR or NOTIMP with the
// query's ID.
struct ParsedQuery {
  Header header;
  // Present when the question decoded.
  std::optional<Question> question;
  // kNoError: a standard query with one IN-class question, answerable.
  // kFormErr: qdcount != 1 or a malformed question (bad name, pointer
  // loop, truncated). kNotImp: an opcode other than QUERY.
  Rcode error = Rcode::kNoError;
};

// Parses a query. nullopt: drop it without any answer (shorter than a
// header, or QR set: answering a response could start a loop). Sections
// past the question (EDNS OPT, anything else) are ignored. QCLASS other
// than IN is returned as is (the caller answers REFUSED or NOTIMP).
std::optional<ParsedQuery> ParseQuery(std::span<const uint8_t> msg);

// An A or AAAA answer: 4 or 16 address bytes.
struct AddressAnswer {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  // v4: bytes[0..3]
  uint32_t ttl = 0;
};

// Builds the response to `query`: ID, opcode and RD echoed, QR and RA set,
// AA clear, `rcode`; the question echoed when present (byte for byte in
// name case); `answers` (A for v4, AAAA for v6, all owned by the question's
// name through a compression pointer) when rcode is kNoError. Answers that
// do not fit in `max_size` (at least kHeaderSize; kMaxUdpSize for UDP,
// kMaxTcpSize for TCP) are left out and TC is set. A question that does
// not fit either is left out (TC set). Use it for NXDOMAIN, REFUSED,
// SERVFAIL, FORMERR and NOTIMP too (with no answers), and for NOERROR with
// no answers (a name that exists with no record of the type).
std::vector<uint8_t> BuildResponse(const ParsedQuery& query, Rcode rcode,
                                   std::span<const AddressAnswer> answers,
                                   size_t max_size);

// Builds a standard query for `name` (text form; a trailing dot allowed)
// and `qtype`, class IN, RD set. Errors: an empty label, a label over 63
// octets, a name over 255 wire octets, a bad escape.
absl::StatusOr<std::vector<uint8_t>> BuildQuery(uint16_t id,
                                                std::string_view name,
                                                uint16_t qtype);

// A record of an answer section that ParseResponse keeps: class IN, type A
// (rdlength 4), AAAA (16) or CNAME.
struct Record {
  std::string name;  // owner, text form
  uint16_t type = 0;
  uint32_t ttl = 0;
  std::array<uint8_t, 16> address{};  // A: [0..3]; AAAA: all
  std::string cname;                  // CNAME: the target, text form
};

struct Response {
  Header header;
  std::optional<Question> question;  // when qdcount == 1
  // Kept answers in message order, at most kMaxAnswers; other types and
  // classes are skipped.
  std::vector<Record> answers;
};

// Parses a response (QR must be set). Errors: shorter than a header, QR
// clear, qdcount > 1, a malformed name or record, a record running past
// the end, A/AAAA with the wrong rdlength. A truncated response (TC set)
// still parses what is there: the records that decode fully are kept, and
// a cut in the middle of the answers is not an error when TC is set.
// Authority and additional sections are not read.
absl::StatusOr<Response> ParseResponse(std::span<const uint8_t> msg);

// Whether `resp` answers the query (id, name, qtype) built by BuildQuery:
// same ID, one question with the same name (case-insensitive) and type,
// class IN.
bool AnswersQuery(const Response& resp, uint16_t id, std::string_view name,
                  uint16_t qtype);

// The addresses of `qtype` (kTypeA or kTypeAAAA) that `resp` gives for
// `name`, following its CNAME chain (at most kMaxCnameChain links, names
// compared case-insensitively); only records owned by `name` or a name of
// its chain count, so extra records a hostile upstream adds are ignored.
// `ttl` is the smallest TTL of the records used.
struct Addresses {
  std::vector<AddressAnswer> addresses;
  uint32_t ttl = 0;
};
Addresses ExtractAddresses(const Response& resp, std::string_view name,
                           uint16_t qtype);

// Name helpers. Encodes a text name to wire form (no compression).
absl::StatusOr<std::vector<uint8_t>> EncodeName(std::string_view name);
// Case-insensitive (ASCII) equality of text names, ignoring one trailing
// dot on either.
bool NameEquals(std::string_view a, std::string_view b);

// TCP framing (§4.2.2): a 2-byte big-endian length before each message.
std::vector<uint8_t> FrameTcp(std::span<const uint8_t> msg);

}  // namespace sandbox::broker::dns

#endif  // BROKER_DNS_MESSAGE_H_
