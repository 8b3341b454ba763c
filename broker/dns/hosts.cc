#include "broker/dns/hosts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>

namespace sandbox::broker::dns {
namespace {

// Largest file Load reads.
constexpr size_t kMaxFile = 16 << 20;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string Key(std::string_view name) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  std::string k(name);
  for (char& c : k) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return k;
}

}  // namespace

HostsFile HostsFile::Parse(std::string_view contents) {
  HostsFile h;
  size_t start = 0;
  while (start < contents.size()) {
    size_t end = contents.find('\n', start);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(start, end - start);
    start = end + 1;
    if (line.size() > kMaxLineLength) continue;
    line = line.substr(0, line.find('#'));
    // Fields separated by blanks.
    std::vector<std::string_view> fields;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && IsSpace(line[i])) ++i;
      const size_t f = i;
      while (i < line.size() && !IsSpace(line[i])) ++i;
      if (i > f) fields.push_back(line.substr(f, i - f));
    }
    if (fields.size() < 2 || fields[0].size() >= INET6_ADDRSTRLEN) continue;
    const std::string text(fields[0]);
    AddressAnswer a;
    if (inet_pton(AF_INET, text.c_str(), a.bytes.data()) == 1) {
      a.v6 = false;
    } else if (inet_pton(AF_INET6, text.c_str(), a.bytes.data()) == 1) {
      a.v6 = true;
    } else {
      continue;
    }
    for (size_t n = 1; n < fields.size(); ++n) {
      std::string key = Key(fields[n]);
      if (key.empty()) continue;
      auto it = h.names_.find(key);
      if (it == h.names_.end()) {
        if (h.names_.size() >= kMaxNames) continue;
        it = h.names_.emplace(std::move(key), std::vector<AddressAnswer>())
                 .first;
      }
      std::vector<AddressAnswer>& addrs = it->second;
      const bool dup =
          std::any_of(addrs.begin(), addrs.end(), [&](const AddressAnswer& b) {
            return b.v6 == a.v6 && b.bytes == a.bytes;
          });
      if (!dup && addrs.size() < kMaxAddressesPerName) addrs.push_back(a);
    }
  }
  return h;
}

HostsFile HostsFile::Load(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return HostsFile();
  std::string contents;
  char buf[8192];
  while (contents.size() <= kMaxFile) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    contents.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return Parse(contents);
}

std::vector<AddressAnswer> HostsFile::Lookup(std::string_view name,
                                             bool v6) const {
  std::vector<AddressAnswer> out;
  auto it = names_.find(Key(name));
  if (it == names_.end()) return out;
  for (const AddressAnswer& a : it->second) {
    if (a.v6 == v6) out.push_back(a);
  }
  return out;
}

bool HostsFile::Contains(std::string_view name) const {
  return names_.contains(Key(name));
}

}  // namespace sandbox::broker::dns
