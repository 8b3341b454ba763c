// A tiny authoritative-looking DNS server for the isolation tests: it runs
// on the host (not in the sandbox) and answers from its command line.
//
//   dns_stub_server [--port=P] [--bind=ADDR] [--ttl=N]
//                   [--record=NAME=ADDR]...
//
//   --port    UDP and TCP port (default 0: one the kernel picks; the same
//             number for both).
//   --bind    the address to listen on (default 127.0.0.1; ::1 works).
//   --ttl     the TTL of every answer (default 60).
//   --port-file  once listening, write the port number and a newline to
//             this file (written aside and renamed: it appears whole).
//   --record  NAME has address ADDR (v4: an A record, v6: AAAA); repeat for
//             more addresses or names. Names compare case-insensitively.
//
// Once both sockets listen it prints "listening on ADDR:PORT" (one line,
// flushed) on stdout, then answers until SIGTERM or SIGINT:
//   a listed name: its A or AAAA records (NOERROR without answers when it
//     has none of that type or the type is neither A nor AAAA);
//   another name: NXDOMAIN; a class other than IN: REFUSED;
//   a malformed query: FORMERR; another opcode: NOTIMP.
// It logs one line a query on stderr: "query NAME TYPE udp|tcp -> RCODE
// N". UDP answers are at most 512 bytes (TC set past that); TCP takes
// length-prefixed queries on each connection until EOF (one connection at
// a time, 5 s idle limit).
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "broker/dns/message.h"

namespace {

namespace dns = sandbox::broker::dns;

volatile sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

struct Options {
  uint16_t port = 0;
  std::string bind = "127.0.0.1";
  uint32_t ttl = 60;
  std::string port_file;
  // Lower-case name -> addresses.
  std::map<std::string, std::vector<dns::AddressAnswer>> records;
};

std::string Lower(std::string_view s) {
  if (!s.empty() && s.back() == '.') s.remove_suffix(1);
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

[[noreturn]] void Usage(const char* why) {
  fprintf(stderr,
          "dns_stub_server: %s\nusage: dns_stub_server [--port=P] "
          "[--bind=ADDR] [--ttl=N] [--port-file=PATH] "
          "[--record=NAME=ADDR]...\n",
          why);
  exit(2);
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](std::string_view flag) -> std::optional<std::string> {
      if (a.substr(0, flag.size()) != flag) return std::nullopt;
      return std::string(a.substr(flag.size()));
    };
    if (auto v = value("--port=")) {
      char* end = nullptr;
      const long p = strtol(v->c_str(), &end, 10);
      if (v->empty() || *end || p < 0 || p > 65535) Usage("bad --port");
      o.port = static_cast<uint16_t>(p);
    } else if (auto v = value("--bind=")) {
      o.bind = *v;
    } else if (auto v = value("--port-file=")) {
      o.port_file = *v;
    } else if (auto v = value("--ttl=")) {
      char* end = nullptr;
      const unsigned long t = strtoul(v->c_str(), &end, 10);
      if (v->empty() || *end || t > 0x7fffffff) Usage("bad --ttl");
      o.ttl = static_cast<uint32_t>(t);
    } else if (auto v = value("--record=")) {
      const size_t eq = v->rfind('=');
      if (eq == std::string::npos || eq == 0) Usage("bad --record");
      const std::string name = Lower(v->substr(0, eq));
      const std::string addr = v->substr(eq + 1);
      dns::AddressAnswer ans;
      if (inet_pton(AF_INET, addr.c_str(), ans.bytes.data()) == 1) {
        ans.v6 = false;
      } else if (inet_pton(AF_INET6, addr.c_str(), ans.bytes.data()) == 1) {
        ans.v6 = true;
      } else {
        Usage("bad address in --record");
      }
      o.records[name].push_back(ans);
    } else {
      Usage("unknown argument");
    }
  }
  for (auto& [name, addrs] : o.records) {
    for (dns::AddressAnswer& a : addrs) a.ttl = o.ttl;
  }
  return o;
}

const char* TypeName(uint16_t t) {
  switch (t) {
    case dns::kTypeA:
      return "A";
    case dns::kTypeAAAA:
      return "AAAA";
    case dns::kTypeCNAME:
      return "CNAME";
    case dns::kTypeMX:
      return "MX";
    case dns::kTypeTXT:
      return "TXT";
    case dns::kTypePTR:
      return "PTR";
    case dns::kTypeANY:
      return "ANY";
    default:
      return "other";
  }
}

const char* RcodeName(dns::Rcode r) {
  switch (r) {
    case dns::Rcode::kNoError:
      return "NOERROR";
    case dns::Rcode::kFormErr:
      return "FORMERR";
    case dns::Rcode::kServFail:
      return "SERVFAIL";
    case dns::Rcode::kNxDomain:
      return "NXDOMAIN";
    case dns::Rcode::kNotImp:
      return "NOTIMP";
    case dns::Rcode::kRefused:
      return "REFUSED";
  }
  return "?";
}

// The response to one message, or empty: drop it.
std::vector<uint8_t> Answer(const Options& o, std::span<const uint8_t> msg,
                            bool tcp) {
  std::optional<dns::ParsedQuery> q = dns::ParseQuery(msg);
  if (!q) return {};
  const size_t limit = tcp ? dns::kMaxTcpSize : dns::kMaxUdpSize;
  dns::Rcode rc = q->error;
  std::vector<dns::AddressAnswer> answers;
  if (rc == dns::Rcode::kNoError) {
    if (q->question->qclass != dns::kClassIN) {
      rc = dns::Rcode::kRefused;
    } else {
      auto it = o.records.find(Lower(q->question->name));
      if (it == o.records.end()) {
        rc = dns::Rcode::kNxDomain;
      } else if (q->question->qtype == dns::kTypeA ||
                 q->question->qtype == dns::kTypeAAAA) {
        const bool v6 = q->question->qtype == dns::kTypeAAAA;
        for (const dns::AddressAnswer& a : it->second) {
          if (a.v6 == v6) answers.push_back(a);
        }
      }
    }
  }
  std::vector<uint8_t> resp = dns::BuildResponse(*q, rc, answers, limit);
  fprintf(stderr, "query %s %s %s -> %s %zu\n",
          q->question ? q->question->name.c_str() : "-",
          q->question ? TypeName(q->question->qtype) : "-", tcp ? "tcp" : "udp",
          RcodeName(rc), answers.size());
  return resp;
}

// Reads exactly n bytes within the idle limit; false on EOF, error or
// timeout.
bool ReadFull(int fd, uint8_t* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    pollfd p = {fd, POLLIN, 0};
    const int r = poll(&p, 1, 5000);
    if (r <= 0) {
      if (r < 0 && errno == EINTR && !g_stop) continue;
      return false;
    }
    const ssize_t k = read(fd, buf + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    got += static_cast<size_t>(k);
  }
  return true;
}

bool WriteFull(int fd, const uint8_t* buf, size_t n) {
  while (n > 0) {
    const ssize_t k = send(fd, buf, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    buf += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

void ServeTcp(const Options& o, int conn) {
  std::vector<uint8_t> msg;
  while (!g_stop) {
    uint8_t len[2];
    if (!ReadFull(conn, len, 2)) return;
    msg.resize((len[0] << 8) | len[1]);
    if (!ReadFull(conn, msg.data(), msg.size())) return;
    std::vector<uint8_t> resp = Answer(o, msg, true);
    if (resp.empty()) continue;
    std::vector<uint8_t> framed = dns::FrameTcp(resp);
    if (!WriteFull(conn, framed.data(), framed.size())) return;
  }
}

// Binds a socket of `type` to (addr, port); -1 on failure.
int Bind(int family, const sockaddr_storage& ss, socklen_t len, int type) {
  const int fd = socket(family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0 ||
      (type == SOCK_STREAM && listen(fd, 16) != 0)) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseArgs(argc, argv);
  sockaddr_storage ss = {};
  socklen_t len = 0;
  int family = AF_INET;
  auto* in = reinterpret_cast<sockaddr_in*>(&ss);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, o.bind.c_str(), &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, o.bind.c_str(), &in6->sin6_addr) == 1) {
    family = in6->sin6_family = AF_INET6;
    len = sizeof(sockaddr_in6);
  } else {
    Usage("bad --bind");
  }

  struct sigaction sa = {};
  sa.sa_handler = OnSignal;  // no SA_RESTART: poll returns EINTR
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  // UDP first (port 0: the kernel's pick), then TCP on the same port; with
  // port 0 a taken TCP port means another try (bounded).
  int udp = -1, tcp = -1;
  uint16_t port = o.port;
  for (int attempt = 0; attempt < 20 && tcp < 0; ++attempt) {
    if (family == AF_INET) {
      in->sin_port = htons(o.port);
    } else {
      in6->sin6_port = htons(o.port);
    }
    udp = Bind(family, ss, len, SOCK_DGRAM);
    if (udp < 0) {
      perror("dns_stub_server: udp bind");
      return 1;
    }
    sockaddr_storage got = {};
    socklen_t got_len = sizeof(got);
    getsockname(udp, reinterpret_cast<sockaddr*>(&got), &got_len);
    port = ntohs(family == AF_INET
                     ? reinterpret_cast<sockaddr_in*>(&got)->sin_port
                     : reinterpret_cast<sockaddr_in6*>(&got)->sin6_port);
    if (family == AF_INET) {
      in->sin_port = htons(port);
    } else {
      in6->sin6_port = htons(port);
    }
    tcp = Bind(family, ss, len, SOCK_STREAM);
    if (tcp < 0) {
      close(udp);
      udp = -1;
      if (o.port != 0) {
        perror("dns_stub_server: tcp bind");
        return 1;
      }
    }
  }
  if (tcp < 0) {
    fprintf(stderr, "dns_stub_server: no port free for both UDP and TCP\n");
    return 1;
  }
  if (!o.port_file.empty()) {
    const std::string tmp = o.port_file + ".tmp";
    FILE* f = fopen(tmp.c_str(), "w");
    if (f == nullptr || fprintf(f, "%u\n", port) < 0 || fclose(f) != 0 ||
        rename(tmp.c_str(), o.port_file.c_str()) != 0) {
      perror("dns_stub_server: --port-file");
      return 1;
    }
  }
  printf("listening on %s:%u\n", o.bind.c_str(), port);
  fflush(stdout);

  std::vector<uint8_t> buf(65536);
  while (!g_stop) {
    pollfd fds[2] = {{udp, POLLIN, 0}, {tcp, POLLIN, 0}};
    const int r = poll(fds, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      perror("dns_stub_server: poll");
      return 1;
    }
    if (fds[0].revents & POLLIN) {
      sockaddr_storage from = {};
      socklen_t from_len = sizeof(from);
      const ssize_t n = recvfrom(udp, buf.data(), buf.size(), 0,
                                 reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n >= 0) {
        std::vector<uint8_t> resp =
            Answer(o, {buf.data(), static_cast<size_t>(n)}, false);
        if (!resp.empty()) {
          sendto(udp, resp.data(), resp.size(), 0,
                 reinterpret_cast<sockaddr*>(&from), from_len);
        }
      }
    }
    if (fds[1].revents & POLLIN) {
      const int conn = accept4(tcp, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn >= 0) {
        ServeTcp(o, conn);
        close(conn);
      }
    }
  }
  return 0;
}
