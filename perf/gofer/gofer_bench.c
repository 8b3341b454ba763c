// Gofer file-system micro-benchmarks, run natively and under `runsc do`
// (the host root served by the Gofer) by gofer_bench.sh on the same host
// files.
//
//   gofer_bench DIR WALK_DIR ITERS
//
// DIR holds "small" (64 bytes) and "big" (the sequential-read file), made
// by the script on the host. Prints one "name=value" line per figure:
//   getppid_ns          one syscall round trip (the reference)
//   stat_ns             stat() of DIR/small, repeated (cached after the
//                       first)
//   open_read_close_ns  open + read(64 bytes) + close of DIR/small
//   read1m_mib_s        sequential read of DIR/big, 1 MiB per read
//   walk_ms             nftw(WALK_DIR, FTW_PHYS | FTW_MOUNT): lstat of
//                       every entry, one device
//   walk_entries        entries the walk saw (must match native)
// Exits 1 with a message on any failed call.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perf/bench_time.h"

static void die(const char* what, const char* path) {
  fprintf(stderr, "gofer_bench: %s %s: %s\n", what, path ? path : "",
          strerror(errno));
  exit(1);
}

static long walk_entries;

static int count(const char* path, const struct stat* st, int type,
                 struct FTW* ftw) {
  (void)path;
  (void)st;
  (void)type;
  (void)ftw;
  ++walk_entries;
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: gofer_bench DIR WALK_DIR ITERS\n");
    return 2;
  }
  const char* dir = argv[1];
  const char* walk = argv[2];
  long iters = atol(argv[3]);
  if (iters <= 0) {
    fprintf(stderr, "gofer_bench: ITERS must be positive\n");
    return 2;
  }
  char small[4200], big[4200];
  snprintf(small, sizeof(small), "%s/small", dir);
  snprintf(big, sizeof(big), "%s/big", dir);

  for (int i = 0; i < 1000; ++i) syscall(SYS_getppid);
  double t0 = bench_now_ns();
  for (long i = 0; i < iters; ++i) syscall(SYS_getppid);
  printf("getppid_ns=%.1f\n", (bench_now_ns() - t0) / iters);

  struct stat st;
  if (stat(small, &st) != 0) die("stat", small);  // The uncached one.
  t0 = bench_now_ns();
  for (long i = 0; i < iters; ++i) {
    if (stat(small, &st) != 0) die("stat", small);
  }
  printf("stat_ns=%.1f\n", (bench_now_ns() - t0) / iters);

  char buf[64];
  t0 = bench_now_ns();
  for (long i = 0; i < iters; ++i) {
    int fd = open(small, O_RDONLY);
    if (fd < 0) die("open", small);
    if (read(fd, buf, sizeof(buf)) != 64) die("read", small);
    close(fd);
  }
  printf("open_read_close_ns=%.1f\n", (bench_now_ns() - t0) / iters);

  if (stat(big, &st) != 0) die("stat", big);
  size_t chunk = 1 << 20;
  char* data = malloc(chunk);
  if (data == NULL) die("malloc", NULL);
  memset(data, 0, chunk);
  int fd = open(big, O_RDONLY);
  if (fd < 0) die("open", big);
  size_t total = 0;
  t0 = bench_now_ns();
  for (;;) {
    ssize_t r = read(fd, data, chunk);
    if (r < 0) die("read", big);
    if (r == 0) break;
    total += (size_t)r;
  }
  double t1 = bench_now_ns();
  close(fd);
  if (total != (size_t)st.st_size) {
    fprintf(stderr, "gofer_bench: read %zu bytes of %lld\n", total,
            (long long)st.st_size);
    return 1;
  }
  printf("read1m_mib_s=%.1f\n", (double)total / (1 << 20) / ((t1 - t0) / 1e9));

  t0 = bench_now_ns();
  if (nftw(walk, count, 64, FTW_PHYS | FTW_MOUNT) != 0) die("nftw", walk);
  printf("walk_ms=%.1f\n", (bench_now_ns() - t0) / 1e6);
  printf("walk_entries=%ld\n", walk_entries);
  return 0;
}
