// What the Gofer does not serve: the host's mount points below a served
// root (and, for the host's "/", its /tmp and /run). Each such entry is
// served as an empty stand-in of the Gofer's own (an empty directory, or an
// empty file for a file mount point, on a read-only tmpfs made at
// confinement), so the sandbox finds nothing there to uncover: neither the
// host mount's contents nor the directory it covers on the host's root file
// system.
//
// An entry is recognised at walk time (WalkOne) by:
// - its name in its parent directory, by the parent's (dev, ino);
// - its own (dev, ino) as opened (the covered directory, if a rename moved
//   it under another name);
// - a mount boundary met by the walk (openat2 RESOLVE_NO_XDEV gives EXDEV:
//   a mount in the Gofer's own tree, e.g. one locked by a user namespace),
//   which gets the shared `fallback` stand-in when it has no own one.
// Built once before the connections start, read-only afterwards (shared by
// every connection's thread without a lock).
#ifndef GOFER_SERVER_HIDDEN_H_
#define GOFER_SERVER_HIDDEN_H_

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "gofer/protocol/unique_fd.h"

namespace gofer {

// An empty file or directory served in place of a hidden entry: its O_PATH
// fd, and its parent directory's fd and its name there (for the verified
// re-open of a file: ReopenNode).
struct StandIn {
  std::shared_ptr<const UniqueFd> fd;
  std::shared_ptr<const UniqueFd> parent_fd;
  std::string name;
};

class Hidden {
 public:
  // Hides `name` in the directory (parent_dev, parent_ino) and, if
  // has_self, the file (dev, ino) wherever it is met.
  void Add(uint64_t parent_dev, uint64_t parent_ino, const std::string& name,
           bool has_self, uint64_t dev, uint64_t ino,
           std::shared_ptr<const StandIn> stand_in);
  void set_fallback(std::shared_ptr<const StandIn> s) {
    fallback_ = std::move(s);
  }

  // The stand-in for `name` in directory (dir_dev, dir_ino); `st` is the
  // walked entry's lstat, or null when the walk met a mount boundary
  // (then the fallback if nothing else matches). Null: serve it as is.
  const StandIn* Find(uint64_t dir_dev, uint64_t dir_ino,
                      const std::string& name, const struct stat* st) const;
  // Whether `name` in (dir_dev, dir_ino) is a hidden entry by name (rename,
  // unlink and link of it are EBUSY, as of a mount point).
  bool HidesName(uint64_t dir_dev, uint64_t dir_ino,
                 const std::string& name) const;
  size_t size() const { return by_name_.size(); }

 private:
  absl::flat_hash_map<std::tuple<uint64_t, uint64_t, std::string>,
                      std::shared_ptr<const StandIn>>
      by_name_;
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>,
                      std::shared_ptr<const StandIn>>
      by_id_;
  std::shared_ptr<const StandIn> fallback_;
};

}  // namespace gofer

#endif  // GOFER_SERVER_HIDDEN_H_
