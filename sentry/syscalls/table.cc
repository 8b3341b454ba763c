#include "sentry/syscalls/table.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sentry/kernel/log.h"

namespace sandbox::syscalls {

SyscallTable::SyscallTable(absl::Span<const SyscallEntry> rows) {
  for (int nr = 0; nr < abi::kMaxSyscall; ++nr) {
    entries_[nr].nr = nr;
    entries_[nr].name = abi::SyscallName(nr);
  }
  for (const SyscallEntry& row : rows) entries_.at(row.nr) = row;
}

const SyscallEntry* SyscallTable::Lookup(uint64_t nr) const {
  if (nr >= abi::kMaxSyscall) return nullptr;
  const SyscallEntry& e = entries_[nr];
  return e.registered ? &e : nullptr;
}

void SyscallTable::LogOnce(uint64_t nr, const SyscallEntry* e) {
  if (nr >= abi::kMaxSyscall) {
    absl::MutexLock l(&out_of_range_mu_);
    if (out_of_range_logged_.size() >= kMaxLoggedOutOfRange ||
        !out_of_range_logged_.insert(nr).second) {
      return;
    }
    kernel::LogUnsupported("unknown syscall %d: ENOSYS",
                           static_cast<int64_t>(nr));
    return;
  }
  if (logged_[nr].exchange(true, std::memory_order_relaxed)) return;
  const char* name = entries_[nr].name != nullptr ? entries_[nr].name : "?";
  if (e == nullptr) {
    kernel::LogUnsupported("unimplemented syscall %d (%s): ENOSYS",
                           static_cast<int>(nr), name);
  } else if (e->support == Support::kUnsupported) {
    kernel::LogUnsupported("unsupported syscall %d (%s): %s; %s",
                           static_cast<int>(nr), name, e->error.name(),
                           e->note);
  } else {
    kernel::LogDebug("partially supported syscall %d (%s): %s",
                     static_cast<int>(nr), name, e->note);
  }
}

void SyscallTable::Count(uint64_t nr, bool failed) {
  size_t i = std::min<uint64_t>(nr, abi::kMaxSyscall);
  calls_[i].fetch_add(1, std::memory_order_relaxed);
  if (failed) errors_[i].fetch_add(1, std::memory_order_relaxed);
}

namespace {

std::string ResultString(const KResult<uint64_t>& r, bool hex) {
  if (r.ok()) {
    return hex ? absl::StrFormat("%#x", r.value())
               : absl::StrCat(static_cast<int64_t>(r.value()));
  }
  return absl::StrFormat("-1 %s (%s)", r.error().name(), r.error().message());
}

}  // namespace

KResult<uint64_t> SyscallTable::Dispatch(Task& task, uint64_t nr,
                                         const SyscallArgs& args) {
  const SyscallEntry* e = Lookup(nr);
  if (e == nullptr || e->support != Support::kFull) LogOnce(nr, e);

  std::string line;
  absl::Time start;
  if (strace_.log_calls) {
    start = absl::Now();
    const char* name = nr < abi::kMaxSyscall ? entries_[nr].name : nullptr;
    std::string decoded =
        e != nullptr && e->handler != nullptr
            ? e->handler->format(task, args)
            : absl::StrFormat("%#x, %#x, %#x, %#x, %#x, %#x", args.v[0],
                              args.v[1], args.v[2], args.v[3], args.v[4],
                              args.v[5]);
    // As strace -tt -T: when the call entered (seconds since the Unix epoch,
    // to the microsecond) and, after the result, how long the Sentry took.
    const int64_t us = absl::ToUnixMicros(start);
    const std::string when =
        absl::StrFormat("%d.%06d", us / 1000000, us % 1000000);
    line = name != nullptr
               ? absl::StrFormat("[%5d] %s %s(%s)", task.tid(), when, name,
                                 decoded)
               : absl::StrFormat("[%5d] %s syscall_%d(%s)", task.tid(), when,
                                 static_cast<int64_t>(nr), decoded);
  }

  KResult<uint64_t> r = kENOSYS;
  if (e != nullptr) {
    r = e->handler != nullptr ? e->handler->fn(task, args) : e->error;
  }

  if (strace_.count) Count(nr, !r.ok());
  if (strace_.log_calls) {
    kernel::WriteDebug(absl::StrFormat(
        "%s = %s <%.6f>", line, ResultString(r, e != nullptr && e->hex_result),
        absl::ToDoubleSeconds(absl::Now() - start)));
  }
  return r;
}

std::string SyscallTable::Describe() const {
  std::string out;
  int full = 0, partial = 0, unsupported = 0, missing = 0;
  for (int nr = 0; nr < abi::kMaxSyscall; ++nr) {
    const SyscallEntry& e = entries_[nr];
    if (e.name == nullptr) continue;
    const char* level;
    std::string note = e.note;
    if (!e.registered) {
      level = "missing";
      note = "ENOSYS";
      ++missing;
    } else if (e.support == Support::kFull) {
      level = "full";
      ++full;
    } else if (e.support == Support::kPartial) {
      level = "partial";
      ++partial;
    } else {
      level = "unsupported";
      note = absl::StrCat(std::string(e.error.name()), "; ", note);
      ++unsupported;
    }
    out += absl::StrFormat("%3d %-24s %-11s %s\n", nr, e.name, level, note);
  }
  out += absl::StrFormat(
      "%d full, %d partial, %d unsupported, %d missing (ENOSYS)\n", full,
      partial, unsupported, missing);
  return out;
}

uint64_t SyscallTable::CallCount(uint64_t nr) const {
  return calls_[std::min<uint64_t>(nr, abi::kMaxSyscall)].load();
}

std::string SyscallTable::Summary() const {
  struct Row {
    uint64_t calls, errors;
    std::string name;
  };
  std::vector<Row> rows;
  uint64_t total = 0, total_errors = 0;
  for (int i = 0; i <= abi::kMaxSyscall; ++i) {
    uint64_t c = calls_[i].load(std::memory_order_relaxed);
    if (c == 0) continue;
    uint64_t err = errors_[i].load(std::memory_order_relaxed);
    const char* name = i < abi::kMaxSyscall ? entries_[i].name : nullptr;
    rows.push_back({c, err,
                    name != nullptr        ? std::string(name)
                    : i < abi::kMaxSyscall ? absl::StrCat("syscall_", i)
                                           : std::string("(out of range)")});
    total += c;
    total_errors += err;
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.calls != b.calls ? a.calls > b.calls : a.name < b.name;
  });
  std::string out =
      absl::StrFormat("%10s %10s %s\n", "calls", "errors", "syscall");
  out += "---------- ---------- ----------------\n";
  for (const Row& r : rows) {
    out += absl::StrFormat("%10d %10s %s\n", r.calls,
                           r.errors ? absl::StrCat(r.errors) : "", r.name);
  }
  out += "---------- ---------- ----------------\n";
  out += absl::StrFormat("%10d %10d total\n", total, total_errors);
  return out;
}

}  // namespace sandbox::syscalls
