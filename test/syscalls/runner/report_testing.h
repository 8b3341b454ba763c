// Builders of runner results for the runner's unit tests.
#ifndef TEST_SYSCALLS_RUNNER_REPORT_TESTING_H_
#define TEST_SYSCALLS_RUNNER_REPORT_TESTING_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "test/syscalls/runner/report.h"

namespace sandbox::syscall_test {

// A run that ended with `exit_code` after the given cases (1 ms each).
inline RunResult Ran(std::vector<std::pair<std::string, CaseStatus>> cases,
                     int exit_code = 0) {
  RunResult r;
  r.ran = true;
  r.process.exit_code = exit_code;
  for (auto& [name, status] : cases) {
    CaseResult c;
    c.name = name;
    c.status = status;
    c.duration_ms = 1;
    r.cases.push_back(c);
  }
  return r;
}

// A binary named `name` (at /x/NAME) with its native and sandbox runs.
inline BinaryResult Binary(std::string name, RunResult native,
                           std::optional<RunResult> sandbox) {
  BinaryResult b;
  b.name = name;
  b.path = "/x/" + name;
  b.native = std::move(native);
  b.sandbox = std::move(sandbox);
  return b;
}

}  // namespace sandbox::syscall_test

#endif  // TEST_SYSCALLS_RUNNER_REPORT_TESTING_H_
