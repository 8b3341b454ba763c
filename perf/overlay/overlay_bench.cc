// Overlay costs in process, measured in one run against native calls on the
// same host files: stat and open+read+close of a 4 KiB file that is
//   - native: the host file, with stat(2)/open(2)/read(2)/close(2);
//   - gofer: the plain (read-only) Gofer root, as runsc do had before;
//   - lower: the overlay over that Gofer, file not copied up;
//   - upper: the overlay, the same file after copy-up (in the tmpfs upper).
// Prints the median of 5 rounds per figure (ns per operation) and the ratio
// to native. Iterations: $OVERLAY_BENCH_ITERS (default 100000).
//   bazel run -c opt //perf/overlay:overlay_bench
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/fs/gofer/testing.h"
#include "sentry/fs/overlay/overlay.h"
#include "sentry/fs/tmpfs/tmpfs.h"

namespace sandbox::fs::overlay {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class OverlayBench : public gofer::GoferFsTest {};

TEST_F(OverlayBench, StatAndOpenReadClose) {
  const char* env = getenv("OVERLAY_BENCH_ITERS");
  const int iters = env ? std::max(1, atoi(env)) : 100000;
  std::string data(4096, 'd');
  mkdir(Host("etc").c_str(), 0755);
  ::gofer::testing::WriteFile(Host("etc/lowerfile"), data);
  ::gofer::testing::WriteFile(Host("etc/upperfile"), data);
  auto mf = platform::MemoryFile::Create(uint64_t{64} << 20);
  ASSERT_TRUE(mf.ok());
  gofer::Options gopts;
  gopts.read_only = true;
  gopts.memory_file = mf->get();
  Mount(gopts);
  auto upper = tmpfs::Filesystem::Create(**mf);
  auto ofs = OverlayFilesystem::Create(Options{root_vd_, upper});
  ASSERT_TRUE(ofs.ok());
  auto ons = vfs::MountNamespace::Create(*ofs, 0);
  vfs::ResolveBase obase{root_, ons->Root(), ons->Root()};
  vfs::ResolveBase gbase = Base();
  // Copy one file up (chmod to the same mode).
  ASSERT_TRUE(vfs::ChmodAt(obase, "/etc/upperfile", 0644, 0).ok());

  std::vector<uint8_t> buf(8192);
  vfs::IoContext ctx;
  auto vfs_stat = [&](const vfs::ResolveBase& b, const char* p) {
    return [&b, p] { (void)vfs::StatAt(b, p, 0); };
  };
  auto vfs_read = [&](const vfs::ResolveBase& b, const char* p) {
    return [&b, p, &buf, &ctx] {
      auto f = vfs::OpenAt(b, p, O_RDONLY, 0, 0);
      if (f.ok()) (void)(*f)->Read(ctx, absl::MakeSpan(buf));
    };
  };
  std::string host = Host("etc/lowerfile");
  struct Case {
    const char* name;
    std::function<void()> op;
  };
  std::vector<Case> cases = {
      {"stat native",
       [&] {
         struct stat st;
         stat(host.c_str(), &st);
       }},
      {"stat gofer", vfs_stat(gbase, "/etc/lowerfile")},
      {"stat overlay-lower", vfs_stat(obase, "/etc/lowerfile")},
      {"stat overlay-upper", vfs_stat(obase, "/etc/upperfile")},
      {"open+read+close native",
       [&] {
         int fd = open(host.c_str(), O_RDONLY);
         (void)!read(fd, buf.data(), buf.size());
         close(fd);
       }},
      {"open+read+close gofer", vfs_read(gbase, "/etc/lowerfile")},
      {"open+read+close overlay-lower", vfs_read(obase, "/etc/lowerfile")},
      {"open+read+close overlay-upper", vfs_read(obase, "/etc/upperfile")},
  };
  std::vector<std::vector<double>> ns(cases.size());
  for (Case& c : cases) c.op();  // warm caches
  uint64_t rpcs = fs_->rpc_count();
  for (int round = 0; round < 5; ++round) {
    for (size_t i = 0; i < cases.size(); ++i) {
      auto t0 = Clock::now();
      for (int k = 0; k < iters; ++k) cases[i].op();
      auto t1 = Clock::now();
      ns[i].push_back(
          std::chrono::duration<double, std::nano>(t1 - t0).count() / iters);
    }
  }
  double load[1] = {0};
  getloadavg(load, 1);
  printf(
      "overlay_bench: %d iterations x 5 rounds, medians, load average %.2f\n",
      iters, load[0]);
  for (size_t i = 0; i < cases.size(); ++i) {
    double native = Median(ns[i < 4 ? 0 : 4]);
    double m = Median(ns[i]);
    printf("%-32s %9.0f ns  ratio to native %.2fx\n", cases[i].name, m,
           m / native);
  }
  printf("Gofer calls during the measurement: %llu\n",
         static_cast<unsigned long long>(fs_->rpc_count() - rpcs));
  // The copied-up file reads the same data.
  auto f = vfs::OpenAt(obase, "/etc/upperfile", O_RDONLY, 0, 0);
  ASSERT_TRUE(f.ok());
  auto n = (*f)->Read(ctx, absl::MakeSpan(buf));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, data.size());
}

}  // namespace
}  // namespace sandbox::fs::overlay
