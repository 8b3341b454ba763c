// KResult<T>: a value or an Errno, for every fallible kernel path.
//
//   KResult<size_t> Read(...);
//   TRY(auto n, file->Read(...));      // declares n, returns the Errno on
//   error TRY_VOID(task.mm().CopyOut(...));  // for KResult<void> return
//   kEINVAL;                     // an Errno converts to any KResult
//
// No exceptions: absl::Status stays in set-up and CLI code and is translated
// at the boundary.
#ifndef SENTRY_BASE_RESULT_H_
#define SENTRY_BASE_RESULT_H_

#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

#include "sentry/base/errno.h"

namespace sandbox {

template <typename T>
class [[nodiscard]] KResult {
 public:
  KResult(Errno e) : v_(std::in_place_index<1>, e) {}  // NOLINT: implicit
  template <typename U = T, typename = std::enable_if_t<
                                std::is_constructible_v<T, U&&> &&
                                !std::is_same_v<std::decay_t<U>, Errno> &&
                                !std::is_same_v<std::decay_t<U>, KResult>>>
  KResult(U&& value)  // NOLINT: implicit
      : v_(std::in_place_index<0>, std::forward<U>(value)) {}

  bool ok() const { return v_.index() == 0; }
  Errno error() const {
    assert(!ok());
    return std::get<1>(v_);
  }
  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Errno> v_;
};

template <>
class [[nodiscard]] KResult<void> {
 public:
  KResult() : err_(0) {}
  KResult(Errno e) : err_(e) {}  // NOLINT: implicit

  bool ok() const { return err_.number() == 0; }
  Errno error() const {
    assert(!ok());
    return err_;
  }

 private:
  Errno err_;
};

inline KResult<void> OkResult() { return KResult<void>(); }

}  // namespace sandbox

#define SANDBOX_CONCAT_INNER(a, b) a##b
#define SANDBOX_CONCAT(a, b) SANDBOX_CONCAT_INNER(a, b)

// TRY(decl, expr): evaluates expr (a KResult<T>); on error returns its Errno
// from the enclosing function, else declares/assigns `decl` from the value.
#define TRY(decl, expr) \
  TRY_IMPL(SANDBOX_CONCAT(_kresult_, __LINE__), decl, expr)
#define TRY_IMPL(tmp, decl, expr)    \
  auto tmp = (expr);                 \
  if (!tmp.ok()) return tmp.error(); \
  decl = std::move(tmp).value()

// TRY_VOID(expr): for KResult<void> (or any KResult whose value is unused).
#define TRY_VOID(expr)                                     \
  do {                                                     \
    auto _kresult_void = (expr);                           \
    if (!_kresult_void.ok()) return _kresult_void.error(); \
  } while (0)

#endif  // SENTRY_BASE_RESULT_H_
