// The egress policy of a sandbox in host network mode (issue #21): which
// destinations the network broker may connect to or send to, and which
// names the sandbox's resolver may resolve.
//
// Sources: `--egress-allow=ENTRY` (repeatable) and `--egress-policy=FILE`
// (one entry a line). Grammar of an entry (whitespace around it is
// trimmed; nothing else is allowed inside it):
//
//   entry    = cidr4 [ ":" ports ]
//            | v6cidr                       ; bare, no port
//            | "[" v6cidr "]" [ ":" ports ]
//            | name [ ":" ports ]
//   cidr4    = ipv4 [ "/" prefix ]          ; prefix 0..32, default 32
//   v6cidr   = ipv6 [ "/" prefix ]          ; prefix 0..128, default 128
//   ipv4     = octet "." octet "." octet "." octet
//   octet    = decimal 0..255, no leading zero ("0" itself is fine)
//   ipv6     = as inet_pton(AF_INET6) takes it ("::", "2001:db8::1",
//              "::ffff:1.2.3.4"); no zone ("%eth0")
//   prefix   = decimal, no leading zero; the address's bits past the
//              prefix must be zero ("10.1.0.0/8" is an error naming
//              10.0.0.0/8). A v6 CIDR inside ::ffff:0:0/96 is the v4 CIDR
//              it maps ("::ffff:10.0.0.0/104" is 10.0.0.0/8).
//   ports    = port | port "-" port         ; inclusive, lo <= hi
//   port     = decimal 1..65535, no leading zero
//   name     = [ "*." ] label *( "." label ) [ "." ]
//   label    = 1..63 of [A-Za-z0-9_-], neither first nor last "-"
//
// A name is at most 253 characters without its trailing dot; case does not
// matter (names are kept lower-case); the trailing dot is dropped. A name
// of only digits and dots is taken as an IPv4 address (and so "1.2.3.256"
// is an error, not a name). `*.` is allowed only as the first label and
// matches one or more labels: `*.pythonhosted.org` matches
// `files.pythonhosted.org` and `a.b.pythonhosted.org`, but not
// `pythonhosted.org` itself (list both when both are meant). An entry with
// no port allows every port. Entries apply to TCP and UDP alike.
//
// In a policy file, `#` starts a comment that runs to the end of the line
// (at the start of a line or after whitespace); blank lines are ignored;
// each other line holds exactly one entry.
//
// Decisions:
//   - No policy (neither flag given): Policy::AllowAll(), every
//     destination allowed; AllowsName is true for every name.
//   - A policy (any flag given, even with zero entries, e.g. a file of
//     only comments): a destination (address, port) is allowed when the
//     address lies inside an entry's CIDR and the port is in that entry's
//     ports, or when a name the policy allows resolved to the address
//     (Pin) and the port is in that name's ports. Everything else is
//     denied. A v4-mapped IPv6 address (::ffff:a.b.c.d) is checked as the
//     IPv4 address a.b.c.d.
//   - A name's ports are the union of the ports of every name entry that
//     matches it (exact or wildcard).
//
// Thread safety: a Policy's entries are immutable after construction; the
// pins are guarded by an internal absl::Mutex, so every method may be
// called from any thread.
#ifndef BROKER_POLICY_POLICY_H_
#define BROKER_POLICY_POLICY_H_

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace sandbox::broker::policy {

// An IPv4 or IPv6 address, network byte order.
struct IpAddress {
  bool v6 = false;
  // v4: bytes[0..3], the rest zero; v6: all 16.
  std::array<uint8_t, 16> bytes{};

  static IpAddress V4(const uint8_t b[4]);
  static IpAddress V6(const uint8_t b[16]);
  static IpAddress FromInAddr(const in_addr& a);
  static IpAddress FromIn6Addr(const in6_addr& a);
  // The address of a sockaddr_in or sockaddr_in6 (and its port, host
  // order, in *port if non-null); nullopt for another family or a short
  // length.
  static std::optional<IpAddress> FromSockaddr(const sockaddr* sa,
                                               socklen_t len,
                                               uint16_t* port = nullptr);
  // A numeric address as inet_pton(AF_INET) or inet_pton(AF_INET6) takes
  // it; nullopt otherwise.
  static std::optional<IpAddress> Parse(std::string_view text);

  // For a v4-mapped v6 address, the v4 address; otherwise *this.
  IpAddress Unmapped() const;
  // inet_ntop's text ("10.0.0.1", "2001:db8::1").
  std::string ToString() const;

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const IpAddress& a) {
    return H::combine(std::move(h), a.v6, a.bytes);
  }
};

enum class Proto : uint8_t { kTcp, kUdp };
std::string_view ProtoName(Proto p);  // "tcp", "udp"

// An inclusive port range, 1 <= lo <= hi <= 65535.
struct PortRange {
  uint16_t lo = 1;
  uint16_t hi = 65535;
  bool Contains(uint16_t port) const { return lo <= port && port <= hi; }
  friend bool operator==(const PortRange&, const PortRange&) = default;
};

// One parsed entry.
struct Entry {
  enum class Kind : uint8_t { kCidr, kName };
  Kind kind = Kind::kCidr;
  // kCidr: the network address (host bits zero) and prefix length
  // (0..32 for v4, 0..128 for v6).
  IpAddress address;
  int prefix_len = 0;
  // kName: lower-case, no trailing dot, without the "*." of a wildcard.
  std::string name;
  bool wildcard = false;
  // nullopt: every port.
  std::optional<PortRange> ports;

  // Whether `addr` (already unmapped) lies inside a kCidr entry.
  bool ContainsAddress(const IpAddress& addr) const;
  // Whether `lower_name` (lower-case, no trailing dot) matches a kName
  // entry.
  bool MatchesName(std::string_view lower_name) const;
  bool AllowsPort(uint16_t port) const {
    return !ports || ports->Contains(port);
  }
  // The canonical text, which ParseEntry parses back to an equal Entry:
  // "10.0.0.0/8:443", "[2001:db8::/32]:80-90", "127.0.0.1/32:8000",
  // "2001:db8::/32", "*.pythonhosted.org:443", "pypi.org".
  std::string ToString() const;

  friend bool operator==(const Entry&, const Entry&) = default;
};

// Parses one entry (grammar above). The error message names the offending
// text and what is wrong with it, e.g.
//   `10.0.0.256/8`: octet 256 out of range 0..255
//   `10.0.0.0/33`: prefix 33 longer than 32
//   `pypi.org:0`: port 0 out of range 1..65535
//   `a..b`: empty label
//   `a.*.org`: `*` only as the whole first label, as in `*.org`
absl::StatusOr<Entry> ParseEntry(std::string_view text);

// Parses a policy file's contents. Errors read "ORIGIN:LINE: MESSAGE"
// where MESSAGE is ParseEntry's (or "more than one entry on a line").
// `origin` is the file name as the user gave it.
absl::StatusOr<std::vector<Entry>> ParsePolicyFile(std::string_view contents,
                                                   std::string_view origin);

// The egress section of `runsc do --help` (the flags, the grammar in
// short, and that without a policy host mode allows everything).
extern const char kEgressPolicyHelp[];

// The outcome of Policy::Check, for the caller's log line.
struct Decision {
  bool allowed = false;
  // Why, e.g. "allowed by 10.0.0.0/8:443", "allowed by pypi.org:443",
  // "no egress policy", "not in policy",
  // "port 22 not allowed for 10.0.0.0/8:443",
  // "port 22 not allowed for pypi.org:443".
  std::string reason;
  // The name the address was pinned under when a pin decided it (allowed
  // or denied for its port); empty otherwise.
  std::string via_name;
};

class Policy {
 public:
  // Most distinct pinned addresses kept; past it the oldest pin goes (a
  // wildcard entry lets the guest resolve unboundedly many names).
  static constexpr size_t kMaxPins = 16384;

  // No policy: everything allowed.
  static std::unique_ptr<Policy> AllowAll();
  // An enforcing policy of `entries` (none: everything denied).
  static std::unique_ptr<Policy> FromEntries(std::vector<Entry> entries);
  // From the command line: each `allow` is an --egress-allow value, each
  // `files` an --egress-policy path (read here). With both empty:
  // AllowAll(). Errors: "--egress-allow=TEXT: MESSAGE",
  // "FILE:LINE: MESSAGE", "--egress-policy=FILE: strerror".
  static absl::StatusOr<std::unique_ptr<Policy>> FromFlags(
      std::span<const std::string> allow, std::span<const std::string> files);

  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  bool allow_all() const { return allow_all_; }
  const std::vector<Entry>& entries() const { return entries_; }
  // The entries' canonical texts (Entry::ToString), for handing the policy
  // to another process (which rebuilds it with ParseEntry + FromEntries).
  std::vector<std::string> CanonicalEntries() const;

  // May `name` be resolved at all? (true for every name under AllowAll;
  // otherwise when some name entry matches it). Case-insensitive; a
  // trailing dot is ignored; a name that is not a valid name by the
  // grammar (e.g. one with escaped bytes from the DNS codec) is never
  // allowed.
  bool AllowsName(std::string_view name) const;

  // Records that the allowed `name` resolved to `addresses` (v4-mapped
  // ones unmapped), with the name's ports. A pinned address is then
  // allowed on those ports. Returns false (and pins nothing) when the
  // name is not allowed or under AllowAll. An address pinned by several
  // names keeps each name's ports (the first names are reported). Pins do
  // not expire (programs keep addresses past their TTL); kMaxPins bounds
  // them. Pin under the name the guest asked for: when it is a CNAME, the
  // addresses of the chain's end (dns::ExtractAddresses) are pinned under
  // the asked name, whose entries allowed the lookup.
  bool Pin(std::string_view name, std::span<const IpAddress> addresses)
      ABSL_LOCKS_EXCLUDED(mu_);

  // May the sandbox reach (address, port) over `proto`?
  Decision Check(const IpAddress& address, uint16_t port, Proto proto) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Number of distinct pinned addresses (for tests and diagnostics).
  size_t pin_count() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The names that resolved to one address, and their ports.
  struct PinnedName {
    std::string name;
    std::vector<std::optional<PortRange>> ports;  // nullopt: every port
  };
  struct Pinned {
    std::vector<PinnedName> names;  // at most kMaxNamesPerAddress
  };
  static constexpr size_t kMaxNamesPerAddress = 8;

  Policy(bool allow_all, std::vector<Entry> entries);

  const bool allow_all_;
  const std::vector<Entry> entries_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<IpAddress, Pinned> pins_ ABSL_GUARDED_BY(mu_);
  // Insertion order of pins_'s keys, oldest first (eviction).
  std::deque<IpAddress> pin_order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sandbox::broker::policy

#endif  // BROKER_POLICY_POLICY_H_
