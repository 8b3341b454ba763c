// Fuzzes GtestConsoleParser: it reads the output of untrusted programs.
// Checks the documented bounds and that chunking never changes the result.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "test/syscalls/runner/gtest_console.h"

namespace sandbox::syscall_test {
namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace
}  // namespace sandbox::syscall_test

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sandbox::syscall_test::CaseResult;
  using sandbox::syscall_test::Check;
  using sandbox::syscall_test::GtestConsoleParser;
  if (size == 0) {
    Check(sandbox::syscall_test::ParseGtestConsole("").empty());
    return 0;
  }
  // The first byte picks the chunk size for the second parse.
  size_t step = data[0] % 17 + 1;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

  GtestConsoleParser whole;
  whole.Feed(input);
  whole.Finish();

  GtestConsoleParser chunked;
  for (size_t i = 0; i < input.size(); i += step) {
    chunked.Feed(input.substr(i, step));
  }
  chunked.Finish();

  const std::vector<CaseResult>& a = whole.cases();
  const std::vector<CaseResult>& b = chunked.cases();
  Check(a.size() == b.size());
  Check(a.size() <= GtestConsoleParser::kMaxCases);
  for (size_t i = 0; i < a.size(); ++i) {
    Check(a[i].name == b[i].name);
    Check(a[i].status == b[i].status);
    Check(a[i].duration_ms == b[i].duration_ms);
    Check(a[i].output == b[i].output);
    Check(!a[i].name.empty());
    Check(a[i].name.size() <= GtestConsoleParser::kMaxNameLength);
    Check(a[i].output.size() <= GtestConsoleParser::kMaxCaseOutput);
    Check(a[i].duration_ms >= -1);
  }
  return 0;
}
