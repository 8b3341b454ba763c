#include "sentry/kernel/log.h"

#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace sandbox::kernel {
namespace {

// 2026-12-01T16:20:08.000000123Z
constexpr int64_t kNs = 1796142008LL * 1000000000LL + 123;

TEST(LogTest, TextLineIsLogrusStyle) {
  EXPECT_EQ(
      FormatLogLine(LogFormat::kText, LogLevel::kWarning,
                    "unimplemented syscall 52 (getpeername): ENOSYS", kNs),
      "time=\"2026-12-01T16:20:08.000000123Z\" level=warning "
      "msg=\"unimplemented syscall 52 (getpeername): ENOSYS\"\n");
}

TEST(LogTest, JsonLineEscapesTheMessage) {
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, LogLevel::kError,
                          "a \"b\"\\c\nd\te\x01", kNs),
            "{\"level\":\"error\",\"msg\":\"a \\\"b\\\"\\\\c\\nd\\te\\u0001\","
            "\"time\":\"2026-12-01T16:20:08.000000123Z\"}\n");
}

std::string Drain(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  return out;
}

// Which sink each kind of line reaches.
TEST(LogTest, Sinks) {
  int log[2], debug[2], err[2];
  ASSERT_EQ(pipe(log), 0);
  ASSERT_EQ(pipe(debug), 0);
  ASSERT_EQ(pipe(err), 0);
  SetLogSinks({.log_fd = log[1],
               .log_format = LogFormat::kText,
               .debug_fd = debug[1],
               .stderr_fd = err[1],
               .warn_unsupported = false});
  LogDebug("d%d", 1);
  LogWarning("w%d", 2);
  LogUnsupported("u%d", 3);
  LogError("e%d", 4);
  SetLogSinks(
      {.debug_fd = debug[1], .stderr_fd = err[1], .warn_unsupported = true});
  LogUnsupported("u%d", 5);
  // The debug log is stderr: each line once.
  SetLogSinks(
      {.debug_fd = err[1], .stderr_fd = err[1], .warn_unsupported = true});
  LogUnsupported("u%d", 6);
  LogError("e%d", 7);
  SetLogSinks({});
  close(log[1]);
  close(debug[1]);
  close(err[1]);
  const std::string l = Drain(log[0]);
  EXPECT_NE(l.find("level=warning msg=\"w2\"\n"), std::string::npos) << l;
  EXPECT_NE(l.find("level=warning msg=\"u3\"\n"), std::string::npos) << l;
  EXPECT_NE(l.find("level=error msg=\"e4\"\n"), std::string::npos) << l;
  EXPECT_EQ(l.find("d1"), std::string::npos) << l;
  EXPECT_EQ(Drain(debug[0]),
            "d1\nrunsc: w2\nrunsc: u3\nrunsc: e4\nrunsc: u5\n");
  EXPECT_EQ(Drain(err[0]), "runsc: e4\nrunsc: u5\nrunsc: u6\nrunsc: e7\n");
  for (int fd : {log[0], debug[0], err[0]}) close(fd);
}

}  // namespace
}  // namespace sandbox::kernel
