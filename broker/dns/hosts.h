// An /etc/hosts parser (hosts(5)), for names the host's /etc/hosts lists:
// the broker answers them from the file instead of asking upstream, as
// glibc's "files" NSS source does before "dns".
//
// Format, as glibc's nss_files reads it: one line per address, "ADDRESS
// NAME [ALIAS...]" separated by spaces or tabs; "#" to the end of the line
// is a comment. Lines whose address does not parse (inet_pton, v4 or v6)
// or that have no name are skipped, as glibc skips them. Names compare
// case-insensitively; a trailing dot is ignored.
#ifndef BROKER_DNS_HOSTS_H_
#define BROKER_DNS_HOSTS_H_

#include <stddef.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "broker/dns/message.h"

namespace sandbox::broker::dns {

class HostsFile {
 public:
  // Bounds on what Parse keeps (the file is the host's, but still input).
  static constexpr size_t kMaxLineLength = 4096;
  static constexpr size_t kMaxNames = 65536;
  static constexpr size_t kMaxAddressesPerName = 64;

  HostsFile() = default;
  static HostsFile Parse(std::string_view contents);
  // Reads and parses `path`; an unreadable file is an empty HostsFile.
  static HostsFile Load(const std::string& path);

  // The addresses `name` has in the file, v4 (v6 == false) or v6, in file
  // order, without duplicates. The ttl of each is 0.
  std::vector<AddressAnswer> Lookup(std::string_view name, bool v6) const;
  // Whether the file lists `name` at all (any family).
  bool Contains(std::string_view name) const;
  size_t name_count() const { return names_.size(); }

 private:
  // Lower-case name without a trailing dot -> its addresses.
  absl::flat_hash_map<std::string, std::vector<AddressAnswer>> names_;
};

}  // namespace sandbox::broker::dns

#endif  // BROKER_DNS_HOSTS_H_
