/* Stream-socket measurements shared by the static C benchmarks of
 * connected stream sockets (perf/inet/tcp_bench.c, perf/unix/unix_bench.c):
 * libc only, as bench_time.h.
 *
 * bench_write_all(fd, p, n): write(2) until n bytes went; 0 or -1.
 * bench_stream_mib_s(connect, arg, mib): a child writes `mib` MiB in
 *   64 KiB writes on a fresh pair from connect(arg, sv), the parent reads
 *   64 KiB at a time; the best of BENCH_BATCHES batches in MiB/s.
 * bench_echo_rtt_us(sv, n): on a connected pair, a child echoes each byte
 *   back on sv[1] while the parent sends n one-byte round trips on sv[0];
 *   the median batch's microseconds per round trip. Closes both ends.
 * A pair's sv[0] is the writing (client) end, sv[1] the other. Failures
 * exit (1 to 4) as the programs always did. */
#ifndef PERF_BENCH_STREAM_H_
#define PERF_BENCH_STREAM_H_

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf/bench_time.h"

enum { kBenchStreamChunk = 64 * 1024 };

/* Makes a connected pair in sv (exits on failure). */
typedef void (*bench_pair_fn)(void* arg, int sv[2]);

static inline int bench_write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static inline double bench_stream_mib_s(bench_pair_fn connect, void* arg,
                                        int mib) {
  double best = 0;
  static char buf[kBenchStreamChunk];
  memset(buf, 'x', sizeof(buf));
  for (int b = 0; b < BENCH_BATCHES; ++b) {
    int sv[2];
    connect(arg, sv);
    long total = (long)mib << 20;
    pid_t pid = fork();
    if (pid == 0) {
      close(sv[1]);
      for (long sent = 0; sent < total; sent += kBenchStreamChunk) {
        if (bench_write_all(sv[0], buf, kBenchStreamChunk) != 0) _exit(2);
      }
      _exit(0);
    }
    close(sv[0]);
    static char rbuf[kBenchStreamChunk];
    double start = bench_now_us();
    long got = 0;
    while (got < total) {
      ssize_t k = read(sv[1], rbuf, sizeof(rbuf));
      if (k <= 0) exit(3);
      got += k;
    }
    double us = bench_now_us() - start;
    int st;
    waitpid(pid, &st, 0);
    close(sv[1]);
    double mib_s = (double)mib / (us / 1e6);
    if (mib_s > best) best = mib_s;
  }
  return best;
}

static int bench_rtt_fd;

static inline int bench_rtt_once(void* arg) {
  (void)arg;
  char c = 'p';
  if (write(bench_rtt_fd, &c, 1) != 1 || read(bench_rtt_fd, &c, 1) != 1) {
    return 1;
  }
  return 0;
}

static inline double bench_echo_rtt_us(int sv[2], int n) {
  pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    char c;
    while (read(sv[1], &c, 1) == 1) {
      if (write(sv[1], &c, 1) != 1) _exit(2);
    }
    _exit(0);
  }
  close(sv[1]);
  bench_rtt_fd = sv[0];
  double us = 0;
  if (bench_per_op_us(bench_rtt_once, NULL, n, NULL, NULL, &us) != 0) exit(4);
  close(sv[0]);
  int st;
  waitpid(pid, &st, 0);
  return us;
}

#endif /* PERF_BENCH_STREAM_H_ */
