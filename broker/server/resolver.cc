#include "broker/server/resolver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "broker/dns/message.h"
#include "broker/protocol/transport.h"
#include "broker/server/sockaddr.h"

namespace sandbox::broker {
namespace {

Ip FromAnswer(const dns::AddressAnswer& a) {
  Ip ip;
  ip.family = a.v6 ? kFamilyInet6 : kFamilyInet;
  std::memcpy(ip.bytes.data(), a.bytes.data(), a.v6 ? 16 : 4);
  return ip;
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

bool ParseIp(std::string_view text, Ip* ip) {
  std::string s(text);
  *ip = Ip();
  if (inet_pton(AF_INET, s.c_str(), ip->bytes.data()) == 1) {
    ip->family = kFamilyInet;
    return true;
  }
  if (inet_pton(AF_INET6, s.c_str(), ip->bytes.data()) == 1) {
    ip->family = kFamilyInet6;
    return true;
  }
  return false;
}

// One query and its answer over a UDP socket connected to `upstream`.
// Returns the response bytes, or empty on a timeout or error.
std::vector<uint8_t> Exchange(const Endpoint& upstream,
                              const std::vector<uint8_t>& query, uint16_t id,
                              std::string_view name, uint16_t qtype,
                              dns::Response* resp) {
  int fd = socket(upstream.ip.family == kFamilyInet ? AF_INET : AF_INET6,
                  SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  UniqueFd owned(fd);
  sockaddr_storage ss;
  socklen_t len = ToSockaddr(upstream, &ss);
  if (connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) return {};
  if (send(fd, query.data(), query.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(query.size())) {
    return {};
  }
  const int64_t deadline = NowMs() + Resolver::kTimeoutMs;
  std::vector<uint8_t> buf(dns::kMaxUdpSize * 8);
  for (;;) {
    const int64_t left = deadline - NowMs();
    if (left <= 0) return {};
    pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return {};
    ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n < 0) {
      // ECONNREFUSED: nobody serves DNS there.
      if (errno == EAGAIN || errno == EINTR) continue;
      return {};
    }
    absl::StatusOr<dns::Response> parsed =
        dns::ParseResponse(std::span<const uint8_t>(buf.data(), n));
    // Anything else (a stale or forged answer) is ignored; keep waiting.
    if (parsed.ok() && dns::AnswersQuery(*parsed, id, name, qtype)) {
      *resp = *std::move(parsed);
      buf.resize(n);
      return buf;
    }
  }
}

}  // namespace

bool Resolver::Query(std::string_view name, uint16_t qtype, Resolution* out) {
  for (int t = 0; t < kTries; ++t) {
    for (const Endpoint& up : upstreams_) {
      uint16_t id = 0;
      if (getrandom(&id, sizeof(id), 0) != sizeof(id)) id = NowMs() & 0xffff;
      absl::StatusOr<std::vector<uint8_t>> q = dns::BuildQuery(id, name, qtype);
      if (!q.ok()) {
        out->rcode = Rcode::kNxDomain;  // not a name DNS can carry
        return true;
      }
      dns::Response resp;
      if (Exchange(up, *q, id, name, qtype, &resp).empty()) continue;
      const uint8_t rcode = resp.header.rcode;
      if (rcode == static_cast<uint8_t>(dns::Rcode::kNxDomain)) {
        out->rcode = Rcode::kNxDomain;
        return true;
      }
      if (rcode != static_cast<uint8_t>(dns::Rcode::kNoError)) {
        // SERVFAIL, REFUSED...: try the next upstream.
        continue;
      }
      dns::Addresses a = dns::ExtractAddresses(resp, name, qtype);
      for (const dns::AddressAnswer& x : a.addresses) {
        if (out->addresses.size() >= kMaxAddresses) break;
        out->addresses.push_back(FromAnswer(x));
      }
      if (!a.addresses.empty()) {
        out->ttl = out->ttl == 0 ? a.ttl : std::min(out->ttl, a.ttl);
      }
      return true;
    }
  }
  return false;
}

Resolution Resolver::Resolve(std::string_view name, uint8_t family) {
  Resolution r;
  const bool want4 = family != kFamilyInet6;
  const bool want6 = family != kFamilyInet;
  // /etc/hosts first, as glibc's "files" before "dns".
  if (hosts_.Contains(name)) {
    for (bool v6 : {false, true}) {
      if ((v6 && !want6) || (!v6 && !want4)) continue;
      for (const dns::AddressAnswer& a : hosts_.Lookup(name, v6)) {
        if (r.addresses.size() < kMaxAddresses) {
          r.addresses.push_back(FromAnswer(a));
        }
      }
    }
    return r;
  }
  if (upstreams_.empty()) {
    r.rcode = Rcode::kServFail;
    return r;
  }
  bool answered = false, nx = false;
  for (bool v6 : {false, true}) {
    if ((v6 && !want6) || (!v6 && !want4)) continue;
    Resolution part;
    if (!Query(name, v6 ? dns::kTypeAAAA : dns::kTypeA, &part)) continue;
    answered = true;
    if (part.rcode == Rcode::kNxDomain) {
      nx = true;
      continue;
    }
    for (const Ip& ip : part.addresses) {
      if (r.addresses.size() < kMaxAddresses) r.addresses.push_back(ip);
    }
    if (part.ttl != 0)
      r.ttl = r.ttl == 0 ? part.ttl : std::min(r.ttl, part.ttl);
  }
  if (!answered) {
    r.rcode = Rcode::kServFail;
  } else if (nx && r.addresses.empty()) {
    r.rcode = Rcode::kNxDomain;
  }
  return r;
}

std::vector<Endpoint> ParseResolvConf(std::string_view contents) {
  std::vector<Endpoint> out;
  for (absl::string_view line : absl::StrSplit(
           absl::string_view(contents.data(), contents.size()), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    std::vector<absl::string_view> f =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (f.size() < 2 || f[0] != "nameserver") continue;
    Endpoint e;
    // A zone suffix ("fe80::1%eth0") is dropped with the address.
    if (!ParseIp(std::string_view(f[1].data(), f[1].size()), &e.ip)) continue;
    e.port = 53;
    out.push_back(e);
    if (out.size() == 3) break;  // MAXNS
  }
  return out;
}

bool ParseHostPort(std::string_view text, uint16_t default_port,
                   Endpoint* out) {
  std::string_view host = text;
  std::string_view port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return false;
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return false;
      port = rest.substr(1);
      if (port.empty()) return false;
    }
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    size_t colon = text.find(':');
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (port.empty()) return false;
  }
  if (!ParseIp(host, &out->ip)) return false;
  out->port = default_port;
  if (!port.empty()) {
    uint32_t p;
    if (port.size() > 5 ||
        !absl::SimpleAtoi(absl::string_view(port.data(), port.size()), &p) ||
        p == 0 || p > 65535 || port[0] == '+' || port[0] == '-') {
      return false;
    }
    out->port = static_cast<uint16_t>(p);
  }
  return true;
}

}  // namespace sandbox::broker
