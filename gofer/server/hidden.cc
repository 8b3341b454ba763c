#include "gofer/server/hidden.h"

#include <utility>

namespace gofer {

void Hidden::Add(uint64_t parent_dev, uint64_t parent_ino,
                 const std::string& name, bool has_self, uint64_t dev,
                 uint64_t ino, std::shared_ptr<const StandIn> stand_in) {
  if (has_self) by_id_.try_emplace({dev, ino}, stand_in);
  by_name_.try_emplace({parent_dev, parent_ino, name}, std::move(stand_in));
}

const StandIn* Hidden::Find(uint64_t dir_dev, uint64_t dir_ino,
                            const std::string& name,
                            const struct stat* st) const {
  if (by_name_.empty() && fallback_ == nullptr) return nullptr;
  auto n = by_name_.find(std::make_tuple(dir_dev, dir_ino, name));
  if (n != by_name_.end()) return n->second.get();
  if (st != nullptr) {
    auto i = by_id_.find(std::make_pair(static_cast<uint64_t>(st->st_dev),
                                        static_cast<uint64_t>(st->st_ino)));
    return i == by_id_.end() ? nullptr : i->second.get();
  }
  return fallback_.get();
}

bool Hidden::HidesName(uint64_t dir_dev, uint64_t dir_ino,
                       const std::string& name) const {
  return by_name_.contains(std::make_tuple(dir_dev, dir_ino, name));
}

}  // namespace gofer
