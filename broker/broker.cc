#include "broker/broker.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "broker/confine.h"
#include "broker/dns/hosts.h"
#include "broker/policy/policy.h"
#include "broker/protocol/codec.h"
#include "broker/seccomp.h"
#include "broker/server/resolver.h"

namespace sandbox::broker {
namespace {

// A port: 1..65535, decimal digits only.
bool ParsePort(std::string_view s, uint16_t* out) {
  if (s.empty() || s.size() > 5) return false;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v == 0 || v > 65535) return false;
  *out = static_cast<uint16_t>(v);
  return true;
}

std::string ReadSmallFile(const char* path) {
  std::string out;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0 || out.size() > (1 << 20)) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

}  // namespace

absl::StatusOr<Publish> ParsePublish(std::string_view value) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--publish=%s: %s (expected [HOSTADDR:]HOSTPORT:GUESTPORT[/udp])",
        std::string(value), why));
  };
  Publish p;
  std::string_view v = value;
  if (size_t slash = v.rfind('/'); slash != std::string_view::npos) {
    std::string_view proto = v.substr(slash + 1);
    if (proto == "udp") {
      p.proto = Proto::kUdp;
    } else if (proto != "tcp") {
      return bad(absl::StrCat("unknown protocol '", std::string(proto),
                              "' (tcp or udp)"));
    }
    v = v.substr(0, slash);
  }
  std::string_view addr = "127.0.0.1";
  if (!v.empty() && v[0] == '[') {
    size_t close = v.find(']');
    if (close == std::string_view::npos || close + 1 >= v.size() ||
        v[close + 1] != ':') {
      return bad("an IPv6 HOSTADDR is written [ADDR]:");
    }
    addr = v.substr(1, close - 1);
    v = v.substr(close + 2);
    std::string a(addr);
    if (inet_pton(AF_INET6, a.c_str(), p.host.ip.bytes.data()) != 1) {
      return bad(
          absl::StrCat("'", std::string(addr), "' is not an IPv6 address"));
    }
    p.host.ip.family = kFamilyInet6;
  } else {
    size_t colons = std::count(v.begin(), v.end(), ':');
    if (colons == 2) {
      addr = v.substr(0, v.find(':'));
      v = v.substr(v.find(':') + 1);
    } else if (colons != 1) {
      return bad("expected two or three ':'-separated parts");
    }
    std::string a(addr);
    if (inet_pton(AF_INET, a.c_str(), p.host.ip.bytes.data()) != 1) {
      return bad(absl::StrCat("HOSTADDR '", std::string(addr),
                              "' is not an IPv4 address (IPv6: [ADDR])"));
    }
    p.host.ip.family = kFamilyInet;
  }
  size_t colon = v.find(':');
  if (colon == std::string_view::npos || v.find(':', colon + 1) != v.npos) {
    return bad("expected HOSTPORT:GUESTPORT");
  }
  if (!ParsePort(v.substr(0, colon), &p.host.port)) {
    return bad(absl::StrCat("HOSTPORT '", std::string(v.substr(0, colon)),
                            "' is not a port (1-65535)"));
  }
  if (!ParsePort(v.substr(colon + 1), &p.guest_port)) {
    return bad(absl::StrCat("GUESTPORT '", std::string(v.substr(colon + 1)),
                            "' is not a port (1-65535)"));
  }
  return p;
}

std::string PublishToString(const Publish& p) {
  return absl::StrCat(EndpointToString(p.host), ":", p.guest_port,
                      p.proto == Proto::kUdp ? "/udp" : "");
}

absl::StatusOr<BrokerConfig> ParseBrokerFlags(
    const std::vector<std::string>& args) {
  BrokerConfig c;
  for (const std::string& a : args) {
    auto value = [&](std::string_view name, std::string_view* v) {
      if (a.rfind(name, 0) != 0) return false;
      *v = std::string_view(a).substr(name.size());
      return true;
    };
    std::string_view v;
    if (value("--fd=", &v)) {
      if (!absl::SimpleAtoi(absl::string_view(v.data(), v.size()),
                            &c.sentry_fd) ||
          c.sentry_fd < 0) {
        return absl::InvalidArgumentError(absl::StrCat("bad ", a));
      }
    } else if (value("--publish=", &v)) {
      absl::StatusOr<Publish> p = ParsePublish(v);
      if (!p.ok()) return p.status();
      c.publishes.push_back(*p);
    } else if (value("--listener=", &v)) {
      const size_t colon = v.find(':');
      int fd = -1;
      if (colon == std::string_view::npos ||
          !absl::SimpleAtoi(absl::string_view(v.data(), colon), &fd) ||
          fd < 0) {
        return absl::InvalidArgumentError(absl::StrCat("bad ", a));
      }
      absl::StatusOr<Publish> p = ParsePublish(v.substr(colon + 1));
      if (!p.ok()) return p.status();
      c.listeners.push_back({fd, *p});
    } else if (a == "--policy") {
      c.policy = true;
    } else if (value("--allow=", &v)) {
      c.policy = true;
      c.allow.emplace_back(v);
    } else if (value("--resolver=", &v)) {
      Endpoint e;
      if (!ParseHostPort(v, 53, &e)) {
        return absl::InvalidArgumentError(absl::StrCat("bad ", a));
      }
      c.resolvers.push_back(e);
    } else if (a == "--no-confine") {
      c.confine = false;
    } else if (a == "--no-seccomp") {
      c.seccomp = false;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", a));
    }
  }
  if (c.sentry_fd < 0) return absl::InvalidArgumentError("--fd=N is required");
  return c;
}

absl::Status RunBroker(const BrokerConfig& config) {
  // What the host tells about names, read while the files are reachable.
  dns::HostsFile hosts = dns::HostsFile::Load("/etc/hosts");
  std::vector<Endpoint> upstreams = config.resolvers;
  if (upstreams.empty()) {
    upstreams = ParseResolvConf(ReadSmallFile("/etc/resolv.conf"));
  }
  std::vector<Listener> listeners;
  for (const auto& [fd, p] : config.listeners) {
    Listener l;
    l.publish = p;
    l.fd.reset(fd);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    listeners.push_back(std::move(l));
  }
  absl::Status s = OpenPublishListeners(config.publishes, &listeners);
  if (!s.ok()) return s;
  std::unique_ptr<policy::Policy> pol;
  if (config.policy) {
    std::vector<policy::Entry> entries;
    for (const std::string& text : config.allow) {
      absl::StatusOr<policy::Entry> e = policy::ParseEntry(text);
      if (!e.ok()) return e.status();
      entries.push_back(*std::move(e));
    }
    pol = policy::Policy::FromEntries(std::move(entries));
  } else {
    pol = policy::Policy::AllowAll();
  }
  if (config.confine) {
    s = Confine();
    if (!s.ok()) return s;
  }
  // One malloc arena and no trimming: glibc reads
  // /proc/sys/vm/overcommit_memory when it shrinks a thread arena.
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_TRIM_THRESHOLD, -1);
  if (config.seccomp) {
    s = InstallSeccomp();
    if (!s.ok()) return s;
  }
  ServerConfig sc;
  sc.sentry.reset(config.sentry_fd);
  sc.listeners = std::move(listeners);
  sc.policy = std::move(pol);
  sc.resolver = std::make_unique<Resolver>(std::move(hosts), upstreams);
  return Serve(std::move(sc));
}

}  // namespace sandbox::broker
