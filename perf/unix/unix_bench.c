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

#include "perf/bench_stream.h"
#include "perf/bench_time.h"

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

static void ConnectOrExit(void* arg, int sv[2]) {
  if (Connect(*(int*)arg, sv) != 0) exit(1);
}

// Round trip: the parent sends a byte, a child echoes it back.
static double RoundTripUs(int use_path, int n) {
  int sv[2];
  ConnectOrExit(&use_path, sv);
  return bench_echo_rtt_us(sv, n);
}

int main(int argc, char** argv) {
  int mib = argc > 1 ? atoi(argv[1]) : 256;
  int n = argc > 2 ? atoi(argv[2]) : 5000;
  if (mib <= 0) mib = 256;
  if (n <= 0) n = 5000;
  signal(SIGPIPE, SIG_IGN);
  for (int use_path = 0; use_path < 2; ++use_path) {
    const char* kind = use_path ? "path" : "socketpair";
    printf("%s_stream_64k_mib_s=%.1f\n", kind, bench_stream_mib_s(ConnectOrExit, &use_path, mib));
    printf("%s_rtt_1b_us=%.2f\n", kind, RoundTripUs(use_path, n));
  }
  return 0;
}
