// The Sentry-side cost of the cached-file operations of perf/gofer's
// gofer_bench, in process (no platform, no round trip), on the gofer file
// system (a real Gofer server on a socketpair, exclusive and read-only as
// `runsc do --root=host-ro` mounts the host's root) against tmpfs, same
// path, same run:
//
//   stat            vfs::StatAt of /var/tmp/gofer_bench.1/small
//   open_read_close vfs::OpenAt(O_RDONLY) + ReadDirect of 64 bytes into a
//                   guest buffer of memory-file pages + dropping the file
//   listing         with the adaptive listing mode and with GetdentsPlus
//                   always: a bare listing of a directory of 2000 files
//                   not seen before (ls), and a listing followed by the
//                   lstat of every entry of another (ls -l, nftw), with
//                   the Gofer calls by type
//
// Each figure is the mean of the fastest batch of 1000 calls (robust to a
// loaded machine), with the Gofer calls per operation.
//
//   bazel run -c opt //sentry/fs/gofer:open_bench -- [ITERS] [ONLY]
//
// ONLY (one of gofer_stat, gofer_orc, tmpfs_stat, tmpfs_orc) runs that loop
// alone ITERS times, for `perf record -g`; ONLY = bare_ls, walk_ls,
// bare_ls_plus or walk_ls_plus runs that listing alone (count the Gofer's
// host syscalls with `strace -f -c`). Abseil's mutex deadlock
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
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/operations.h"
#include "sentry/vfs/testing/fake_guest_io.h"
#include "sentry/vfs/vfs_file.h"

namespace sandbox {
namespace {

double NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

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

// A Gofer server thread on `host` and the gofer file system on the other
// end, mounted as `runsc do --root=host-ro` mounts the host's root.
struct GoferMount {
  GoferMount(const std::string& host, fs::gofer::Options opts) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) abort();
    sock = sv[0];
    int root_fd = open(host.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    server = std::thread([fd = sv[1], root_fd] {
      ::gofer::ServeConnection(::gofer::UniqueFd(fd),
                               ::gofer::UniqueFd(root_fd), {});
    });
    opts.read_only = true;
    auto made = fs::gofer::NewGoferFilesystem(::gofer::UniqueFd(sv[0]), opts);
    if (!made.ok()) abort();
    fs = *made;
    ns =
        vfs::MountNamespace::Create(fs, vfs::kMountReadOnly | vfs::kMountNoDev);
  }
  ~GoferMount() {
    ns.reset();
    shutdown(sock, SHUT_RDWR);
    fs.reset();
    server.join();
  }
  int sock = -1;
  std::thread server;
  std::shared_ptr<fs::gofer::GoferFilesystem> fs;
  std::shared_ptr<vfs::MountNamespace> ns;
};

// Lists `dir` (a directory not seen before) and, if `stat_each`, lstats
// every entry after the listing; prints the time and the Gofer calls.
void ListingFigure(const std::string& host, fs::gofer::ListingMode mode,
                   const std::string& dir, bool stat_each) {
  fs::gofer::Options opts;
  opts.listing = mode;
  GoferMount m(host, opts);
  kernel::Credentials creds = kernel::Credentials::Root();
  vfs::ResolveBase base{creds, m.ns->Root(), m.ns->Root()};
  auto f = vfs::OpenAt(base, dir, O_RDONLY | O_DIRECTORY, 0, 022);
  if (!f.ok()) abort();
  auto& c = m.fs->calls();
  const uint64_t r0 = m.fs->rpc_count(), w0 = c.walk, g0 = c.getdents,
                 p0 = c.getdents_plus;
  double t0 = NowNs();
  std::vector<std::string> names;
  // In getdents64-sized pieces, as a guest's readdir reads (32 KiB).
  for (;;) {
    size_t bytes = 0, before = names.size();
    (void)(*f)->IterDirents([&](const vfs::DirEntry& e) {
      bytes += (19 + e.name.size() + 1 + 7) & ~size_t{7};
      if (bytes > 32768) return false;
      if (e.name != "." && e.name != "..") names.emplace_back(e.name);
      return true;
    });
    if (names.size() == before) break;
  }
  size_t stats = 0;
  if (stat_each) {
    for (const std::string& n : names) {
      if (vfs::StatAt(base, dir + "/" + n, AT_SYMLINK_NOFOLLOW).ok()) ++stats;
    }
  }
  double t1 = NowNs();
  m.fs->FlushCloses();
  printf(
      "%-11s %-12s %4zu entries, %4zu lstat: %7.0f us; Gofer calls %4llu: "
      "Getdents %llu, GetdentsPlus %llu, Walk %llu\n",
      mode == fs::gofer::ListingMode::kAdaptive ? "adaptive" : "always-plus",
      stat_each ? "list+lstat" : "bare list", names.size(), stats,
      (t1 - t0) / 1e3, (unsigned long long)(m.fs->rpc_count() - r0),
      (unsigned long long)(c.getdents - g0),
      (unsigned long long)(c.getdents_plus - p0),
      (unsigned long long)(c.walk - w0));
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
  for (const char* d : {"/bare", "/walk"}) {
    std::filesystem::create_directories(host + kDir + std::string(d));
  }
  {
    int fd = open((host + kPath).c_str(), O_WRONLY | O_CREAT, 0644);
    if (fd < 0 || write(fd, std::string(64, 'x').data(), 64) != 64) FAIL();
    close(fd);
    for (const char* d : {"/bare/", "/walk/"}) {
      for (int i = 0; i < 2000; ++i) {
        std::string p = host + kDir + d + "file" + std::to_string(i);
        close(open(p.c_str(), O_WRONLY | O_CREAT, 0644));
      }
    }
  }

  const std::string bare = std::string(kDir) + "/bare";
  const std::string walk = std::string(kDir) + "/walk";
  using fs::gofer::ListingMode;
  if (only == "bare_ls" || only == "walk_ls" || only == "bare_ls_plus" ||
      only == "walk_ls_plus") {
    const bool plus =
        only.size() > 7 && only.substr(only.size() - 5) == "_plus";
    const bool is_walk = only.rfind("walk", 0) == 0;
    ListingFigure(host,
                  plus ? ListingMode::kAlwaysPlus : ListingMode::kAdaptive,
                  is_walk ? walk : bare, is_walk);
    std::filesystem::remove_all(host);
    return 0;
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
      vfs::testing::OneRunGuestIo g(**mf, *buf, 64);
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

    for (ListingMode mode :
         {ListingMode::kAdaptive, ListingMode::kAlwaysPlus}) {
      ListingFigure(host, mode, bare, /*stat_each=*/false);
      ListingFigure(host, mode, walk, /*stat_each=*/true);
    }
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
