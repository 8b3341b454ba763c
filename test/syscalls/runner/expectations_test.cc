#include "test/syscalls/runner/expectations.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/syscalls/runner/report.h"
#include "test/syscalls/runner/report_testing.h"

namespace sandbox::syscall_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const CaseRow* Find(const Report& r, const std::string& name) {
  for (const CaseRow& row : r.rows) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

ExpectedFailures MustParse(absl::string_view text) {
  absl::StatusOr<ExpectedFailures> e = ParseExpectedFailures(text);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? *std::move(e) : ExpectedFailures{};
}

TEST(ParseTest, LinesCommentsAndReasons) {
  ExpectedFailures e = MustParse(
      "# header 1\n"
      "\n"
      "# header 2\n"
      "\n"
      "t A.a  # clone: fork not implemented yet\n"
      "   \t\n"
      "# a comment between entries\n"
      "t\tA.b#no space # and a hash\r\n"
      "u (process)\n"
      "u B.c\n");
  EXPECT_EQ(e.header, "# header 1\n\n# header 2\n");
  ASSERT_EQ(e.entries.size(), 4u);
  EXPECT_EQ(e.entries[0].binary, "t");
  EXPECT_EQ(e.entries[0].test_case, "A.a");
  EXPECT_EQ(e.entries[0].reason, "clone: fork not implemented yet");
  EXPECT_EQ(e.entries[0].line, 5);
  EXPECT_EQ(e.entries[1].test_case, "A.b");
  EXPECT_EQ(e.entries[1].reason, "no space # and a hash");
  EXPECT_EQ(e.entries[2].test_case, "(process)");
  EXPECT_EQ(e.entries[3].reason, "");
  EXPECT_NE(e.Find("u", "B.c"), nullptr);
  EXPECT_EQ(e.Find("t", "B.c"), nullptr);
}

TEST(ParseTest, EmptyAndCommentOnly) {
  EXPECT_TRUE(MustParse("").entries.empty());
  ExpectedFailures e = MustParse("# only a header\n\n\n");
  EXPECT_TRUE(e.entries.empty());
  EXPECT_EQ(e.header, "# only a header\n");
}

TEST(ParseTest, Errors) {
  absl::StatusOr<ExpectedFailures> e =
      ParseExpectedFailures("t A.a\nt A.b extra # why\n");
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("line 2"));
  e = ParseExpectedFailures("t_only # reason\n");
  EXPECT_FALSE(e.ok());
  e = ParseExpectedFailures("t A.a # one\n# c\nt A.a # two\n");
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("line 3"));
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("listed twice"));
}

TEST(ParseTest, ArbitraryBytesDoNotCrash) {
  std::string junk;
  for (int i = 0; i < 256; ++i) junk.push_back(static_cast<char>(i));
  absl::StatusOr<ExpectedFailures> e = ParseExpectedFailures(junk);
  (void)e;
}

TEST(FormatTest, SortedAndRoundTrips) {
  ExpectedFailures e =
      MustParse("# head\n\nu B.b  # r2\nt A.a # r1\nt (process)\n");
  std::string text = FormatExpectedFailures(e);
  EXPECT_EQ(text, "# head\n\nt (process)\nt A.a  # r1\nu B.b  # r2\n");
  EXPECT_EQ(FormatExpectedFailures(MustParse(text)), text);
}

TEST(FormatTest, DefaultHeader) {
  EXPECT_THAT(FormatExpectedFailures({}),
              HasSubstr("tools/update-syscall-expectations.sh"));
}

// native: A.pass A.listed_fails A.listed_passes A.new_fail A.skip_both
// sandbox: A.pass PASSED, A.listed_fails FAILED, A.listed_passes PASSED,
//          A.new_fail FAILED, A.skip_both SKIPPED.
Report Sample() {
  return BuildReport("sb",
                     {Binary("t",
                             Ran({{"A.pass", CaseStatus::kPassed},
                                  {"A.listed_fails", CaseStatus::kPassed},
                                  {"A.listed_passes", CaseStatus::kPassed},
                                  {"A.new_fail", CaseStatus::kPassed},
                                  {"A.skip_both", CaseStatus::kSkipped}}),
                             Ran({{"A.pass", CaseStatus::kPassed},
                                  {"A.listed_fails", CaseStatus::kFailed},
                                  {"A.listed_passes", CaseStatus::kPassed},
                                  {"A.new_fail", CaseStatus::kFailed},
                                  {"A.skip_both", CaseStatus::kSkipped}},
                                 1))});
}

TEST(ApplyTest, ListedFailureIsExpected) {
  Report r = Sample();
  ASSERT_EQ(r.regressions, 2);
  ApplyExpectedFailures(MustParse("t A.listed_fails  # clone: no fork\n"
                                  "t A.new_fail  # pipe2: VFS issue\n"),
                        "exp.txt", true, &r);
  EXPECT_EQ(r.regressions, 0);
  EXPECT_EQ(r.expected_failures, 2);
  EXPECT_EQ(r.unexpected_passes, 0);
  EXPECT_EQ(r.ExitStatus(), 0);
  const CaseRow* row = Find(r, "A.listed_fails");
  EXPECT_TRUE(row->expected_failure);
  EXPECT_FALSE(row->regression);
  EXPECT_EQ(row->expected_reason, "clone: no fork");
  EXPECT_THAT(FormatTable(r), HasSubstr("(expected: clone: no fork)"));
  EXPECT_THAT(FormatTable(r),
              HasSubstr("expected failures (exp.txt): 2 failed as expected"));
  EXPECT_THAT(FormatJson(r),
              HasSubstr("\"expected_failures\": [\"t A.listed_fails\", "
                        "\"t A.new_fail\"]"));
  std::string xml = FormatXml(r);
  EXPECT_THAT(xml, Not(HasSubstr("<failure")));
  EXPECT_THAT(xml, HasSubstr("<skipped message=\"sandbox FAILED: expected "
                             "failure (exp.txt): clone: no fork\"/>"));
}

TEST(ApplyTest, UnlistedFailureStillRegresses) {
  Report r = Sample();
  ApplyExpectedFailures(MustParse("t A.listed_fails\n"), "exp.txt", true, &r);
  EXPECT_EQ(r.regressions, 1);
  EXPECT_TRUE(Find(r, "A.new_fail")->regression);
  EXPECT_EQ(r.ExitStatus(), 1);
  EXPECT_THAT(FormatXml(r), HasSubstr("sandbox FAILED (passes natively)"));
}

TEST(ApplyTest, ListedCaseThatPassesFailsTheRun) {
  Report r = Sample();
  ApplyExpectedFailures(MustParse("t A.listed_fails # a\n"
                                  "t A.new_fail # b\n"
                                  "t A.listed_passes # fixed now\n"
                                  "t A.skip_both # skipped is no failure\n"),
                        "exp.txt", true, &r);
  EXPECT_EQ(r.regressions, 0);
  EXPECT_EQ(r.unexpected_passes, 2);
  EXPECT_TRUE(Find(r, "A.listed_passes")->unexpected_pass);
  EXPECT_TRUE(Find(r, "A.skip_both")->unexpected_pass);
  EXPECT_EQ(r.ExitStatus(), 1);
  std::string table = FormatTable(r);
  EXPECT_THAT(table, HasSubstr("now passes: remove it from exp.txt:\n"
                               "  t A.listed_passes: PASSED\n"));
  EXPECT_THAT(table, HasSubstr("NOW PASSES"));
  EXPECT_THAT(FormatXml(r), HasSubstr("now passes: remove it from exp.txt"));
  EXPECT_THAT(FormatJson(r), HasSubstr("\"unexpected_passes\": 2"));
}

TEST(ApplyTest, ListedCaseThatDidNotRunFailsTheRun) {
  Report r = Sample();
  ExpectedFailures e = MustParse(
      "t A.listed_fails\nt A.new_fail\nt A.renamed # gone\n"
      "other A.x # binary not run: not checked\n");
  Report filtered = r;
  ApplyExpectedFailures(e, "exp.txt", false, &filtered);
  EXPECT_EQ(filtered.ExitStatus(), 0) << "--gtest_filter: no check";

  ApplyExpectedFailures(e, "exp.txt", true, &r);
  ASSERT_EQ(r.unused_expectations.size(), 1u);
  EXPECT_EQ(r.unused_expectations[0].name, "A.renamed");
  EXPECT_EQ(r.ExitStatus(), 1);
  EXPECT_THAT(FormatTable(r), HasSubstr("listed but did not run"));
  std::string xml = FormatXml(r, {.native = false, .sandbox = true});
  EXPECT_THAT(xml, HasSubstr("<testcase name=\"A.renamed\""));
  EXPECT_THAT(xml, HasSubstr("failures=\"1\""));
}

TEST(ApplyTest, NativeFailureIsAlwaysAFailure) {
  Report r =
      BuildReport("sb", {Binary("t", Ran({{"A.a", CaseStatus::kFailed}}, 1),
                                Ran({{"A.a", CaseStatus::kFailed}}, 1))});
  ApplyExpectedFailures(MustParse("t A.a # listed\n"), "exp.txt", true, &r);
  EXPECT_FALSE(Find(r, "A.a")->expected_failure);
  EXPECT_FALSE(Find(r, "A.a")->unexpected_pass);
  EXPECT_EQ(r.native_failed, 1);
  EXPECT_EQ(r.ExitStatus(), 1);
}

TEST(ApplyTest, SandboxNotRunIsNotChecked) {
  RunResult not_run;
  not_run.not_run_reason = "no runsc";
  Report r = BuildReport(
      "sb", {Binary("t", Ran({{"A.a", CaseStatus::kPassed}}), not_run)});
  ApplyExpectedFailures(MustParse("t A.a\nt A.b\n"), "exp.txt", true, &r);
  EXPECT_EQ(r.unexpected_passes, 0);
  EXPECT_TRUE(r.unused_expectations.empty());
  EXPECT_EQ(r.ExitStatus(), 0);
}

TEST(XmlModesTest, SandboxOnly) {
  Report r = Sample();
  ApplyExpectedFailures(MustParse("t A.listed_fails\nt A.new_fail\n"),
                        "exp.txt", true, &r);
  std::string xml = FormatXml(r, {.native = false, .sandbox = true});
  EXPECT_THAT(xml, Not(HasSubstr("t.native")));
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"t.sandbox\" tests=\"5\" "
                             "failures=\"0\" disabled=\"0\" skipped=\"3\""));
  xml = FormatXml(r, {.native = true, .sandbox = false});
  EXPECT_THAT(xml, HasSubstr("t.native"));
  EXPECT_THAT(xml, Not(HasSubstr("t.sandbox")));
}

TEST(UpdateTest, KeepsReasonsAndListsEverySandboxOnlyFailure) {
  Report r = Sample();
  ExpectedFailures old = MustParse(
      "# head\n\nt A.listed_fails # kept reason\nt A.listed_passes # fixed\n"
      "other B.b # binary not run: kept\nt A.new_fail\n");
  ApplyExpectedFailures(old, "exp.txt", true, &r);
  std::vector<std::string> asked;
  ExpectedFailures updated =
      UpdatedExpectedFailures(r, old, [&](const CaseRow& row) {
        asked.push_back(row.name);
        return "new reason";
      });
  EXPECT_EQ(FormatExpectedFailures(updated),
            "# head\n\n"
            "other B.b  # binary not run: kept\n"
            "t A.listed_fails  # kept reason\n"
            "t A.new_fail  # new reason\n");
  EXPECT_EQ(asked, std::vector<std::string>{"A.new_fail"})
      << "only cases without a reason";
}

TEST(UpdateTest, LeavesOutNamesTheFileCannotHold) {
  Report r = BuildReport(
      "sb",
      {Binary(
          "t",
          Ran({{"A.ok", CaseStatus::kPassed}, {"A#hash", CaseStatus::kPassed}}),
          Ran({{"A.ok", CaseStatus::kFailed}, {"A#hash", CaseStatus::kFailed}},
              1))});
  ExpectedFailures updated = UpdatedExpectedFailures(
      r, {}, [](const CaseRow&) { return "two\nlines"; });
  std::string text = FormatExpectedFailures(updated);
  EXPECT_THAT(text, HasSubstr("\nt A.ok  # two lines\n"));
  EXPECT_THAT(text, Not(HasSubstr("hash")));
  EXPECT_EQ(MustParse(text).entries.size(), 1u);
}

TEST(GuessReasonTest, UnimplementedSyscalls) {
  EXPECT_EQ(GuessReason("runsc: unimplemented syscall 293 (pipe2): ENOSYS\n"
                        "x\nrunsc: unimplemented syscall 257 (openat): ENOSYS\n"
                        "runsc: unimplemented syscall 293 (pipe2): ENOSYS\n",
                        Outcome::kFailed),
            "pipe2, openat: not implemented (ENOSYS)");
}

TEST(GuessReasonTest, FailedCheck) {
  EXPECT_EQ(GuessReason("stat.cc:103: Failure\nValue of: stat(p, &st)\n"
                        "Expected: syscall fails with errno (expected: 20)\n"
                        "  Actual: -1 (of type int), failed with errno 2 (No "
                        "such file or directory), want 20 (Not a directory)\n",
                        Outcome::kFailed),
            "stat(p, &st): 2 (No such file or directory)");
  EXPECT_EQ(
      GuessReason("Value of: fd.valid()\n  Actual: false\n", Outcome::kFailed),
      "fd.valid(): fails");
}

TEST(GuessReasonTest, FallsBack) {
  EXPECT_EQ(GuessReason("unimplemented syscall 12 (", Outcome::kCrashed),
            "sandbox CRASHED: TODO find the cause");
  EXPECT_EQ(GuessReason("", Outcome::kMissing),
            "sandbox MISSING: TODO find the cause");
}

}  // namespace
}  // namespace sandbox::syscall_test
