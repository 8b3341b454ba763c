// The sandbox's diagnostics stay off the guest's stdio (sentry/kernel/log.h,
// runsc-compat/log_flags.h): without flags the guest's stdout and stderr
// carry only what it wrote, even when it makes syscalls the sandbox lacks;
// --log gets those lines (text or JSON lines), --warn-unsupported copies
// them to stderr, --debug-log=DIR makes a file there, and an error that
// ends the sandbox reaches stderr once with status 125.
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/e2e/runsc_child.h"

namespace {

using ::sandbox::e2e::Program;
using ::sandbox::e2e::Result;
using ::sandbox::e2e::RunRunsc;

std::string TmpDir() {
  const char* d = getenv("TEST_TMPDIR");
  return d != nullptr ? d : "/tmp";
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

// Parses one JSON object whose values are all strings (what the log
// writes); nullopt if `s` is not exactly such an object.
std::optional<std::map<std::string, std::string>> ParseJsonLine(
    const std::string& s) {
  size_t i = 0;
  auto ws = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  };
  auto str = [&](std::string* out) {
    ws();
    if (i >= s.size() || s[i] != '"') return false;
    ++i;
    for (; i < s.size() && s[i] != '"'; ++i) {
      char c = s[i];
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (++i >= s.size()) return false;
      switch (s[i]) {
        case '"':
        case '\\':
        case '/':
          out->push_back(s[i]);
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u':
          if (i + 4 >= s.size()) return false;
          out->push_back(
              static_cast<char>(std::stoi(s.substr(i + 1, 4), nullptr, 16)));
          i += 4;
          break;
        default:
          return false;
      }
    }
    if (i >= s.size()) return false;
    ++i;
    return true;
  };
  std::map<std::string, std::string> m;
  ws();
  if (i >= s.size() || s[i++] != '{') return std::nullopt;
  for (;;) {
    std::string k, v;
    if (!str(&k)) return std::nullopt;
    ws();
    if (i >= s.size() || s[i++] != ':') return std::nullopt;
    if (!str(&v)) return std::nullopt;
    m[k] = v;
    ws();
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    if (i < s.size() && s[i] == '}') {
      ++i;
      break;
    }
    return std::nullopt;
  }
  ws();
  if (i != s.size()) return std::nullopt;
  return m;
}

using LogTest = ::sandbox::e2e::SandboxTest;

TEST_F(LogTest, GuestStdioCarriesOnlyTheGuestsOutput) {
  Result r = RunRunsc({"do", "--", Program("unimplemented")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "before\nafter");
  EXPECT_EQ(r.err, "");
}

TEST_F(LogTest, BashEchoPrintsExactlyHi) {
  if (access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no /bin/bash here";
  // As `runsc do -- bash -c 'echo hi' 2>&1`, with an unimplemented syscall
  // made by the same guest.
  Result r = RunRunsc(
      {"do", "--", "/bin/bash", "-c",
       "echo hi; " + Program("unimplemented") + " >/dev/null 2>&1; exit $?"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out + r.err, "hi\n");
}

TEST_F(LogTest, LogFileGetsTheUnsupportedSyscallLines) {
  const std::string log = TmpDir() + "/text.log";
  Result r = RunRunsc({"do", "--log=" + log, "--", Program("unimplemented")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string text = ReadFile(log);
  bool uselib = false, unknown = false;
  for (const std::string& l : Lines(text)) {
    // logrus's text form: time="..." level=... msg="..."
    EXPECT_EQ(l.rfind("time=\"", 0), 0u) << l;
    EXPECT_NE(l.find("\" level=warning msg=\""), std::string::npos) << l;
    if (l.find("msg=\"unimplemented syscall 134 (uselib): ENOSYS\"") !=
        std::string::npos) {
      uselib = true;
    }
    if (l.find("msg=\"unknown syscall 1000: ENOSYS\"") != std::string::npos) {
      unknown = true;
    }
  }
  EXPECT_TRUE(uselib) << text;
  EXPECT_TRUE(unknown) << text;
}

TEST_F(LogTest, JsonLogLinesParseWithLevelMsgAndTime) {
  const std::string log = TmpDir() + "/json.log";
  // Global flags before the subcommand, as runc takes them.
  Result r = RunRunsc({"--log=" + log, "--log-format=json", "do", "--",
                       Program("unimplemented")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string text = ReadFile(log);
  std::vector<std::string> lines = Lines(text);
  ASSERT_FALSE(lines.empty());
  bool uselib = false;
  for (const std::string& l : lines) {
    auto m = ParseJsonLine(l);
    ASSERT_TRUE(m.has_value()) << l;
    EXPECT_EQ(m->size(), 3u) << l;
    EXPECT_EQ(m->count("level"), 1u) << l;
    EXPECT_EQ(m->count("msg"), 1u) << l;
    ASSERT_EQ(m->count("time"), 1u) << l;
    // RFC 3339 in UTC: 2026-12-01T16:20:08.123456789Z.
    EXPECT_EQ((*m)["time"].size(), 30u) << l;
    EXPECT_EQ((*m)["time"][10], 'T') << l;
    EXPECT_EQ((*m)["time"].back(), 'Z') << l;
    if ((*m)["msg"] == "unimplemented syscall 134 (uselib): ENOSYS") {
      uselib = true;
      EXPECT_EQ((*m)["level"], "warning");
    }
  }
  EXPECT_TRUE(uselib) << text;
}

TEST_F(LogTest, WarnUnsupportedCopiesTheNotesToStderr) {
  Result r =
      RunRunsc({"do", "--warn-unsupported", "--", Program("unimplemented")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "before\nafter");
  EXPECT_NE(r.err.find("runsc: unimplemented syscall 134 (uselib): ENOSYS\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("runsc: unknown syscall 1000: ENOSYS\n"),
            std::string::npos)
      << r.err;
}

TEST_F(LogTest, DebugLogDirectoryGetsANewFile) {
  const std::string dir = TmpDir() + "/debug-logs/";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  Result r = RunRunsc(
      {"do", "--debug-log=" + dir, "--strace", "--", Program("unimplemented")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "before\nafter");
  EXPECT_EQ(r.err, "");
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr);
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  }
  closedir(d);
  ASSERT_EQ(names.size(), 1u);
  // runsc.log.%TIMESTAMP%.%COMMAND%: runsc.log.20261201-162008.123456.do
  EXPECT_EQ(names[0].rfind("runsc.log.", 0), 0u) << names[0];
  EXPECT_EQ(names[0].size(),
            std::string("runsc.log.20261201-162008.123456.do").size())
      << names[0];
  const std::string text = ReadFile(dir + names[0]);
  EXPECT_NE(text.find("uselib"), std::string::npos) << text;  // strace line
  EXPECT_NE(text.find("runsc: unimplemented syscall 134 (uselib): ENOSYS"),
            std::string::npos)
      << text;
}

TEST_F(LogTest, FatalErrorReachesStderrOnceWith125) {
  const std::string log = TmpDir() + "/no/such/dir/x.log";
  Result r = RunRunsc({"do", "--log=" + log, "--", Program("hello")});
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "runsc: cannot open --log " + log +
                       ": No such file or directory\n");
}

TEST_F(LogTest, BadLogFormatIsAUsageError) {
  Result r = RunRunsc({"do", "--log-format=xml", "--", Program("hello")});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--log-format=xml"), std::string::npos) << r.err;
}

}  // namespace
