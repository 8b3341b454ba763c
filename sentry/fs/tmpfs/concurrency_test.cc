// Concurrent walks, renames, creates, unlinks and getdents on one tmpfs:
// no deadlock, no crash, and the tree stays consistent (link counts).
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/fs/tmpfs/testing.h"

namespace sandbox::fs::tmpfs {
namespace {

class ConcurrencyTest : public TmpfsTest {};

TEST_F(ConcurrencyTest, RenameWalkCreateUnlinkGetdents) {
  ASSERT_OK(Mkdir("/a"));
  ASSERT_OK(Mkdir("/b"));
  ASSERT_OK(Mkdir("/a/d"));
  ASSERT_OK(Mkdir("/a/d/e"));
  ASSERT_OK(Symlink("/a/d", "/link"));
  constexpr int kIters = 1500;
  std::atomic<int> walk_ok{0};
  std::vector<std::thread> threads;
  // Moves the directory d back and forth between /a and /b, and swaps.
  threads.emplace_back([&] {
    for (int i = 0; i < kIters; ++i) {
      (void)vfs::RenameAt(Base(), "/a/d", Base(), "/b/d", 0);
      (void)vfs::RenameAt(Base(), "/b/d", Base(), "/a/d", 0);
      (void)vfs::RenameAt(Base(), "/a", Base(), "/b", RENAME_EXCHANGE);
    }
  });
  // Walks through the moving directory and through the symlink.
  threads.emplace_back([&] {
    for (int i = 0; i < kIters; ++i) {
      for (const char* p : {"/a/d/e", "/b/d/e", "/link/e", "/a/d/e/../.."}) {
        if (vfs::StatAt(Base(), p, 0).ok()) ++walk_ok;
      }
    }
  });
  // Creates and removes files inside the moving directory.
  threads.emplace_back([&] {
    for (int i = 0; i < kIters; ++i) {
      std::string name = "/a/d/e/f" + std::to_string(i % 7);
      (void)vfs::OpenAt(Base(), name, O_CREAT | O_RDWR, 0644, 0);
      (void)vfs::UnlinkAt(Base(), name, 0);
      (void)vfs::MkdirAt(Base(), "/b/d/e/sub", 0755, 0);
      (void)vfs::UnlinkAt(Base(), "/b/d/e/sub", AT_REMOVEDIR);
    }
  });
  // Lists directories and computes a cwd inside the moving tree.
  threads.emplace_back([&] {
    for (int i = 0; i < kIters; ++i) {
      auto f = vfs::OpenAt(Base(), "/a/d/e", O_RDONLY | O_DIRECTORY, 0, 0);
      if (f.ok()) {
        (void)(*f)->IterDirents([](const vfs::DirEntry&) { return true; });
        (void)vfs::GetCwd(root_vd_, (*f)->vd());
      }
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_GT(walk_ok.load(), 0);
  // Quiescent: d is in /a or /b, and link counts add up.
  bool in_a = vfs::StatAt(Base(), "/a/d", 0).ok();
  bool in_b = vfs::StatAt(Base(), "/b/d", 0).ok();
  EXPECT_NE(in_a, in_b);
  auto st_root = vfs::StatAt(Base(), "/", 0);
  ASSERT_OK(st_root);
  EXPECT_EQ(st_root->st_nlink, 4u);
  const char* d = in_a ? "/a/d" : "/b/d";
  EXPECT_EQ(vfs::StatAt(Base(), d, 0)->st_nlink, 3u);
  EXPECT_EQ(vfs::StatAt(Base(), in_a ? "/a" : "/b", 0)->st_nlink, 3u);
  EXPECT_EQ(vfs::StatAt(Base(), in_a ? "/b" : "/a", 0)->st_nlink, 2u);
  // Leftovers (a create or unlink that raced with a move) are allowed; the
  // link count of e must match its subdirectories.
  std::string e = std::string(d) + "/e";
  uint64_t subdirs = 0;
  for (const std::string& n : List(e)) {
    if (n == "." || n == "..") continue;
    EXPECT_TRUE(n[0] == 'f' || n == "sub") << n;
    if (n == "sub") ++subdirs;
  }
  EXPECT_EQ(vfs::StatAt(Base(), e, 0)->st_nlink, 2 + subdirs);
}

}  // namespace
}  // namespace sandbox::fs::tmpfs
