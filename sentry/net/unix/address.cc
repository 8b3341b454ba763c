#include "sentry/net/unix/address.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <algorithm>

namespace sandbox::net::unix {

KResult<Name> ParseName(const SockAddr& addr) {
  if (addr.len <= kSunPathOffset || addr.len > kSockaddrUnLen) return kEINVAL;
  if (addr.family() != AF_UNIX) return kEINVAL;
  const char* path = reinterpret_cast<const char*>(addr.bytes) + kSunPathOffset;
  size_t max = addr.len - kSunPathOffset;
  Name n;
  if (path[0] != '\0') {
    n.bytes.assign(path, strnlen(path, max));
    n.len = kSunPathOffset + static_cast<uint32_t>(n.bytes.size()) + 1;
  } else {
    n.abstract = true;
    n.bytes.assign(path, max);
    n.len = addr.len;
  }
  return n;
}

bool IsAutobindRequest(const SockAddr& addr) {
  return addr.len == kSunPathOffset && addr.family() == AF_UNIX;
}

Name AutobindName(uint32_t n) {
  char buf[8];
  snprintf(buf, sizeof(buf), "%05x", n & 0xfffff);
  Name name;
  name.abstract = true;
  name.bytes.assign(1, '\0');
  name.bytes.append(buf, 5);
  name.len = kAutobindLen;
  return name;
}

SockAddr Address::ToSockAddr() const {
  SockAddr a;
  uint16_t family = AF_UNIX;
  memcpy(a.bytes, &family, sizeof(family));
  // A path's trailing NUL is part of the length (and already zero); a
  // 108-byte path reports 111 bytes, the last one the NUL past sun_path.
  size_t n = std::min<size_t>(name.bytes.size(), SockAddr::kMaxLen - 2);
  memcpy(a.bytes + kSunPathOffset, name.bytes.data(), n);
  a.len = std::min<uint32_t>(name.len, SockAddr::kMaxLen);
  return a;
}

std::string Address::ProcName() const {
  if (!name.abstract) return name.bytes;
  std::string out = "@";
  for (size_t i = 1; i < name.bytes.size(); ++i) {
    out.push_back(name.bytes[i] == '\0' ? '@' : name.bytes[i]);
  }
  return out;
}

SockAddr UnnamedSockAddr() {
  SockAddr a;
  uint16_t family = AF_UNIX;
  memcpy(a.bytes, &family, sizeof(family));
  a.len = kSunPathOffset;
  return a;
}

}  // namespace sandbox::net::unix
