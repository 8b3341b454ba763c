#include "test/syscalls/runner/report.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/syscalls/runner/report_testing.h"

namespace sandbox::syscall_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

BinaryResult Binary(RunResult native, std::optional<RunResult> sandbox = {}) {
  return Binary("t", std::move(native), std::move(sandbox));
}

const CaseRow* Find(const Report& r, const std::string& name) {
  for (const CaseRow& row : r.rows) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

TEST(ReportTest, NativeOnly) {
  Report r = BuildReport("", {Binary(Ran({{"A.a", CaseStatus::kPassed},
                                          {"A.b", CaseStatus::kSkipped},
                                          {"A.c", CaseStatus::kFailed}},
                                         1))});
  EXPECT_EQ(r.native_passed, 1);
  EXPECT_EQ(r.native_skipped, 1);
  EXPECT_EQ(r.native_failed, 1);
  EXPECT_EQ(r.regressions, 0);
  EXPECT_EQ(r.ExitStatus(), 1);
  EXPECT_EQ(Find(r, std::string(kProcessCase)), nullptr)
      << "exit 1 is explained by the failed case";
  EXPECT_EQ(Find(r, "A.a")->sandbox, Outcome::kNotRun);
}

TEST(ReportTest, AllPassIsExitZero) {
  Report r = BuildReport("sb", {Binary(Ran({{"A.a", CaseStatus::kPassed}}),
                                       Ran({{"A.a", CaseStatus::kPassed}}))});
  EXPECT_EQ(r.ExitStatus(), 0);
  EXPECT_TRUE(r.sandbox_ran);
  EXPECT_EQ(r.sandbox_passed, 1);
}

TEST(ReportTest, SandboxDifferences) {
  Report r = BuildReport(
      "sb", {Binary(Ran({{"A.pass", CaseStatus::kPassed},
                         {"A.skip_only_sandbox", CaseStatus::kPassed},
                         {"A.skip_both", CaseStatus::kSkipped},
                         {"A.missing", CaseStatus::kPassed},
                         {"A.native_fails", CaseStatus::kFailed}},
                        1),
                    Ran({{"A.pass", CaseStatus::kPassed},
                         {"A.skip_only_sandbox", CaseStatus::kSkipped},
                         {"A.skip_both", CaseStatus::kSkipped},
                         {"A.native_fails", CaseStatus::kFailed},
                         {"A.sandbox_only", CaseStatus::kPassed}},
                        1))});
  EXPECT_FALSE(Find(r, "A.pass")->regression);
  EXPECT_TRUE(Find(r, "A.skip_only_sandbox")->regression);
  EXPECT_FALSE(Find(r, "A.skip_both")->regression);
  EXPECT_TRUE(Find(r, "A.missing")->regression);
  EXPECT_EQ(Find(r, "A.missing")->sandbox, Outcome::kMissing);
  EXPECT_FALSE(Find(r, "A.native_fails")->regression);
  EXPECT_TRUE(Find(r, "A.native_fails")->native_failure);
  EXPECT_EQ(Find(r, "A.sandbox_only")->native, Outcome::kMissing);
  EXPECT_FALSE(Find(r, "A.sandbox_only")->regression);
  EXPECT_EQ(r.regressions, 2);
  EXPECT_THAT(FormatTable(r),
              HasSubstr("pass natively but not in the sandbox"));
  EXPECT_THAT(FormatJson(r),
              HasSubstr("\"regressions\": [\"t A.skip_only_sandbox\", "
                        "\"t A.missing\"]"));
}

TEST(ReportTest, ProcessFailureWithoutFailedCase) {
  RunResult native = Ran({{"A.a", CaseStatus::kPassed}}, 0);
  RunResult sandbox = Ran({{"A.a", CaseStatus::kPassed}}, 0);
  sandbox.process.exit_code = -1;
  sandbox.process.signal = 6;
  sandbox.output_tail = "runsc: boom";
  Report r = BuildReport("sb", {Binary(native, sandbox)});
  const CaseRow* p = Find(r, std::string(kProcessCase));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->native, Outcome::kPassed);
  EXPECT_EQ(p->sandbox, Outcome::kFailed);
  EXPECT_TRUE(p->regression);
  EXPECT_THAT(p->sandbox_output, HasSubstr("runsc: boom"));
  EXPECT_EQ(r.native_passed, 1) << "a passing process row is not counted";
  // The passing native process row is not a testcase in the XML.
  std::string xml = FormatXml(r);
  EXPECT_THAT(xml, HasSubstr("<testsuites tests=\"3\" failures=\"1\""));
}

TEST(ReportTest, NoCasesIsAFailure) {
  Report r = BuildReport("", {Binary(Ran({}, 0))});
  EXPECT_EQ(r.native_failed, 1);
  EXPECT_EQ(r.ExitStatus(), 1);
}

TEST(ReportTest, NotStartedIsAFailure) {
  RunResult native;
  native.not_run_reason = "execve: Permission denied";
  Report r = BuildReport("", {Binary(native)});
  ASSERT_NE(Find(r, std::string(kProcessCase)), nullptr);
  EXPECT_THAT(Find(r, std::string(kProcessCase))->native_output,
              HasSubstr("Permission denied"));
  EXPECT_EQ(r.ExitStatus(), 1);
}

TEST(ReportTest, SandboxNotRunIsNoRegression) {
  RunResult sandbox;
  sandbox.not_run_reason = "sandbox program 'runsc' not found";
  Report r = BuildReport(
      "runsc do --", {Binary(Ran({{"A.a", CaseStatus::kPassed}}), sandbox)});
  EXPECT_FALSE(r.sandbox_ran);
  EXPECT_EQ(r.ExitStatus(), 0);
  EXPECT_THAT(FormatTable(r), HasSubstr("NOT RUN: sandbox program"));
}

TEST(ReportTest, TimeoutMarksTheRunningCase) {
  RunResult native =
      Ran({{"A.a", CaseStatus::kPassed}, {"A.hang", CaseStatus::kCrashed}}, -1);
  native.process.timed_out = true;
  Report r = BuildReport("", {Binary(native)});
  EXPECT_EQ(Find(r, "A.hang")->native, Outcome::kTimedOut);
  EXPECT_EQ(Find(r, std::string(kProcessCase)), nullptr);
}

TEST(ReportTest, RepeatedCaseKeepsWorstOutcome) {
  Report r = BuildReport(
      "",
      {Binary(Ran({{"A.a", CaseStatus::kPassed}, {"A.a", CaseStatus::kFailed}},
                  1))});
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].native, Outcome::kFailed);
}

TEST(ReportTest, SanitizeAndEscaping) {
  EXPECT_EQ(Sanitize("ok\n\t"), "ok\n\t");
  EXPECT_EQ(Sanitize(std::string("\x01\xff", 2)), "\\x01\\xff");
  RunResult native = Ran({{"A.\"q\\<&>", CaseStatus::kFailed}}, 1);
  native.cases[0].output = "msg ]]> \x02";
  Report r = BuildReport("", {Binary(native)});
  std::string json = FormatJson(r);
  EXPECT_THAT(json, HasSubstr("\"case\": \"A.\\\"q\\\\<&>\""));
  EXPECT_THAT(json, HasSubstr("msg ]]> \\\\x02"));
  std::string xml = FormatXml(r);
  EXPECT_THAT(xml, HasSubstr("name=\"A.&quot;q\\&lt;&amp;&gt;\""));
  EXPECT_THAT(xml, HasSubstr("msg ]]]]><![CDATA[> \\x02"));
  EXPECT_THAT(xml, Not(HasSubstr("\x02")));
}

TEST(ReportTest, OutcomeNames) {
  EXPECT_STREQ(OutcomeName(Outcome::kPassed), "PASSED");
  EXPECT_STREQ(OutcomeName(Outcome::kTimedOut), "TIMEOUT");
  EXPECT_STREQ(OutcomeName(Outcome::kMissing), "MISSING");
  EXPECT_STREQ(OutcomeName(Outcome::kNotRun), "NOT_RUN");
}

}  // namespace
}  // namespace sandbox::syscall_test
