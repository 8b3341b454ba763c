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

#include "perf/bench_stream.h"
#include "perf/bench_time.h"

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

static void ConnectFamily(void* arg, int sv[2]) { Connect(*(int*)arg, sv); }

// The parent sends a byte, a child echoes it back (TCP_NODELAY).
static double RoundTripUs(int family, int n) {
  int sv[2];
  Connect(family, sv);
  int one = 1;
  setsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(sv[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return bench_echo_rtt_us(sv, n);
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
    printf("%s_stream_64k_mib_s=%.1f\n", kind, bench_stream_mib_s(ConnectFamily, (void*)&family, mib));
    printf("%s_rtt_1b_us=%.2f\n", kind, RoundTripUs(family, n));
    printf("%s_connect_accept_close_per_s=%.0f\n", kind,
           ConnectRate(family, conns));
  }
  return 0;
}
