#include "sentry/loader/shebang.h"

#include <cstring>

namespace sandbox::loader {
namespace {

bool SpaceTab(char c) { return c == ' ' || c == '\t'; }
bool Terminator(char c) { return c == ' ' || c == '\t' || c == '\0'; }

}  // namespace

KResult<Shebang> ParseShebang(FileReader& file) {
  // bprm->buf: the first 256 bytes, NUL-padded.
  char buf[kBinprmBufSize] = {};
  TRY(size_t n, file.ReadAt(0, buf, sizeof(buf)));
  if (n < 2 || buf[0] != '#' || buf[1] != '!') return kENOEXEC;

  const char* const buf_end = buf + sizeof(buf) - 1;
  const char* i_end =
      static_cast<const char*>(std::memchr(buf, '\n', sizeof(buf)));
  if (i_end == nullptr) {
    const char* p = buf + 2;
    while (p < buf_end && SpaceTab(*p)) ++p;
    if (p >= buf_end) return kENOEXEC;  // all spaces/tabs
    // Without a later space/tab/NUL the path may be truncated.
    const char* q = p;
    while (q < buf_end && !Terminator(*q)) ++q;
    if (q >= buf_end) return kENOEXEC;
    i_end = buf_end;
  }
  while (i_end > buf + 2 && SpaceTab(i_end[-1])) --i_end;
  const char* i_name = buf + 2;
  while (i_name < i_end && SpaceTab(*i_name)) ++i_name;
  if (i_name >= i_end) return kENOEXEC;  // no interpreter name

  const char* i_sep = i_name;
  while (i_sep < i_end && !Terminator(*i_sep)) ++i_sep;
  Shebang out;
  out.interpreter.assign(i_name, i_sep);
  if (i_sep < i_end && *i_sep != '\0') {
    const char* i_arg = i_sep;
    while (i_arg < i_end && SpaceTab(*i_arg)) ++i_arg;
    if (i_arg < i_end) {
      // The line is used as a C string: an embedded NUL ends it.
      std::string arg(i_arg, i_end);
      arg.resize(std::strlen(arg.c_str()));
      out.arg = std::move(arg);
    }
  }
  return out;
}

std::vector<std::string> ShebangArgv(const Shebang& s,
                                     const std::string& script_path,
                                     const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.push_back(s.interpreter);
  if (s.arg.has_value()) out.push_back(*s.arg);
  out.push_back(script_path);
  for (size_t i = 1; i < argv.size(); ++i) out.push_back(argv[i]);
  return out;
}

}  // namespace sandbox::loader
