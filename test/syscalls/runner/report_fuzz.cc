// Fuzzes the path from a test binary's output to the runner's reports: the
// input is split into a "native" and a "sandbox" output, parsed, compared,
// and rendered as table, JSON and XML. Checks that every rendering is
// printable ASCII (plus \n and \t) whatever bytes the programs printed.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "test/syscalls/runner/expectations.h"
#include "test/syscalls/runner/gtest_console.h"
#include "test/syscalls/runner/report.h"

namespace {

void CheckPrintable(const std::string& s) {
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (!((c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t')) __builtin_trap();
  }
}

sandbox::syscall_test::RunResult Run(std::string_view output, int exit_code) {
  sandbox::syscall_test::RunResult r;
  r.ran = true;
  r.process.exit_code = exit_code;
  r.cases = sandbox::syscall_test::ParseGtestConsole(output);
  r.output_tail = std::string(output.substr(0, 256));
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view all(reinterpret_cast<const char*>(data) + 1, size - 1);
  // The first byte picks the split point and exit statuses.
  size_t split = all.size() * (data[0] & 0x0f) / 16;
  sandbox::syscall_test::BinaryResult b;
  b.name = "fuzz\x01name";
  b.path = "/p";
  b.native = Run(all.substr(0, split), (data[0] >> 4) & 1);
  b.sandbox = Run(all.substr(split), (data[0] >> 5) & 3);
  if (data[0] & 0x80) b.sandbox->process.timed_out = true;
  sandbox::syscall_test::Report r =
      sandbox::syscall_test::BuildReport("sb \"x\"", {b});
  // The input doubles as an expectation file (listing cases by their names).
  absl::StatusOr<sandbox::syscall_test::ExpectedFailures> expected =
      sandbox::syscall_test::ParseExpectedFailures(
          absl::string_view(all.data(), all.size()));
  if (expected.ok()) {
    sandbox::syscall_test::ApplyExpectedFailures(*expected, "exp\x02",
                                                 data[0] & 1, &r);
    sandbox::syscall_test::ExpectedFailures updated =
        sandbox::syscall_test::UpdatedExpectedFailures(
            r, *expected, [](const sandbox::syscall_test::CaseRow& row) {
              return sandbox::syscall_test::GuessReason(row.sandbox_output,
                                                        row.sandbox);
            });
    // What Format writes, Parse reads back to the same entries.
    absl::StatusOr<sandbox::syscall_test::ExpectedFailures> again =
        sandbox::syscall_test::ParseExpectedFailures(
            sandbox::syscall_test::FormatExpectedFailures(updated));
    if (!again.ok() || again->entries.size() != updated.entries.size()) {
      __builtin_trap();
    }
    for (const auto& e : updated.entries) {
      if (again->Find(e.binary, e.test_case) == nullptr) __builtin_trap();
    }
  }
  CheckPrintable(sandbox::syscall_test::FormatTable(r));
  CheckPrintable(sandbox::syscall_test::FormatFailureDetails(r));
  CheckPrintable(sandbox::syscall_test::FormatJson(r));
  std::string xml = sandbox::syscall_test::FormatXml(r);
  CheckPrintable(xml);
  // Every CDATA section ends, and no "]]>" appears outside one (the case
  // output may itself contain "<![CDATA[": inside a section that is text).
  size_t pos = 0;
  while (true) {
    size_t open = xml.find("<![CDATA[", pos);
    size_t stray = xml.find("]]>", pos);
    if (open == std::string::npos) {
      if (stray != std::string::npos) __builtin_trap();
      break;
    }
    if (stray < open) __builtin_trap();
    size_t end = xml.find("]]>", open + 9);
    if (end == std::string::npos) __builtin_trap();
    pos = end + 3;
  }
  if (r.ExitStatus() != 0 && r.ExitStatus() != 1) __builtin_trap();
  if (r.regressions < 0 || r.expected_failures < 0) __builtin_trap();
  return 0;
}
