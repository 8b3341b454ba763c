#include "sentry/kernel/log.h"

#include <errno.h>
#include <unistd.h>

#include <atomic>
#include <string>

namespace sandbox::kernel {
namespace {

std::atomic<int> g_warning_fd{2};
std::atomic<int> g_debug_fd{2};

void WriteLine(int fd, std::string_view prefix, std::string_view line) {
  if (fd < 0) return;
  std::string buf;
  buf.reserve(prefix.size() + line.size() + 1);
  buf.append(prefix).append(line).push_back('\n');
  const char* p = buf.data();
  size_t left = buf.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= n;
  }
}

}  // namespace

void SetLogFds(int warning_fd, int debug_fd) {
  g_warning_fd.store(warning_fd);
  g_debug_fd.store(debug_fd);
}

int DebugLogFd() { return g_debug_fd.load(); }

void WriteWarning(std::string_view line) {
  WriteLine(g_warning_fd.load(), "runsc: ", line);
}

void WriteDebug(std::string_view line) {
  WriteLine(g_debug_fd.load(), "", line);
}

}  // namespace sandbox::kernel
