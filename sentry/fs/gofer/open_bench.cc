// The Sentry-side cost of the cached-file operations of perf/gofer's
// gofer_bench, in process (no platform, no round trip), on the gofer file
// system (a real Gofer server on a socketpair, exclusive and read-only as
// `runsc do --root=host-ro` mounts the host's root) against tmpfs, same
// path, same run:
//
//   stat            vfs::StatAt of /var/tmp/gofer_bench.1/small
//   open_read_close vfs::OpenAt(O_RDONLY) + ReadDirect of 64 bytes into a
//                   guest buffer of memory-file pages + dropping the file
//   getdents        a listing of a directory of 2000 files (IterDirents),
//                   then, with --walk, the lstat of every entry
//
// Each figure is the mean of the fastest batch of 1000 calls (robust to a
// loaded machine), with the Gofer calls per operation.
//
//   bazel run -c opt //sentry/fs/gofer:open_bench -- [ITERS] [ONLY]
//
// ONLY (one of gofer_stat, gofer_orc, tmpfs_stat, tmpfs_orc) runs that loop
// alone ITERS times, for `perf record -g`. Abseil's mutex deadlock
// detection is off, as in the Sentry.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gofer/server/server.h"
#include "platform/memory_file.h"
#include "sentry/fs/gofer/filesystem.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/credentials.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/operations.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox {
namespace {

double NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// A guest buffer that is one run of memory-file pages.
class OneRunGuest final : public vfs::GuestIo {
 public:
  OneRunGuest(platform::MemoryFile& mf, uint64_t off, size_t len)
      : mf_(mf), off_(off), len_(len) {}
  size_t size() const override { return len_; }
  platform::MemoryFile& memory_file() override { return mf_; }
  KResult<size_t> Walk(
      size_t n,
      absl::FunctionRef<size_t(uint64_t, size_t, size_t)> fn) override {
    return fn(off_, 0, std::min(n, len_));
  }

 private:
  platform::MemoryFile& mf_;
  const uint64_t off_;
  const size_t len_;
};

constexpr char kDir[] = "/var/tmp/gofer_bench.1";
constexpr char kPath[] = "/var/tmp/gofer_bench.1/small";

// Mean ns per call of the fastest batch of 1000 (iters calls in all).
double Best(long iters, const std::function<bool()>& op) {
  double best = 1e30;
  for (long i = 0; i < iters; i += 1000) {
    double t0 = NowNs();
    for (int j = 0; j < 1000; ++j) {
      if (!op()) {
        fprintf(stderr, "operation failed\n");
        exit(1);
      }
    }
    best = std::min(best, (NowNs() - t0) / 1000);
  }
  return best;
}

#define FAIL()                                          \
  do {                                                  \
    fprintf(stderr, "open_bench: line %d\n", __LINE__); \
    _exit(1);                                           \
  } while (0)

int Main(int argc, char** argv) {
  long iters = argc > 1 ? atol(argv[1]) : 200000;
  if (iters < 1000) iters = 1000;
  const std::string only = argc > 2 ? argv[2] : "";
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  // The host tree.
  const char* tmp = getenv("TEST_TMPDIR");
  std::string tmpl = std::string(tmp ? tmp : "/var/tmp") + "/open_bench.XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) FAIL();
  const std::string host = tmpl;
  chmod(host.c_str(), 0755);  // searchable by the unprivileged caller
  std::filesystem::create_directories(host + kDir + std::string("/list"));
  {
    int fd = open((host + kPath).c_str(), O_WRONLY | O_CREAT, 0644);
    if (fd < 0 || write(fd, std::string(64, 'x').data(), 64) != 64) FAIL();
    close(fd);
    for (int i = 0; i < 2000; ++i) {
      std::string p = host + kDir + "/list/file" + std::to_string(i);
      close(open(p.c_str(), O_WRONLY | O_CREAT, 0644));
    }
  }

  auto mf = platform::MemoryFile::Create(uint64_t{64} << 20);
  if (!mf.ok()) FAIL();
  auto buf = (*mf)->Allocate(4096);
  if (!buf.ok() || !(*mf)->Zero(*buf, 4096)) FAIL();

  // The gofer file system, as runsc do --root=host-ro mounts it.
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) FAIL();
  int root_fd = open(host.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  std::thread server([fd = sv[1], root_fd] {
    ::gofer::ServeConnection(::gofer::UniqueFd(fd), ::gofer::UniqueFd(root_fd),
                             {});
  });
  fs::gofer::Options opts;
  opts.read_only = true;
  opts.memory_file = mf->get();
  auto gfs = fs::gofer::NewGoferFilesystem(::gofer::UniqueFd(sv[0]), opts);
  if (!gfs.ok()) FAIL();
  auto gns =
      vfs::MountNamespace::Create(*gfs, vfs::kMountReadOnly | vfs::kMountNoDev);

  // The tmpfs, same tree.
  auto tfs = fs::tmpfs::Filesystem::Create(**mf, {.root_mode = 0755});
  auto tns = vfs::MountNamespace::Create(tfs, 0);
  kernel::Credentials root_creds = kernel::Credentials::Root();
  {
    vfs::ResolveBase b{root_creds, tns->Root(), tns->Root()};
    for (const char* d : {"/var", "/var/tmp", kDir}) {
      if (!vfs::MkdirAt(b, d, 0755, 0).ok()) FAIL();
    }
    auto f = vfs::OpenAt(b, kPath, O_CREAT | O_RDWR, 0644, 0);
    if (!f.ok()) FAIL();
    vfs::IoContext ctx;
    std::string x(64, 'x');
    if (!(*f)->Write(ctx, absl::MakeConstSpan(
                              reinterpret_cast<const uint8_t*>(x.data()), 64))
             .ok()) {
      FAIL();
    }
  }

  kernel::Credentials creds = kernel::Credentials::User(1000, 1000);
  auto stat_op = [&](vfs::ResolveBase& base) {
    return [&base] { return vfs::StatAt(base, kPath, 0).ok(); };
  };
  auto orc_op = [&](vfs::ResolveBase& base) {
    return [&base, &mf, &buf] {
      auto f = vfs::OpenAt(base, kPath, O_RDONLY, 0, 022);
      if (!f.ok()) return false;
      vfs::IoContext ctx;
      OneRunGuest g(**mf, *buf, 64);
      auto n = (*f)->ReadDirect(ctx, g, -1);
      return n.ok() && *n == 64;
    };
  };
  vfs::ResolveBase gbase{creds, gns->Root(), gns->Root()};
  vfs::ResolveBase tbase{creds, tns->Root(), tns->Root()};
  // Warm: the first stat and open fill the caches.
  if (!stat_op(gbase)() || !orc_op(gbase)() || !orc_op(tbase)()) FAIL();

  if (!only.empty()) {
    std::function<bool()> op;
    if (only == "gofer_stat") {
      op = stat_op(gbase);
    } else if (only == "gofer_orc") {
      op = orc_op(gbase);
    } else if (only == "tmpfs_stat") {
      op = stat_op(tbase);
    } else {
      op = orc_op(tbase);
    }
    printf("%s: %.1f ns\n", only.c_str(), Best(iters, op));
  } else {
    auto& g = **gfs;
    uint64_t r0 = g.rpc_count();
    double gs = Best(iters, stat_op(gbase));
    uint64_t r1 = g.rpc_count();
    double ts = Best(iters, stat_op(tbase));
    uint64_t r2 = g.rpc_count();
    double go = Best(iters, orc_op(gbase));
    uint64_t r3 = g.rpc_count();
    double to = Best(iters, orc_op(tbase));
    printf(
        "stat_ns             gofer %7.1f  tmpfs %7.1f  diff %+7.1f  "
        "gofer rpcs/op %.4f\n",
        gs, ts, gs - ts, double(r1 - r0) / iters);
    printf(
        "open_read_close_ns  gofer %7.1f  tmpfs %7.1f  diff %+7.1f  "
        "gofer rpcs/op %.4f\n",
        go, to, go - to, double(r3 - r2) / iters);

    // A bare listing, then a listing followed by the lstat of each entry
    // (nftw, ls -l), of a directory not seen before (a new file system
    // each time would need a new Gofer: instead three sibling dirs).
    std::string list = std::string(kDir) + "/list";
    uint64_t a = g.rpc_count();
    auto f = vfs::OpenAt(gbase, list, O_RDONLY | O_DIRECTORY, 0, 022);
    if (!f.ok()) FAIL();
    size_t entries = 0;
    double t0 = NowNs();
    (void)(*f)->IterDirents([&](const vfs::DirEntry&) {
      ++entries;
      return true;
    });
    double t1 = NowNs();
    uint64_t b = g.rpc_count();
    std::vector<std::string> names;
    (void)(*f)->Seek(0, SEEK_SET);
    (void)(*f)->IterDirents([&](const vfs::DirEntry& e) {
      if (e.name != "." && e.name != "..") names.emplace_back(e.name);
      return true;
    });
    size_t stats = 0;
    for (const std::string& n : names) {
      if (vfs::StatAt(gbase, list + "/" + n, AT_SYMLINK_NOFOLLOW).ok()) {
        ++stats;
      }
    }
    double t2 = NowNs();
    uint64_t c = g.rpc_count();
    printf(
        "first listing of %zu entries: %.0f us, %llu Gofer calls; "
        "second listing + lstat of %zu entries: %.0f us, %llu calls\n",
        entries, (t1 - t0) / 1e3, (unsigned long long)(b - a), stats,
        (t2 - t1) / 1e3, (unsigned long long)(c - b));
  }

  tns.reset();
  tfs.reset();
  gns.reset();
  shutdown(sv[0], SHUT_RDWR);
  gfs->reset();
  server.join();
  std::filesystem::remove_all(host);
  return 0;
}

}  // namespace
}  // namespace sandbox

int main(int argc, char** argv) { return sandbox::Main(argc, argv); }
