#include "sentry/net/tcp/stream_buffer.h"

#include <algorithm>

namespace sandbox::net::tcp {

uint8_t* StreamBuffer::At(uint64_t pos) const {
  const uint64_t rel = pos - base_;
  return blocks_[rel / kBlockSize].get() + rel % kBlockSize;
}

std::vector<absl::Span<uint8_t>> StreamBuffer::Reserve(size_t n) {
  std::vector<absl::Span<uint8_t>> out;
  if (n == 0) return out;
  if (blocks_.empty()) base_ = tail_ - tail_ % kBlockSize;
  const uint64_t end = tail_ + n;
  while (base_ + blocks_.size() * kBlockSize < end) {
    if (spare_ != nullptr) {
      blocks_.push_back(std::move(spare_));
    } else {
      blocks_.push_back(std::unique_ptr<uint8_t[]>(new uint8_t[kBlockSize]));
    }
  }
  uint64_t pos = tail_;
  while (pos < end) {
    const size_t in_block = kBlockSize - (pos - base_) % kBlockSize;
    const size_t len =
        static_cast<size_t>(std::min<uint64_t>(in_block, end - pos));
    out.emplace_back(At(pos), len);
    pos += len;
  }
  return out;
}

std::vector<absl::Span<const uint8_t>> StreamBuffer::Readable(size_t off,
                                                              size_t n) const {
  std::vector<absl::Span<const uint8_t>> out;
  uint64_t pos = head_ + off;
  const uint64_t end = std::min<uint64_t>(tail_, pos + n);
  while (pos < end) {
    const size_t in_block = kBlockSize - (pos - base_) % kBlockSize;
    const size_t len =
        static_cast<size_t>(std::min<uint64_t>(in_block, end - pos));
    out.emplace_back(At(pos), len);
    pos += len;
  }
  return out;
}

void StreamBuffer::Consume(size_t n) {
  head_ += n;
  // Only blocks wholly before head: never one a writer has reserved.
  while (!blocks_.empty() && base_ + kBlockSize <= head_) {
    if (spare_ == nullptr) spare_ = std::move(blocks_.front());
    blocks_.pop_front();
    base_ += kBlockSize;
  }
}

}  // namespace sandbox::net::tcp
