#include "runsc-compat/do_flags.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sandbox::runsc {
namespace {

// Parses `runsc do ARGS...`; the error's message, "" when they parse.
std::string ParseDo(std::vector<std::string> args, DoOptions* o,
                    int* program_at = nullptr) {
  args.insert(args.begin(), "do");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  absl::StatusOr<int> r =
      ParseDoFlags(static_cast<int>(argv.size()), argv.data(), o);
  if (r.ok() && program_at != nullptr) *program_at = *r;
  return r.ok() ? "" : std::string(r.status().message());
}

// The error of `runsc do ARGS...` from fresh options.
std::string ErrorOf(std::vector<std::string> args) {
  DoOptions o;
  return ParseDo(std::move(args), &o);
}

TEST(DoFlagsTest, Defaults) {
  DoOptions o;
  int at = 0;
  ASSERT_EQ(ParseDo({"true"}, &o, &at), "");
  EXPECT_EQ(at, 1);
  EXPECT_EQ(o.root, RootFlag::kHost);
  EXPECT_FALSE(o.net.host);
  EXPECT_FALSE(o.spec.log_json);
  EXPECT_FALSE(o.spec.strace);
  EXPECT_TRUE(o.binds.empty());
  EXPECT_EQ(o.limits.pids, kDefaultPidsLimit);
}

TEST(DoFlagsTest, EveryFlagSetsItsField) {
  DoOptions o;
  int at = 0;
  ASSERT_EQ(ParseDo({"--root=tmpfs",
                     "--bind=/tmp:/mnt:ro",
                     "--strace",
                     "--strace-summary",
                     "--log=/var/tmp/l",
                     "--log-format=json",
                     "--debug-log=/var/tmp/d",
                     "--warn-unsupported",
                     "--hostname=h",
                     "--unconfined",
                     "--debug-seccomp",
                     "--memory=64m",
                     "--pids-limit=9",
                     "--network=host",
                     "-p",
                     "8080:80",
                     "--egress-allow=a.b",
                     "--egress-policy=/dev/null",
                     "--host-resolver=1.1.1.1",
                     "--",
                     "prog",
                     "--strace"},
                    &o, &at),
            "");
  EXPECT_EQ(at, 21);
  EXPECT_EQ(o.root, RootFlag::kTmpfs);
  ASSERT_EQ(o.binds.size(), 1u);
  EXPECT_EQ(o.binds[0].guest, "/mnt");
  EXPECT_TRUE(o.binds[0].read_only);
  EXPECT_TRUE(o.spec.strace);
  EXPECT_TRUE(o.spec.strace_summary);
  EXPECT_EQ(o.spec.log, "/var/tmp/l");
  EXPECT_TRUE(o.spec.log_json);
  EXPECT_EQ(o.spec.debug_log, "/var/tmp/d");
  EXPECT_TRUE(o.spec.warn_unsupported);
  EXPECT_EQ(o.spec.hostname, "h");
  EXPECT_TRUE(o.spec.unconfined);
  EXPECT_TRUE(o.spec.debug_seccomp);
  EXPECT_EQ(o.limits.memory, uint64_t{64} << 20);
  EXPECT_EQ(o.limits.pids, 9u);
  EXPECT_TRUE(o.net.host);
  EXPECT_EQ(o.net.publishes.size(), 1u);
  EXPECT_EQ(o.net.egress_allow, std::vector<std::string>{"a.b"});
  EXPECT_EQ(o.net.egress_files, std::vector<std::string>{"/dev/null"});
  EXPECT_EQ(o.net.host_resolvers.size(), 1u);
  DoOptions ro;
  ASSERT_EQ(ParseDo({"--root", "host-ro", "x"}, &ro), "");
  EXPECT_EQ(ro.root, RootFlag::kHostRo);
}

// The messages and their order as `runsc do` has always given them.
TEST(DoFlagsTest, Errors) {
  EXPECT_EQ(ErrorOf({}), "no PROGRAM given");
  EXPECT_EQ(ErrorOf({"--"}), "no PROGRAM given");
  EXPECT_EQ(ErrorOf({"--bogus", "x"}), "unknown flag --bogus");
  EXPECT_EQ(ErrorOf({"--strace=1", "x"}), "unknown flag --strace=1");
  EXPECT_EQ(ErrorOf({"--root=foo", "x"}),
            "--root=foo: expected --root=host or --root=tmpfs (or "
            "--root=host-ro)");
  EXPECT_EQ(ErrorOf({"--root"}),
            "--root needs a value (--root=host|host-ro|tmpfs)");
  EXPECT_EQ(ErrorOf({"--log=", "x"}), "--log needs a FILE");
  EXPECT_EQ(ErrorOf({"--debug-log=", "x"}), "--debug-log needs a FILE or DIR");
  EXPECT_EQ(ErrorOf({"--log-format=xml", "x"}),
            "--log-format=xml: expected --log-format=text or json");
  EXPECT_EQ(ErrorOf({"--bind=/tmp:rel", "x"}),
            "--bind=/tmp:rel: GUEST must be an absolute path");
  EXPECT_EQ(ErrorOf({"--bind=/nonexistent-dir", "x"}),
            "--bind: /nonexistent-dir: No such file or directory");
  EXPECT_EQ(ErrorOf({"--bind=/dev/null", "x"}),
            "--bind: /dev/null: not a directory");
  // A missing program is reported before a bad bind's host.
  EXPECT_EQ(ErrorOf({"--bind=/nonexistent-dir"}), "no PROGRAM given");
  std::vector<std::string> many;
  for (uint32_t k = 0; k <= boot::kMaxGoferMounts; ++k) {
    many.push_back("--bind=/tmp:/m" + std::to_string(k));
  }
  many.push_back("x");
  EXPECT_EQ(ErrorOf(many), "at most 256 --bind flags");
}

TEST(DoFlagsTest, HelpStopsParsing) {
  DoOptions o;
  EXPECT_EQ(ParseDo({"--help", "--bogus"}, &o), "");
  EXPECT_TRUE(o.help);
  DoOptions h;
  EXPECT_EQ(ParseDo({"-h"}, &h), "");
  EXPECT_TRUE(h.help);
  DoOptions bad;
  EXPECT_EQ(ParseDo({"--bogus", "--help"}, &bad), "unknown flag --bogus");
}

TEST(DoFlagsTest, BindsMadeAbsolute) {
  DoOptions o;
  ASSERT_EQ(ParseDo({"--bind=/tmp/../tmp:/t", "--bind=/:/host", "x"}, &o), "");
  ASSERT_EQ(o.binds.size(), 2u);
  EXPECT_EQ(o.binds[0].host, "/tmp");
  EXPECT_EQ(o.binds[0].guest, "/t");
  EXPECT_EQ(o.binds[1].host, "/");
  EXPECT_EQ(ErrorOf({"--bind=/", "x"}), "--bind=/: cannot bind over the root");
}

TEST(DoFlagsTest, ParseBindFlag) {
  absl::StatusOr<BindFlag> b = ParseBindFlag("/h:/g:uds:ro:suid");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->host, "/h");
  EXPECT_EQ(b->guest, "/g");
  EXPECT_TRUE(b->read_only && b->suid && b->uds);
  b = ParseBindFlag("/h");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->guest, "/h");
  EXPECT_FALSE(b->read_only || b->suid || b->uds);
  EXPECT_FALSE(ParseBindFlag("").ok());
  EXPECT_FALSE(ParseBindFlag("a:b:c").ok());
  EXPECT_FALSE(ParseBindFlag("/h:/").ok());
  EXPECT_FALSE(ParseBindFlag("/h:g").ok());
}

// Every flag of the table is in --help, with its own usage line.
TEST(DoFlagsTest, HelpListsEveryFlag) {
  const std::string help = DoHelp();
  DoOptions o;
  for (const flags::Flag& f : DoFlagTable(&o)) {
    EXPECT_FALSE(f.help.empty()) << f.name;
    const std::string usage = "\n  " + std::string(f.alias ? "-h, " : "") +
                              "--" + std::string(f.name);
    if (f.name == "publish") continue;  // -p is not listed
    EXPECT_NE(help.find(usage), std::string::npos) << f.name;
  }
  EXPECT_EQ(help.rfind("Usage: runsc do [flags] [--] PROGRAM [ARGS...]\n", 0),
            0u);
  EXPECT_NE(help.find("\nResource limits"), std::string::npos);
  EXPECT_NE(help.find("\nNetwork:\n  --network=none      (default)"),
            std::string::npos);
}

}  // namespace
}  // namespace sandbox::runsc
