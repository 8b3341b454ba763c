// "#!" scripts, as Linux's binfmt_script reads them: the interpreter path
// and at most one argument from the first line (within 256 bytes).
#ifndef SENTRY_LOADER_SHEBANG_H_
#define SENTRY_LOADER_SHEBANG_H_

#include <optional>
#include <string>
#include <vector>

#include "sentry/base/result.h"
#include "sentry/loader/file_reader.h"

namespace sandbox::loader {

inline constexpr size_t kBinprmBufSize = 256;  // BINPRM_BUF_SIZE
// Linux's exec_binprm() runs the binary handlers for depth 0..5: a chain
// of at most 5 "#!" scripts ending in an ELF file; one more is ELOOP.
inline constexpr int kMaxInterpreterDepth = 5;

struct Shebang {
  std::string interpreter;
  std::optional<std::string> arg;  // everything after it, trimmed
};

// ENOEXEC if the file does not start with "#!", names no interpreter, or
// would need a truncated interpreter path (no newline, space or tab within
// the first 256 bytes). Reader errors pass through.
KResult<Shebang> ParseShebang(FileReader& file);

// The interpreter's argv: {interpreter, [arg], script_path, argv[1]...}
// (argv[0] is replaced by the path the script was executed as).
std::vector<std::string> ShebangArgv(const Shebang& s,
                                     const std::string& script_path,
                                     const std::vector<std::string>& argv);

}  // namespace sandbox::loader

#endif  // SENTRY_LOADER_SHEBANG_H_
