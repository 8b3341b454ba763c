// TCP over loopback between two processes: throughput of 64 KiB writes,
// the 1-byte round trip (TCP_NODELAY), and connect+accept+close per
// second, over 127.0.0.1 and ::1. Prints "name=VALUE" lines: *_mib_s (MiB
// per second, the best of 5 batches), *_us (µs per round trip, the median
// batch), *_per_s (connections per second, the best batch).
// Usage: tcp_bench [MIB_PER_BATCH] [ROUND_TRIPS] [CONNECTIONS]
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

// A listener on the loopback address of `family`, port chosen by bind.
static int Listen(int family, struct sockaddr_storage* a, socklen_t* len) {
  memset(a, 0, sizeof(*a));
  if (family == AF_INET) {
    struct sockaddr_in* in = (struct sockaddr_in*)a;
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    *len = sizeof(*in);
  } else {
    struct sockaddr_in6* in6 = (struct sockaddr_in6*)a;
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_loopback;
    *len = sizeof(*in6);
  }
  int l = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0 || bind(l, (struct sockaddr*)a, *len) != 0 ||
      listen(l, 128) != 0 || getsockname(l, (struct sockaddr*)a, len) != 0) {
    perror("listen");
    exit(1);
  }
  return l;
}

// A connected pair: sv[0] the client, sv[1] the accepted end.
static void Connect(int family, int sv[2]) {
  struct sockaddr_storage a;
  socklen_t len;
  int l = Listen(family, &a, &len);
  sv[0] = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sv[0] < 0 || connect(sv[0], (struct sockaddr*)&a, len) != 0) {
    perror("connect");
    exit(1);
  }
  sv[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
  if (sv[1] < 0) {
    perror("accept");
    exit(1);
  }
  close(l);
}

// A child writes `mib` MiB in 64 KiB writes, the parent reads 64 KiB at a
// time; the best of 5 batches in MiB/s.
static double Throughput(int family, int mib) {
  double best = 0;
  static char buf[kChunk];
  memset(buf, 'x', sizeof(buf));
  for (int b = 0; b < BENCH_BATCHES; ++b) {
    int sv[2];
    Connect(family, sv);
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

// The parent sends a byte, a child echoes it back.
static double RoundTripUs(int family, int n) {
  int sv[2];
  Connect(family, sv);
  int one = 1;
  setsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(sv[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
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

// One process: connect, accept, close both, `n` times; the best of 5
// batches in connections per second. SO_LINGER {1, 0} on the client so
// that no TIME_WAIT entry is left behind natively either.
static double ConnectRate(int family, int n) {
  double best = 0;
  struct sockaddr_storage a;
  socklen_t len;
  int l = Listen(family, &a, &len);
  struct linger lg = {1, 0};
  for (int b = 0; b < BENCH_BATCHES; ++b) {
    double start = bench_now_us();
    for (int i = 0; i < n; ++i) {
      int c = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (c < 0 || connect(c, (struct sockaddr*)&a, len) != 0) exit(5);
      int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
      if (s < 0) exit(6);
      setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
      close(c);
      close(s);
    }
    double us = bench_now_us() - start;
    double per_s = n / (us / 1e6);
    if (per_s > best) best = per_s;
  }
  close(l);
  return best;
}

int main(int argc, char** argv) {
  int mib = argc > 1 ? atoi(argv[1]) : 256;
  int n = argc > 2 ? atoi(argv[2]) : 5000;
  int conns = argc > 3 ? atoi(argv[3]) : 2000;
  if (mib <= 0) mib = 256;
  if (n <= 0) n = 5000;
  if (conns <= 0) conns = 2000;
  signal(SIGPIPE, SIG_IGN);
  for (int v6 = 0; v6 < 2; ++v6) {
    const int family = v6 ? AF_INET6 : AF_INET;
    const char* kind = v6 ? "tcp6" : "tcp4";
    printf("%s_stream_64k_mib_s=%.1f\n", kind, Throughput(family, mib));
    printf("%s_rtt_1b_us=%.2f\n", kind, RoundTripUs(family, n));
    printf("%s_connect_accept_close_per_s=%.0f\n", kind,
           ConnectRate(family, conns));
  }
  return 0;
}
