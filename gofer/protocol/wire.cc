#include "gofer/protocol/wire.h"

namespace gofer {

uint64_t Reader::Le(size_t n) {
  if (!ok_ || data_.size() - pos_ < n) {
    ok_ = false;
    return 0;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i]))
         << (8 * i);
  }
  pos_ += n;
  return v;
}

std::string Reader::Str(size_t max_len) {
  uint32_t len = U32();
  if (!ok_ || len > max_len || data_.size() - pos_ < len) {
    ok_ = false;
    return {};
  }
  std::string s(data_.substr(pos_, len));
  pos_ += len;
  return s;
}

uint32_t Reader::Count(size_t max, size_t min_item_size) {
  uint32_t n = U32();
  if (!ok_ || n > max ||
      (min_item_size != 0 && (data_.size() - pos_) / min_item_size < n)) {
    ok_ = false;
    return 0;
  }
  return n;
}

}  // namespace gofer
