#include "test/syscalls/runner/expectations.h"

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace sandbox::syscall_test {
namespace {

constexpr char kDefaultHeader[] =
    "# Sandbox cases known to fail: BINARY CASE  # reason\n"
    "# See test/syscalls/README.md; regenerate with\n"
    "# tools/update-syscall-expectations.sh.\n";

// Fields are separated by any ASCII whitespace (as absl::ascii_isspace).
constexpr char kSeparators[] = " \t\n\v\f\r";

bool IsCommentOrBlank(absl::string_view line) {
  line = absl::StripLeadingAsciiWhitespace(line);
  return line.empty() || line[0] == '#';
}

// Whether a binary or case name survives a trip through the file: gtest
// names never hold these, but the runner's input is untrusted.
bool Listable(absl::string_view name) {
  return !name.empty() && name.find_first_of(kSeparators) == name.npos &&
         name.find('#') == name.npos;
}

}  // namespace

const ExpectedFailure* ExpectedFailures::Find(
    absl::string_view binary, absl::string_view test_case) const {
  for (const ExpectedFailure& e : entries) {
    if (e.binary == binary && e.test_case == test_case) return &e;
  }
  return nullptr;
}

absl::StatusOr<ExpectedFailures> ParseExpectedFailures(absl::string_view text) {
  ExpectedFailures out;
  bool in_header = true;
  std::set<std::pair<std::string, std::string>> seen;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripSuffix(line, "\r");
    if (in_header && IsCommentOrBlank(line)) {
      absl::StrAppend(&out.header, line, "\n");
      continue;
    }
    in_header = false;
    absl::string_view reason;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) {
      reason = absl::StripAsciiWhitespace(line.substr(hash + 1));
      line = line.substr(0, hash);
    }
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(kSeparators), absl::SkipEmpty());
    if (fields.empty()) continue;  // A comment or blank line.
    if (fields.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", number,
                       ": expected 'BINARY Suite.Case  # "
                       "reason', got '",
                       absl::StripAsciiWhitespace(line), "'"));
    }
    ExpectedFailure e{std::string(fields[0]), std::string(fields[1]),
                      std::string(reason), number};
    if (!seen.emplace(e.binary, e.test_case).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", number, ": ", e.binary, " ", e.test_case, " listed twice"));
    }
    out.entries.push_back(std::move(e));
  }
  // Blank lines ending the header are the separator Format writes back.
  while (absl::EndsWith(out.header, "\n\n") || out.header == "\n") {
    out.header.pop_back();
  }
  return out;
}

std::string FormatExpectedFailures(const ExpectedFailures& expected) {
  std::vector<const ExpectedFailure*> sorted;
  for (const ExpectedFailure& e : expected.entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
    return std::tie(a->binary, a->test_case) <
           std::tie(b->binary, b->test_case);
  });
  std::string out = expected.header.empty() ? kDefaultHeader : expected.header;
  out += "\n";
  for (const ExpectedFailure* e : sorted) {
    absl::StrAppend(&out, e->binary, " ", e->test_case);
    if (!e->reason.empty()) {
      absl::StrAppend(
          &out, "  # ",
          absl::StrReplaceAll(e->reason, {{"\n", " "}, {"\r", " "}}));
    }
    out += "\n";
  }
  return out;
}

void ApplyExpectedFailures(const ExpectedFailures& expected,
                           absl::string_view file, bool check_unused,
                           Report* report) {
  report->expectations_file = std::string(file);
  std::set<std::string> checked_binaries;
  for (const BinaryResult& b : report->binaries) {
    if (b.sandbox.has_value() && b.sandbox->ran) {
      checked_binaries.insert(b.name);
    }
  }
  std::set<const ExpectedFailure*> used;
  for (CaseRow& row : report->rows) {
    if (row.sandbox == Outcome::kNotRun) continue;
    const ExpectedFailure* e = expected.Find(row.binary, row.name);
    if (e == nullptr) continue;
    used.insert(e);
    row.expected_reason = e->reason;
    if (row.regression) {
      row.regression = false;
      row.expected_failure = true;
      --report->regressions;
      ++report->expected_failures;
    } else if (row.sandbox == Outcome::kPassed ||
               row.sandbox == Outcome::kSkipped) {
      // Not a regression, and no failure: the expectation is stale. (A case
      // that fails natively too stays a native failure.)
      row.unexpected_pass = true;
      ++report->unexpected_passes;
    }
  }
  if (!check_unused) return;
  for (const ExpectedFailure& e : expected.entries) {
    if (checked_binaries.contains(e.binary) && !used.contains(&e)) {
      report->unused_expectations.push_back({e.binary, e.test_case});
    }
  }
}

std::string GuessReason(absl::string_view output, Outcome outcome) {
  // The Sentry logs "unimplemented syscall 56 (clone): ENOSYS" once per
  // syscall and process.
  constexpr absl::string_view kMarker = "unimplemented syscall ";
  std::vector<std::string> names;
  for (size_t at = output.find(kMarker); at != absl::string_view::npos;
       at = output.find(kMarker, at + 1)) {
    absl::string_view rest = output.substr(at + kMarker.size());
    rest = rest.substr(0, rest.find('\n'));
    size_t open = rest.find(" (");
    size_t close = rest.find(')');
    if (open == absl::string_view::npos || close == absl::string_view::npos ||
        open > close) {
      continue;
    }
    std::string name =
        Sanitize(std::string(rest.substr(open + 2, close - open - 2)));
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(std::move(name));
    }
  }
  if (!names.empty()) {
    return absl::StrCat(absl::StrJoin(names, ", "),
                        ": not implemented (ENOSYS)");
  }
  // gtest: "Value of: EXPR\n...  Actual: -1 ..., failed with errno 2 (MSG)".
  constexpr absl::string_view kValue = "Value of: ";
  constexpr absl::string_view kErrno = "failed with errno ";
  if (size_t v = output.find(kValue); v != absl::string_view::npos) {
    absl::string_view expr = output.substr(v + kValue.size());
    expr = expr.substr(0, std::min(expr.find('\n'), size_t{60}));
    std::string what = "fails";
    if (size_t e = output.find(kErrno, v); e != absl::string_view::npos) {
      absl::string_view msg = output.substr(e + kErrno.size());
      what = std::string(msg.substr(0, msg.find_first_of(",\n")));
    }
    return Sanitize(absl::StrCat(expr, ": ", what));
  }
  return absl::StrCat("sandbox ", OutcomeName(outcome),
                      ": TODO find the cause");
}

ExpectedFailures UpdatedExpectedFailures(
    const Report& report, const ExpectedFailures& old,
    absl::FunctionRef<std::string(const CaseRow&)> new_reason) {
  ExpectedFailures out;
  out.header = old.header;
  std::set<std::string> ran;
  for (const BinaryResult& b : report.binaries) {
    if (b.sandbox.has_value() && b.sandbox->ran) ran.insert(b.name);
  }
  for (const ExpectedFailure& e : old.entries) {
    if (!ran.contains(e.binary)) out.entries.push_back(e);
  }
  for (const CaseRow& row : report.rows) {
    if (!row.regression && !row.expected_failure) continue;
    // An unlistable case stays a regression, visible in every run.
    if (!Listable(row.binary) || !Listable(row.name)) continue;
    const ExpectedFailure* e = old.Find(row.binary, row.name);
    std::string reason =
        e != nullptr && !e->reason.empty() ? e->reason : new_reason(row);
    out.entries.push_back({row.binary, row.name, std::move(reason)});
  }
  return out;
}

}  // namespace sandbox::syscall_test
