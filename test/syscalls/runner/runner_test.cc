// End-to-end tests of the runner binary on testdata/sample_test.cc, with
// testdata/fake_sandbox.sh standing in for runsc.
//
// Usage (from BUILD): runner_test RUNNER SAMPLE_TEST FAKE_SANDBOX
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/syscalls/runner/subprocess.h"

namespace sandbox::syscall_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string g_runner, g_sample, g_fake_sandbox;

struct RunnerOutput {
  SubprocessResult process;
  std::string console;
  std::string json;
  std::string xml;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RunnerOutput RunRunner(std::vector<std::string> flags,
                       std::vector<std::string> extra_env = {},
                       std::vector<std::string> binaries = {}) {
  RunnerOutput out;
  absl::StatusOr<std::string> dir = MakeTempDir("/tmp", "runner_test.");
  EXPECT_TRUE(dir.ok()) << dir.status();
  if (!dir.ok()) return out;
  std::string json = *dir + "/report.json";
  std::string xml = *dir + "/report.xml";
  SubprocessOptions opts;
  opts.argv = {g_runner, "--json=" + json, "--xml=" + xml};
  opts.argv.insert(opts.argv.end(), flags.begin(), flags.end());
  if (binaries.empty()) binaries = {g_sample};
  opts.argv.insert(opts.argv.end(), binaries.begin(), binaries.end());
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("XML_OUTPUT_FILE=", 0) != 0) {
      opts.env.emplace_back(*e);
    }
  }
  opts.env.insert(opts.env.end(), extra_env.begin(), extra_env.end());
  opts.cwd = *dir;
  opts.timeout = absl::Seconds(60);
  absl::StatusOr<SubprocessResult> res = RunSubprocess(
      opts, [&](std::string_view chunk) { out.console.append(chunk); });
  EXPECT_TRUE(res.ok()) << res.status();
  if (res.ok()) out.process = *res;
  out.json = ReadFile(json);
  out.xml = ReadFile(xml);
  RemoveTree(*dir);
  return out;
}

std::string Row(const std::string& name, const std::string& native,
                const std::string& sandbox) {
  return "\"case\": \"" + name + "\", \"native\": \"" + native +
         "\", \"sandbox\": \"" + sandbox + "\"";
}

TEST(RunnerTest, NativeOnlyPassesAndSkips) {
  RunnerOutput r =
      RunRunner({"--gtest_filter=Sample.Passes:Sample.SkipsEverywhere:"
                 "Sample.ChecksItsDirectory:Sample.OnlyStdioIsOpen"});
  EXPECT_EQ(r.process.exit_code, 0) << r.console;
  EXPECT_THAT(r.json, HasSubstr(Row("Sample.Passes", "PASSED", "NOT_RUN")));
  EXPECT_THAT(r.json,
              HasSubstr(Row("Sample.SkipsEverywhere", "SKIPPED", "NOT_RUN")));
  EXPECT_THAT(r.json,
              HasSubstr(Row("Sample.ChecksItsDirectory", "PASSED", "NOT_RUN")));
  EXPECT_THAT(r.json,
              HasSubstr(Row("Sample.OnlyStdioIsOpen", "PASSED", "NOT_RUN")));
  EXPECT_THAT(r.console, HasSubstr("native: 3 passed, 0 failed, 1 skipped"));
  EXPECT_THAT(r.xml, HasSubstr("<testsuites tests=\"4\" failures=\"0\""));
  EXPECT_THAT(r.xml, HasSubstr("<testsuite name=\"sample_test.native\""));
  EXPECT_THAT(r.xml, HasSubstr("<skipped message="));
}

TEST(RunnerTest, NativeFailureFailsTheRun) {
  RunnerOutput r =
      RunRunner({"--gtest_filter=Sample.FailsWhenAsked"}, {"SAMPLE_FAIL=1"});
  EXPECT_EQ(r.process.exit_code, 1) << r.console;
  EXPECT_THAT(r.json,
              HasSubstr(Row("Sample.FailsWhenAsked", "FAILED", "NOT_RUN")));
  EXPECT_THAT(r.console, HasSubstr("asked to fail"));
  EXPECT_THAT(r.xml, HasSubstr("failures=\"1\""));
  EXPECT_THAT(r.xml, HasSubstr("<failure message=\"native FAILED\""));
}

TEST(RunnerTest, SandboxRegressionsAreReported) {
  RunnerOutput r = RunRunner({"--sandbox=" + g_fake_sandbox + " --",
                              "--gtest_filter=Sample.*:SampleZ.Crashes*"});
  EXPECT_EQ(r.process.exit_code, 1) << r.console;
  EXPECT_THAT(r.json, HasSubstr(Row("Sample.Passes", "PASSED", "PASSED") +
                                ", \"native_ms\": 0, \"sandbox_ms\": 0, "
                                "\"regression\": false"));
  EXPECT_THAT(r.json,
              HasSubstr(Row("Sample.SkipsEverywhere", "SKIPPED", "SKIPPED")));
  // Skipped only in the sandbox counts as a failure.
  EXPECT_THAT(r.json,
              HasSubstr(Row("Sample.SkipsInSandbox", "PASSED", "SKIPPED")));
  EXPECT_THAT(r.json,
              HasSubstr(Row("Sample.FailsInSandbox", "PASSED", "FAILED")));
  EXPECT_THAT(r.json,
              HasSubstr(Row("SampleZ.CrashesInSandbox", "PASSED", "CRASHED")));
  EXPECT_THAT(r.json, HasSubstr("\"regressions\": 3"));
  EXPECT_THAT(r.console, HasSubstr("pass natively but not in the sandbox:"));
  EXPECT_THAT(r.console,
              HasSubstr("sample_test SampleZ.CrashesInSandbox: CRASHED"));
  EXPECT_THAT(r.console, HasSubstr("killed by signal 11"));
  // Hostile output is escaped in the XML and JSON.
  EXPECT_THAT(r.xml, HasSubstr("]]]]><![CDATA[>"));
  EXPECT_THAT(r.xml, HasSubstr("\\x01"));
  EXPECT_THAT(r.xml, Not(HasSubstr("\x01")));
  EXPECT_THAT(r.json, Not(HasSubstr("\x01")));
  EXPECT_THAT(r.xml, HasSubstr("<testsuite name=\"sample_test.sandbox\""));
  EXPECT_THAT(r.xml, HasSubstr("sandbox SKIPPED (passes natively)"));
}

TEST(RunnerTest, SandboxAgreeingWithNativePasses) {
  RunnerOutput r = RunRunner(
      {"--sandbox=" + g_fake_sandbox + " --", "--gtest_filter=Sample.Passes"});
  EXPECT_EQ(r.process.exit_code, 0) << r.console;
  EXPECT_THAT(r.json, HasSubstr(Row("Sample.Passes", "PASSED", "PASSED")));
  EXPECT_THAT(r.xml, HasSubstr("<testsuites tests=\"2\" failures=\"0\""));
}

// "{TMPDIR}" in the sandbox prefix is the run's working directory.
TEST(RunnerTest, TmpdirPlaceholderIsTheRunsDirectory) {
  RunnerOutput r =
      RunRunner({"--sandbox=" + g_fake_sandbox + " --cwd-must-be={TMPDIR} --",
                 "--gtest_filter=Sample.Passes"});
  EXPECT_EQ(r.process.exit_code, 0) << r.console;
  EXPECT_THAT(r.json, HasSubstr(Row("Sample.Passes", "PASSED", "PASSED")));
  r = RunRunner({"--sandbox=" + g_fake_sandbox + " --cwd-must-be=/ --",
                 "--gtest_filter=Sample.Passes"});
  EXPECT_EQ(r.process.exit_code, 1) << "the check itself can fail";
}

TEST(RunnerTest, TimeoutKillsTheWholeGroup) {
  absl::Time start = absl::Now();
  RunnerOutput r = RunRunner(
      {"--timeout=1s", "--gtest_filter=Sample.Passes:SampleZ.HangsWhenAsked"},
      {"SAMPLE_HANG=1"});
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  EXPECT_EQ(r.process.exit_code, 1) << r.console;
  EXPECT_THAT(r.json, HasSubstr(Row("Sample.Passes", "PASSED", "NOT_RUN")));
  EXPECT_THAT(r.json,
              HasSubstr(Row("SampleZ.HangsWhenAsked", "TIMEOUT", "NOT_RUN")));
  EXPECT_THAT(r.console, HasSubstr("timed out after"));
}

TEST(RunnerTest, MissingSandboxProgram) {
  RunnerOutput r = RunRunner(
      {"--sandbox=/nonexistent/runsc do --", "--gtest_filter=Sample.Passes"});
  EXPECT_EQ(r.process.exit_code, 2) << r.console;
  EXPECT_THAT(r.console, HasSubstr("'/nonexistent/runsc' not found"));

  r = RunRunner({"--sandbox=/nonexistent/runsc do --", "--sandbox_optional",
                 "--gtest_filter=Sample.Passes"});
  EXPECT_EQ(r.process.exit_code, 0) << r.console;
  EXPECT_THAT(r.console, HasSubstr("NOT RUN: sandbox program"));
  EXPECT_THAT(r.json, HasSubstr(Row("Sample.Passes", "PASSED", "NOT_RUN")));
}

TEST(RunnerTest, BinaryWithoutCasesFails) {
  RunnerOutput r = RunRunner({}, {}, {"/bin/true"});
  EXPECT_EQ(r.process.exit_code, 1) << r.console;
  EXPECT_THAT(r.json, HasSubstr(Row("(process)", "FAILED", "NOT_RUN")));
  EXPECT_THAT(r.console, HasSubstr("no test case ran"));
}

// An expectation file in a fresh directory; removed with the fixture.
class ExpectedFailuresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> dir = MakeTempDir("/tmp", "expected.");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    path_ = dir_ + "/expected.txt";
  }
  void TearDown() override { RemoveTree(dir_); }

  void Write(const std::string& text) {
    std::ofstream(path_, std::ios::trunc) << text;
  }

  // The sandbox run of these fails FailsInSandbox and SkipsInSandbox.
  RunnerOutput Run(std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = {
        "--sandbox=" + g_fake_sandbox + " --",
        "--gtest_filter=Sample.Passes:Sample.FailsInSandbox:"
        "Sample.SkipsInSandbox",
        "--expected_failures=" + path_};
    flags.insert(flags.end(), extra.begin(), extra.end());
    return RunRunner(flags);
  }

  std::string dir_, path_;
};

TEST_F(ExpectedFailuresTest, ListedFailuresPass) {
  Write(
      "# known\n"
      "sample_test Sample.FailsInSandbox  # clone: fork not implemented yet\n"
      "sample_test Sample.SkipsInSandbox  # no capability\n");
  RunnerOutput r = Run({"--xml_modes=sandbox"});
  EXPECT_EQ(r.process.exit_code, 0) << r.console;
  EXPECT_THAT(r.console, HasSubstr("(expected: clone: fork not implemented"));
  EXPECT_THAT(r.console, HasSubstr("2 failed as expected, 0 now pass"));
  // Only the sandbox suite, with the expected failures as skipped cases.
  EXPECT_THAT(r.xml, Not(HasSubstr("sample_test.native")));
  EXPECT_THAT(r.xml, HasSubstr("<testsuites tests=\"3\" failures=\"0\" "
                               "disabled=\"0\" errors=\"0\" skipped=\"2\""));
  EXPECT_THAT(r.xml, HasSubstr("expected failure"));
}

TEST_F(ExpectedFailuresTest, UnlistedFailureIsARegression) {
  Write("sample_test Sample.SkipsInSandbox  # no capability\n");
  RunnerOutput r = Run();
  EXPECT_EQ(r.process.exit_code, 1) << r.console;
  EXPECT_THAT(r.console,
              HasSubstr("pass natively but not in the sandbox:\n"
                        "  sample_test Sample.FailsInSandbox: FAILED"));
}

TEST_F(ExpectedFailuresTest, ListedCaseThatPassesFailsTheRun) {
  Write(
      "sample_test Sample.FailsInSandbox  # a\n"
      "sample_test Sample.SkipsInSandbox  # b\n"
      "sample_test Sample.Passes  # fixed since\n");
  RunnerOutput r = Run();
  EXPECT_EQ(r.process.exit_code, 1) << r.console;
  EXPECT_THAT(r.console, HasSubstr("now passes: remove it from " + path_ +
                                   ":\n  sample_test Sample.Passes: PASSED"));
  EXPECT_THAT(r.xml, HasSubstr("now passes: remove it from"));
}

TEST_F(ExpectedFailuresTest, BadOrMissingFileIsAUsageError) {
  Write("sample_test Sample.Passes extra words\n");
  RunnerOutput r = Run();
  EXPECT_EQ(r.process.exit_code, 2) << r.console;
  EXPECT_THAT(r.console, HasSubstr("line 1"));
  RemoveTree(path_);
  r = Run();
  EXPECT_EQ(r.process.exit_code, 2) << r.console;
  EXPECT_THAT(r.console, HasSubstr("cannot read"));
  r = RunRunner({"--xml_modes=native,bogus", "--gtest_filter=Sample.Passes"});
  EXPECT_EQ(r.process.exit_code, 2) << r.console;
}

TEST_F(ExpectedFailuresTest, UpdateRewritesTheFile) {
  Write(
      "# header kept\n\n"
      "sample_test Sample.FailsInSandbox  # reason kept\n"
      "sample_test Sample.Passes  # fixed since\n"
      "other_test Other.Case  # other binary: kept\n");
  // The update needs every case of the binary: no --gtest_filter.
  RunnerOutput r = RunRunner(
      {"--sandbox=" + g_fake_sandbox + " --", "--expected_failures=" + path_,
       "--update_expected_failures", "--gtest_filter=Sample.Passes"});
  EXPECT_EQ(r.process.exit_code, 2) << r.console;
  r = RunRunner({"--sandbox=" + g_fake_sandbox + " --",
                 "--expected_failures=" + path_, "--update_expected_failures"});
  EXPECT_EQ(r.process.exit_code, 0) << r.console;
  EXPECT_EQ(ReadFile(path_),
            "# header kept\n\n"
            "other_test Other.Case  # other binary: kept\n"
            "sample_test Sample.FailsInSandbox  # reason kept\n"
            "sample_test Sample.SkipsInSandbox  # sandbox SKIPPED: TODO find "
            "the cause\n"
            "sample_test SampleZ.CrashesInSandbox  # sandbox CRASHED: TODO "
            "find the cause\n"
            // MISSING after the crash, but passes when run alone.
            "sample_test SampleZ.HangsWhenAsked  # passes alone: an earlier "
            "case of the run breaks it\n");
  // The file now matches the run.
  r = RunRunner(
      {"--sandbox=" + g_fake_sandbox + " --", "--expected_failures=" + path_});
  EXPECT_EQ(r.process.exit_code, 0) << r.console;
}

TEST(RunnerTest, UsageErrors) {
  RunnerOutput r = RunRunner({}, {}, {"/nonexistent/binary"});
  EXPECT_EQ(r.process.exit_code, 2) << r.console;
}

}  // namespace
}  // namespace sandbox::syscall_test

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc != 4) {
    fprintf(stderr, "usage: %s RUNNER SAMPLE_TEST FAKE_SANDBOX\n", argv[0]);
    return 2;
  }
  char buf[4096];
  auto abs = [&](const char* p) {
    return realpath(p, buf) != nullptr ? std::string(buf) : std::string(p);
  };
  sandbox::syscall_test::g_runner = abs(argv[1]);
  sandbox::syscall_test::g_sample = abs(argv[2]);
  sandbox::syscall_test::g_fake_sandbox = abs(argv[3]);
  return RUN_ALL_TESTS();
}
