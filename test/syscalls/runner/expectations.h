// The expectation file: sandbox cases known to fail, checked in so that a
// run is green today, fails on every new regression, and fails when a listed
// case starts passing (so the file stays exact).
//
// One case per line, comments and blank lines allowed:
//
//   # Leading comment lines are the file's header (kept on update).
//   mmap_test MmapTest.Fork  # fork: not implemented yet
//   open_test (process)      # runsc crashes at start-up
//
// A line is BINARY (the test binary's basename), CASE ("Suite.Case" as
// gtest names it, or "(process)") and an optional "# reason".
#ifndef TEST_SYSCALLS_RUNNER_EXPECTATIONS_H_
#define TEST_SYSCALLS_RUNNER_EXPECTATIONS_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "test/syscalls/runner/report.h"

namespace sandbox::syscall_test {

struct ExpectedFailure {
  std::string binary;
  std::string test_case;
  std::string reason;  // May be empty.
  int line = 0;        // 1-based line in the file; 0 if not from a file.
};

struct ExpectedFailures {
  // The leading comment and blank lines, verbatim (each ending in '\n').
  std::string header;
  std::vector<ExpectedFailure> entries;

  const ExpectedFailure* Find(absl::string_view binary,
                              absl::string_view test_case) const;
};

// Parses an expectation file. Errors (with the line number): a line that is
// not "BINARY CASE [# reason]", a case listed twice.
absl::StatusOr<ExpectedFailures> ParseExpectedFailures(absl::string_view text);

// The file's text: header, then one line per entry sorted by binary and case.
std::string FormatExpectedFailures(const ExpectedFailures& expected);

// Marks the report's sandbox rows against the expectations of `file`:
//  - a listed case that regressed becomes an expected failure (not counted
//    in report->regressions);
//  - a listed case that passed (or was skipped in both modes) in the sandbox
//    is an unexpected pass, which fails the run;
//  - with `check_unused`, a listed case of a binary whose sandbox run
//    happened but that has no row (renamed, deleted) fails the run too.
// Binaries whose sandbox run did not happen are not checked.
void ApplyExpectedFailures(const ExpectedFailures& expected,
                           absl::string_view file, bool check_unused,
                           Report* report);

// The expectations the report calls for: every case of `report` that fails
// in the sandbox but not natively (regressions and expected failures), with
// the reason from `old` when it gives one and `new_reason(row)` otherwise,
// plus the entries of `old` for binaries whose sandbox run did not happen.
// A name the file cannot hold (empty, or with '#' or whitespace) is left out.
ExpectedFailures UpdatedExpectedFailures(
    const Report& report, const ExpectedFailures& old,
    absl::FunctionRef<std::string(const CaseRow&)> new_reason);

// A short reason for a case that fails in the sandbox, guessed from what the
// sandbox printed for it (best: the case run alone, so that the Sentry logs
// every unimplemented syscall the case reaches, not only the first of the
// process): the syscalls the Sentry logged as unimplemented, else the first
// failed check with its errno message, else the outcome with a TODO.
std::string GuessReason(absl::string_view output, Outcome outcome);

}  // namespace sandbox::syscall_test

#endif  // TEST_SYSCALLS_RUNNER_EXPECTATIONS_H_
