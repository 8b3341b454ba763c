// The syscall table: every x86-64 number with its handler and support level.
//
// Entries are registered by family (file.cc, mm.cc, process.cc, ...):
//
//   table.Full<&Read>(nr::read);
//   table.Partial<&Ioctl>(nr::ioctl, "TCGETS, TIOCGWINSZ, FIOCLEX, FIONCLEX");
//   table.Unsupported(nr::rseq, kENOSYS, "as a kernel without CONFIG_RSEQ");
//
// A number with no entry returns ENOSYS. Every number that is not fully
// supported is logged once (unknown and unimplemented numbers as warnings,
// deliberate Unsupported entries at debug level) and counted.
//
// --strace logs each call with arguments decoded from the handler's
// parameter types, its result and errno name; --strace-summary prints the
// per-number counts at exit.
//
// Thread-safety: registration happens before the first Dispatch; Dispatch
// is thread-safe (counters are atomic).
#ifndef SENTRY_SYSCALLS_TABLE_H_
#define SENTRY_SYSCALLS_TABLE_H_

#include <stdint.h>

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "sentry/abi/syscalls.h"
#include "sentry/kernel/syscall_dispatcher.h"
#include "sentry/syscalls/args.h"

namespace sandbox::syscalls {

enum class Support {
  kFull,         // Linux behaviour.
  kPartial,      // Linux behaviour for the cases in `note`; the rest fail.
  kUnsupported,  // Always fails with `error`.
};

using HandlerFn = SyscallResult (*)(Task&, const SyscallArgs&);
using FormatFn = std::string (*)(Task&, const SyscallArgs&);

struct SyscallEntry {
  const char* name = nullptr;
  bool registered = false;
  HandlerFn fn = nullptr;
  FormatFn format = nullptr;
  Support support = Support::kUnsupported;
  const char* note = "";
  Errno error = kENOSYS;
  // strace shows the result in hex (addresses: mmap, brk).
  bool hex_result = false;
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

struct StraceOptions {
  bool log_calls = false;  // one line per syscall (--strace)
  bool count = false;      // per-number counts (--strace-summary)
};

class SyscallTable final : public kernel::SyscallDispatcher {
 public:
  SyscallTable();
  // The x86-64 Linux table with every family registered.
  static std::unique_ptr<SyscallTable> CreateLinux64();

  template <auto Fn>
  SyscallEntry& Full(int nr) {
    return Add(nr, &internal::Invoke<Fn>, &internal::Format<Fn>, Support::kFull,
               "");
  }
  template <auto Fn>
  SyscallEntry& Partial(int nr, const char* note) {
    return Add(nr, &internal::Invoke<Fn>, &internal::Format<Fn>,
               Support::kPartial, note);
  }
  SyscallEntry& Unsupported(int nr, Errno error, const char* note);

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
  SyscallEntry& Add(int nr, HandlerFn fn, FormatFn format, Support support,
                    const char* note);
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

// Family registration (one file each).
void RegisterFileSyscalls(SyscallTable& t);
void RegisterMmSyscalls(SyscallTable& t);
void RegisterMemfdSyscalls(SyscallTable& t);
void RegisterProcessSyscalls(SyscallTable& t);
void RegisterIdentitySyscalls(SyscallTable& t);
void RegisterMountSyscalls(SyscallTable& t);
void RegisterTimeSyscalls(SyscallTable& t);
void RegisterUtsSyscalls(SyscallTable& t);
void RegisterPrioritySyscalls(SyscallTable& t);
void RegisterSchedSyscalls(SyscallTable& t);
void RegisterSettimeSyscalls(SyscallTable& t);
void RegisterItimerSyscalls(SyscallTable& t);
void RegisterTimerSyscalls(SyscallTable& t);
void RegisterRusageSyscalls(SyscallTable& t);
void RegisterSignalSyscalls(SyscallTable& t);
void RegisterRandomSyscalls(SyscallTable& t);
void RegisterFutexSyscalls(SyscallTable& t);
void RegisterCloneSyscalls(SyscallTable& t);
void RegisterPipeSyscalls(SyscallTable& t);
void RegisterLockSyscalls(SyscallTable& t);
void RegisterOpenSyscalls(SyscallTable& t);
void RegisterStatSyscalls(SyscallTable& t);
void RegisterNameiSyscalls(SyscallTable& t);
void RegisterCwdSyscalls(SyscallTable& t);
void RegisterGetdentsSyscalls(SyscallTable& t);
void RegisterAttrSyscalls(SyscallTable& t);
void RegisterXattrSyscalls(SyscallTable& t);
void RegisterStatfsSyscalls(SyscallTable& t);
void RegisterSyncSyscalls(SyscallTable& t);
void RegisterSendfileSyscalls(SyscallTable& t);
void RegisterExecSyscalls(SyscallTable& t);
void RegisterFadviseSyscalls(SyscallTable& t);
void RegisterSocketSyscalls(SyscallTable& t);
void RegisterPollSyscalls(SyscallTable& t);
void RegisterSelectSyscalls(SyscallTable& t);
void RegisterEpollSyscalls(SyscallTable& t);
void RegisterEventfdSyscalls(SyscallTable& t);
void RegisterTimerfdSyscalls(SyscallTable& t);
void RegisterSignalfdSyscalls(SyscallTable& t);

}  // namespace sandbox::syscalls

#endif  // SENTRY_SYSCALLS_TABLE_H_
