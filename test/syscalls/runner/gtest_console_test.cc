#include "test/syscalls/runner/gtest_console.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sandbox::syscall_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

MATCHER_P2(Case, name, status, "") {
  return arg.name == name && arg.status == status;
}

constexpr char kTypicalRun[] =
    "Running main() from gtest_main.cc\n"
    "[==========] Running 4 tests from 1 test suite.\n"
    "[----------] Global test environment set-up.\n"
    "[----------] 4 tests from ReadWrite\n"
    "[ RUN      ] ReadWrite.Pipe\n"
    "[       OK ] ReadWrite.Pipe (0 ms)\n"
    "[ RUN      ] ReadWrite.File\n"
    "foo.cc:12: Failure\n"
    "Expected equality of these values:\n"
    "[  FAILED  ] ReadWrite.File (3 ms)\n"
    "[ RUN      ] ReadWrite.Skip\n"
    "foo.cc:20: Skipped\n"
    "no capability\n"
    "[  SKIPPED ] ReadWrite.Skip (0 ms)\n"
    "[ RUN      ] Param/ReadWrite.Size/0\n"
    "[  FAILED  ] Param/ReadWrite.Size/0, where GetParam() = 4 (12 ms)\n"
    "[----------] 4 tests from ReadWrite (15 ms total)\n"
    "[==========] 4 tests from 1 test suite ran. (15 ms total)\n"
    "[  PASSED  ] 1 test.\n"
    "[  SKIPPED ] 1 test, listed below:\n"
    "[  SKIPPED ] ReadWrite.Skip\n"
    "[  FAILED  ] 2 tests, listed below:\n"
    "[  FAILED  ] ReadWrite.File\n"
    "[  FAILED  ] Param/ReadWrite.Size/0, where GetParam() = 4\n";

TEST(GtestConsoleTest, ParsesTypicalRun) {
  std::vector<CaseResult> cases = ParseGtestConsole(kTypicalRun);
  EXPECT_THAT(cases,
              ElementsAre(Case("ReadWrite.Pipe", CaseStatus::kPassed),
                          Case("ReadWrite.File", CaseStatus::kFailed),
                          Case("ReadWrite.Skip", CaseStatus::kSkipped),
                          Case("Param/ReadWrite.Size/0", CaseStatus::kFailed)));
  EXPECT_EQ(cases[0].duration_ms, 0);
  EXPECT_EQ(cases[1].duration_ms, 3);
  EXPECT_EQ(cases[3].duration_ms, 12);
  EXPECT_THAT(cases[0].output, IsEmpty());
  EXPECT_EQ(cases[1].output,
            "foo.cc:12: Failure\nExpected equality of these values:\n");
  EXPECT_THAT(cases[2].output, HasSubstr("no capability"));
}

TEST(GtestConsoleTest, SameResultWhateverTheChunking) {
  std::vector<CaseResult> whole = ParseGtestConsole(kTypicalRun);
  std::string input = kTypicalRun;
  for (size_t step : {1, 2, 3, 7, 64}) {
    GtestConsoleParser parser;
    for (size_t i = 0; i < input.size(); i += step) {
      parser.Feed(std::string_view(input).substr(i, step));
    }
    parser.Finish();
    ASSERT_EQ(parser.cases().size(), whole.size()) << "step " << step;
    for (size_t i = 0; i < whole.size(); ++i) {
      EXPECT_EQ(parser.cases()[i].name, whole[i].name);
      EXPECT_EQ(parser.cases()[i].status, whole[i].status);
      EXPECT_EQ(parser.cases()[i].output, whole[i].output);
    }
  }
}

TEST(GtestConsoleTest, CrashMidCaseIsCrashed) {
  EXPECT_THAT(ParseGtestConsole("[ RUN      ] A.B\n[       OK ] A.B (1 ms)\n"
                                "[ RUN      ] A.C\npartial outp"),
              ElementsAre(Case("A.B", CaseStatus::kPassed),
                          Case("A.C", CaseStatus::kCrashed)));
}

TEST(GtestConsoleTest, RunWithoutEndThenRunIsCrashed) {
  EXPECT_THAT(ParseGtestConsole("[ RUN      ] A.B\n[ RUN      ] A.C\n"
                                "[       OK ] A.C (0 ms)\n"),
              ElementsAre(Case("A.B", CaseStatus::kCrashed),
                          Case("A.C", CaseStatus::kPassed)));
}

TEST(GtestConsoleTest, EndMarkerAfterUnterminatedOutput) {
  std::vector<CaseResult> cases = ParseGtestConsole(
      "[ RUN      ] A.B\nno newline[       OK ] A.B (2 ms)\n");
  EXPECT_THAT(cases, ElementsAre(Case("A.B", CaseStatus::kPassed)));
  EXPECT_EQ(cases[0].duration_ms, 2);
  EXPECT_EQ(cases[0].output, "no newline");
}

TEST(GtestConsoleTest, EndMarkerForAnotherCaseIsIgnored) {
  EXPECT_THAT(ParseGtestConsole("[ RUN      ] A.B\n[       OK ] A.X (0 ms)\n"),
              ElementsAre(Case("A.B", CaseStatus::kCrashed)));
  // A prefix of the running name is a different name.
  EXPECT_THAT(ParseGtestConsole("[ RUN      ] A.BC\n[       OK ] A.B (0 ms)\n"),
              ElementsAre(Case("A.BC", CaseStatus::kCrashed)));
}

TEST(GtestConsoleTest, CarriageReturnsAndColorlessInput) {
  EXPECT_THAT(
      ParseGtestConsole("[ RUN      ] A.B\r\n[  FAILED  ] A.B (0 ms)\r\n"),
      ElementsAre(Case("A.B", CaseStatus::kFailed)));
}

TEST(GtestConsoleTest, NoCases) {
  EXPECT_THAT(ParseGtestConsole(""), IsEmpty());
  EXPECT_THAT(ParseGtestConsole("runsc: not implemented\n"), IsEmpty());
  EXPECT_THAT(ParseGtestConsole("[ RUN      ] \n[ RUN      ]"), IsEmpty());
}

TEST(GtestConsoleTest, CaseOutputIsCapped) {
  std::string input = "[ RUN      ] A.B\n";
  input += std::string(3 * GtestConsoleParser::kMaxLine, 'x');
  input += "\n[       OK ] A.B (0 ms)\n";
  std::vector<CaseResult> cases = ParseGtestConsole(input);
  ASSERT_THAT(cases, ElementsAre(Case("A.B", CaseStatus::kPassed)));
  EXPECT_EQ(cases[0].output.size(), GtestConsoleParser::kMaxCaseOutput);
}

TEST(GtestConsoleTest, OverlongNameIsNotACase) {
  std::string input = "[ RUN      ] " +
                      std::string(GtestConsoleParser::kMaxNameLength + 1, 'n') +
                      "\n";
  EXPECT_THAT(ParseGtestConsole(input), IsEmpty());
}

TEST(GtestConsoleTest, FeedAfterFinishIsIgnored) {
  GtestConsoleParser parser;
  parser.Feed("[ RUN      ] A.B\n");
  parser.Finish();
  parser.Feed("[       OK ] A.B (0 ms)\n");
  parser.Finish();
  EXPECT_THAT(parser.cases(), ElementsAre(Case("A.B", CaseStatus::kCrashed)));
}

TEST(GtestConsoleTest, StatusNames) {
  EXPECT_EQ(CaseStatusName(CaseStatus::kPassed), "PASSED");
  EXPECT_EQ(CaseStatusName(CaseStatus::kFailed), "FAILED");
  EXPECT_EQ(CaseStatusName(CaseStatus::kSkipped), "SKIPPED");
  EXPECT_EQ(CaseStatusName(CaseStatus::kCrashed), "CRASHED");
}

}  // namespace
}  // namespace sandbox::syscall_test
