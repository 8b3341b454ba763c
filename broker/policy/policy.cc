#include "broker/policy/policy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace sandbox::broker::policy {
namespace {

// absl::StrCat over std::string_view too (Debian's Abseil has its own
// string_view type).
inline absl::string_view Arg(std::string_view s) {
  return {s.data(), s.size()};
}
template <typename T>
const T& Arg(const T& v) {
  return v;
}
template <typename... T>
std::string Cat(const T&... v) {
  return absl::StrCat(Arg(v)...);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

constexpr size_t kMaxName = 253;
constexpr size_t kMaxLabel = 63;
// Largest policy file read (a policy is a short list).
constexpr size_t kMaxPolicyFile = 1 << 20;

absl::Status Bad(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(Cat("`", text, "`: ", why));
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// A decimal of 1..max_digits digits without a leading zero ("0" itself
// allowed). nullopt if not such a number.
std::optional<uint32_t> ParseDecimal(std::string_view s, size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return std::nullopt;
  if (s.size() > 1 && s[0] == '0') return std::nullopt;
  uint32_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  return v;
}

absl::StatusOr<uint16_t> ParsePort(std::string_view whole, std::string_view s) {
  if (s.empty()) return Bad(whole, "empty port");
  for (char c : s) {
    if (!IsDigit(c)) {
      return Bad(whole, Cat("port `", s, "` is not a number"));
    }
  }
  if (s.size() > 1 && s[0] == '0') {
    return Bad(whole, Cat("port `", s, "` has a leading zero"));
  }
  if (s.size() > 5) {
    return Bad(whole, Cat("port ", s, " out of range 1..65535"));
  }
  const uint32_t v = *ParseDecimal(s, 5);
  if (v == 0 || v > 65535) {
    return Bad(whole, Cat("port ", v, " out of range 1..65535"));
  }
  return static_cast<uint16_t>(v);
}

absl::StatusOr<PortRange> ParsePorts(std::string_view whole,
                                     std::string_view s) {
  const size_t dash = s.find('-');
  if (dash == std::string_view::npos) {
    absl::StatusOr<uint16_t> p = ParsePort(whole, s);
    if (!p.ok()) return p.status();
    return PortRange{*p, *p};
  }
  absl::StatusOr<uint16_t> lo = ParsePort(whole, s.substr(0, dash));
  if (!lo.ok()) return lo.status();
  absl::StatusOr<uint16_t> hi = ParsePort(whole, s.substr(dash + 1));
  if (!hi.ok()) return hi.status();
  if (*lo > *hi) {
    return Bad(whole, Cat("port range ", *lo, "-", *hi,
                          " is empty (low end above high end)"));
  }
  return PortRange{*lo, *hi};
}

// Whether `s` is only digits and dots (so meant as an IPv4 address).
bool LooksLikeV4(std::string_view s) {
  if (s.empty()) return false;
  bool digit = false;
  for (char c : s) {
    if (IsDigit(c)) {
      digit = true;
    } else if (c != '.') {
      return false;
    }
  }
  return digit;
}

absl::StatusOr<IpAddress> ParseV4(std::string_view whole, std::string_view s) {
  uint8_t b[4];
  size_t start = 0;
  for (int i = 0; i < 4; ++i) {
    size_t end = s.find('.', start);
    if (i == 3) {
      if (end != std::string_view::npos) {
        return Bad(whole, Cat("`", s,
                              "` is not an IPv4 address (more than "
                              "four octets)"));
      }
      end = s.size();
    } else if (end == std::string_view::npos) {
      return Bad(whole, Cat("`", s,
                            "` is not an IPv4 address (fewer than "
                            "four octets)"));
    }
    std::string_view octet = s.substr(start, end - start);
    if (octet.empty()) {
      return Bad(whole, Cat("`", s, "` has an empty octet"));
    }
    if (octet.size() > 1 && octet[0] == '0') {
      return Bad(whole, Cat("octet `", octet, "` has a leading zero"));
    }
    if (octet.size() > 3) {
      return Bad(whole, Cat("octet ", octet, " out of range 0..255"));
    }
    const uint32_t v = *ParseDecimal(octet, 3);
    if (v > 255) {
      return Bad(whole, Cat("octet ", v, " out of range 0..255"));
    }
    b[i] = static_cast<uint8_t>(v);
    start = end + 1;
  }
  return IpAddress::V4(b);
}

absl::StatusOr<IpAddress> ParseV6(std::string_view whole, std::string_view s) {
  if (s.find('%') != std::string_view::npos) {
    return Bad(whole, "an IPv6 zone (`%...`) is not allowed");
  }
  if (s.size() >= INET6_ADDRSTRLEN) {
    return Bad(whole, Cat("`", s, "` is not an IPv6 address"));
  }
  std::string z(s);
  uint8_t b[16];
  if (inet_pton(AF_INET6, z.c_str(), b) != 1) {
    return Bad(whole, Cat("`", s, "` is not an IPv6 address"));
  }
  return IpAddress::V6(b);
}

// Zeroes the bits of `a` past `prefix_len`.
IpAddress Mask(IpAddress a, int prefix_len) {
  const int bits = a.v6 ? 128 : 32;
  for (int i = 0; i < bits / 8; ++i) {
    const int keep = std::clamp(prefix_len - i * 8, 0, 8);
    const uint8_t m = keep == 0 ? 0 : static_cast<uint8_t>(0xff << (8 - keep));
    a.bytes[i] &= m;
  }
  return a;
}

// Parses ADDRESS[/PREFIX] into a kCidr entry's address and prefix.
absl::Status ParseCidr(std::string_view whole, std::string_view s, bool v6,
                       Entry* e) {
  const size_t slash = s.find('/');
  std::string_view addr = s.substr(0, slash);
  absl::StatusOr<IpAddress> a =
      v6 ? ParseV6(whole, addr) : ParseV4(whole, addr);
  if (!a.ok()) return a.status();
  const int max = v6 ? 128 : 32;
  int prefix = max;
  if (slash != std::string_view::npos) {
    std::string_view p = s.substr(slash + 1);
    if (p.empty()) return Bad(whole, "empty prefix length after `/`");
    for (char c : p) {
      if (!IsDigit(c)) {
        return Bad(whole, Cat("prefix length `", p, "` is not a number"));
      }
    }
    if (p.size() > 1 && p[0] == '0') {
      return Bad(whole, Cat("prefix length `", p, "` has a leading zero"));
    }
    if (p.size() > 3 || *ParseDecimal(p, 3) > static_cast<uint32_t>(max)) {
      return Bad(whole, Cat("prefix ", p, " longer than ", max));
    }
    prefix = static_cast<int>(*ParseDecimal(p, 3));
  }
  const IpAddress masked = Mask(*a, prefix);
  if (!(masked == *a)) {
    return Bad(whole, absl::StrFormat("%s/%d has bits set past the prefix "
                                      "(did you mean %s/%d?)",
                                      a->ToString(), prefix, masked.ToString(),
                                      prefix));
  }
  e->kind = Entry::Kind::kCidr;
  e->address = masked;
  e->prefix_len = prefix;
  // Check() sees v4-mapped addresses as v4: so is a CIDR inside
  // ::ffff:0:0/96.
  if (masked.v6 && prefix >= 96 && !(masked.Unmapped() == masked)) {
    e->address = masked.Unmapped();
    e->prefix_len = prefix - 96;
  }
  return absl::OkStatus();
}

bool IsLabelChar(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         c == '-' || c == '_';
}

// Validates a name (grammar in policy.h) and returns it lower-case without
// the trailing dot; *wildcard is set for a "*." prefix (not included).
absl::StatusOr<std::string> ParseName(std::string_view whole,
                                      std::string_view s, bool* wildcard) {
  *wildcard = false;
  const bool star_dot = s == "*.";
  if (!s.empty() && s.back() == '.') s.remove_suffix(1);
  if (s.empty()) return Bad(whole, "empty name");
  if (s.size() > kMaxName) {
    return Bad(whole, Cat("name is ", s.size(), " characters long, more than ",
                          kMaxName));
  }
  if (star_dot) {
    return Bad(whole, "a wildcard needs a name after `*.`");
  }
  if (s[0] == '*') {
    if (s.size() == 1 || s[1] != '.') {
      return Bad(whole, "`*` only as the whole first label, as in `*.org`");
    }
    *wildcard = true;
    s.remove_prefix(2);
    if (s.empty()) return Bad(whole, "a wildcard needs a name after `*.`");
  }
  size_t start = 0;
  while (true) {
    size_t end = s.find('.', start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view label = s.substr(start, end - start);
    if (label.empty()) return Bad(whole, "empty label");
    if (label.size() > kMaxLabel) {
      return Bad(whole,
                 Cat("label `", label.substr(0, 16), "...` is ", label.size(),
                     " characters long, more "
                     "than ",
                     kMaxLabel));
    }
    for (char c : label) {
      if (c == '*') {
        return Bad(whole, "`*` only as the whole first label, as in `*.org`");
      }
      if (!IsLabelChar(c)) {
        const unsigned char u = static_cast<unsigned char>(c);
        return Bad(whole, u >= 0x21 && u < 0x7f
                              ? Cat("character `", std::string(1, c),
                                    "` not allowed in a name")
                              : absl::StrFormat(
                                    "byte 0x%02x not allowed in a name", u));
      }
    }
    if (label.front() == '-' || label.back() == '-') {
      return Bad(whole, Cat("label `", label, "` starts or ends with `-`"));
    }
    if (end == s.size()) break;
    start = end + 1;
  }
  return Lower(s);
}

bool PrefixMatch(const IpAddress& a, const IpAddress& net, int prefix_len) {
  if (a.v6 != net.v6) return false;
  return Mask(a, prefix_len) == net;
}

std::string PortsText(const std::optional<PortRange>& p) {
  if (!p) return "";
  if (p->lo == p->hi) return Cat(":", p->lo);
  return Cat(":", p->lo, "-", p->hi);
}

// Trims spaces and tabs.
std::string_view Trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, "");
  std::string out;
  char buf[8192];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      close(fd);
      return absl::ErrnoToStatus(err, "");
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxPolicyFile) {
      close(fd);
      return absl::InvalidArgumentError(
          Cat("larger than ", kMaxPolicyFile, " bytes"));
    }
  }
  close(fd);
  return out;
}

}  // namespace

const char kEgressPolicyHelp[] =
    "Egress policy (--network=host):\n"
    "  --egress-allow=ENTRY   allow a destination; repeatable\n"
    "  --egress-policy=FILE   allow the entries of FILE, one a line (# "
    "comments)\n"
    "  ENTRY is a CIDR or address, optionally with a port or port range\n"
    "  (10.0.0.0/8:443, 127.0.0.1:8000, [2001:db8::/32]:80-90, ::1), or a\n"
    "  domain name with an optional *. wildcard and port (pypi.org,\n"
    "  *.pythonhosted.org:443). Names resolve through the sandbox's own\n"
    "  resolver, which answers only the names the policy allows; their\n"
    "  addresses are then allowed on the name's ports. Anything else is\n"
    "  refused (TCP: ECONNREFUSED, UDP: EPERM) and logged.\n"
    "  Without either flag, host mode allows every destination.\n";

IpAddress IpAddress::V4(const uint8_t b[4]) {
  IpAddress a;
  memcpy(a.bytes.data(), b, 4);
  return a;
}

IpAddress IpAddress::V6(const uint8_t b[16]) {
  IpAddress a;
  a.v6 = true;
  memcpy(a.bytes.data(), b, 16);
  return a;
}

IpAddress IpAddress::FromInAddr(const in_addr& a) {
  return V4(reinterpret_cast<const uint8_t*>(&a.s_addr));
}

IpAddress IpAddress::FromIn6Addr(const in6_addr& a) { return V6(a.s6_addr); }

std::optional<IpAddress> IpAddress::FromSockaddr(const sockaddr* sa,
                                                 socklen_t len,
                                                 uint16_t* port) {
  if (sa == nullptr || len < static_cast<socklen_t>(sizeof(sa_family_t))) {
    return std::nullopt;
  }
  sa_family_t family;
  memcpy(&family, sa, sizeof(family));
  if (family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    sockaddr_in in;
    memcpy(&in, sa, sizeof(in));
    if (port) *port = ntohs(in.sin_port);
    return FromInAddr(in.sin_addr);
  }
  if (family == AF_INET6 &&
      len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    sockaddr_in6 in6;
    memcpy(&in6, sa, sizeof(in6));
    if (port) *port = ntohs(in6.sin6_port);
    return FromIn6Addr(in6.sin6_addr);
  }
  return std::nullopt;
}

std::optional<IpAddress> IpAddress::Parse(std::string_view text) {
  if (text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  std::string z(text);
  uint8_t b[16];
  if (inet_pton(AF_INET, z.c_str(), b) == 1) return V4(b);
  if (inet_pton(AF_INET6, z.c_str(), b) == 1) return V6(b);
  return std::nullopt;
}

IpAddress IpAddress::Unmapped() const {
  if (!v6) return *this;
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0,    0,
                                          0, 0, 0, 0, 0xff, 0xff};
  if (memcmp(bytes.data(), kMapped, sizeof(kMapped)) != 0) return *this;
  return V4(bytes.data() + 12);
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN];
  if (inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), buf, sizeof(buf)) ==
      nullptr) {
    return "?";
  }
  return buf;
}

std::string_view ProtoName(Proto p) { return p == Proto::kTcp ? "tcp" : "udp"; }

bool Entry::ContainsAddress(const IpAddress& addr) const {
  return kind == Kind::kCidr && PrefixMatch(addr, address, prefix_len);
}

bool Entry::MatchesName(std::string_view n) const {
  if (kind != Kind::kName) return false;
  if (!wildcard) return n == name;
  // One or more labels before ".name".
  return n.size() > name.size() + 1 &&
         n.substr(n.size() - name.size()) == name &&
         n[n.size() - name.size() - 1] == '.';
}

std::string Entry::ToString() const {
  if (kind == Kind::kName) {
    return Cat(wildcard ? "*." : "", name, PortsText(ports));
  }
  const std::string cidr = Cat(address.ToString(), "/", prefix_len);
  if (address.v6 && ports) return Cat("[", cidr, "]", PortsText(ports));
  return Cat(cidr, PortsText(ports));
}

absl::StatusOr<Entry> ParseEntry(std::string_view whole) {
  const std::string_view text = Trim(whole);
  if (text.empty()) return Bad(whole, "empty entry");
  for (char c : text) {
    if (c == ' ' || c == '\t') {
      return Bad(text, "more than one entry (whitespace inside)");
    }
  }
  Entry e;
  std::string_view host = text;
  std::optional<std::string_view> ports;
  bool v6 = false;
  if (text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return Bad(text, "`[` without `]`");
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') {
        return Bad(text, "expected `:PORT` after `]`");
      }
      ports = rest.substr(1);
    }
    v6 = true;
  } else {
    const size_t first = text.find(':');
    const size_t last = text.rfind(':');
    if (first != std::string_view::npos && first != last) {
      // Several colons: a bare IPv6 address or CIDR (a port needs [...]).
      v6 = true;
    } else if (first != std::string_view::npos) {
      host = text.substr(0, first);
      ports = text.substr(first + 1);
    }
  }
  if (ports) {
    absl::StatusOr<PortRange> p = ParsePorts(text, *ports);
    if (!p.ok()) return p.status();
    e.ports = *p;
  }
  if (v6) {
    absl::Status s = ParseCidr(text, host, true, &e);
    if (!s.ok()) return s;
    return e;
  }
  const size_t slash = host.find('/');
  if (slash != std::string_view::npos || LooksLikeV4(host)) {
    if (!LooksLikeV4(host.substr(0, slash))) {
      return Bad(text,
                 Cat("`", host.substr(0, slash), "` is not an IPv4 address"));
    }
    absl::Status s = ParseCidr(text, host, false, &e);
    if (!s.ok()) return s;
    return e;
  }
  absl::StatusOr<std::string> name = ParseName(text, host, &e.wildcard);
  if (!name.ok()) return name.status();
  e.kind = Entry::Kind::kName;
  e.name = std::move(*name);
  return e;
}

absl::StatusOr<std::vector<Entry>> ParsePolicyFile(std::string_view contents,
                                                   std::string_view origin) {
  std::vector<Entry> out;
  size_t line_no = 0;
  size_t start = 0;
  while (start < contents.size()) {
    size_t end = contents.find('\n', start);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(start, end - start);
    start = end + 1;
    ++line_no;
    // A comment starts at a "#" at the start of the line or after
    // whitespace.
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '#' &&
          (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
        line = line.substr(0, i);
        break;
      }
    }
    line = Trim(line);
    if (line.empty()) continue;
    absl::StatusOr<Entry> e = ParseEntry(line);
    if (!e.ok()) {
      return absl::InvalidArgumentError(
          Cat(origin, ":", line_no, ": ", e.status().message()));
    }
    out.push_back(std::move(*e));
  }
  return out;
}

Policy::Policy(bool allow_all, std::vector<Entry> entries)
    : allow_all_(allow_all), entries_(std::move(entries)) {}

std::unique_ptr<Policy> Policy::AllowAll() {
  return std::unique_ptr<Policy>(new Policy(true, {}));
}

std::unique_ptr<Policy> Policy::FromEntries(std::vector<Entry> entries) {
  return std::unique_ptr<Policy>(new Policy(false, std::move(entries)));
}

absl::StatusOr<std::unique_ptr<Policy>> Policy::FromFlags(
    std::span<const std::string> allow, std::span<const std::string> files) {
  if (allow.empty() && files.empty()) return AllowAll();
  std::vector<Entry> entries;
  for (const std::string& a : allow) {
    absl::StatusOr<Entry> e = ParseEntry(a);
    if (!e.ok()) {
      return absl::InvalidArgumentError(
          Cat("--egress-allow=", a, ": ", e.status().message()));
    }
    entries.push_back(std::move(*e));
  }
  for (const std::string& f : files) {
    absl::StatusOr<std::string> contents = ReadFile(f);
    if (!contents.ok()) {
      return absl::InvalidArgumentError(
          Cat("--egress-policy=", f, ": ", contents.status().message()));
    }
    absl::StatusOr<std::vector<Entry>> more = ParsePolicyFile(*contents, f);
    if (!more.ok()) return more.status();
    for (Entry& e : *more) entries.push_back(std::move(e));
  }
  return FromEntries(std::move(entries));
}

std::vector<std::string> Policy::CanonicalEntries() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_) out.push_back(e.ToString());
  return out;
}

bool Policy::AllowsName(std::string_view name) const {
  if (allow_all_) return true;
  bool wildcard = false;
  absl::StatusOr<std::string> n = ParseName(name, name, &wildcard);
  if (!n.ok() || wildcard) return false;
  for (const Entry& e : entries_) {
    if (e.MatchesName(*n)) return true;
  }
  return false;
}

bool Policy::Pin(std::string_view name, std::span<const IpAddress> addresses) {
  if (allow_all_) return false;
  bool wildcard = false;
  absl::StatusOr<std::string> n = ParseName(name, name, &wildcard);
  if (!n.ok() || wildcard) return false;
  PinnedName pinned{*n, {}};
  for (const Entry& e : entries_) {
    if (!e.MatchesName(*n)) continue;
    if (std::find(pinned.ports.begin(), pinned.ports.end(), e.ports) ==
        pinned.ports.end()) {
      pinned.ports.push_back(e.ports);
    }
  }
  if (pinned.ports.empty()) return false;
  absl::MutexLock lock(&mu_);
  for (const IpAddress& raw : addresses) {
    const IpAddress a = raw.Unmapped();
    auto [it, inserted] = pins_.try_emplace(a);
    if (inserted) {
      pin_order_.push_back(a);
      while (pins_.size() > kMaxPins) {
        pins_.erase(pin_order_.front());
        pin_order_.pop_front();
      }
      it = pins_.find(a);  // the erase may have rehashed
      if (it == pins_.end()) continue;
    }
    std::vector<PinnedName>& names = it->second.names;
    auto same = std::find_if(names.begin(), names.end(),
                             [&](const PinnedName& p) { return p.name == *n; });
    if (same != names.end()) continue;  // same name, same ports
    if (names.size() < kMaxNamesPerAddress) names.push_back(pinned);
  }
  return true;
}

namespace {

// 127.0.0.0/8, ::1, and the wildcards (a connect to 0.0.0.0 or :: reaches
// the host's loopback).
bool IsHostLocal(const IpAddress& a) {
  if (!a.v6) {
    return a.bytes[0] == 127 || (a.bytes[0] == 0 && a.bytes[1] == 0 &&
                                 a.bytes[2] == 0 && a.bytes[3] == 0);
  }
  for (int i = 0; i < 15; ++i) {
    if (a.bytes[i] != 0) return false;
  }
  return a.bytes[15] <= 1;  // :: or ::1
}

}  // namespace

Decision Policy::Check(const IpAddress& raw, uint16_t port,
                       Proto /*proto*/) const {
  const IpAddress a = raw.Unmapped();
  if (allow_all_) {
    // The host's own loopback (its local services: databases, agents,
    // container runtimes' APIs) is not "the network": without a policy
    // that lists it, host mode does not reach it.
    if (IsHostLocal(a)) {
      return {false,
              "the host's loopback is reachable only when a policy lists it",
              ""};
    }
    return {true, "no egress policy", ""};
  }
  const Entry* port_mismatch = nullptr;
  for (const Entry& e : entries_) {
    if (!e.ContainsAddress(a)) continue;
    if (e.AllowsPort(port)) {
      return {true, Cat("allowed by ", e.ToString()), ""};
    }
    if (port_mismatch == nullptr) port_mismatch = &e;
  }
  absl::MutexLock lock(&mu_);
  auto it = pins_.find(a);
  if (it != pins_.end()) {
    for (const PinnedName& p : it->second.names) {
      for (const std::optional<PortRange>& r : p.ports) {
        if (!r || r->Contains(port)) {
          return {true, Cat("allowed by ", p.name, PortsText(r)), p.name};
        }
      }
    }
    if (port_mismatch == nullptr && !it->second.names.empty()) {
      const PinnedName& p = it->second.names.front();
      std::vector<std::string> ranges;
      for (const std::optional<PortRange>& r : p.ports) {
        ranges.push_back(Cat(p.name, PortsText(r)));
      }
      return {
          false,
          Cat("port ", port, " not allowed for ", absl::StrJoin(ranges, ", ")),
          p.name};
    }
  }
  if (port_mismatch != nullptr) {
    return {false,
            Cat("port ", port, " not allowed for ", port_mismatch->ToString()),
            ""};
  }
  return {false, "not in policy", ""};
}

size_t Policy::pin_count() const {
  absl::MutexLock lock(&mu_);
  return pins_.size();
}

}  // namespace sandbox::broker::policy
