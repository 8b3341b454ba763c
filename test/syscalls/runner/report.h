// The runner's results: per-case outcomes of the native and sandbox runs of
// each test binary, their comparison, and the table / JSON / JUnit-XML views.
#ifndef TEST_SYSCALLS_RUNNER_REPORT_H_
#define TEST_SYSCALLS_RUNNER_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "test/syscalls/runner/gtest_console.h"
#include "test/syscalls/runner/subprocess.h"

namespace sandbox::syscall_test {

// One run of one binary in one mode.
struct RunResult {
  // False if the run was not attempted; `not_run_reason` says why.
  bool ran = false;
  std::string not_run_reason;
  SubprocessResult process;
  std::vector<CaseResult> cases;
  // The last bytes of the combined output (for process-level failures).
  std::string output_tail;
};

struct BinaryResult {
  std::string name;  // Basename of the binary.
  std::string path;
  RunResult native;
  std::optional<RunResult> sandbox;  // Absent when no sandbox was asked for.
};

// The outcome of one case in one mode, as the report shows it.
enum class Outcome {
  kPassed,
  kFailed,
  kSkipped,
  kCrashed,   // The process died inside the case.
  kTimedOut,  // The deadline passed inside the case.
  kMissing,   // The case ran in the other mode but not in this one.
  kNotRun,    // This mode was not run at all.
};
const char* OutcomeName(Outcome o);

// A row of the report: one case of one binary. The pseudo-case named
// kProcessCase stands for a run that failed outside any case (bad exit
// status with no failed case, no case at all, a start-up failure).
inline constexpr std::string_view kProcessCase = "(process)";

struct CaseRow {
  std::string binary;
  std::string name;
  Outcome native = Outcome::kNotRun;
  Outcome sandbox = Outcome::kNotRun;
  std::string native_output;  // Case output, or why the process failed.
  std::string sandbox_output;
  int64_t native_ms = -1;
  int64_t sandbox_ms = -1;
  // The native run failed this case.
  bool native_failure = false;
  // It passed (or was skipped) natively but did not pass in the sandbox; a
  // case skipped only in the sandbox counts as a failure. False for an
  // expected failure.
  bool regression = false;
  // It would be a regression, but the expectation file lists it.
  bool expected_failure = false;
  // The expectation file lists it, but it did not fail in the sandbox.
  bool unexpected_pass = false;
  // The reason the expectation file gives, when it lists the case.
  std::string expected_reason;
};

// A case the expectation file lists that did not run at all.
struct UnusedExpectation {
  std::string binary;
  std::string name;
};

struct Report {
  std::string sandbox_command;  // "" when no sandbox run was asked for.
  std::vector<BinaryResult> binaries;
  std::vector<CaseRow> rows;
  int native_passed = 0, native_failed = 0, native_skipped = 0;
  int sandbox_passed = 0, sandbox_failed = 0, sandbox_skipped = 0;
  int regressions = 0;
  bool sandbox_ran = false;
  // Set by ApplyExpectedFailures (expectations.h).
  std::string expectations_file;  // "" when none was given.
  int expected_failures = 0;
  int unexpected_passes = 0;
  std::vector<UnusedExpectation> unused_expectations;

  // Exit status for the runner: 0 when no native case failed, nothing
  // regressed in the sandbox and the expectation file was exact; 1 otherwise.
  int ExitStatus() const {
    return native_failed > 0 || regressions > 0 || unexpected_passes > 0 ||
                   !unused_expectations.empty()
               ? 1
               : 0;
  }
};

// Which modes FormatXml writes. A `_sandbox` Bazel target writes only the
// sandbox suites: its `_native` twin already reports the native ones.
struct XmlModes {
  bool native = true;
  bool sandbox = true;
};

// Compares the runs and fills rows and counts.
Report BuildReport(std::string sandbox_command,
                   std::vector<BinaryResult> binaries);

// A fixed-width table, a summary line and the list of regressions.
std::string FormatTable(const Report& report);
// Output of failed native cases and of regressions, for the log.
std::string FormatFailureDetails(const Report& report);
std::string FormatJson(const Report& report);
// gtest-compatible XML (the format Bazel's XML_OUTPUT_FILE expects): one
// <testsuite> per (binary, mode) named "<binary>.<mode>", one <testcase> per
// case named "Suite.Case". A sandbox testcase fails when it regressed or
// passed against expectations; an expected failure is a skipped testcase.
std::string FormatXml(const Report& report, XmlModes modes = {});

// Bytes made safe for JSON strings and XML text: printable ASCII, \n and \t
// kept; anything else written as \xNN.
std::string Sanitize(std::string_view bytes);

}  // namespace sandbox::syscall_test

#endif  // TEST_SYSCALLS_RUNNER_REPORT_H_
