#include "sentry/loader/shebang.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/loader/file_reader.h"

namespace sandbox::loader {
namespace {

KResult<Shebang> Parse(const std::string& s) {
  BufferReader r(s);
  return ParseShebang(r);
}

void ExpectParse(const std::string& text, const std::string& interp,
                 const char* arg) {
  auto r = Parse(text);
  ASSERT_TRUE(r.ok()) << text;
  EXPECT_EQ(r->interpreter, interp) << text;
  if (arg == nullptr) {
    EXPECT_FALSE(r->arg.has_value()) << text;
  } else {
    ASSERT_TRUE(r->arg.has_value()) << text;
    EXPECT_EQ(*r->arg, arg) << text;
  }
}

TEST(ShebangTest, ParsesLikeLinux) {
  ExpectParse("#!/bin/sh\necho hi\n", "/bin/sh", nullptr);
  ExpectParse("#! /bin/sh\n", "/bin/sh", nullptr);
  ExpectParse("#!/bin/sh  \t\n", "/bin/sh", nullptr);
  ExpectParse("#!/usr/bin/env python3\n", "/usr/bin/env", "python3");
  // One argument: the rest of the line, spaces inside kept.
  ExpectParse("#!/usr/bin/awk -f -v x=1  \n", "/usr/bin/awk", "-f -v x=1");
  ExpectParse("#!/bin/sh", "/bin/sh", nullptr);  // no newline, short file
  ExpectParse(std::string("#!/bin/sh\0ignored\n", 18), "/bin/sh", nullptr);
  ExpectParse("#!/bin/x -a\r\n", "/bin/x", "-a\r");
}

TEST(ShebangTest, Rejects) {
  EXPECT_EQ(Parse("").error(), kENOEXEC);
  EXPECT_EQ(Parse("#").error(), kENOEXEC);
  EXPECT_EQ(Parse("\x7f"
                  "ELF")
                .error(),
            kENOEXEC);
  EXPECT_EQ(Parse("#!\n").error(), kENOEXEC);
  EXPECT_EQ(Parse("#!   \n").error(), kENOEXEC);
  EXPECT_EQ(Parse("#!" + std::string(300, ' ')).error(), kENOEXEC);
  // A path that fills the buffer would be truncated.
  EXPECT_EQ(Parse("#!/" + std::string(300, 'a')).error(), kENOEXEC);
  // A long argument is fine: only the path must be whole.
  auto r = Parse("#!/bin/sh " + std::string(300, 'a'));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->interpreter, "/bin/sh");
  EXPECT_EQ(r->arg->size(), 255u - 10u);
}

TEST(ShebangTest, Argv) {
  Shebang s{"/usr/bin/env", std::string("python3")};
  EXPECT_EQ(ShebangArgv(s, "/opt/x.py", {"x.py", "a", "b"}),
            (std::vector<std::string>{"/usr/bin/env", "python3", "/opt/x.py",
                                      "a", "b"}));
  Shebang t{"/bin/sh", std::nullopt};
  EXPECT_EQ(ShebangArgv(t, "/s", {}),
            (std::vector<std::string>{"/bin/sh", "/s"}));
}

}  // namespace
}  // namespace sandbox::loader
