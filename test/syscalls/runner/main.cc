// The syscall test runner: runs gtest binaries natively and, optionally,
// under a sandbox command, and compares their per-case results.
//
//   runner [--sandbox="runsc do --"] [--expected_failures=FILE]
//          [--timeout=120s] [--json=FILE] [--xml=FILE] [--xml_modes=sandbox]
//          [--gtest_filter=PATTERN] BINARY...
//
// Each run gets a fresh temporary directory as its working directory (and as
// TEST_TMPDIR/TMPDIR), stdin from /dev/null, and a deadline after which its
// whole process group is killed. Results come from gtest's console output.
// Exit status: 0 when every native case passed or was skipped, nothing
// regressed in the sandbox and the expectation file (expectations.h) was
// exact; 1 otherwise; 2 on a usage or set-up error.
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "test/syscalls/runner/expectations.h"
#include "test/syscalls/runner/gtest_console.h"
#include "test/syscalls/runner/report.h"
#include "test/syscalls/runner/subprocess.h"

ABSL_FLAG(std::string, sandbox, "",
          "Command prefix for the sandbox run, e.g. \"runsc do --\" "
          "({TMPDIR} in it becomes the run's working directory); the "
          "binary's path is appended. Empty: native run only.");
ABSL_FLAG(bool, sandbox_optional, false,
          "If the sandbox command's program does not exist, say so and skip "
          "the sandbox run instead of failing.");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(120),
          "Deadline for each run of each binary.");
ABSL_FLAG(std::string, json, "", "Write the JSON report to this file.");
ABSL_FLAG(std::string, xml, "",
          "Write gtest-style XML (one testcase per binary, case and mode) "
          "here. Default: $XML_OUTPUT_FILE when set (as under bazel test).");
ABSL_FLAG(std::string, gtest_filter, "", "Passed on to each binary.");
ABSL_FLAG(std::string, tmpdir, "",
          "Parent of the per-run directories. Default /tmp (short paths "
          "leave room for Unix socket names), else $TMPDIR. "
          "\"{TEST_TMPDIR}\" in it becomes $TEST_TMPDIR (Bazel's per-test "
          "directory: on the host's root file system, so a sandbox whose "
          "root is the host's sees it, where /tmp is the sandbox's own).");
ABSL_FLAG(bool, stream, false, "Copy each run's output to stderr as it runs.");
ABSL_FLAG(std::string, expected_failures, "",
          "File of sandbox cases known to fail ('BINARY Suite.Case  # "
          "reason' lines): they do not fail the run, but a listed case that "
          "passes (or does not run) does.");
ABSL_FLAG(bool, update_expected_failures, false,
          "Rewrite --expected_failures from this run: every case that fails "
          "in the sandbox only, keeping the reasons already given. Fails only "
          "on native failures.");
ABSL_FLAG(std::string, xml_modes, "native,sandbox",
          "Modes whose suites go into the XML: native, sandbox or both.");

namespace sandbox::syscall_test {
namespace {

constexpr size_t kTailBytes = 8192;
constexpr char kTmpdirPlaceholder[] = "{TMPDIR}";
constexpr char kTestTmpdirPlaceholder[] = "{TEST_TMPDIR}";

// Environment for a test binary: ours minus what would make gtest write
// files or shard itself on the runner's behalf.
std::vector<std::string> ChildEnv(const std::string& tmpdir) {
  static constexpr const char* kDrop[] = {
      "XML_OUTPUT_FILE=",
      "GTEST_OUTPUT=",
      "TEST_PREMATURE_EXIT_FILE=",
      "TEST_SHARD_INDEX=",
      "TEST_TOTAL_SHARDS=",
      "TEST_SHARD_STATUS_FILE=",
      "GTEST_SHARD_INDEX=",
      "GTEST_TOTAL_SHARDS=",
      "GTEST_SHARD_STATUS_FILE=",
      "GTEST_FILTER=",
      "TEST_TMPDIR=",
      "TMPDIR=",
      "GTEST_COLOR=",
      "TESTBRIDGE_TEST_ONLY=",
  };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    bool drop = false;
    for (const char* d : kDrop) drop |= absl::StartsWith(*e, d);
    if (!drop) env.emplace_back(*e);
  }
  env.push_back("TEST_TMPDIR=" + tmpdir);
  env.push_back("TMPDIR=" + tmpdir);
  return env;
}

// Every "{TMPDIR}" in argv replaced by the run's working directory (so a
// sandbox prefix can bind it: --sandbox="runsc do --bind={TMPDIR} --").
std::vector<std::string> SubstituteTmpdir(std::vector<std::string> argv,
                                          const std::string& dir) {
  for (std::string& a : argv) {
    a = absl::StrReplaceAll(a, {{kTmpdirPlaceholder, dir}});
  }
  return argv;
}

std::string DefaultTmpParent() {
  if (access("/tmp", W_OK | X_OK) == 0) return "/tmp";
  const char* t = getenv("TMPDIR");
  return t != nullptr && *t != '\0' ? t : ".";
}

RunResult RunOnce(const std::vector<std::string>& argv,
                  const std::string& tmp_parent, absl::Duration timeout,
                  const std::string& label) {
  RunResult run;
  absl::StatusOr<std::string> dir = MakeTempDir(tmp_parent, "syscall_test.");
  if (!dir.ok()) {
    run.not_run_reason = std::string(dir.status().message());
    return run;
  }
  SubprocessOptions opts;
  opts.argv = SubstituteTmpdir(argv, *dir);
  opts.env = ChildEnv(*dir);
  opts.cwd = *dir;
  opts.timeout = timeout;
  GtestConsoleParser parser;
  bool stream = absl::GetFlag(FLAGS_stream);
  std::string tail;
  if (stream)
    std::cerr << "==== " << label << ": " << absl::StrJoin(argv, " ") << "\n";
  absl::StatusOr<SubprocessResult> res =
      RunSubprocess(opts, [&](std::string_view chunk) {
        parser.Feed(chunk);
        tail.append(chunk);
        if (tail.size() > 2 * kTailBytes)
          tail.erase(0, tail.size() - kTailBytes);
        if (stream) std::cerr.write(chunk.data(), chunk.size());
      });
  RemoveTree(*dir);
  parser.Finish();
  if (!res.ok()) {
    run.not_run_reason = std::string(res.status().message());
    return run;
  }
  run.ran = true;
  run.process = *res;
  run.cases = parser.cases();
  if (tail.size() > kTailBytes) tail.erase(0, tail.size() - kTailBytes);
  run.output_tail = std::move(tail);
  return run;
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  out.close();
  if (!out) {
    std::cerr << "runner: cannot write " << path << "\n";
    return false;
  }
  return true;
}

// A reason for a case newly added to the expectation file: the case runs
// alone in the sandbox, where the Sentry logs every unimplemented syscall
// the case reaches (in the full run it logs each only once per process).
std::string NewReason(const CaseRow& row, const Report& report,
                      const std::vector<std::string>& prefix,
                      const std::string& tmp_parent, absl::Duration timeout) {
  std::string output = row.sandbox_output;
  if (row.name == kProcessCase) return GuessReason(output, row.sandbox);
  for (const BinaryResult& b : report.binaries) {
    if (b.name != row.binary) continue;
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(),
                {b.path, "--gtest_color=no", "--gtest_filter=" + row.name});
    RunResult solo =
        RunOnce(argv, tmp_parent, timeout, row.binary + " " + row.name);
    if (solo.ran && solo.process.Succeeded() && solo.cases.size() == 1 &&
        solo.cases[0].status == CaseStatus::kPassed) {
      return "passes alone: an earlier case of the run breaks it";
    }
    for (const CaseResult& c : solo.cases) output += "\n" + c.output;
    break;
  }
  return GuessReason(output, row.sandbox);
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "runner [--sandbox=\"runsc do --\"] [flags] BINARY...\n"
      "Runs gtest binaries natively and in a sandbox and compares the cases.");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() < 2) {
    std::cerr << "runner: no test binary given (see --help)\n";
    return 2;
  }
  std::vector<std::string> binaries;
  for (size_t i = 1; i < args.size(); ++i) {
    char resolved[PATH_MAX];
    if (realpath(args[i], resolved) == nullptr || access(resolved, X_OK) != 0) {
      std::cerr << "runner: test binary " << args[i]
                << " not found or not executable\n";
      return 2;
    }
    binaries.emplace_back(resolved);
  }

  std::string sandbox_command = absl::GetFlag(FLAGS_sandbox);
  std::vector<std::string> prefix = absl::StrSplit(
      sandbox_command, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  std::string sandbox_missing;
  if (!prefix.empty()) {
    std::string exe = FindExecutable(prefix[0]);
    char resolved[PATH_MAX];
    if (exe.empty() || realpath(exe.c_str(), resolved) == nullptr) {
      sandbox_missing = absl::StrCat("sandbox program '", prefix[0],
                                     "' not found (not built yet?)");
      std::cerr << "runner: " << sandbox_missing << "\n";
      if (!absl::GetFlag(FLAGS_sandbox_optional)) {
        std::cerr << "runner: pass --sandbox_optional to run natively only\n";
        return 2;
      }
    } else {
      prefix[0] = resolved;
    }
  }

  XmlModes xml_modes{false, false};
  for (absl::string_view m : absl::StrSplit(absl::GetFlag(FLAGS_xml_modes), ',',
                                            absl::SkipWhitespace())) {
    m = absl::StripAsciiWhitespace(m);
    if (m == "native") {
      xml_modes.native = true;
    } else if (m == "sandbox") {
      xml_modes.sandbox = true;
    } else {
      std::cerr << "runner: --xml_modes: unknown mode '" << m << "'\n";
      return 2;
    }
  }

  std::string expected_path = absl::GetFlag(FLAGS_expected_failures);
  bool update = absl::GetFlag(FLAGS_update_expected_failures);
  ExpectedFailures expected;
  if (update &&
      (expected_path.empty() || prefix.empty() || !sandbox_missing.empty() ||
       !absl::GetFlag(FLAGS_gtest_filter).empty())) {
    std::cerr << "runner: --update_expected_failures needs "
                 "--expected_failures, a sandbox that exists, and no "
                 "--gtest_filter\n";
    return 2;
  }
  if (!expected_path.empty()) {
    std::optional<std::string> text = ReadFile(expected_path);
    if (!text.has_value() && !update) {
      std::cerr << "runner: cannot read " << expected_path << "\n";
      return 2;
    }
    absl::StatusOr<ExpectedFailures> parsed =
        ParseExpectedFailures(text.value_or(""));
    if (!parsed.ok()) {
      std::cerr << "runner: " << expected_path << ": "
                << parsed.status().message() << "\n";
      return 2;
    }
    expected = *std::move(parsed);
  }

  std::string tmp_parent = absl::GetFlag(FLAGS_tmpdir);
  if (absl::StrContains(tmp_parent, kTestTmpdirPlaceholder)) {
    const char* t = getenv("TEST_TMPDIR");
    if (t == nullptr || *t == '\0') {
      std::cerr << "runner: --tmpdir=" << tmp_parent
                << ": TEST_TMPDIR is not set\n";
      return 2;
    }
    tmp_parent = absl::StrReplaceAll(tmp_parent, {{kTestTmpdirPlaceholder, t}});
  }
  if (tmp_parent.empty()) tmp_parent = DefaultTmpParent();
  std::vector<std::string> gtest_args = {"--gtest_color=no"};
  if (!absl::GetFlag(FLAGS_gtest_filter).empty()) {
    gtest_args.push_back("--gtest_filter=" + absl::GetFlag(FLAGS_gtest_filter));
  }
  absl::Duration timeout = absl::GetFlag(FLAGS_timeout);

  std::vector<BinaryResult> results;
  for (const std::string& bin : binaries) {
    BinaryResult b;
    b.name = Basename(bin);
    b.path = bin;
    std::vector<std::string> native_argv = {bin};
    native_argv.insert(native_argv.end(), gtest_args.begin(), gtest_args.end());
    b.native = RunOnce(native_argv, tmp_parent, timeout, b.name + " native");
    if (!prefix.empty()) {
      if (!sandbox_missing.empty()) {
        b.sandbox = RunResult{};
        b.sandbox->not_run_reason = sandbox_missing;
      } else {
        std::vector<std::string> sb_argv = prefix;
        sb_argv.insert(sb_argv.end(), native_argv.begin(), native_argv.end());
        b.sandbox = RunOnce(sb_argv, tmp_parent, timeout, b.name + " sandbox");
      }
    }
    results.push_back(std::move(b));
  }

  Report report = BuildReport(sandbox_command, std::move(results));
  if (!expected_path.empty()) {
    ApplyExpectedFailures(expected, expected_path,
                          absl::GetFlag(FLAGS_gtest_filter).empty(), &report);
  }
  std::cout << FormatTable(report);
  std::string details = FormatFailureDetails(report);
  if (!details.empty()) std::cout << "\n" << details;
  std::cout.flush();

  bool files_ok = true;
  if (!absl::GetFlag(FLAGS_json).empty()) {
    files_ok &= WriteFile(absl::GetFlag(FLAGS_json), FormatJson(report));
  }
  std::string xml = absl::GetFlag(FLAGS_xml);
  if (xml.empty()) {
    const char* env = getenv("XML_OUTPUT_FILE");
    if (env != nullptr) xml = env;
  }
  if (!xml.empty()) files_ok &= WriteFile(xml, FormatXml(report, xml_modes));
  if (update) {
    ExpectedFailures updated = UpdatedExpectedFailures(
        report, expected, [&](const CaseRow& row) -> std::string {
          return NewReason(row, report, prefix, tmp_parent, timeout);
        });
    files_ok &= WriteFile(expected_path, FormatExpectedFailures(updated));
    std::cout << "runner: wrote " << updated.entries.size()
              << " expected failures to " << expected_path << "\n";
  }
  if (!files_ok) return 2;
  if (update) return report.native_failed > 0 ? 1 : 0;
  return report.ExitStatus();
}

}  // namespace
}  // namespace sandbox::syscall_test

int main(int argc, char** argv) {
  return sandbox::syscall_test::Main(argc, argv);
}
