// A syscall handler as the table holds it: the typed function behind two
// type-erased pointers, one that decodes the registers and calls it, one
// that renders the arguments for --strace.
//
// A family file (file.cc, mm.cc, ...) defines its handlers with typed
// parameters (args.h) and ends with one line per handler:
//
//   SANDBOX_SYSCALL_HANDLER(Read);
//
// which defines `handlers::Read`, the handle that a row of linux64.tbl.inc
// names (FULL(0, read, Read)). The handler itself stays private to its
// file; its parameter types need only be complete there.
#ifndef SENTRY_SYSCALLS_HANDLER_H_
#define SENTRY_SYSCALLS_HANDLER_H_

#include <stddef.h>

#include <array>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_join.h"
#include "sentry/syscalls/args.h"

namespace sandbox::syscalls {

using HandlerFn = SyscallResult (*)(Task&, const SyscallArgs&);
using FormatFn = std::string (*)(Task&, const SyscallArgs&);

struct SyscallHandler {
  HandlerFn fn;
  FormatFn format;
};

namespace internal {

template <typename F>
struct FnTraits;
template <typename... A>
struct FnTraits<SyscallResult (*)(Task&, A...)> {
  using Args = std::tuple<A...>;
  static constexpr size_t kArity = sizeof...(A);
};

template <auto Fn, typename Tuple, size_t... I>
SyscallResult InvokeImpl(Task& t, const SyscallArgs& a,
                         std::index_sequence<I...>) {
  return Fn(t, ArgTraits<std::tuple_element_t<I, Tuple>>::Decode(a.v[I])...);
}

template <auto Fn>
SyscallResult Invoke(Task& t, const SyscallArgs& a) {
  using Tr = FnTraits<decltype(Fn)>;
  static_assert(Tr::kArity <= 6, "syscalls have at most six arguments");
  return InvokeImpl<Fn, typename Tr::Args>(
      t, a, std::make_index_sequence<Tr::kArity>());
}

template <auto Fn, typename Tuple, size_t... I>
std::string FormatImpl(Task& t, const SyscallArgs& a,
                       std::index_sequence<I...>) {
  std::array<std::string, sizeof...(I)> parts = {
      ArgTraits<std::tuple_element_t<I, Tuple>>::Format(t, a, I)...};
  return absl::StrJoin(parts, ", ");
}

template <auto Fn>
std::string Format(Task& t, const SyscallArgs& a) {
  using Tr = FnTraits<decltype(Fn)>;
  return FormatImpl<Fn, typename Tr::Args>(
      t, a, std::make_index_sequence<Tr::kArity>());
}

}  // namespace internal

// The handle of a typed handler `Fn`.
template <auto Fn>
constexpr SyscallHandler MakeHandler() {
  return {&internal::Invoke<Fn>, &internal::Format<Fn>};
}

}  // namespace sandbox::syscalls

// Defines sandbox::syscalls::handlers::fn, the handle of the handler `fn`
// of this file (constant-initialized, so the table may read it at any
// time). Use at namespace sandbox::syscalls scope, after the handler.
#define SANDBOX_SYSCALL_HANDLER(fn)             \
  namespace handlers {                          \
  extern const SyscallHandler fn;               \
  }                                             \
  constinit const SyscallHandler handlers::fn = \
      ::sandbox::syscalls::MakeHandler<&::sandbox::syscalls::fn>()

#endif  // SENTRY_SYSCALLS_HANDLER_H_
