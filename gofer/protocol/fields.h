// Field lists: one declaration of a message's wire layout drives its
// encoder, its decoder and its minimum encoded size.
//
// A message (or a nested struct) declares its fields, in wire order, once:
//
//   struct CreateReq {
//     Handle dir = 0;
//     std::string name;
//     uint32_t flags = 0;
//     uint32_t mode = 0;
//     template <class V> constexpr void Fields(V& v) {
//       v(dir);                         // u64
//       v.Str(name, kMaxNameLen + 1);   // u32 length + bytes, bounded
//       v(flags, mode);                 // u32, u32
//     }
//     bool Valid() const { ... }        // optional: cross-field rules
//   };
//
// V is one of the visitors below. The field kinds:
//   v(x, y, ...)          fields of the kinds below, in order;
//   v(x)                  an integer (u8..u64, i64: by its size), an enum
//                         (as its underlying type), a std::array of bytes,
//                         or a nested struct with its own Fields (and Valid);
//   v.Str(s, max[, min])  a u32 length and that many bytes, min..max long;
//   v.StrList(l, n, max)  a u32 count (at most n) of such strings;
//   v.List(l, n)          a u32 count (at most n) of elements, each v(e);
//   v.Flag(f)             a u8 that must be 0 or 1 (a uint8_t or a bool);
//   v.Optional(f, x)      x, on the wire only when f (a field before it) is
//                         nonzero; decoded as T{} when absent;
//   v.Const<T>(k)         a T that must equal k (a version, reserved bits).
//
// Decoding is hostile-input safe by construction: every read is
// bounds-checked (wire.h's Reader), every string length is checked against
// its bound and the bytes that remain, every count against its bound and
// (with the element's minimum size) against the bytes that remain before
// anything is allocated, and after the first failure the reader stays
// failed. Valid() runs after a struct's fields are read and fails the
// reader when false.
//
// Encoding writes what the fields hold (the decoder then refuses what is
// out of bounds), or, with FieldWriter<kCutToBounds>, cuts strings and
// lists to their bounds so that the result always decodes.
#ifndef GOFER_PROTOCOL_FIELDS_H_
#define GOFER_PROTOCOL_FIELDS_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "gofer/protocol/wire.h"

namespace gofer {
namespace fields_internal {

template <class T>
struct IsByteArray : std::false_type {};
template <size_t N>
struct IsByteArray<std::array<uint8_t, N>> : std::true_type {};

template <class T>
concept HasValid = requires(const T& t) {
  { t.Valid() } -> std::same_as<bool>;
};

template <class T>
using Unsigned = std::make_unsigned_t<T>;

}  // namespace fields_internal

// Whether strings and lists longer than their bounds are cut when encoded.
enum class Bounds { kAsIs, kCutToBounds };

template <Bounds kBounds = Bounds::kAsIs>
class FieldWriter {
 public:
  explicit FieldWriter(Writer& w) : w_(w) {}

  // The fields, in order.
  template <class... T>
  void operator()(const T&... x) {
    (One(x), ...);
  }
  template <class T>
  void One(const T& x) {
    if constexpr (std::is_enum_v<T>) {
      One(static_cast<std::underlying_type_t<T>>(x));
    } else if constexpr (std::is_integral_v<T>) {
      static_assert(!std::is_same_v<T, bool>, "a bool is a Flag");
      PutInt(static_cast<fields_internal::Unsigned<T>>(x));
    } else if constexpr (fields_internal::IsByteArray<T>::value) {
      for (uint8_t b : x) w_.U8(b);
    } else {
      // Fields() only reads through a FieldWriter.
      const_cast<T&>(x).Fields(*this);
    }
  }
  void Str(const std::string& s, size_t max, size_t /*min*/ = 0) {
    std::string_view v(s);
    w_.Str(kBounds == Bounds::kCutToBounds ? v.substr(0, max) : v);
  }
  void StrList(const std::vector<std::string>& l, size_t max_count,
               size_t max_len) {
    const size_t n = Count(l.size(), max_count);
    for (size_t i = 0; i < n; ++i) Str(l[i], max_len);
  }
  template <class E>
  void List(const std::vector<E>& l, size_t max_count) {
    const size_t n = Count(l.size(), max_count);
    for (size_t i = 0; i < n; ++i) One(l[i]);
  }
  template <class F>
  void Flag(const F& f) {
    w_.U8(static_cast<uint8_t>(f));
  }
  template <class F, class T>
  void Optional(const F& present, const T& x) {
    if (present) One(x);
  }
  template <class T>
  void Const(T k) {
    One(k);
  }

 private:
  template <class U>
  void PutInt(U v) {
    if constexpr (sizeof(U) == 1) {
      w_.U8(v);
    } else if constexpr (sizeof(U) == 2) {
      w_.U16(v);
    } else if constexpr (sizeof(U) == 4) {
      w_.U32(v);
    } else {
      static_assert(sizeof(U) == 8);
      w_.U64(v);
    }
  }
  // Writes the count of a list of `size` elements; returns how many of
  // them to write.
  size_t Count(size_t size, size_t max_count) {
    const size_t n =
        kBounds == Bounds::kCutToBounds ? std::min(size, max_count) : size;
    w_.U32(static_cast<uint32_t>(n));
    return n;
  }

  Writer& w_;
};

// The smallest encoding of a struct (what Reader::Count needs to refuse a
// count the remaining bytes cannot hold).
class FieldSizer {
 public:
  template <class... T>
  constexpr void operator()(T&... x) {
    (One(x), ...);
  }
  template <class T>
  constexpr void One(T& x) {
    if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
      size += sizeof(T);
    } else if constexpr (fields_internal::IsByteArray<T>::value) {
      size += x.size();
    } else {
      x.Fields(*this);
    }
  }
  constexpr void Str(std::string&, size_t, size_t min = 0) { size += 4 + min; }
  template <class L, class... Args>
  constexpr void StrList(L&, Args...) {
    size += 4;
  }
  template <class L>
  constexpr void List(L&, size_t) {
    size += 4;
  }
  template <class F>
  constexpr void Flag(F&) {
    size += 1;
  }
  template <class F, class T>
  constexpr void Optional(F&, T&) {}
  template <class T>
  constexpr void Const(T) {
    size += sizeof(T);
  }

  size_t size = 0;
};

// (Usable in constant expressions for structs without strings.)
template <class T>
constexpr size_t MinWireSize() {
  T t{};
  FieldSizer s;
  s(t);
  return s.size;
}

class FieldReader {
 public:
  explicit FieldReader(Reader& r) : r_(r) {}

  template <class... T>
  void operator()(T&... x) {
    (One(x), ...);
  }
  template <class T>
  void One(T& x) {
    if constexpr (std::is_enum_v<T>) {
      std::underlying_type_t<T> u;
      One(u);
      x = static_cast<T>(u);  // In range or not: Valid() checks.
    } else if constexpr (std::is_integral_v<T>) {
      static_assert(!std::is_same_v<T, bool>, "a bool is a Flag");
      x = static_cast<T>(GetInt<fields_internal::Unsigned<T>>());
    } else if constexpr (fields_internal::IsByteArray<T>::value) {
      for (uint8_t& b : x) b = r_.U8();
    } else {
      x.Fields(*this);
      if constexpr (fields_internal::HasValid<T>) {
        if (r_.ok() && !x.Valid()) r_.Fail();
      }
    }
  }
  void Str(std::string& s, size_t max, size_t min = 0) {
    s = r_.Str(max);
    if (s.size() < min) r_.Fail();
  }
  void StrList(std::vector<std::string>& l, size_t max_count, size_t max_len) {
    const uint32_t n = r_.Count(max_count, 4);
    l.clear();
    l.reserve(n);
    for (uint32_t i = 0; i < n && r_.ok(); ++i) l.push_back(r_.Str(max_len));
  }
  // The count is checked against the bytes left before the reserve.
  template <class E>
  void List(std::vector<E>& l, size_t max_count) {
    // Computed once at run time: clang's libstdc++ has no constexpr
    // std::string, which element structs may hold.
    static const size_t kMinSize = MinWireSize<E>();
    const uint32_t n = r_.Count(max_count, kMinSize);
    l.clear();
    l.reserve(n);
    for (uint32_t i = 0; i < n && r_.ok(); ++i) One(l.emplace_back());
  }
  template <class F>
  void Flag(F& f) {
    const uint8_t v = r_.U8();
    if (v > 1) r_.Fail();
    f = static_cast<F>(v == 1);
  }
  template <class F, class T>
  void Optional(const F& present, T& x) {
    if (present) {
      One(x);
    } else {
      x = T{};
    }
  }
  template <class T>
  void Const(T k) {
    T v{};
    One(v);
    if (v != k) r_.Fail();
  }

 private:
  template <class U>
  U GetInt() {
    if constexpr (sizeof(U) == 1) {
      return r_.U8();
    } else if constexpr (sizeof(U) == 2) {
      return r_.U16();
    } else if constexpr (sizeof(U) == 4) {
      return r_.U32();
    } else {
      static_assert(sizeof(U) == 8);
      return r_.U64();
    }
  }

  Reader& r_;
};

// A type with a field list.
template <class T>
concept HasFields = requires(T& t, FieldReader& v) {
  t.Fields(v);
};

// Appends msg's fields to w.
template <HasFields T, Bounds kBounds = Bounds::kAsIs>
void EncodeFields(Writer& w, const T& msg) {
  FieldWriter<kBounds> v(w);
  v(msg);
}

// Reads msg's fields from r (check r.ok() or r.Done() after).
template <HasFields T>
void DecodeFields(Reader& r, T* msg) {
  FieldReader v(r);
  v(*msg);
}

}  // namespace gofer

#endif  // GOFER_PROTOCOL_FIELDS_H_
