// FindProgram: execvp's PATH search over a tmpfs root.
#include "sentry/boot/path_lookup.h"

#include <fcntl.h>

#include <string>

#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/testing.h"
#include "sentry/vfs/operations.h"

namespace sandbox::boot {
namespace {

class PathLookupTest : public fs::tmpfs::TmpfsTest {
 protected:
  void SetUp() override {
    TmpfsTest::SetUp();
    for (const char* d : {"/bin", "/usr", "/usr/bin", "/opt", "/home"}) {
      ASSERT_OK(Mkdir(d));
    }
  }
  std::string Find(std::string_view name,
                   const std::optional<std::string>& path,
                   const kernel::Credentials* creds = nullptr) {
    auto r = FindProgram(Base(creds ? *creds : root_), name, path);
    if (!r.ok()) return std::string("error ") + std::string(r.error().name());
    EXPECT_NE(r->file, nullptr);
    return r->path;
  }
};

TEST_F(PathLookupTest, SearchesPathInOrder) {
  WriteFile("/usr/bin/prog", "x", 0755);
  EXPECT_EQ(Find("prog", "/bin:/usr/bin"), "/usr/bin/prog");
  WriteFile("/bin/prog", "x", 0755);
  EXPECT_EQ(Find("prog", "/bin:/usr/bin"), "/bin/prog");
  EXPECT_EQ(Find("prog", "/usr/bin:/bin"), "/usr/bin/prog");
  // glibc adds the '/' even after one.
  EXPECT_EQ(Find("prog", "/usr/bin/"), "/usr/bin//prog");
}

TEST_F(PathLookupTest, DefaultPathIsGlibcs) {
  WriteFile("/usr/bin/prog", "x", 0755);
  EXPECT_EQ(Find("prog", std::nullopt), "/usr/bin/prog");
  EXPECT_EQ(std::string(kDefaultPath), "/bin:/usr/bin");
}

TEST_F(PathLookupTest, NotFoundIsEnoent) {
  EXPECT_EQ(Find("nothing", "/bin:/usr/bin"), "error ENOENT");
  EXPECT_EQ(Find("", "/bin"), "error ENOENT");
  // Elements that do not exist or are not directories are skipped.
  WriteFile("/file", "x", 0644);
  WriteFile("/usr/bin/prog", "x", 0755);
  EXPECT_EQ(Find("prog", "/missing:/file:/usr/bin"), "/usr/bin/prog");
}

TEST_F(PathLookupTest, KeepsSearchingPastEaccesAndRemembersIt) {
  // Not executable in /bin: skipped, the one in /usr/bin found.
  WriteFile("/bin/prog", "x", 0644);
  WriteFile("/usr/bin/prog", "x", 0755);
  EXPECT_EQ(Find("prog", "/bin:/usr/bin"), "/usr/bin/prog");
  // Found only without execute permission: EACCES, not ENOENT.
  WriteFile("/bin/only", "x", 0644);
  EXPECT_EQ(Find("only", "/bin:/usr/bin"), "error EACCES");
  // A directory of that name: EACCES too (execve of a directory).
  ASSERT_OK(Mkdir("/opt/dir"));
  EXPECT_EQ(Find("dir", "/opt"), "error EACCES");
  // A directory the user cannot search: EACCES remembered, search goes on.
  ASSERT_OK(Mkdir("/home/locked", 0700));
  WriteFile("/home/locked/tool", "x", 0755);
  WriteFile("/usr/bin/tool", "x", 0755);
  EXPECT_EQ(Find("tool", "/home/locked:/usr/bin", &user_), "/usr/bin/tool");
  EXPECT_EQ(Find("tool", "/home/locked", &user_), "error EACCES");
}

TEST_F(PathLookupTest, EmptyElementIsTheCwd) {
  WriteFile("/opt/here", "x", 0755);
  auto cwd = vfs::Resolve(Base(), "/opt", vfs::ResolveOptions{});
  ASSERT_TRUE(cwd.ok());
  cwd_ = *cwd;
  EXPECT_EQ(Find("here", ":/bin"), "here");
  EXPECT_EQ(Find("here", "/bin:"), "here");
  EXPECT_EQ(Find("here", "/bin::/usr/bin"), "here");
  EXPECT_EQ(Find("here", ""), "here");
  EXPECT_EQ(Find("here", "/bin"), "error ENOENT");
}

TEST_F(PathLookupTest, NamesWithASlashAreUsedAsIs) {
  WriteFile("/opt/tool", "x", 0755);
  WriteFile("/usr/bin/tool", "x", 0755);
  EXPECT_EQ(Find("/opt/tool", "/usr/bin"), "/opt/tool");
  auto cwd = vfs::Resolve(Base(), "/opt", vfs::ResolveOptions{});
  ASSERT_TRUE(cwd.ok());
  cwd_ = *cwd;
  EXPECT_EQ(Find("./tool", "/usr/bin"), "./tool");
  EXPECT_EQ(Find("../usr/bin/tool", ""), "../usr/bin/tool");
  // No search: the path's own error.
  EXPECT_EQ(Find("./missing", "/usr/bin"), "error ENOENT");
  WriteFile("/opt/data", "x", 0644);
  EXPECT_EQ(Find("./data", "/usr/bin"), "error EACCES");
  EXPECT_EQ(Find("./data/x", "/usr/bin"), "error ENOTDIR");
}

TEST_F(PathLookupTest, OtherErrorsEndTheSearch) {
  // ELOOP is not one of execvp's "keep searching" errors.
  ASSERT_OK(Symlink("loop", "/opt/loop"));
  WriteFile("/usr/bin/loop", "x", 0755);
  EXPECT_EQ(Find("loop", "/opt:/usr/bin"), "error ELOOP");
  EXPECT_EQ(Find(std::string(300, 'n'), "/usr/bin"), "error ENAMETOOLONG");
}

TEST(PathFromEnvTest, FirstPathWins) {
  EXPECT_EQ(PathFromEnv({"A=1", "PATH=/x", "PATH=/y"}), "/x");
  EXPECT_EQ(PathFromEnv({"A=1", "PATHX=/x"}), std::nullopt);
  EXPECT_EQ(PathFromEnv({"PATH="}), "");
}

}  // namespace
}  // namespace sandbox::boot
