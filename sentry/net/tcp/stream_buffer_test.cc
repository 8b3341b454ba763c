#include "sentry/net/tcp/stream_buffer.h"

#include <string.h>

#include <string>

#include "gtest/gtest.h"

namespace sandbox::net::tcp {
namespace {

void Put(StreamBuffer& b, const std::string& s) {
  size_t off = 0;
  for (absl::Span<uint8_t> r : b.Reserve(s.size())) {
    memcpy(r.data(), s.data() + off, r.size());
    off += r.size();
  }
  b.Commit(s.size());
}

std::string Get(const StreamBuffer& b, size_t off, size_t n) {
  std::string s;
  for (absl::Span<const uint8_t> r : b.Readable(off, n)) {
    s.append(reinterpret_cast<const char*>(r.data()), r.size());
  }
  return s;
}

TEST(StreamBufferTest, AppendReadConsume) {
  StreamBuffer b;
  EXPECT_EQ(b.size(), 0u);
  Put(b, "hello");
  Put(b, " world");
  EXPECT_EQ(b.size(), 11u);
  EXPECT_EQ(Get(b, 0, 100), "hello world");
  EXPECT_EQ(Get(b, 6, 3), "wor");
  b.Consume(6);
  EXPECT_EQ(Get(b, 0, 100), "world");
  EXPECT_EQ(b.head(), 6u);
  EXPECT_EQ(b.tail(), 11u);
  b.Clear();
  EXPECT_EQ(b.size(), 0u);
}

TEST(StreamBufferTest, CrossesBlocksAndFreesThem) {
  StreamBuffer b;
  std::string big(StreamBuffer::kBlockSize * 2 + 100, 0);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 13);
  Put(b, big);
  EXPECT_EQ(b.Readable(0, big.size()).size(), 3u);
  EXPECT_EQ(Get(b, 0, big.size()), big);
  b.Consume(StreamBuffer::kBlockSize + 10);
  EXPECT_EQ(b.allocated(), 2 * StreamBuffer::kBlockSize);
  EXPECT_EQ(Get(b, 0, 5), big.substr(StreamBuffer::kBlockSize + 10, 5));
  b.Clear();
  // The block holding tail stays (a writer may have reserved in it).
  EXPECT_LE(b.allocated(), StreamBuffer::kBlockSize);
  Put(b, "again");
  EXPECT_EQ(Get(b, 0, 10), "again");
}

TEST(StreamBufferTest, ReserveBeforeConsumeKeepsRegionsValid) {
  StreamBuffer b;
  Put(b, std::string(StreamBuffer::kBlockSize - 1, 'a'));
  auto regions = b.Reserve(10);
  ASSERT_EQ(regions.size(), 2u);
  // The reader drains everything committed meanwhile.
  b.Consume(b.size());
  memcpy(regions[0].data(), "x", 1);
  memcpy(regions[1].data(), "yyyyyyyyy", 9);
  b.Commit(10);
  EXPECT_EQ(Get(b, 0, 10), "xyyyyyyyyy");
}

}  // namespace
}  // namespace sandbox::net::tcp
