// A parser for GoogleTest's console output (not its XML: writing XML needs
// open(), which an early sandbox may lack).
//
// The input comes from the program under test, so it is hostile: any byte
// sequence must parse without crashing, in memory bounded by the limits below.
//
// Recognised markers, anywhere in a line (a test's own output may leave a
// line unterminated, so gtest's marker then follows it on the same line):
//   [ RUN      ] Suite.Case
//   [       OK ] Suite.Case (N ms)
//   [  FAILED  ] Suite.Case (N ms)            also ", where GetParam() = ..."
//   [  SKIPPED ] Suite.Case (N ms)
// An end marker counts only if it names the case that is running, so the
// summary gtest prints at the end ("[  FAILED  ] Suite.Case" again) is not
// double-counted. A RUN with no end marker before the next RUN or the end
// of input is a crash: the process died or hung inside that case.
#ifndef TEST_SYSCALLS_RUNNER_GTEST_CONSOLE_H_
#define TEST_SYSCALLS_RUNNER_GTEST_CONSOLE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sandbox::syscall_test {

enum class CaseStatus {
  kPassed,
  kFailed,
  kSkipped,
  // Started but never finished: the process crashed, was killed, or started
  // another case without ending this one.
  kCrashed,
};

// "PASSED", "FAILED", "SKIPPED", "CRASHED".
std::string_view CaseStatusName(CaseStatus status);

struct CaseResult {
  std::string name;  // "Suite.Case" or "Prefix/Suite.Case/0".
  CaseStatus status = CaseStatus::kCrashed;
  // Milliseconds gtest reported, or -1 if it reported none.
  int64_t duration_ms = -1;
  // What the case printed between its RUN and end lines, including gtest's
  // failure messages; capped at kMaxCaseOutput bytes (the tail is dropped).
  std::string output;
};

class GtestConsoleParser {
 public:
  // Lines longer than this are cut into pieces; a marker straddling a cut is
  // missed (gtest's own lines are far shorter).
  static constexpr size_t kMaxLine = 64 * 1024;
  static constexpr size_t kMaxCaseOutput = 16 * 1024;
  static constexpr size_t kMaxNameLength = 4096;
  // Cases beyond this many are dropped (and counted in dropped_cases()).
  static constexpr size_t kMaxCases = 100000;

  // Feeds the next chunk of output; chunks may split lines anywhere.
  void Feed(std::string_view chunk);

  // Ends the input: a pending partial line is parsed and a case still
  // running is recorded as kCrashed. Further Feed() calls are ignored.
  void Finish();

  // Cases in the order they started. Names are not unique if the program
  // printed the same RUN line twice.
  const std::vector<CaseResult>& cases() const { return cases_; }
  size_t dropped_cases() const { return dropped_cases_; }
  bool finished() const { return finished_; }

 private:
  void ParseLine(std::string_view line);
  void AppendOutput(std::string_view text);
  void EndCurrent(CaseStatus status, int64_t duration_ms);

  std::string partial_;
  std::vector<CaseResult> cases_;
  // Index in cases_ of the case between RUN and its end, or -1.
  int64_t current_ = -1;
  size_t dropped_cases_ = 0;
  bool finished_ = false;
};

// Parses a whole output at once.
std::vector<CaseResult> ParseGtestConsole(std::string_view output);

}  // namespace sandbox::syscall_test

#endif  // TEST_SYSCALLS_RUNNER_GTEST_CONSOLE_H_
