// The syscall table: every x86-64 number with its handler and support level.
//
// The rows are linux64.tbl.inc, one per number in number order:
//
//   FULL(0, read, Read)
//   PARTIAL(16, ioctl, Ioctl, "FIOCLEX, FIONCLEX, ...; host stdio: TCGETS")
//   UNSUPPORTED(334, rseq, kENOSYS, "as a kernel without CONFIG_RSEQ")
//   MISSING(134, uselib)
//
// and each handler is defined in its family file (file.cc, mm.cc, ...)
// with its handle (handler.h). A MISSING number returns ENOSYS. Every
// number that is not fully supported is logged once (unknown and missing
// numbers as warnings, deliberate Unsupported entries at debug level) and
// counted.
//
// --strace logs each call with arguments decoded from the handler's
// parameter types, its result and errno name; --strace-summary prints the
// per-number counts at exit.
//
// Thread-safety: the table is filled by its constructor; Dispatch is
// thread-safe (counters are atomic).
#ifndef SENTRY_SYSCALLS_TABLE_H_
#define SENTRY_SYSCALLS_TABLE_H_

#include <stdint.h>

#include <array>
#include <atomic>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "sentry/abi/syscalls.h"
#include "sentry/kernel/syscall_dispatcher.h"
#include "sentry/syscalls/args.h"
#include "sentry/syscalls/handler.h"

namespace sandbox::syscalls {

enum class Support {
  kFull,         // Linux behaviour.
  kPartial,      // Linux behaviour for the cases in `note`; the rest fail.
  kUnsupported,  // Always fails with `error`.
};

// One number's row (linux64.tbl.inc).
struct SyscallEntry {
  int nr = -1;
  const char* name = nullptr;
  // False for MISSING rows and numbers with no row: ENOSYS.
  bool registered = false;
  // The handler; null for UNSUPPORTED rows.
  const SyscallHandler* handler = nullptr;
  Support support = Support::kUnsupported;
  const char* note = "";
  Errno error = kENOSYS;
  // strace shows the result in hex (addresses: mmap, brk).
  bool hex_result = false;
};

// The rows of linux64.tbl.inc, in number order.
absl::Span<const SyscallEntry> Linux64Rows();

struct StraceOptions {
  bool log_calls = false;  // one line per syscall (--strace)
  bool count = false;      // per-number counts (--strace-summary)
};

class SyscallTable final : public kernel::SyscallDispatcher {
 public:
  // A table of `rows` (each nr below abi::kMaxSyscall, at most once).
  explicit SyscallTable(absl::Span<const SyscallEntry> rows);
  // The x86-64 Linux table: Linux64Rows().
  static std::unique_ptr<SyscallTable> CreateLinux64();

  // The entry for `nr`, or null if none is registered.
  const SyscallEntry* Lookup(uint64_t nr) const;

  void SetStraceOptions(StraceOptions opts) { strace_ = opts; }

  // kernel::SyscallDispatcher.
  KResult<uint64_t> Dispatch(Task& task, uint64_t nr,
                             const SyscallArgs& args) override;

  // Every x86-64 number with its support level and note (`runsc help
  // syscalls`), one per line.
  std::string Describe() const;

  // strace -c style table of the counted calls, sorted by count.
  std::string Summary() const;
  // Calls counted for `nr` (tests).
  uint64_t CallCount(uint64_t nr) const;

 private:
  // Logs the first call of a number that is not fully supported.
  void LogOnce(uint64_t nr, const SyscallEntry* e);
  void Count(uint64_t nr, bool failed);

  std::array<SyscallEntry, abi::kMaxSyscall> entries_;
  StraceOptions strace_;

  // Per number: logged-once flags and counters. Index kMaxSyscall counts
  // every number beyond the table.
  std::array<std::atomic<bool>, abi::kMaxSyscall> logged_ = {};
  std::array<std::atomic<uint64_t>, abi::kMaxSyscall + 1> calls_ = {};
  std::array<std::atomic<uint64_t>, abi::kMaxSyscall + 1> errors_ = {};

  // Numbers beyond the table already logged; bounded so a guest cannot
  // grow it without limit.
  static constexpr size_t kMaxLoggedOutOfRange = 1024;
  absl::Mutex out_of_range_mu_;
  absl::flat_hash_set<uint64_t> out_of_range_logged_
      ABSL_GUARDED_BY(out_of_range_mu_);
};

}  // namespace sandbox::syscalls

#endif  // SENTRY_SYSCALLS_TABLE_H_
