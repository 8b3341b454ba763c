// File-system micro-benchmarks, run natively and under `runsc do` by
// tmpfs_bench.sh. Everything happens in a fresh directory under DIR (a
// tmpfs: /dev/shm natively and in the sandbox).
//
//   tmpfs_bench DIR [FILE_MIB] [ITERS] [stat]
//
// With a fourth argument "stat" only getppid and stat are measured, ITERS
// times each (for profiling the Sentry's stat path: `perf record` it).
//
// Prints one "name=value" line per figure:
//   getppid_ns        one syscall round trip (the reference for metadata)
//   stat_ns           stat() of an existing file
//   open_read_close_ns  open + read(64 bytes) + close of a small file
//   read4k_mib_s      sequential read of a FILE_MIB file, 4 KiB per read
//   read1m_mib_s      the same with 1 MiB reads
//   getdents_10k_us   open + getdents64 to the end + close, 10,000 entries
// and, for the per-call figures, *_best: the mean of the fastest batch of
// 100 calls (ITERS/100 batches; read4k: batches of 256 reads). On a loaded
// machine every mean is dominated by waits for a CPU (a sandbox round trip
// is two process switches); the best batch shows the cost of the work
// itself, as on an idle machine.
// Exits 1 with a message on any failed call.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perf/bench_time.h"

static void die(const char* what, const char* path) {
  fprintf(stderr, "tmpfs_bench: %s %s: %s\n", what, path ? path : "",
          strerror(errno));
  exit(1);
}

static char base[4096];

enum { kBatch = 100 };  // calls per timed batch (the *_best figures)
// Fastest 256-read batch of the last read_file with 4 KiB reads (MiB/s).
static double g_best_batch_mib_s;

static void path_of(char* out, size_t n, const char* name) {
  if ((size_t)snprintf(out, n, "%s/%s", base, name) >= n) {
    errno = ENAMETOOLONG;
    die("path", name);
  }
}

static void write_file(const char* path, size_t bytes) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("create", path);
  static char chunk[1 << 20];
  memset(chunk, 'x', sizeof(chunk));
  while (bytes > 0) {
    size_t n = bytes < sizeof(chunk) ? bytes : sizeof(chunk);
    ssize_t w = write(fd, chunk, n);
    if (w <= 0) die("write", path);
    bytes -= (size_t)w;
  }
  if (close(fd) != 0) die("close", path);
}

// Reads the whole file with reads of `chunk` bytes; returns MiB/s.
static double read_file(const char* path, size_t chunk, size_t expect) {
  char* buf = malloc(chunk);
  if (buf == NULL) die("malloc", NULL);
  memset(buf, 0, chunk);  // touch the buffer before timing
  int fd = open(path, O_RDONLY);
  if (fd < 0) die("open", path);
  double t0 = bench_now_ns();
  size_t total = 0;
  double b0 = t0, best = 1e30;
  int in_batch = 0;
  for (;;) {
    ssize_t r = read(fd, buf, chunk);
    if (r < 0) die("read", path);
    if (r == 0) break;
    total += (size_t)r;
    if (++in_batch == 256) {
      double now = bench_now_ns();
      if (now - b0 < best) best = now - b0;
      b0 = now;
      in_batch = 0;
    }
  }
  g_best_batch_mib_s = best < 1e30 ? 256.0 * chunk / (1 << 20) / (best / 1e9)
                                   : 0;
  double t1 = bench_now_ns();
  close(fd);
  free(buf);
  if (total != expect) {
    fprintf(stderr, "tmpfs_bench: read %zu bytes of %zu\n", total, expect);
    exit(1);
  }
  return (double)total / (1 << 20) / ((t1 - t0) / 1e9);
}

static double getdents_us(const char* dir, int iters, long expect) {
  static char buf[1 << 16];
  double best = 1e30;
  for (int i = 0; i < iters; ++i) {
    double t0 = bench_now_ns();
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) die("open", dir);
    long entries = 0;
    for (;;) {
      long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
      if (n < 0) die("getdents64", dir);
      if (n == 0) break;
      for (long off = 0; off < n;) {
        struct dirent64* d = (struct dirent64*)(buf + off);
        ++entries;
        off += d->d_reclen;
      }
    }
    close(fd);
    double t1 = bench_now_ns();
    if (entries != expect) {
      fprintf(stderr, "tmpfs_bench: %ld entries, expected %ld\n", entries,
              expect);
      exit(1);
    }
    if (t1 - t0 < best) best = t1 - t0;
  }
  return best / 1e3;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: tmpfs_bench DIR [FILE_MIB] [ITERS] [stat]\n");
    return 2;
  }
  size_t file_mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 1024;
  long iters = argc > 3 ? atol(argv[3]) : 100000;
  int stat_only = argc > 4 && strcmp(argv[4], "stat") == 0;
  if (argc > 4 && !stat_only) {
    fprintf(stderr, "tmpfs_bench: unknown mode %s\n", argv[4]);
    return 2;
  }
  if (file_mib == 0 || iters < kBatch) {
    fprintf(stderr, "tmpfs_bench: FILE_MIB must be positive, ITERS >= %d\n",
            kBatch);
    return 2;
  }
  snprintf(base, sizeof(base), "%s/tmpfs_bench.%d", argv[1], (int)getpid());
  if (mkdir(base, 0755) != 0) die("mkdir", base);

  for (int i = 0; i < 1000; ++i) syscall(SYS_getppid);
  double best = 1e30;
  double t0 = bench_now_ns();
  for (long i = 0; i < iters; i += kBatch) {
    double b0 = bench_now_ns();
    for (long j = 0; j < kBatch; ++j) syscall(SYS_getppid);
    double b = (bench_now_ns() - b0) / kBatch;
    if (b < best) best = b;
  }
  printf("getppid_ns=%.1f\n", (bench_now_ns() - t0) / iters);
  printf("getppid_best_ns=%.1f\n", best);

  char small[4200];
  path_of(small, sizeof(small), "small");
  write_file(small, 64);
  struct stat st;
  best = 1e30;
  t0 = bench_now_ns();
  for (long i = 0; i < iters; i += kBatch) {
    double b0 = bench_now_ns();
    for (long j = 0; j < kBatch; ++j) {
      if (stat(small, &st) != 0) die("stat", small);
    }
    double b = (bench_now_ns() - b0) / kBatch;
    if (b < best) best = b;
  }
  printf("stat_ns=%.1f\n", (bench_now_ns() - t0) / iters);
  printf("stat_best_ns=%.1f\n", best);
  if (stat_only) {
    if (unlink(small) != 0) die("unlink", small);
    if (rmdir(base) != 0) die("rmdir", base);
    return 0;
  }

  char buf[64];
  best = 1e30;
  t0 = bench_now_ns();
  for (long i = 0; i < iters; i += kBatch) {
    double b0 = bench_now_ns();
    for (long j = 0; j < kBatch; ++j) {
      int fd = open(small, O_RDONLY);
      if (fd < 0) die("open", small);
      if (read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
        die("read", small);
      }
      close(fd);
    }
    double b = (bench_now_ns() - b0) / kBatch;
    if (b < best) best = b;
  }
  printf("open_read_close_ns=%.1f\n", (bench_now_ns() - t0) / iters);
  printf("open_read_close_best_ns=%.1f\n", best);

  char big[4200];
  path_of(big, sizeof(big), "big");
  size_t bytes = file_mib << 20;
  write_file(big, bytes);
  read_file(big, 4096, bytes);  // warm-up pass
  printf("read4k_mib_s=%.0f\n", read_file(big, 4096, bytes));
  printf("read4k_best_mib_s=%.0f\n", g_best_batch_mib_s);
  printf("read1m_mib_s=%.0f\n", read_file(big, 1 << 20, bytes));
  if (unlink(big) != 0) die("unlink", big);

  char dir[4200], name[4400];
  path_of(dir, sizeof(dir), "dir");
  if (mkdir(dir, 0755) != 0) die("mkdir", dir);
  for (int i = 0; i < 10000; ++i) {
    snprintf(name, sizeof(name), "%s/entry-%05d", dir, i);
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) die("create", name);
    close(fd);
  }
  int rounds = iters / 1000 > 0 ? (int)(iters / 1000) : 1;
  printf("getdents_10k_us=%.1f\n", getdents_us(dir, rounds, 10002));
  for (int i = 0; i < 10000; ++i) {
    snprintf(name, sizeof(name), "%s/entry-%05d", dir, i);
    if (unlink(name) != 0) die("unlink", name);
  }
  if (rmdir(dir) != 0) die("rmdir", dir);
  if (unlink(small) != 0) die("unlink", small);
  if (rmdir(base) != 0) die("rmdir", base);
  return 0;
}
