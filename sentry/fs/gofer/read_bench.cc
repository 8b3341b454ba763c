// Sequential read and cached stat through the gofer file system against
// native calls in the same run (bazel run //sentry/fs/gofer:read_bench).
// Prints medians of 5 runs and the ratios.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "platform/memory_file.h"
#include "sentry/fs/gofer/testing.h"
#include "sentry/vfs/testing/fake_guest_io.h"

namespace sandbox::fs::gofer {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class ReadBench : public GoferFsTest {};

// read(2) of 1 MiB through the direct path (host pread into the memory
// file's pages) against native read(2) into a buffer, same file, same run:
// the Sentry's own cost per read, beyond the copy.
TEST_F(ReadBench, DirectRead1MiB) {
  constexpr size_t kSize = 256 << 20, kBuf = 1 << 20;
  {
    std::string block(kBuf, 'x');
    int fd = open(Host("big").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    for (size_t i = 0; i < kSize / kBuf; ++i) {
      ASSERT_EQ(write(fd, block.data(), kBuf), static_cast<ssize_t>(kBuf));
    }
    close(fd);
  }
  auto mf = platform::MemoryFile::Create(uint64_t{64} << 20);
  ASSERT_TRUE(mf.ok());
  auto off = (*mf)->Allocate(kBuf);
  ASSERT_TRUE(off.ok());
  ASSERT_TRUE((*mf)->Zero(*off, kBuf));  // populated, as a touched buffer
  Mount();
  std::vector<uint8_t> buf(kBuf, 1);
  std::vector<double> native, sentry;
  for (int run = 0; run < 7; ++run) {
    auto t0 = Clock::now();
    int fd = open(Host("big").c_str(), O_RDONLY);
    while (read(fd, buf.data(), buf.size()) > 0) {
    }
    close(fd);
    auto t1 = Clock::now();
    auto f = Open("/big", O_RDONLY);
    ASSERT_OK(f);
    vfs::IoContext ctx;
    vfs::testing::OneRunGuestIo g(**mf, *off, kBuf);
    for (;;) {
      auto n = (*f)->ReadDirect(ctx, g, -1);
      ASSERT_TRUE(n.ok());
      if (*n == 0) break;
    }
    auto t2 = Clock::now();
    native.push_back(std::chrono::duration<double>(t1 - t0).count());
    sentry.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  double n = Median(native), s = Median(sentry);
  const double reads = kSize / kBuf;
  printf(
      "direct read 256 MiB / 1 MiB: native %.0f MiB/s (%.1f us/read), gofer "
      "ReadDirect %.0f MiB/s (%.1f us/read), ratio %.3f, Sentry cost "
      "%.2f us/read\n",
      kSize / n / (1 << 20), n / reads * 1e6, kSize / s / (1 << 20),
      s / reads * 1e6, n / s, (s - n) / reads * 1e6);
}

TEST_F(ReadBench, SequentialReadAndCachedStat) {
  constexpr size_t kSize = 64 << 20, kBuf = 64 << 10;
  {
    std::string block(1 << 20, 'x');
    int fd = open(Host("big").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    for (size_t i = 0; i < kSize / block.size(); ++i) {
      ASSERT_EQ(write(fd, block.data(), block.size()),
                static_cast<ssize_t>(block.size()));
    }
    close(fd);
  }
  Mount();
  std::vector<uint8_t> buf(kBuf);
  std::vector<double> native, sentry;
  for (int run = 0; run < 5; ++run) {
    auto t0 = Clock::now();
    int fd = open(Host("big").c_str(), O_RDONLY);
    while (read(fd, buf.data(), buf.size()) > 0) {
    }
    close(fd);
    auto t1 = Clock::now();
    auto f = Open("/big", O_RDONLY);
    ASSERT_OK(f);
    vfs::IoContext ctx;
    for (;;) {
      auto n = (*f)->Read(ctx, absl::MakeSpan(buf));
      if (!n.ok() || *n == 0) break;
    }
    auto t2 = Clock::now();
    native.push_back(std::chrono::duration<double>(t1 - t0).count());
    sentry.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  double n = Median(native), s = Median(sentry);
  printf(
      "sequential read 64 MiB / 64 KiB: native %.1f MB/s, gofer %.1f MB/s, "
      "ratio %.2f\n",
      kSize / n / 1e6, kSize / s / 1e6, n / s);

  constexpr int kStats = 100000;
  ASSERT_OK(vfs::StatAt(Base(), "/big", 0));
  const uint64_t rpcs = fs_->rpc_count();
  auto t0 = Clock::now();
  for (int i = 0; i < kStats; ++i) (void)vfs::StatAt(Base(), "/big", 0);
  auto t1 = Clock::now();
  struct stat st;
  std::string host = Host("big");
  for (int i = 0; i < kStats; ++i) stat(host.c_str(), &st);
  auto t2 = Clock::now();
  printf(
      "cached stat: sentry VFS %.0f ns, native stat(2) %.0f ns, "
      "Gofer calls %llu\n",
      std::chrono::duration<double, std::nano>(t1 - t0).count() / kStats,
      std::chrono::duration<double, std::nano>(t2 - t1).count() / kStats,
      static_cast<unsigned long long>(fs_->rpc_count() - rpcs));
}

}  // namespace
}  // namespace sandbox::fs::gofer
