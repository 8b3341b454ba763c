// The Sentry-side cost of a stat(2) path walk, in process (no platform, no
// round trip): vfs::StatAt of a file four components deep on a tmpfs, as
// the stat syscall calls it. Prints "vfs_stat_ns=" (mean of the fastest of
// ITERS/1000 batches of 1000 calls, robust to a loaded machine).
//
//   vfs_walk_bench [ITERS] [--deadlock-detection]
//
// Abseil's mutex deadlock detection (on in this Abseil build unless turned
// off: a graph-cycle update on every lock) is off, as in the Sentry
// (sentry/boot); --deadlock-detection keeps it, to show its cost.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <string>

#include "absl/synchronization/mutex.h"
#include "platform/memory_file.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/auth/credentials.h"
#include "sentry/vfs/mount.h"
#include "sentry/vfs/operations.h"

namespace {

double NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sandbox;  // NOLINT
  long iters = argc > 1 ? atol(argv[1]) : 1000000;
  if (!(argc > 2 && std::string(argv[2]) == "--deadlock-detection")) {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
  if (iters < 1000) iters = 1000;
  auto mf = platform::MemoryFile::Create(uint64_t{64} << 20);
  if (!mf.ok()) return 1;
  auto fs = fs::tmpfs::Filesystem::Create(**mf, {.root_mode = 0755});
  auto ns = vfs::MountNamespace::Create(fs, 0);
  vfs::VirtualDentry root = ns->Root();
  kernel::Credentials creds = kernel::Credentials::User(1000, 1000);
  kernel::Credentials root_creds = kernel::Credentials::Root();
  vfs::ResolveBase as_root{root_creds, root, root};
  for (const char* d : {"/dev", "/dev/shm", "/dev/shm/tmpfs_bench.1"}) {
    if (!vfs::MkdirAt(as_root, d, 0755, 0).ok()) return 1;
  }
  const std::string path = "/dev/shm/tmpfs_bench.1/small";
  if (!vfs::OpenAt(as_root, path, O_CREAT | O_RDWR, 0644, 0).ok()) return 1;
  vfs::ResolveBase base{creds, root, root};
  double best = 1e30;
  for (long i = 0; i < iters; i += 1000) {
    double t0 = NowNs();
    for (int j = 0; j < 1000; ++j) {
      if (!vfs::StatAt(base, path, 0).ok()) return 1;
    }
    double b = (NowNs() - t0) / 1000;
    if (b < best) best = b;
  }
  printf("vfs_stat_ns=%.1f\n", best);
  return 0;
}
