#include "test/syscalls/runner/gtest_console.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sandbox::syscall_test {
namespace {

enum class Marker { kRun, kOk, kFailed, kSkipped };

struct MarkerText {
  Marker marker;
  std::string_view text;
};

constexpr std::array<MarkerText, 4> kMarkers = {{
    {Marker::kRun, "[ RUN      ] "},
    {Marker::kOk, "[       OK ] "},
    {Marker::kFailed, "[  FAILED  ] "},
    {Marker::kSkipped, "[  SKIPPED ] "},
}};

bool IsNameChar(char c) {
  return c != ' ' && c != '\t' && c != ',' && c != '\r' && c != '\n' &&
         c != '\0';
}

// The case name at the start of `rest`: up to whitespace or a comma.
std::string_view LeadingName(std::string_view rest) {
  size_t n = 0;
  while (n < rest.size() && IsNameChar(rest[n])) ++n;
  return rest.substr(0, n);
}

// Parses " (123 ms)" or ", where GetParam() = ... (123 ms)" after a name:
// the last "(digits ms)" on the line. Returns -1 when absent or malformed.
int64_t ParseDuration(std::string_view rest) {
  size_t close = rest.rfind(" ms)");
  if (close == std::string_view::npos) return -1;
  size_t open = rest.rfind('(', close);
  if (open == std::string_view::npos) return -1;
  std::string_view digits = rest.substr(open + 1, close - open - 1);
  if (digits.empty() || digits.size() > 15) return -1;
  int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

// Finds the earliest marker in `line` at or after `from`.
bool FindMarker(std::string_view line, size_t from, Marker* marker, size_t* pos,
                size_t* len) {
  size_t best = std::string_view::npos;
  for (const MarkerText& m : kMarkers) {
    size_t p = line.find(m.text, from);
    if (p < best) {
      best = p;
      *marker = m.marker;
      *len = m.text.size();
    }
  }
  *pos = best;
  return best != std::string_view::npos;
}

}  // namespace

std::string_view CaseStatusName(CaseStatus status) {
  switch (status) {
    case CaseStatus::kPassed:
      return "PASSED";
    case CaseStatus::kFailed:
      return "FAILED";
    case CaseStatus::kSkipped:
      return "SKIPPED";
    case CaseStatus::kCrashed:
      return "CRASHED";
  }
  return "UNKNOWN";
}

void GtestConsoleParser::Feed(std::string_view chunk) {
  if (finished_) return;
  while (!chunk.empty()) {
    size_t nl = chunk.find('\n');
    std::string_view piece =
        chunk.substr(0, nl == std::string_view::npos ? chunk.size() : nl);
    // Never let a single line grow past kMaxLine.
    size_t room = kMaxLine - partial_.size();
    if (piece.size() >= room) {
      partial_.append(piece.substr(0, room));
      ParseLine(partial_);
      partial_.clear();
      chunk.remove_prefix(room);
      continue;
    }
    partial_.append(piece);
    if (nl == std::string_view::npos) return;
    ParseLine(partial_);
    partial_.clear();
    chunk.remove_prefix(nl + 1);
  }
}

void GtestConsoleParser::Finish() {
  if (finished_) return;
  if (!partial_.empty()) {
    ParseLine(partial_);
    partial_.clear();
  }
  if (current_ >= 0) EndCurrent(CaseStatus::kCrashed, -1);
  finished_ = true;
}

void GtestConsoleParser::AppendOutput(std::string_view text) {
  if (current_ < 0) return;
  std::string& out = cases_[current_].output;
  size_t room = kMaxCaseOutput - std::min(out.size(), kMaxCaseOutput);
  out.append(text.substr(0, std::min(text.size(), room)));
}

void GtestConsoleParser::EndCurrent(CaseStatus status, int64_t duration_ms) {
  CaseResult& c = cases_[current_];
  c.status = status;
  c.duration_ms = duration_ms;
  current_ = -1;
}

void GtestConsoleParser::ParseLine(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t from = 0;
  bool any_marker = false;
  Marker marker;
  size_t pos, len;
  while (FindMarker(line, from, &marker, &pos, &len)) {
    any_marker = true;
    AppendOutput(line.substr(from, pos - from));
    std::string_view rest = line.substr(pos + len);
    std::string_view name = LeadingName(rest);
    from = pos + len + name.size();
    if (name.empty() || name.size() > kMaxNameLength) {
      AppendOutput(line.substr(pos, len + name.size()));
      continue;
    }
    if (marker == Marker::kRun) {
      if (current_ >= 0) EndCurrent(CaseStatus::kCrashed, -1);
      if (cases_.size() >= kMaxCases) {
        ++dropped_cases_;
        continue;
      }
      cases_.push_back(CaseResult{std::string(name)});
      current_ = static_cast<int64_t>(cases_.size()) - 1;
      continue;
    }
    // An end marker closes the running case only if it names it; otherwise
    // it is the final summary or text the case printed.
    if (current_ < 0 || cases_[current_].name != name) {
      AppendOutput(line.substr(pos, len + name.size()));
      continue;
    }
    // The rest of the line belongs to the end marker: duration and, for
    // parameterized tests, the parameter.
    std::string_view tail = rest.substr(name.size());
    size_t next_pos, next_len;
    Marker next;
    size_t tail_end = FindMarker(tail, 0, &next, &next_pos, &next_len)
                          ? next_pos
                          : tail.size();
    int64_t duration = ParseDuration(tail.substr(0, tail_end));
    from += tail_end;
    switch (marker) {
      case Marker::kOk:
        EndCurrent(CaseStatus::kPassed, duration);
        break;
      case Marker::kFailed:
        EndCurrent(CaseStatus::kFailed, duration);
        break;
      case Marker::kSkipped:
        EndCurrent(CaseStatus::kSkipped, duration);
        break;
      case Marker::kRun:
        break;
    }
  }
  // A marker line ends with the marker's own text: keep only real output.
  if (!any_marker || from < line.size()) {
    AppendOutput(line.substr(from));
    AppendOutput("\n");
  }
}

std::vector<CaseResult> ParseGtestConsole(std::string_view output) {
  GtestConsoleParser parser;
  parser.Feed(output);
  parser.Finish();
  return parser.cases();
}

}  // namespace sandbox::syscall_test
