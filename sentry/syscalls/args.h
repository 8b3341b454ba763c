// Typed syscall arguments.
//
// Handlers take typed parameters instead of raw registers:
//
//   KResult<uint64_t> Read(Task& t, Fd fd, UserAddr buf, uint64_t count);
//
// and the table decodes each register with ArgTraits<T>::Decode. Guest
// memory is reached through typed copies: UserPtr<T> for a fixed-size
// struct or scalar (At() for one of its fields), UserArray<T> for an array
// whose length is another argument, UserCString for a string. The raw
// Task::CopyIn/CopyOut (partial copies of bytes) are for the byte-buffer
// paths only: read/write data, readlink/getcwd/xattr values, socket
// addresses and control data, the bytes of a versioned struct's tail.
// ArgTraits<T>::Format renders an argument for --strace, so strace
// decoding follows from the types.
#ifndef SENTRY_SYSCALLS_ARGS_H_
#define SENTRY_SYSCALLS_ARGS_H_

#include <stdint.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "sentry/abi/linux.h"
#include "sentry/base/result.h"
#include "sentry/kernel/syscall_dispatcher.h"
#include "sentry/kernel/task.h"

namespace sandbox::syscalls {

using kernel::SyscallArgs;
using kernel::Task;

// The result of every handler: the value for rax, or an Errno.
using SyscallResult = KResult<uint64_t>;

// A file descriptor number (the low 32 bits, signed, as Linux reads it).
struct Fd {
  int32_t fd;
};

// An address in the guest, not dereferenced by the handler itself.
struct UserAddr {
  uint64_t addr;
  bool null() const { return addr == 0; }
};

// A guest pointer to a T: copy-in/copy-out of exactly sizeof(T) bytes (all
// of them or EFAULT). T is a struct of sentry/abi (the kernel's layout) or
// a scalar.
template <typename T>
struct UserPtr {
  static_assert(std::is_trivially_copyable_v<T>);
  uint64_t addr;
  bool null() const { return addr == 0; }
  KResult<T> CopyIn(Task& t) const { return t.CopyInObj<T>(addr); }
  KResult<void> CopyOut(Task& t, const T& v) const {
    return t.CopyOutObj<T>(addr, v);
  }
  // The first `n` bytes of the T (a versioned struct whose caller passes
  // a shorter size: clone3, openat2); the rest of `*v` is left as it was.
  KResult<void> CopyInPrefix(Task& t, T* v, size_t n) const {
    return t.CopyInFull(addr, v, std::min(n, sizeof(T)));
  }
  // The field `f` of the guest's T: ptr.At(&abi::Siginfo::si_code).
  template <typename F, typename U = T,
            typename = std::enable_if_t<std::is_class_v<U>>>
  UserPtr<F> At(F U::*f) const {
    static_assert(std::is_standard_layout_v<U>);
    static const U probe{};
    return UserPtr<F>{addr + static_cast<uint64_t>(
                                 reinterpret_cast<const char*>(&(probe.*f)) -
                                 reinterpret_cast<const char*>(&probe))};
  }
};

// A guest array of T whose length another argument gives: copies of `n`
// elements (all of them or EFAULT), or one element through operator[].
// The caller bounds n (the byte count must not overflow).
template <typename T>
struct UserArray {
  static_assert(std::is_trivially_copyable_v<T>);
  uint64_t addr;
  bool null() const { return addr == 0; }
  UserPtr<T> operator[](size_t i) const {
    return UserPtr<T>{addr + i * sizeof(T)};
  }
  // The array from element `i` on.
  UserArray<T> From(size_t i) const {
    return UserArray<T>{addr + i * sizeof(T)};
  }
  KResult<void> CopyIn(Task& t, T* v, size_t n) const {
    return t.CopyInFull(addr, v, n * sizeof(T));
  }
  KResult<void> CopyOut(Task& t, const T* v, size_t n) const {
    return t.CopyOutFull(addr, v, n * sizeof(T));
  }
  KResult<std::vector<T>> CopyIn(Task& t, size_t n) const {
    std::vector<T> v(n);
    TRY_VOID(CopyIn(t, v.data(), n));
    return v;
  }
};

// A NUL-terminated guest string.
struct UserCString {
  uint64_t addr;
  // ENAMETOOLONG if longer than max_len, EFAULT on a bad address.
  KResult<std::string> CopyIn(Task& t, size_t max_len = abi::kPathMax) const {
    return t.CopyInString(addr, max_len);
  }
};

// An input buffer whose length is the next argument (write, pwrite64):
// strace shows its start.
struct UserInBuf {
  uint64_t addr;
};

// A socket address whose length is the next argument (bind, connect,
// sendto): strace shows its family and address.
struct UserSockAddr {
  uint64_t addr;
  bool null() const { return addr == 0; }
};

// A struct msghdr to send (sendmsg): strace shows its name, iovlen,
// controllen, the control messages' headers and flags.
struct UserMsghdr {
  uint64_t addr;
};

// A struct msghdr to receive into (recvmsg): strace shows the lengths
// only (the name and control buffers are outputs).
struct UserRecvMsghdr {
  uint64_t addr;
};

// socket(2)'s domain and type: strace shows AF_UNIX, SOCK_STREAM|...
struct SockDomain {
  int32_t v;
};
struct SockType {
  int32_t v;
};

// Flag words: strace shows them in hex.
struct Flags {
  uint64_t v;
};

template <typename T, typename = void>
struct ArgTraits;

template <typename T>
struct ArgTraits<T, std::enable_if_t<std::is_integral_v<T>>> {
  static T Decode(uint64_t v) { return static_cast<T>(v); }
  static std::string Format(Task&, const SyscallArgs& a, int i);
};

template <>
struct ArgTraits<Fd> {
  static Fd Decode(uint64_t v) { return Fd{static_cast<int32_t>(v)}; }
  static std::string Format(Task&, const SyscallArgs& a, int i);
};

template <>
struct ArgTraits<UserAddr> {
  static UserAddr Decode(uint64_t v) { return UserAddr{v}; }
  static std::string Format(Task&, const SyscallArgs& a, int i);
};

template <typename T>
struct ArgTraits<UserPtr<T>> {
  static UserPtr<T> Decode(uint64_t v) { return UserPtr<T>{v}; }
  static std::string Format(Task& t, const SyscallArgs& a, int i) {
    return ArgTraits<UserAddr>::Format(t, a, i);
  }
};

template <typename T>
struct ArgTraits<UserArray<T>> {
  static UserArray<T> Decode(uint64_t v) { return UserArray<T>{v}; }
  static std::string Format(Task& t, const SyscallArgs& a, int i) {
    return ArgTraits<UserAddr>::Format(t, a, i);
  }
};

template <>
struct ArgTraits<UserCString> {
  static UserCString Decode(uint64_t v) { return UserCString{v}; }
  static std::string Format(Task& t, const SyscallArgs& a, int i);
};

template <>
struct ArgTraits<UserInBuf> {
  static UserInBuf Decode(uint64_t v) { return UserInBuf{v}; }
  static std::string Format(Task& t, const SyscallArgs& a, int i);
};

template <>
struct ArgTraits<UserSockAddr> {
  static UserSockAddr Decode(uint64_t v) { return UserSockAddr{v}; }
  static std::string Format(Task& t, const SyscallArgs& a, int i);
};

template <>
struct ArgTraits<UserMsghdr> {
  static UserMsghdr Decode(uint64_t v) { return UserMsghdr{v}; }
  static std::string Format(Task& t, const SyscallArgs& a, int i);
};

template <>
struct ArgTraits<UserRecvMsghdr> {
  static UserRecvMsghdr Decode(uint64_t v) { return UserRecvMsghdr{v}; }
  static std::string Format(Task& t, const SyscallArgs& a, int i);
};

template <>
struct ArgTraits<SockDomain> {
  static SockDomain Decode(uint64_t v) {
    return SockDomain{static_cast<int32_t>(v)};
  }
  static std::string Format(Task&, const SyscallArgs& a, int i);
};

template <>
struct ArgTraits<SockType> {
  static SockType Decode(uint64_t v) {
    return SockType{static_cast<int32_t>(v)};
  }
  static std::string Format(Task&, const SyscallArgs& a, int i);
};

// A socket address as strace shows it ({sa_family=AF_UNIX,
// sun_path="/x"}, abstract names with a leading '@'; {sa_family=AF_INET,
// sin_port=htons(80), sin_addr=inet_addr("127.0.0.1")}; {sa_family=
// AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), inet_pton(
// AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}).
std::string FormatSockAddr(const uint8_t* p, size_t len);

template <>
struct ArgTraits<Flags> {
  static Flags Decode(uint64_t v) { return Flags{v}; }
  static std::string Format(Task&, const SyscallArgs& a, int i);
};

// Renders an integer argument (signed types as signed).
std::string FormatInteger(uint64_t v, bool is_signed, size_t size);

template <typename T>
std::string ArgTraits<T, std::enable_if_t<std::is_integral_v<T>>>::Format(
    Task&, const SyscallArgs& a, int i) {
  return FormatInteger(a.v[i], std::is_signed_v<T>, sizeof(T));
}

}  // namespace sandbox::syscalls

#endif  // SENTRY_SYSCALLS_ARGS_H_
