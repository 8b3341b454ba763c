// StreamBuffer: the bytes of one direction of a loopback TCP connection
// that the receiver has not read yet (Linux's sk_receive_queue plus the
// sender's write queue, which on loopback are one: data is "acked" when it
// is in here).
//
// The bytes live in fixed blocks (kBlockSize), allocated as data comes in
// and freed as it is read (one block is kept spare, so a steady transfer
// allocates nothing). Positions are absolute stream offsets (64-bit: they
// never wrap), like TCP's sequence numbers: `head` is the next byte to read
// (copied_seq), `tail` the end of the committed data (rcv_nxt).
//
// The two copies of a transfer run without the owner's lock: a writer
// Reserve()s room under the lock, copies into the returned regions without
// it, and Commit()s under it again; a reader takes Readable() regions under
// the lock, copies out without it, and Consume()s under it. This is sound
// because there is one writer and one reader at a time (the owners'
// io mutexes), a reader never looks past `tail`, and Consume frees only
// blocks that lie wholly before `head` (<= tail), so no block a writer has
// reserved is freed under it.
//
// Thread-safety: none of its own; every method is called with the owner's
// mutex held (the copies into and out of the regions are not).
#ifndef SENTRY_NET_TCP_STREAM_BUFFER_H_
#define SENTRY_NET_TCP_STREAM_BUFFER_H_

#include <stddef.h>
#include <stdint.h>

#include <deque>
#include <memory>
#include <vector>

#include "absl/types/span.h"

namespace sandbox::net::tcp {

class StreamBuffer {
 public:
  static constexpr size_t kBlockSize = 64 * 1024;

  StreamBuffer() = default;
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;

  uint64_t head() const { return head_; }
  uint64_t tail() const { return tail_; }
  // Committed bytes not yet read.
  size_t size() const { return static_cast<size_t>(tail_ - head_); }

  // Regions for the next `n` bytes after tail (allocating blocks). At most
  // n / kBlockSize + 2 regions.
  std::vector<absl::Span<uint8_t>> Reserve(size_t n);
  // Makes `n` reserved bytes readable.
  void Commit(size_t n) { tail_ += n; }

  // Regions of the committed bytes [head + off, head + off + n) (clipped to
  // tail).
  std::vector<absl::Span<const uint8_t>> Readable(size_t off, size_t n) const;
  // Drops `n` bytes from the front (n <= size()).
  void Consume(size_t n);
  // Drops every committed byte.
  void Clear() { Consume(size()); }

  // Bytes of memory held (for SO_MEMINFO-like accounting and tests).
  size_t allocated() const { return blocks_.size() * kBlockSize; }

 private:
  uint8_t* At(uint64_t pos) const;

  std::deque<std::unique_ptr<uint8_t[]>> blocks_;
  std::unique_ptr<uint8_t[]> spare_;
  uint64_t base_ = 0;  // stream offset of blocks_.front()'s first byte
  uint64_t head_ = 0;
  uint64_t tail_ = 0;
};

}  // namespace sandbox::net::tcp

#endif  // SENTRY_NET_TCP_STREAM_BUFFER_H_
