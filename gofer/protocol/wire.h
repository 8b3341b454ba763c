// Little-endian field encoding with bounded lengths.
//
// Writer appends fields to a byte string. Reader consumes fields from an
// untrusted byte span: every read is bounds-checked, and after the first
// failure the reader stays failed (ok() == false) and returns zeros, so a
// decoder can read all fields and check ok() once at the end.
#ifndef GOFER_PROTOCOL_WIRE_H_
#define GOFER_PROTOCOL_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gofer {

class Writer {
 public:
  void U8(uint8_t v) { buf_.push_back(static_cast<char>(v)); }
  void U16(uint16_t v) { Le(v, 2); }
  void U32(uint32_t v) { Le(v, 4); }
  void U64(uint64_t v) { Le(v, 8); }
  void I64(int64_t v) { Le(static_cast<uint64_t>(v), 8); }
  // A u32 length followed by the bytes.
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    buf_.append(s);
  }

  const std::string& data() const { return buf_; }
  std::string Take() { return std::move(buf_); }

 private:
  // One append per field (not one push_back per byte).
  void Le(uint64_t v, int n) {
    char b[8];
    for (int i = 0; i < n; ++i) b[i] = static_cast<char>(v >> (8 * i));
    buf_.append(b, n);
  }
  std::string buf_;
};

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  uint8_t U8() { return static_cast<uint8_t>(Le(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Le(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Le(4)); }
  uint64_t U64() { return Le(8); }
  int64_t I64() { return static_cast<int64_t>(Le(8)); }
  // A string of at most max_len bytes; longer fails the reader.
  std::string Str(size_t max_len);
  // A count that must be <= max and for which at least count*min_item_size
  // bytes remain (so a hostile count cannot make the decoder allocate).
  uint32_t Count(size_t max, size_t min_item_size);

  void Fail() { ok_ = false; }
  bool ok() const { return ok_; }
  // True when every byte was consumed and no read failed.
  bool Done() const { return ok_ && pos_ == data_.size(); }
  size_t remaining() const { return ok_ ? data_.size() - pos_ : 0; }

 private:
  uint64_t Le(size_t n);
  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace gofer

#endif  // GOFER_PROTOCOL_WIRE_H_
