#include "sentry/syscalls/args.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sandbox::syscalls {
namespace {

// strace shows at most this many bytes of a string or buffer.
constexpr size_t kStraceMaxBytes = 64;

std::string Quote(const std::string& s, bool truncated) {
  return absl::StrFormat("\"%s\"%s", absl::CHexEscape(s),
                         truncated ? "..." : "");
}

}  // namespace

std::string FormatInteger(uint64_t v, bool is_signed, size_t size) {
  if (size == 4) {
    return is_signed ? absl::StrCat(static_cast<int32_t>(v))
                     : absl::StrCat(static_cast<uint32_t>(v));
  }
  return is_signed ? absl::StrCat(static_cast<int64_t>(v)) : absl::StrCat(v);
}

std::string ArgTraits<Fd>::Format(Task&, const SyscallArgs& a, int i) {
  int32_t fd = static_cast<int32_t>(a.v[i]);
  if (fd == -100) return "AT_FDCWD";
  return absl::StrCat(fd);
}

std::string ArgTraits<UserAddr>::Format(Task&, const SyscallArgs& a, int i) {
  if (a.v[i] == 0) return "NULL";
  return absl::StrFormat("%#x", a.v[i]);
}

std::string ArgTraits<Flags>::Format(Task&, const SyscallArgs& a, int i) {
  return absl::StrFormat("%#x", a.v[i]);
}

std::string ArgTraits<UserCString>::Format(Task& t, const SyscallArgs& a,
                                           int i) {
  if (a.v[i] == 0) return "NULL";
  KResult<std::string> s = t.CopyInString(a.v[i], abi::kPathMax);
  if (!s.ok()) {
    return absl::StrFormat("%#x (%s)", a.v[i], s.error().name());
  }
  bool truncated = s.value().size() > kStraceMaxBytes;
  if (truncated) s.value().resize(kStraceMaxBytes);
  return Quote(s.value(), truncated);
}

std::string ArgTraits<UserInBuf>::Format(Task& t, const SyscallArgs& a, int i) {
  if (a.v[i] == 0) return "NULL";
  size_t len = i + 1 < 6 ? a.v[i + 1] : 0;
  size_t n = std::min(len, kStraceMaxBytes);
  std::string buf(n, '\0');
  KResult<size_t> got = t.CopyIn(a.v[i], buf.data(), n);
  if (!got.ok()) return absl::StrFormat("%#x (%s)", a.v[i], got.error().name());
  buf.resize(got.value());
  return Quote(buf, len > buf.size());
}

std::string FormatSockAddr(const uint8_t* p, size_t len) {
  if (len < sizeof(sa_family_t)) return absl::StrFormat("{len=%u}", len);
  sa_family_t fam;
  memcpy(&fam, p, sizeof(fam));
  const uint8_t* d = p + sizeof(fam);
  const size_t n = len - sizeof(fam);
  switch (fam) {
    case AF_UNSPEC:
      return "{sa_family=AF_UNSPEC}";
    case AF_UNIX: {
      if (n == 0) return "{sa_family=AF_UNIX}";
      const char* c = reinterpret_cast<const char*>(d);
      if (c[0] == '\0') {
        std::string name(c + 1, n - 1);
        bool trunc = name.size() > kStraceMaxBytes;
        if (trunc) name.resize(kStraceMaxBytes);
        return absl::StrFormat("{sa_family=AF_UNIX, sun_path=@%s}",
                               Quote(name, trunc));
      }
      std::string path(c, strnlen(c, n));
      return absl::StrFormat("{sa_family=AF_UNIX, sun_path=%s}",
                             Quote(path, false));
    }
    case AF_INET: {
      // strace's print_inet_addr; a short address shows its raw bytes.
      if (len < sizeof(sockaddr_in)) {
        return absl::StrFormat(
            "{sa_family=AF_INET, sa_data=%s}",
            Quote(std::string(reinterpret_cast<const char*>(d), n), false));
      }
      sockaddr_in in = {};
      memcpy(&in, p, sizeof(in));
      char buf[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &in.sin_addr, buf, sizeof(buf));
      return absl::StrFormat(
          "{sa_family=AF_INET, sin_port=htons(%u), "
          "sin_addr=inet_addr(\"%s\")}",
          ntohs(in.sin_port), buf);
    }
    case AF_INET6: {
      // strace's print_sockaddr_data_in6: sin6_scope_id only for a full
      // sockaddr_in6 (24 bytes is the RFC 2133 form).
      constexpr size_t kSin6LenRfc2133 = 24;
      if (len < kSin6LenRfc2133) {
        return absl::StrFormat(
            "{sa_family=AF_INET6, sa_data=%s}",
            Quote(std::string(reinterpret_cast<const char*>(d), n), false));
      }
      sockaddr_in6 in6 = {};
      memcpy(&in6, p, std::min(len, sizeof(in6)));
      char buf[INET6_ADDRSTRLEN];
      inet_ntop(AF_INET6, &in6.sin6_addr, buf, sizeof(buf));
      std::string out = absl::StrFormat(
          "{sa_family=AF_INET6, sin6_port=htons(%u), "
          "sin6_flowinfo=htonl(%u), inet_pton(AF_INET6, \"%s\", "
          "&sin6_addr)",
          ntohs(in6.sin6_port), ntohl(in6.sin6_flowinfo), buf);
      if (len >= sizeof(sockaddr_in6)) {
        absl::StrAppendFormat(&out, ", sin6_scope_id=%u", in6.sin6_scope_id);
      }
      return out + "}";
    }
    case AF_NETLINK: {
      struct {
        uint16_t family, pad;
        uint32_t pid, groups;
      } nl = {};
      memcpy(&nl, p, std::min(len, sizeof(nl)));
      return absl::StrFormat(
          "{sa_family=AF_NETLINK, nl_pid=%u, "
          "nl_groups=%#x}",
          nl.pid, nl.groups);
    }
    default:
      return absl::StrFormat("{sa_family=%u}", fam);
  }
}

std::string ArgTraits<UserSockAddr>::Format(Task& t, const SyscallArgs& a,
                                            int i) {
  if (a.v[i] == 0) return "NULL";
  const int32_t len = i + 1 < 6 ? static_cast<int32_t>(a.v[i + 1]) : 0;
  if (len < 0 || len > static_cast<int32_t>(sizeof(sockaddr_storage))) {
    return absl::StrFormat("%#x", a.v[i]);
  }
  uint8_t buf[sizeof(sockaddr_storage)];
  if (!t.CopyInFull(a.v[i], buf, len).ok()) {
    return absl::StrFormat("%#x (EFAULT)", a.v[i]);
  }
  return FormatSockAddr(buf, len);
}

std::string ArgTraits<UserMsghdr>::Format(Task& t, const SyscallArgs& a,
                                          int i) {
  if (a.v[i] == 0) return "NULL";
  struct {
    uint64_t name;
    int32_t namelen, pad;
    uint64_t iov;
    uint64_t iovlen;
    uint64_t control;
    uint64_t controllen;
    int32_t flags;
  } m;
  static_assert(sizeof(m) == sizeof(msghdr));
  if (!t.CopyInFull(a.v[i], &m, sizeof(m)).ok()) {
    return absl::StrFormat("%#x (EFAULT)", a.v[i]);
  }
  std::string name = "NULL";
  if (m.name != 0 && m.namelen > 0 &&
      m.namelen <= static_cast<int32_t>(sizeof(sockaddr_storage))) {
    uint8_t buf[sizeof(sockaddr_storage)];
    name = t.CopyInFull(m.name, buf, m.namelen).ok()
               ? FormatSockAddr(buf, m.namelen)
               : absl::StrFormat("%#x", m.name);
  } else if (m.name != 0) {
    name = absl::StrFormat("%#x", m.name);
  }
  // The control messages' headers (the first few), as strace lists them.
  std::string cmsgs;
  if (m.control != 0 && m.controllen >= 16) {
    uint8_t ctl[256];
    const size_t n = std::min<uint64_t>(m.controllen, sizeof(ctl));
    if (t.CopyInFull(m.control, ctl, n).ok()) {
      cmsgs = ", msg_control=[";
      size_t off = 0;
      for (int i = 0; i < 4 && off + 16 <= n; ++i) {
        uint64_t len;
        int32_t level, type;
        memcpy(&len, ctl + off, 8);
        memcpy(&level, ctl + off + 8, 4);
        memcpy(&type, ctl + off + 12, 4);
        const char* tn =
            level == SOL_SOCKET && type == SCM_RIGHTS        ? "SCM_RIGHTS"
            : level == SOL_SOCKET && type == SCM_CREDENTIALS ? "SCM_CREDENTIALS"
                                                             : nullptr;
        absl::StrAppend(
            &cmsgs, i ? ", " : "", "{cmsg_len=", len, ", cmsg_level=", level,
            ", cmsg_type=", tn != nullptr ? tn : absl::StrCat(type), "}");
        if (len < 16 || len > m.controllen - off) break;
        off += (len + 7) & ~uint64_t{7};
      }
      cmsgs += "]";
    }
  }
  return absl::StrFormat(
      "{msg_name=%s, msg_namelen=%d, msg_iovlen=%u, msg_controllen=%u%s, "
      "msg_flags=%#x}",
      name, m.namelen, m.iovlen, m.controllen, cmsgs, m.flags);
}

std::string ArgTraits<UserRecvMsghdr>::Format(Task& t, const SyscallArgs& a,
                                              int i) {
  if (a.v[i] == 0) return "NULL";
  msghdr m;
  if (!t.CopyInFull(a.v[i], &m, sizeof(m)).ok()) {
    return absl::StrFormat("%#x (EFAULT)", a.v[i]);
  }
  return absl::StrFormat(
      "{msg_namelen=%d, msg_iovlen=%u, msg_controllen=%u, msg_flags=%#x}",
      static_cast<int32_t>(m.msg_namelen), m.msg_iovlen, m.msg_controllen,
      m.msg_flags);
}

std::string ArgTraits<SockDomain>::Format(Task&, const SyscallArgs& a, int i) {
  const int32_t d = static_cast<int32_t>(a.v[i]);
  switch (d) {
    case AF_UNSPEC:
      return "AF_UNSPEC";
    case AF_UNIX:
      return "AF_UNIX";
    case AF_INET:
      return "AF_INET";
    case AF_INET6:
      return "AF_INET6";
    case AF_NETLINK:
      return "AF_NETLINK";
    case AF_PACKET:
      return "AF_PACKET";
    default:
      return absl::StrCat(d);
  }
}

std::string ArgTraits<SockType>::Format(Task&, const SyscallArgs& a, int i) {
  const int32_t v = static_cast<int32_t>(a.v[i]);
  static constexpr const char* kNames[] = {
      nullptr,    "SOCK_STREAM",    "SOCK_DGRAM", "SOCK_RAW",
      "SOCK_RDM", "SOCK_SEQPACKET", "SOCK_DCCP",  nullptr,
      nullptr,    nullptr,          "SOCK_PACKET"};
  const int base = v & 0xf;
  std::string out = base < 11 && kNames[base] != nullptr
                        ? std::string(kNames[base])
                        : absl::StrCat(base);
  if (v & SOCK_NONBLOCK) out += "|SOCK_NONBLOCK";
  if (v & SOCK_CLOEXEC) out += "|SOCK_CLOEXEC";
  const uint32_t rest = static_cast<uint32_t>(v) & ~uint32_t{0xf} &
                        ~uint32_t{SOCK_NONBLOCK | SOCK_CLOEXEC};
  if (rest != 0) absl::StrAppend(&out, absl::StrFormat("|%#x", rest));
  return out;
}

}  // namespace sandbox::syscalls
