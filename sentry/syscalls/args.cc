#include "sentry/syscalls/args.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"

namespace sandbox::syscalls {
namespace {

// strace shows at most this many bytes of a string or buffer.
constexpr size_t kStraceMaxBytes = 64;

std::string Quote(const std::string& s, bool truncated) {
  return absl::StrFormat("\"%s\"%s", absl::CHexEscape(s),
                         truncated ? "..." : "");
}

}  // namespace

std::string FormatInteger(uint64_t v, bool is_signed, size_t size) {
  if (size == 4) {
    return is_signed ? absl::StrCat(static_cast<int32_t>(v))
                     : absl::StrCat(static_cast<uint32_t>(v));
  }
  return is_signed ? absl::StrCat(static_cast<int64_t>(v)) : absl::StrCat(v);
}

std::string ArgTraits<Fd>::Format(Task&, const SyscallArgs& a, int i) {
  int32_t fd = static_cast<int32_t>(a.v[i]);
  if (fd == -100) return "AT_FDCWD";
  return absl::StrCat(fd);
}

std::string ArgTraits<UserAddr>::Format(Task&, const SyscallArgs& a, int i) {
  if (a.v[i] == 0) return "NULL";
  return absl::StrFormat("%#x", a.v[i]);
}

std::string ArgTraits<Flags>::Format(Task&, const SyscallArgs& a, int i) {
  return absl::StrFormat("%#x", a.v[i]);
}

std::string ArgTraits<UserCString>::Format(Task& t, const SyscallArgs& a,
                                           int i) {
  if (a.v[i] == 0) return "NULL";
  KResult<std::string> s = t.CopyInString(a.v[i], abi::kPathMax);
  if (!s.ok()) {
    return absl::StrFormat("%#x (%s)", a.v[i], s.error().name());
  }
  bool truncated = s.value().size() > kStraceMaxBytes;
  if (truncated) s.value().resize(kStraceMaxBytes);
  return Quote(s.value(), truncated);
}

std::string ArgTraits<UserInBuf>::Format(Task& t, const SyscallArgs& a, int i) {
  if (a.v[i] == 0) return "NULL";
  size_t len = i + 1 < 6 ? a.v[i + 1] : 0;
  size_t n = std::min(len, kStraceMaxBytes);
  std::string buf(n, '\0');
  KResult<size_t> got = t.CopyIn(a.v[i], buf.data(), n);
  if (!got.ok()) return absl::StrFormat("%#x (%s)", a.v[i], got.error().name());
  buf.resize(got.value());
  return Quote(buf, len > buf.size());
}

}  // namespace sandbox::syscalls
