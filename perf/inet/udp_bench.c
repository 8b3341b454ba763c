// UDP over loopback between two processes: the round trip of a 1-byte
// datagram (connected sockets, send/recv) and of a 1400-byte one, over
// 127.0.0.1 and over ::1. Prints "name=VALUE" lines: *_us (microseconds
// per round trip, the median of 5 batches).
// Usage: udp_bench [ROUND_TRIPS]
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf/bench_time.h"

static int rtt_fd = -1;
static size_t rtt_len = 1;
static char rtt_buf[2048];

static int RoundTrip(void* arg) {
  (void)arg;
  if (send(rtt_fd, rtt_buf, rtt_len, 0) != (ssize_t)rtt_len ||
      recv(rtt_fd, rtt_buf, sizeof(rtt_buf), 0) != (ssize_t)rtt_len) {
    perror("round trip");
    return 1;
  }
  return 0;
}

// A socket of `family` bound to loopback port 0; its address in *a.
static int Bound(int family, struct sockaddr_storage* a, socklen_t* len) {
  int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    perror("socket");
    exit(1);
  }
  memset(a, 0, sizeof(*a));
  if (family == AF_INET) {
    struct sockaddr_in* s = (struct sockaddr_in*)a;
    s->sin_family = AF_INET;
    s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    *len = sizeof(*s);
  } else {
    struct sockaddr_in6* s = (struct sockaddr_in6*)a;
    s->sin6_family = AF_INET6;
    s->sin6_addr = in6addr_loopback;
    *len = sizeof(*s);
  }
  if (bind(fd, (struct sockaddr*)a, *len) != 0 ||
      getsockname(fd, (struct sockaddr*)a, len) != 0) {
    perror("bind");
    exit(1);
  }
  return fd;
}

// The parent sends `len` bytes, a child echoes them back; both connected.
static double RoundTripUs(int family, size_t len, int n) {
  struct sockaddr_storage pa, ca;
  socklen_t pl, cl;
  int p = Bound(family, &pa, &pl);
  int c = Bound(family, &ca, &cl);
  if (connect(p, (struct sockaddr*)&ca, cl) != 0 ||
      connect(c, (struct sockaddr*)&pa, pl) != 0) {
    perror("connect");
    exit(1);
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(p);
    static char buf[2048];
    // A zero-length datagram ends the echo.
    for (;;) {
      ssize_t k = recv(c, buf, sizeof(buf), 0);
      if (k <= 0) _exit(k == 0 ? 0 : 3);
      if (send(c, buf, (size_t)k, 0) != k) _exit(2);
    }
  }
  close(c);
  rtt_fd = p;
  rtt_len = len;
  memset(rtt_buf, 'u', sizeof(rtt_buf));
  double us = 0;
  if (bench_per_op_us(RoundTrip, NULL, n, NULL, NULL, &us) != 0) exit(4);
  send(p, rtt_buf, 0, 0);
  int st;
  waitpid(pid, &st, 0);
  close(p);
  return us;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 5000;
  if (n <= 0) n = 5000;
  const struct {
    int family;
    const char* name;
  } fams[] = {{AF_INET, "udp4"}, {AF_INET6, "udp6"}};
  for (int i = 0; i < 2; ++i) {
    printf("%s_rtt_1b_us=%.2f\n", fams[i].name,
           RoundTripUs(fams[i].family, 1, n));
    printf("%s_rtt_1400b_us=%.2f\n", fams[i].name,
           RoundTripUs(fams[i].family, 1400, n));
  }
  return 0;
}
