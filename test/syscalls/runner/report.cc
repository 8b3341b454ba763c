#include "test/syscalls/runner/report.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace sandbox::syscall_test {
namespace {

bool IsBad(Outcome o) {
  return o == Outcome::kFailed || o == Outcome::kCrashed ||
         o == Outcome::kTimedOut;
}

// Ranks outcomes so a repeated case keeps its worst result.
int Severity(Outcome o) {
  switch (o) {
    case Outcome::kPassed:
      return 0;
    case Outcome::kSkipped:
      return 1;
    case Outcome::kFailed:
      return 2;
    case Outcome::kCrashed:
      return 3;
    case Outcome::kTimedOut:
      return 4;
    case Outcome::kMissing:
    case Outcome::kNotRun:
      return -1;
  }
  return -1;
}

struct ModeCases {
  // name -> (outcome, output, ms), in first-seen order.
  std::vector<std::string> order;
  absl::flat_hash_map<std::string, std::tuple<Outcome, std::string, int64_t>>
      by_name;
  // Set when the run failed outside any case.
  std::optional<std::string> process_problem;
};

ModeCases Collect(const RunResult& run) {
  ModeCases mc;
  if (!run.ran) {
    mc.process_problem = run.not_run_reason;
    return mc;
  }
  bool any_bad = false;
  for (size_t i = 0; i < run.cases.size(); ++i) {
    const CaseResult& c = run.cases[i];
    Outcome o = Outcome::kCrashed;
    switch (c.status) {
      case CaseStatus::kPassed:
        o = Outcome::kPassed;
        break;
      case CaseStatus::kFailed:
        o = Outcome::kFailed;
        break;
      case CaseStatus::kSkipped:
        o = Outcome::kSkipped;
        break;
      case CaseStatus::kCrashed:
        o = run.process.timed_out && i + 1 == run.cases.size()
                ? Outcome::kTimedOut
                : Outcome::kCrashed;
        break;
    }
    std::string output = c.output;
    if (o == Outcome::kCrashed || o == Outcome::kTimedOut) {
      absl::StrAppend(&output, "\n[runner] process ", run.process.Describe(),
                      " inside this case\n");
    }
    any_bad |= IsBad(o);
    auto [it, inserted] = mc.by_name.try_emplace(
        c.name, std::make_tuple(o, std::move(output), c.duration_ms));
    if (inserted) {
      mc.order.push_back(c.name);
    } else if (Severity(o) > Severity(std::get<0>(it->second))) {
      it->second = std::make_tuple(o, c.output, c.duration_ms);
    }
  }
  if (!any_bad) {
    if (!run.process.Succeeded()) {
      mc.process_problem = absl::StrCat("process ", run.process.Describe(),
                                        " with no failed case");
    } else if (run.cases.empty()) {
      mc.process_problem = "no test case ran (is this a gtest binary?)";
    }
  }
  if (mc.process_problem.has_value()) {
    absl::StrAppend(&*mc.process_problem, "\n[runner] last output:\n",
                    run.output_tail);
  }
  return mc;
}

void Count(Outcome o, int* passed, int* failed, int* skipped) {
  if (o == Outcome::kPassed) ++*passed;
  if (o == Outcome::kSkipped) ++*skipped;
  if (IsBad(o) || o == Outcome::kMissing) ++*failed;
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : Sanitize(s)) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  out += "\"";
  return out;
}

std::string XmlAttr(std::string_view s) {
  return absl::StrReplaceAll(Sanitize(s), {{"&", "&amp;"},
                                           {"<", "&lt;"},
                                           {">", "&gt;"},
                                           {"\"", "&quot;"},
                                           {"\n", "&#10;"},
                                           {"\t", "&#9;"}});
}

std::string XmlCdata(std::string_view s) {
  return absl::StrCat(
      "<![CDATA[",
      absl::StrReplaceAll(Sanitize(s), {{"]]>", "]]]]><![CDATA[>"}}), "]]>");
}

std::string JsonRun(const RunResult& run) {
  if (!run.ran) {
    return absl::StrCat(
        "{\"ran\": false, \"reason\": ", JsonString(run.not_run_reason), "}");
  }
  return absl::StrFormat(
      "{\"ran\": true, \"status\": %s, \"exit_code\": %d, \"signal\": %d, "
      "\"timed_out\": %s, \"seconds\": %.3f, \"cases\": %d}",
      JsonString(run.process.Describe()), run.process.exit_code,
      run.process.signal, run.process.timed_out ? "true" : "false",
      absl::ToDoubleSeconds(run.process.elapsed), run.cases.size());
}

}  // namespace

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPassed:
      return "PASSED";
    case Outcome::kFailed:
      return "FAILED";
    case Outcome::kSkipped:
      return "SKIPPED";
    case Outcome::kCrashed:
      return "CRASHED";
    case Outcome::kTimedOut:
      return "TIMEOUT";
    case Outcome::kMissing:
      return "MISSING";
    case Outcome::kNotRun:
      return "NOT_RUN";
  }
  return "UNKNOWN";
}

std::string Sanitize(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (char ch : bytes) {
    unsigned char c = static_cast<unsigned char>(ch);
    if ((c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t') {
      out.push_back(ch);
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    }
  }
  return out;
}

Report BuildReport(std::string sandbox_command,
                   std::vector<BinaryResult> binaries) {
  Report r;
  r.sandbox_command = std::move(sandbox_command);
  r.binaries = std::move(binaries);
  for (const BinaryResult& b : r.binaries) {
    ModeCases native = Collect(b.native);
    bool sandbox_ran = b.sandbox.has_value() && b.sandbox->ran;
    r.sandbox_ran |= sandbox_ran;
    ModeCases sandbox;
    if (sandbox_ran) sandbox = Collect(*b.sandbox);

    std::vector<std::string> names = native.order;
    for (const std::string& n : sandbox.order) {
      if (!native.by_name.contains(n)) names.push_back(n);
    }
    for (const std::string& n : names) {
      CaseRow row;
      row.binary = b.name;
      row.name = n;
      if (auto it = native.by_name.find(n); it != native.by_name.end()) {
        std::tie(row.native, row.native_output, row.native_ms) = it->second;
      } else {
        row.native = Outcome::kMissing;
      }
      if (sandbox_ran) {
        if (auto it = sandbox.by_name.find(n); it != sandbox.by_name.end()) {
          std::tie(row.sandbox, row.sandbox_output, row.sandbox_ms) =
              it->second;
        } else {
          row.sandbox = Outcome::kMissing;
          row.sandbox_output = "[runner] the case did not run in the sandbox";
        }
      }
      r.rows.push_back(std::move(row));
    }
    if (native.process_problem.has_value() ||
        sandbox.process_problem.has_value()) {
      CaseRow row;
      row.binary = b.name;
      row.name = std::string(kProcessCase);
      row.native = native.process_problem ? Outcome::kFailed : Outcome::kPassed;
      row.native_output = native.process_problem.value_or("");
      if (sandbox_ran) {
        row.sandbox =
            sandbox.process_problem ? Outcome::kFailed : Outcome::kPassed;
        row.sandbox_output = sandbox.process_problem.value_or("");
      }
      r.rows.push_back(std::move(row));
    }
  }
  for (CaseRow& row : r.rows) {
    row.native_failure = IsBad(row.native);
    if (row.sandbox != Outcome::kNotRun) {
      bool native_ok = row.native == Outcome::kPassed ||
                       row.native == Outcome::kSkipped ||
                       row.native == Outcome::kMissing;
      bool sandbox_ok =
          row.sandbox == Outcome::kPassed ||
          (row.sandbox == Outcome::kSkipped && row.native != Outcome::kPassed);
      row.regression = native_ok && !sandbox_ok;
    }
    // The process row is a failure or nothing: it never adds a pass.
    bool process_row = row.name == kProcessCase;
    if (row.native != Outcome::kMissing &&
        !(process_row && row.native == Outcome::kPassed)) {
      Count(row.native, &r.native_passed, &r.native_failed, &r.native_skipped);
    }
    if (row.sandbox != Outcome::kNotRun &&
        !(process_row && row.sandbox == Outcome::kPassed)) {
      Count(row.sandbox, &r.sandbox_passed, &r.sandbox_failed,
            &r.sandbox_skipped);
    }
    r.regressions += row.regression;
  }
  return r;
}

std::string FormatTable(const Report& r) {
  size_t bw = 6, cw = 4;
  for (const CaseRow& row : r.rows) {
    bw = std::max(bw, row.binary.size());
    cw = std::max(cw, row.name.size());
  }
  bw = std::min<size_t>(bw, 40);
  cw = std::min<size_t>(cw, 80);
  std::string out = absl::StrFormat("%-*s  %-*s  %-8s  %s\n", bw, "BINARY", cw,
                                    "CASE", "NATIVE", "SANDBOX");
  for (const CaseRow& row : r.rows) {
    std::string note;
    if (row.regression) note = "  <- REGRESSION";
    if (row.expected_failure)
      note = "  (expected: " + row.expected_reason + ")";
    if (row.unexpected_pass) {
      note = "  <- NOW PASSES: remove it from " + r.expectations_file;
    }
    absl::StrAppendFormat(&out, "%-*s  %-*s  %-8s  %-8s%s\n", bw,
                          Sanitize(row.binary), cw, Sanitize(row.name),
                          OutcomeName(row.native), OutcomeName(row.sandbox),
                          Sanitize(note));
  }
  absl::StrAppendFormat(&out,
                        "native: %d passed, %d failed, %d skipped "
                        "(%d binaries)\n",
                        r.native_passed, r.native_failed, r.native_skipped,
                        r.binaries.size());
  if (r.sandbox_command.empty()) {
    out += "sandbox: not run (no --sandbox given)\n";
  } else if (!r.sandbox_ran) {
    std::string why = "not run";
    for (const BinaryResult& b : r.binaries) {
      if (b.sandbox.has_value() && !b.sandbox->ran) {
        why = b.sandbox->not_run_reason;
        break;
      }
    }
    absl::StrAppendFormat(&out, "sandbox (%s): NOT RUN: %s\n",
                          Sanitize(r.sandbox_command), Sanitize(why));
  } else {
    absl::StrAppendFormat(
        &out,
        "sandbox (%s): %d passed, %d failed, %d skipped; %d regressions\n",
        Sanitize(r.sandbox_command), r.sandbox_passed, r.sandbox_failed,
        r.sandbox_skipped, r.regressions);
  }
  if (!r.expectations_file.empty()) {
    absl::StrAppendFormat(&out,
                          "expected failures (%s): %d failed as expected, %d "
                          "now pass, %d did not run\n",
                          Sanitize(r.expectations_file), r.expected_failures,
                          r.unexpected_passes, r.unused_expectations.size());
  }
  if (r.regressions > 0) {
    out += "pass natively but not in the sandbox:\n";
    for (const CaseRow& row : r.rows) {
      if (row.regression) {
        absl::StrAppendFormat(&out, "  %s %s: %s\n", Sanitize(row.binary),
                              Sanitize(row.name), OutcomeName(row.sandbox));
      }
    }
  }
  if (r.unexpected_passes > 0) {
    absl::StrAppendFormat(&out, "now passes: remove it from %s:\n",
                          Sanitize(r.expectations_file));
    for (const CaseRow& row : r.rows) {
      if (row.unexpected_pass) {
        absl::StrAppendFormat(&out, "  %s %s: %s\n", Sanitize(row.binary),
                              Sanitize(row.name), OutcomeName(row.sandbox));
      }
    }
  }
  if (!r.unused_expectations.empty()) {
    absl::StrAppendFormat(&out, "listed but did not run: remove it from %s:\n",
                          Sanitize(r.expectations_file));
    for (const UnusedExpectation& u : r.unused_expectations) {
      absl::StrAppendFormat(&out, "  %s %s\n", Sanitize(u.binary),
                            Sanitize(u.name));
    }
  }
  return out;
}

std::string FormatFailureDetails(const Report& r) {
  std::string out;
  for (const CaseRow& row : r.rows) {
    if (row.native_failure) {
      absl::StrAppendFormat(&out, "==== %s %s: native %s\n%s\n",
                            Sanitize(row.binary), Sanitize(row.name),
                            OutcomeName(row.native),
                            Sanitize(row.native_output));
    }
    if (row.regression) {
      absl::StrAppendFormat(&out, "==== %s %s: sandbox %s\n%s\n",
                            Sanitize(row.binary), Sanitize(row.name),
                            OutcomeName(row.sandbox),
                            Sanitize(row.sandbox_output));
    }
  }
  return out;
}

std::string FormatJson(const Report& r) {
  std::string out = "{\n";
  absl::StrAppend(
      &out, "  \"sandbox_command\": ", JsonString(r.sandbox_command),
      ",\n  \"sandbox_ran\": ", r.sandbox_ran ? "true" : "false", ",\n");
  absl::StrAppendFormat(
      &out,
      "  \"summary\": {\"native\": {\"passed\": %d, \"failed\": %d, "
      "\"skipped\": %d}, \"sandbox\": {\"passed\": %d, \"failed\": %d, "
      "\"skipped\": %d}, \"regressions\": %d, \"expected_failures\": %d, "
      "\"unexpected_passes\": %d, \"unused_expectations\": %d, "
      "\"exit_status\": %d},\n",
      r.native_passed, r.native_failed, r.native_skipped, r.sandbox_passed,
      r.sandbox_failed, r.sandbox_skipped, r.regressions, r.expected_failures,
      r.unexpected_passes, r.unused_expectations.size(), r.ExitStatus());
  absl::StrAppend(&out,
                  "  \"expectations_file\": ", JsonString(r.expectations_file),
                  ",\n");
  out += "  \"binaries\": [";
  for (size_t i = 0; i < r.binaries.size(); ++i) {
    const BinaryResult& b = r.binaries[i];
    absl::StrAppend(
        &out, i ? ",\n" : "\n", "    {\"name\": ", JsonString(b.name),
        ", \"path\": ", JsonString(b.path), ", \"native\": ", JsonRun(b.native),
        ", \"sandbox\": ", b.sandbox ? JsonRun(*b.sandbox) : "null", "}");
  }
  out += "\n  ],\n  \"cases\": [";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const CaseRow& row = r.rows[i];
    absl::StrAppend(
        &out, i ? ",\n" : "\n", "    {\"binary\": ", JsonString(row.binary),
        ", \"case\": ", JsonString(row.name), ", \"native\": \"",
        OutcomeName(row.native), "\", \"sandbox\": \"",
        OutcomeName(row.sandbox), "\", \"native_ms\": ", row.native_ms,
        ", \"sandbox_ms\": ", row.sandbox_ms,
        ", \"regression\": ", row.regression ? "true" : "false",
        ", \"expected_failure\": ", row.expected_failure ? "true" : "false",
        ", \"unexpected_pass\": ", row.unexpected_pass ? "true" : "false");
    if (row.expected_failure || row.unexpected_pass) {
      absl::StrAppend(
          &out, ", \"expected_reason\": ", JsonString(row.expected_reason));
    }
    if (row.native_failure) {
      absl::StrAppend(&out,
                      ", \"native_output\": ", JsonString(row.native_output));
    }
    if (row.regression || row.expected_failure) {
      absl::StrAppend(&out,
                      ", \"sandbox_output\": ", JsonString(row.sandbox_output));
    }
    out += "}";
  }
  auto names = [&](auto pick) {
    std::vector<std::string> list;
    for (const CaseRow& row : r.rows) {
      if (pick(row)) {
        list.push_back(JsonString(absl::StrCat(row.binary, " ", row.name)));
      }
    }
    return absl::StrCat("[", absl::StrJoin(list, ", "), "]");
  };
  std::vector<std::string> unused;
  for (const UnusedExpectation& u : r.unused_expectations) {
    unused.push_back(JsonString(absl::StrCat(u.binary, " ", u.name)));
  }
  absl::StrAppend(&out, "\n  ],\n  \"regressions\": ",
                  names([](const CaseRow& row) { return row.regression; }),
                  ",\n  \"expected_failures\": ", names([](const CaseRow& row) {
                    return row.expected_failure;
                  }),
                  ",\n  \"unexpected_passes\": ",
                  names([](const CaseRow& row) { return row.unexpected_pass; }),
                  ",\n  \"unused_expectations\": [",
                  absl::StrJoin(unused, ", "), "]");
  out += "\n}\n";
  return out;
}

std::string FormatXml(const Report& r, XmlModes modes) {
  struct Suite {
    std::string name;
    std::string body;
    int tests = 0, failures = 0, skipped = 0;
  };
  std::vector<Suite> suites;
  std::map<std::string, size_t> index;
  auto suite = [&](const std::string& name) -> Suite& {
    auto [it, inserted] = index.try_emplace(name, suites.size());
    if (inserted) suites.push_back(Suite{name});
    return suites[it->second];
  };
  enum class Kind { kPass, kSkip, kFail };
  // One testcase; `message` and `output` describe a skip or a failure.
  auto add = [&](const std::string& binary, const std::string& name,
                 const std::string& mode, int64_t ms, Kind kind,
                 const std::string& message, const std::string& output) {
    Suite& s = suite(absl::StrCat(binary, ".", mode));
    ++s.tests;
    absl::StrAppendFormat(
        &s.body,
        "    <testcase name=\"%s\" status=\"run\" result=\"%s\" "
        "time=\"%.3f\" classname=\"%s\"",
        XmlAttr(name), kind == Kind::kSkip ? "skipped" : "completed",
        ms > 0 ? ms / 1000.0 : 0.0, XmlAttr(s.name));
    switch (kind) {
      case Kind::kFail:
        ++s.failures;
        absl::StrAppend(&s.body, ">\n      <failure message=\"",
                        XmlAttr(message), "\" type=\"\">", XmlCdata(output),
                        "</failure>\n    </testcase>\n");
        break;
      case Kind::kSkip:
        ++s.skipped;
        absl::StrAppend(&s.body, ">\n      <skipped message=\"",
                        XmlAttr(message), "\"/>\n    </testcase>\n");
        break;
      case Kind::kPass:
        s.body += " />\n";
        break;
    }
  };
  auto passing_process_row = [](const CaseRow& row, Outcome o) {
    return row.name == kProcessCase && o == Outcome::kPassed;
  };
  for (const CaseRow& row : r.rows) {
    if (!modes.native || row.native == Outcome::kMissing ||
        passing_process_row(row, row.native)) {
      continue;
    }
    Kind kind = row.native_failure                ? Kind::kFail
                : row.native == Outcome::kSkipped ? Kind::kSkip
                                                  : Kind::kPass;
    add(row.binary, row.name, "native", row.native_ms, kind,
        absl::StrCat("native ", OutcomeName(row.native)), row.native_output);
  }
  for (const CaseRow& row : r.rows) {
    if (!modes.sandbox || row.sandbox == Outcome::kNotRun ||
        passing_process_row(row, row.sandbox)) {
      continue;
    }
    std::string message = absl::StrCat("sandbox ", OutcomeName(row.sandbox));
    Kind kind = row.sandbox == Outcome::kSkipped ? Kind::kSkip : Kind::kPass;
    if (row.expected_failure) {
      kind = Kind::kSkip;
      absl::StrAppend(&message, ": expected failure (", r.expectations_file,
                      "): ", row.expected_reason);
    } else if (row.unexpected_pass) {
      kind = Kind::kFail;
      absl::StrAppend(&message, " but listed as an expected failure (",
                      row.expected_reason, "): now passes: remove it from ",
                      r.expectations_file);
    } else if (row.regression || IsBad(row.sandbox)) {
      kind = Kind::kFail;
      if (row.regression) message += " (passes natively)";
    }
    add(row.binary, row.name, "sandbox", row.sandbox_ms, kind, message,
        kind == Kind::kFail ? row.sandbox_output : "");
  }
  if (modes.sandbox) {
    for (const UnusedExpectation& u : r.unused_expectations) {
      add(u.binary, u.name, "sandbox", 0, Kind::kFail,
          absl::StrCat("listed as an expected failure but did not run: "
                       "remove it from ",
                       r.expectations_file),
          "");
    }
  }
  int tests = 0, failures = 0, skipped = 0;
  for (const Suite& s : suites) {
    tests += s.tests;
    failures += s.failures;
    skipped += s.skipped;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  absl::StrAppendFormat(&out,
                        "<testsuites tests=\"%d\" failures=\"%d\" "
                        "disabled=\"0\" errors=\"0\" skipped=\"%d\" "
                        "name=\"AllTests\">\n",
                        tests, failures, skipped);
  for (const Suite& s : suites) {
    absl::StrAppendFormat(&out,
                          "  <testsuite name=\"%s\" tests=\"%d\" "
                          "failures=\"%d\" disabled=\"0\" skipped=\"%d\" "
                          "errors=\"0\">\n",
                          XmlAttr(s.name), s.tests, s.failures, s.skipped);
    out += s.body;
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace sandbox::syscall_test
