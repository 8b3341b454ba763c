// AF_UNIX stream sockets between two processes: throughput of 64 KiB
// writes and the 1-byte round trip, over socketpair(2) and over a path
// socket (bind/listen/connect in the working directory). Prints
// "name=VALUE" lines: *_mib_s (MiB per second, higher is better) and *_us
// (microseconds per round trip, the median of 5 batches).
// Usage: unix_bench [MIB_PER_BATCH] [ROUND_TRIPS]
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf/bench_time.h"

enum { kChunk = 64 * 1024 };

static int WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

// A connected pair: a socketpair, or a path socket's client and accepted
// server ends.
static int Connect(int use_path, int sv[2]) {
  if (!use_path) return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof(a.sun_path), "/tmp/unix_bench.%d.sock", getpid());
  unlink(a.sun_path);
  int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0 || bind(l, (struct sockaddr*)&a, sizeof(a)) != 0 ||
      listen(l, 1) != 0) {
    perror("bind/listen");
    return -1;
  }
  sv[0] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sv[0] < 0 || connect(sv[0], (struct sockaddr*)&a, sizeof(a)) != 0) {
    perror("connect");
    return -1;
  }
  sv[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
  close(l);
  unlink(a.sun_path);
  return sv[1] < 0 ? -1 : 0;
}

// Throughput: a child writes `mib` MiB in 64 KiB writes, the parent reads
// them; the best of 5 batches in MiB/s.
static double Throughput(int use_path, int mib) {
  double best = 0;
  static char buf[kChunk];
  memset(buf, 'x', sizeof(buf));
  for (int b = 0; b < BENCH_BATCHES; ++b) {
    int sv[2];
    if (Connect(use_path, sv) != 0) exit(1);
    long total = (long)mib << 20;
    pid_t pid = fork();
    if (pid == 0) {
      close(sv[1]);
      for (long sent = 0; sent < total; sent += kChunk) {
        if (WriteAll(sv[0], buf, kChunk) != 0) _exit(2);
      }
      _exit(0);
    }
    close(sv[0]);
    static char rbuf[kChunk];
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

static int rtt_fd;

static int RoundTrip(void* arg) {
  (void)arg;
  char c = 'p';
  if (write(rtt_fd, &c, 1) != 1 || read(rtt_fd, &c, 1) != 1) return 1;
  return 0;
}

// Round trip: the parent sends a byte, a child echoes it back.
static double RoundTripUs(int use_path, int n) {
  int sv[2];
  if (Connect(use_path, sv) != 0) exit(1);
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
  rtt_fd = sv[0];
  double us = 0;
  if (bench_per_op_us(RoundTrip, NULL, n, NULL, NULL, &us) != 0) exit(4);
  close(sv[0]);
  int st;
  waitpid(pid, &st, 0);
  return us;
}

int main(int argc, char** argv) {
  int mib = argc > 1 ? atoi(argv[1]) : 256;
  int n = argc > 2 ? atoi(argv[2]) : 5000;
  if (mib <= 0) mib = 256;
  if (n <= 0) n = 5000;
  signal(SIGPIPE, SIG_IGN);
  for (int use_path = 0; use_path < 2; ++use_path) {
    const char* kind = use_path ? "path" : "socketpair";
    printf("%s_stream_64k_mib_s=%.1f\n", kind, Throughput(use_path, mib));
    printf("%s_rtt_1b_us=%.2f\n", kind, RoundTripUs(use_path, n));
  }
  return 0;
}
