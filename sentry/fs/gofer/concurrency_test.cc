// Many threads reading, statting and listing through a tiny FD budget and
// name cache while another renames and rewrites files: every read returns
// one whole version of its file, nothing crashes or leaks.
#include <fcntl.h>
#include <stdio.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/fs/gofer/testing.h"

namespace sandbox::fs::gofer {
namespace {

constexpr int kFiles = 16;

std::string Content(int i) { return "file " + std::to_string(i) + " body"; }

TEST_F(GoferFsTest, ConcurrentReadersAndRenames) {
  for (int i = 0; i < kFiles; ++i) {
    ::gofer::testing::WriteFile(Host("f" + std::to_string(i)), Content(i));
  }
  Options opts;
  opts.max_host_fds = 3;
  opts.max_cached_inodes = 8;
  Mount(opts);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      for (int iter = 0; !stop.load() && iter < 400; ++iter) {
        int i = (iter * 7 + t) % kFiles;
        std::string path = "/f" + std::to_string(i);
        auto f = Open(path, O_RDONLY);
        if (!f.ok()) {
          // The renamer briefly moves a file away.
          if (f.error() != kENOENT) bad.fetch_add(1);
          continue;
        }
        vfs::IoContext ctx;
        char buf[64];
        auto n = (*f)->PRead(
            ctx, absl::MakeSpan(reinterpret_cast<uint8_t*>(buf), sizeof(buf)),
            0);
        if (!n.ok() || std::string(buf, *n) != Content(i)) bad.fetch_add(1);
        (void)vfs::StatAt(Base(), path, 0);
        if (iter % 50 == 0) (void)List("/");
      }
    });
  }
  std::thread renamer([&] {
    for (int iter = 0; iter < 200; ++iter) {
      int i = iter % kFiles;
      std::string a = "/f" + std::to_string(i), b = "/moved";
      if (vfs::RenameAt(Base(), a, Base(), b, 0).ok()) {
        auto back = vfs::RenameAt(Base(), b, Base(), a, 0);
        if (!back.ok()) bad.fetch_add(1);
      }
    }
  });
  renamer.join();
  stop.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_LE(fs_->fd_cache().size(), 3u);
  for (int i = 0; i < kFiles; ++i) {
    auto f = Open("/f" + std::to_string(i), O_RDONLY);
    ASSERT_OK(f);
    EXPECT_EQ(ReadAll(**f), Content(i));
  }
}

}  // namespace
}  // namespace sandbox::fs::gofer
