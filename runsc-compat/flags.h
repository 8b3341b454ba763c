// The CLI's flag tables: each subcommand (and, from issue #24, the global
// flags before it) declares its flags as one table of rows (name, short
// alias, value kind, value name, default, help, the setter that validates
// the value and sets the field), and this file parses a command line
// against a table, formats the table's `--help` section and words the
// errors.
//
// Command-line rules (as getopt_long and runc's urfave/cli take them):
//   --name             a switch (Arg::kNone)
//   --name=VALUE       a flag with a value (Arg::kRequired) ...
//   --name VALUE       ... or its value as the next argument
//   -a, -a=VALUE, -a VALUE   the same through the short alias
//   --                 ends the flags (consumed)
// Parsing stops at the first argument that does not start with '-' (the
// program, or a subcommand's name) or after "--". A flag given twice is
// set twice: the setter decides (the last wins, or a list grows).
#ifndef RUNSC_COMPAT_FLAGS_H_
#define RUNSC_COMPAT_FLAGS_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sandbox::runsc::flags {

// Whether a flag takes a value.
enum class Arg {
  kNone,      // a switch: "--strace"; "--strace=1" is an unknown flag
  kRequired,  // "--log=FILE" or "--log FILE"
};

// What a setter is given.
struct Given {
  std::string_view value;  // "" for a switch
  // The flag as "--name=value" (or "--name" for a switch), whatever form
  // it was given in: what error messages quote.
  std::string text;
};

// Validates the value and sets the field; InvalidArgument with the
// message the user sees (it names the flag) when the value is bad.
using Setter = std::function<absl::Status(const Given&)>;

// One entry of the help: "  USAGE  TEXT", TEXT's lines (split at '\n',
// written as they should appear, at most 56 columns) from column 22, on
// USAGE's line when USAGE has at most 18 characters, else below it.
struct Help {
  std::string_view usage;  // empty: "--name" or "--name=VALUE_NAME"
  std::string_view text;
};

struct Flag {
  std::string_view name;  // the long name without "--": "log"
  char alias = 0;         // the short alias: 'p' is -p (0: none)
  Arg arg = Arg::kNone;
  // The value's name in the help and in "needs a value" ("FILE").
  std::string_view value_name;
  // Applied through `set` before the command line when not empty (so the
  // default is validated as a given value is).
  std::string_view default_value;
  std::vector<Help> help;  // empty: not listed in --help
  Setter set;
  // Parsing ends after this flag (--help: later arguments are not read).
  bool stops = false;
};

using Table = std::vector<Flag>;

// Parses argv[first..argc) against `table`: applies the defaults, then
// each flag, in order. Returns the index of the first argument after the
// flags (argc when none is left; past a "--"), or InvalidArgument with
// the message to print: "unknown flag ARG", "--NAME needs a value
// (--NAME=VALUE_NAME)", or the setter's message.
absl::StatusOr<int> Parse(const Table& table, int argc, char* const* argv,
                          int first);

// How many arguments from argv[first] are flags of `table` with their
// values (the first positional argument, "--" or a flag `table` does not
// have ends the count): the global flags that main.cc moves after the
// subcommand's name. Does not apply them.
int CountLeading(const Table& table, int argc, char* const* argv, int first);

// The table's help entries, in table order (see Help).
std::string FormatHelp(const Table& table);

// Setters for the common kinds of field.
Setter SetTrue(bool* field);
Setter SetString(std::string* field);
// The value must not be empty: else `error` ("--log needs a FILE").
Setter SetNonEmpty(std::string* field, std::string_view error);
// Appends the value; it must not be empty: else `error`.
Setter AppendNonEmpty(std::vector<std::string>* field, std::string_view error);

// One of a fixed set of values: each choice's value sets *field to its
// item; any other value is `error`, after "--name=value: ".
template <typename T>
struct Choice {
  std::string_view value;
  T item;
};
template <typename T>
Setter SetChoice(T* field, std::vector<Choice<T>> choices,
                 std::string_view error) {
  return [field, choices = std::move(choices), error](const Given& g) {
    for (const Choice<T>& c : choices) {
      if (c.value == g.value) {
        *field = c.item;
        return absl::OkStatus();
      }
    }
    return absl::InvalidArgumentError(g.text + ": " + std::string(error));
  };
}

}  // namespace sandbox::runsc::flags

#endif  // RUNSC_COMPAT_FLAGS_H_
