#include "runsc-compat/flags.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sandbox::runsc::flags {
namespace {

struct Options {
  bool verbose = false;
  bool help = false;
  std::string name;
  std::string mode;
  std::vector<std::string> items;
};

Table TestTable(Options* o) {
  return {
      {.name = "verbose",
       .alias = 'v',
       .help = {{"", "say more"}},
       .set = SetTrue(&o->verbose)},
      {.name = "name",
       .arg = Arg::kRequired,
       .value_name = "NAME",
       .help = {{"", "the name\nof the thing"}},
       .set = SetNonEmpty(&o->name, "--name needs a NAME")},
      {.name = "mode",
       .arg = Arg::kRequired,
       .value_name = "fast|slow",
       .default_value = "slow",
       .help = {{"--mode=fast|slow|very-long", "how"}},
       .set = SetChoice<std::string>(&o->mode, {{"fast", "F"}, {"slow", "S"}},
                                     "expected fast or slow")},
      {.name = "item",
       .alias = 'i',
       .arg = Arg::kRequired,
       .value_name = "ITEM",
       .set = AppendNonEmpty(&o->items, "--item needs an ITEM")},
      {.name = "help",
       .alias = 'h',
       .help = {{"-h, --help", "show this help"}},
       .set = SetTrue(&o->help),
       .stops = true},
  };
}

// Parses `args` (after a command name) into `o`.
absl::StatusOr<int> ParseArgs(std::vector<std::string> args, Options* o) {
  args.insert(args.begin(), "cmd");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return Parse(TestTable(o), static_cast<int>(argv.size()), argv.data(), 1);
}

std::string Error(std::vector<std::string> args) {
  Options o;
  absl::StatusOr<int> r = ParseArgs(std::move(args), &o);
  return r.ok() ? "" : std::string(r.status().message());
}

TEST(FlagsTest, DefaultsApplyBeforeTheCommandLine) {
  Options o;
  ASSERT_EQ(*ParseArgs({}, &o), 1);
  EXPECT_EQ(o.mode, "S");
  EXPECT_FALSE(o.verbose);
}

TEST(FlagsTest, ValueInlineOrNext) {
  Options o;
  ASSERT_EQ(*ParseArgs({"--name=a", "--mode", "fast", "prog"}, &o), 4);
  EXPECT_EQ(o.name, "a");
  EXPECT_EQ(o.mode, "F");
  Options p;
  ASSERT_EQ(*ParseArgs({"--name", "b=c", "prog", "--name=x"}, &p), 3);
  EXPECT_EQ(p.name, "b=c");  // the next argument, whatever it holds
}

TEST(FlagsTest, ShortAliases) {
  Options o;
  ASSERT_EQ(*ParseArgs({"-v", "-i=a", "-i", "b", "x"}, &o), 5);
  EXPECT_TRUE(o.verbose);
  EXPECT_EQ(o.items, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Error({"-x"}), "unknown flag -x");
  EXPECT_EQ(Error({"-vi"}), "unknown flag -vi");  // no bundling
}

TEST(FlagsTest, RepeatedFlags) {
  Options o;
  ASSERT_TRUE(ParseArgs({"--mode=fast", "--mode=slow", "--item=1", "--item=2",
                         "--verbose", "--verbose"},
                        &o)
                  .ok());
  EXPECT_EQ(o.mode, "S");                                    // the last wins
  EXPECT_EQ(o.items, (std::vector<std::string>{"1", "2"}));  // a list grows
  EXPECT_TRUE(o.verbose);
}

TEST(FlagsTest, DoubleDashEndsTheFlags) {
  Options o;
  ASSERT_EQ(*ParseArgs({"-v", "--", "--name=x"}, &o), 3);
  EXPECT_TRUE(o.verbose);
  EXPECT_EQ(o.name, "");
  Options p;
  ASSERT_EQ(*ParseArgs({"--"}, &p), 2);  // nothing after it
}

TEST(FlagsTest, FirstPositionalEndsTheFlags) {
  Options o;
  ASSERT_EQ(*ParseArgs({"prog", "-v"}, &o), 1);
  EXPECT_FALSE(o.verbose);
}

TEST(FlagsTest, UnknownFlags) {
  EXPECT_EQ(Error({"--bogus"}), "unknown flag --bogus");
  EXPECT_EQ(Error({"--bogus=1"}), "unknown flag --bogus=1");
  EXPECT_EQ(Error({"-"}), "unknown flag -");
  // A switch takes no value.
  EXPECT_EQ(Error({"--verbose=1"}), "unknown flag --verbose=1");
  EXPECT_EQ(Error({"--ver"}), "unknown flag --ver");  // no prefixes
}

TEST(FlagsTest, MissingValue) {
  EXPECT_EQ(Error({"--name"}), "--name needs a value (--name=NAME)");
  EXPECT_EQ(Error({"-i"}), "--item needs a value (--item=ITEM)");
}

TEST(FlagsTest, BadValuesNameTheFlag) {
  EXPECT_EQ(Error({"--mode=medium"}), "--mode=medium: expected fast or slow");
  EXPECT_EQ(Error({"--mode", "medium"}),
            "--mode=medium: expected fast or slow");
  EXPECT_EQ(Error({"--name="}), "--name needs a NAME");
  EXPECT_EQ(Error({"-i="}), "--item needs an ITEM");
  // The first bad flag is reported; nothing after it is read.
  EXPECT_EQ(Error({"--mode=x", "--bogus"}), "--mode=x: expected fast or slow");
}

TEST(FlagsTest, StoppingFlag) {
  Options o;
  ASSERT_EQ(*ParseArgs({"-v", "--help", "--bogus"}, &o), 3);
  EXPECT_TRUE(o.help);
  EXPECT_EQ(Error({"--bogus", "-h"}), "unknown flag --bogus");
}

TEST(FlagsTest, CountLeading) {
  Options o;
  std::vector<std::string> args = {"runsc",    "-v", "--name",  "n",
                                   "--mode=x", "do", "--name=y"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  const int argc = static_cast<int>(argv.size());
  // Values are not checked (--mode=x), nor applied.
  EXPECT_EQ(CountLeading(TestTable(&o), argc, argv.data(), 1), 4);
  EXPECT_EQ(o.name, "");
  EXPECT_EQ(CountLeading(TestTable(&o), argc, argv.data(), 5), 0);
  // A flag the table does not have ends the count; so does a value that
  // is missing.
  std::vector<std::string> other = {"runsc", "-v", "--bogus", "-v"};
  std::vector<char*> oargv;
  for (std::string& a : other) oargv.push_back(a.data());
  EXPECT_EQ(CountLeading(TestTable(&o), 4, oargv.data(), 1), 1);
  std::vector<std::string> last = {"runsc", "--name"};
  std::vector<char*> largv;
  for (std::string& a : last) largv.push_back(a.data());
  EXPECT_EQ(CountLeading(TestTable(&o), 2, largv.data(), 1), 0);
}

TEST(FlagsTest, HelpLayout) {
  Options o;
  EXPECT_EQ(FormatHelp(TestTable(&o)),
            "  --verbose           say more\n"
            "  --name=NAME         the name\n"
            "                      of the thing\n"
            "  --mode=fast|slow|very-long\n"
            "                      how\n"
            "  -h, --help          show this help\n");
}

}  // namespace
}  // namespace sandbox::runsc::flags
