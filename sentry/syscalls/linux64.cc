// The x86-64 Linux table: the rows of linux64.tbl.inc, checked at compile
// time against sentry/abi/syscalls_x86_64.inc.
#include <stddef.h>

#include <array>
#include <memory>

#include "sentry/abi/syscalls.h"
#include "sentry/syscalls/handler.h"
#include "sentry/syscalls/table.h"

namespace sandbox::syscalls {

// The handles the rows name, each defined by its family file's
// SANDBOX_SYSCALL_HANDLER line; and each row's number is abi's.
namespace handlers {
#define SANDBOX_ROW_CHECK(n, name) \
  static_assert(n == abi::nr::name, #name ": not abi's number");
#define FULL(n, name, h)         \
  extern const SyscallHandler h; \
  SANDBOX_ROW_CHECK(n, name)
#define FULL_HEX(n, name, h) FULL(n, name, h)
#define PARTIAL(n, name, h, note) FULL(n, name, h)
#define PARTIAL_HEX(n, name, h, note) FULL(n, name, h)
#define UNSUPPORTED(n, name, error, note) SANDBOX_ROW_CHECK(n, name)
#define MISSING(n, name) SANDBOX_ROW_CHECK(n, name)
#include "sentry/syscalls/linux64.tbl.inc"
#undef FULL
#undef FULL_HEX
#undef PARTIAL
#undef PARTIAL_HEX
#undef UNSUPPORTED
#undef MISSING
#undef SANDBOX_ROW_CHECK
}  // namespace handlers

namespace {

constexpr SyscallEntry Row(int nr, const char* name, Support support,
                           const SyscallHandler* handler, const char* note,
                           bool hex_result) {
  SyscallEntry e;
  e.nr = nr;
  e.name = name;
  e.registered = true;
  e.handler = handler;
  e.support = support;
  e.note = note;
  e.hex_result = hex_result;
  return e;
}

constexpr SyscallEntry UnsupportedRow(int nr, const char* name, Errno error,
                                      const char* note) {
  SyscallEntry e = Row(nr, name, Support::kUnsupported, nullptr, note, false);
  e.error = error;
  return e;
}

constexpr SyscallEntry MissingRow(int nr, const char* name) {
  SyscallEntry e;
  e.nr = nr;
  e.name = name;
  return e;
}

constexpr SyscallEntry kRows[] = {
#define FULL(n, name, h) Row(n, #name, Support::kFull, &handlers::h, "", false),
#define FULL_HEX(n, name, h) \
  Row(n, #name, Support::kFull, &handlers::h, "", true),
#define PARTIAL(n, name, h, note) \
  Row(n, #name, Support::kPartial, &handlers::h, note, false),
#define PARTIAL_HEX(n, name, h, note) \
  Row(n, #name, Support::kPartial, &handlers::h, note, true),
#define UNSUPPORTED(n, name, error, note) UnsupportedRow(n, #name, error, note),
#define MISSING(n, name) MissingRow(n, #name),
#include "sentry/syscalls/linux64.tbl.inc"
#undef FULL
#undef FULL_HEX
#undef PARTIAL
#undef PARTIAL_HEX
#undef UNSUPPORTED
#undef MISSING
};

// How many numbers abi lists.
constexpr size_t kAbiSyscalls = 0
#define X(number, name) +1
#include "sentry/abi/syscalls_x86_64.inc"
#undef X
    ;

constexpr bool InNumberOrder() {
  for (size_t i = 1; i < std::size(kRows); ++i) {
    if (kRows[i - 1].nr >= kRows[i].nr) return false;
  }
  return true;
}

// Each row is abi's number (checked above), the rows ascend, and there are
// as many as abi's numbers: every number has exactly one row.
static_assert(InNumberOrder(),
              "linux64.tbl.inc: rows in number order, one per number");
static_assert(std::size(kRows) == kAbiSyscalls,
              "linux64.tbl.inc: one row for each number of abi");
static_assert(kRows[std::size(kRows) - 1].nr < abi::kMaxSyscall);

}  // namespace

absl::Span<const SyscallEntry> Linux64Rows() { return kRows; }

std::unique_ptr<SyscallTable> SyscallTable::CreateLinux64() {
  return std::make_unique<SyscallTable>(Linux64Rows());
}

}  // namespace sandbox::syscalls
