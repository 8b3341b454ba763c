#include "runsc-compat/flags.h"

#include <utility>

#include "absl/strings/str_split.h"

namespace sandbox::runsc::flags {
namespace {

// The help's layout: entries indented by 2, text from column 22.
constexpr size_t kIndent = 2;
constexpr size_t kTextColumn = 22;
// A usage this long or shorter shares its line with the text (two spaces
// at least between them).
constexpr size_t kMaxInlineUsage = kTextColumn - kIndent - 2;

// One argument, matched against the table.
struct Match {
  const Flag* flag = nullptr;     // nullptr: not a flag of the table
  bool has_inline_value = false;  // "--name=value"
  std::string_view inline_value;
};

Match Find(const Table& table, std::string_view a) {
  Match m;
  std::string_view name;
  bool is_long;
  if (a.size() > 2 && a.substr(0, 2) == "--") {
    name = a.substr(2);
    is_long = true;
  } else if (a.size() > 1 && a[0] == '-' && a[1] != '-') {
    name = a.substr(1);
    is_long = false;
  } else {
    return m;
  }
  if (size_t eq = name.find('='); eq != std::string_view::npos) {
    m.has_inline_value = true;
    m.inline_value = name.substr(eq + 1);
    name = name.substr(0, eq);
  }
  for (const Flag& f : table) {
    if (is_long ? f.name == name
                : (f.alias != 0 && name.size() == 1 && name[0] == f.alias)) {
      // A switch with "=value" is no flag of the table.
      if (f.arg == Arg::kNone && m.has_inline_value) return Match{};
      m.flag = &f;
      return m;
    }
  }
  return Match{};
}

// "--name" or "--name=value".
std::string Text(const Flag& f, std::string_view value) {
  std::string t = "--" + std::string(f.name);
  if (f.arg == Arg::kRequired) t += "=" + std::string(value);
  return t;
}

absl::Status Apply(const Flag& f, std::string_view value) {
  if (!f.set) return absl::OkStatus();
  return f.set(Given{.value = value, .text = Text(f, value)});
}

}  // namespace

absl::StatusOr<int> Parse(const Table& table, int argc, char* const* argv,
                          int first) {
  for (const Flag& f : table) {
    if (f.default_value.empty()) continue;
    if (absl::Status s = Apply(f, f.default_value); !s.ok()) return s;
  }
  int i = first;
  while (i < argc) {
    std::string_view a = argv[i];
    if (a == "--") return i + 1;
    if (a.empty() || a[0] != '-') return i;
    Match m = Find(table, a);
    if (m.flag == nullptr) {
      return absl::InvalidArgumentError("unknown flag " + std::string(a));
    }
    const Flag& f = *m.flag;
    std::string_view value;
    if (f.arg == Arg::kRequired) {
      if (m.has_inline_value) {
        value = m.inline_value;
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        const std::string name(f.name);
        return absl::InvalidArgumentError(
            "--" + name + " needs a value (--" + name + "=" +
            std::string(f.value_name.empty() ? "VALUE" : f.value_name) + ")");
      }
    }
    ++i;
    if (absl::Status s = Apply(f, value); !s.ok()) return s;
    if (f.stops) return i;
  }
  return i;
}

int CountLeading(const Table& table, int argc, char* const* argv, int first) {
  int i = first;
  while (i < argc) {
    Match m = Find(table, argv[i]);
    if (m.flag == nullptr) break;
    const bool takes_next =
        m.flag->arg == Arg::kRequired && !m.has_inline_value;
    if (takes_next && i + 1 >= argc) break;
    i += takes_next ? 2 : 1;
  }
  return i - first;
}

std::string FormatHelp(const Table& table) {
  std::string out;
  for (const Flag& f : table) {
    for (const Help& h : f.help) {
      const std::string usage =
          !h.usage.empty() ? std::string(h.usage) : Text(f, f.value_name);
      out.append(kIndent, ' ');
      out.append(usage);
      bool first_line = usage.size() <= kMaxInlineUsage;
      if (first_line) {
        out.append(kTextColumn - kIndent - usage.size(), ' ');
      } else {
        out.push_back('\n');
      }
      for (absl::string_view line : absl::StrSplit(
               absl::string_view(h.text.data(), h.text.size()), '\n')) {
        if (!first_line) out.append(kTextColumn, ' ');
        first_line = false;
        out.append(line.data(), line.size());
        out.push_back('\n');
      }
    }
  }
  return out;
}

Setter SetTrue(bool* field) {
  return [field](const Given&) {
    *field = true;
    return absl::OkStatus();
  };
}

Setter SetString(std::string* field) {
  return [field](const Given& g) {
    *field = std::string(g.value);
    return absl::OkStatus();
  };
}

Setter SetNonEmpty(std::string* field, std::string_view error) {
  return [field, error](const Given& g) {
    if (g.value.empty()) {
      return absl::InvalidArgumentError(std::string(error));
    }
    *field = std::string(g.value);
    return absl::OkStatus();
  };
}

Setter AppendNonEmpty(std::vector<std::string>* field, std::string_view error) {
  return [field, error](const Given& g) {
    if (g.value.empty()) {
      return absl::InvalidArgumentError(std::string(error));
    }
    field->emplace_back(g.value);
    return absl::OkStatus();
  };
}

}  // namespace sandbox::runsc::flags
