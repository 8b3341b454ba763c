// Readiness cost: a ping-pong between two threads over two pipes, each
// side waiting in poll(2) (then in epoll_wait(2)) before it reads (one
// round trip = two wake-ups, two reads, two writes); and one poll(2) or
// epoll_wait(2) call on N descriptors that are all ready (eventfds). Prints
// "name_us=MEDIAN" (microseconds per operation, the median of 5 batches).
// Usage: poll_bench [ITERS_PER_BATCH] [N]
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "perf/bench_time.h"

static int ab[2], ba[2];  // pipes: main -> peer, peer -> main
static int use_epoll;
static long rounds;

// Waits until `fd` is readable (poll or epoll `ep`), then reads a byte.
static int WaitAndRead(int fd, int ep) {
  if (ep >= 0) {
    struct epoll_event ev;
    if (epoll_wait(ep, &ev, 1, -1) != 1) return -1;
  } else {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, -1) != 1 || !(p.revents & POLLIN)) return -1;
  }
  char c;
  return read(fd, &c, 1) == 1 ? 0 : -1;
}

static int NewEpollOn(int fd) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) return -1;
  return ep;
}

static void* Peer(void* arg) {
  (void)arg;
  int ep = use_epoll ? NewEpollOn(ab[0]) : -1;
  for (long i = 0; i < rounds; ++i) {
    if (WaitAndRead(ab[0], ep) != 0) exit(2);
    if (write(ba[1], "y", 1) != 1) exit(2);
  }
  if (ep >= 0) close(ep);
  return NULL;
}

static double PingPong(int iters) {
  int ep = use_epoll ? NewEpollOn(ba[0]) : -1;
  rounds = iters;
  pthread_t th;
  pthread_create(&th, NULL, Peer, NULL);
  double t0 = bench_now_us();
  for (int i = 0; i < iters; ++i) {
    if (write(ab[1], "x", 1) != 1) exit(2);
    if (WaitAndRead(ba[0], ep) != 0) exit(2);
  }
  double per = (bench_now_us() - t0) / iters;
  pthread_join(th, NULL);
  if (ep >= 0) close(ep);
  return per;
}

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 2000;
  int n = argc > 2 ? atoi(argv[2]) : 100;
  if (iters <= 0) iters = 2000;
  if (n <= 0 || n > 1000) n = 100;
  if (pipe2(ab, O_CLOEXEC) != 0 || pipe2(ba, O_CLOEXEC) != 0) return 1;
  double batch[5];
  for (use_epoll = 0; use_epoll < 2; ++use_epoll) {
    for (int b = 0; b < 5; ++b) batch[b] = PingPong(iters);
    printf("%s=%.2f\n", use_epoll ? "epoll_pingpong_us" : "poll_pingpong_us",
           bench_median(batch, 5));
  }
  // N ready eventfds, level-triggered: every call reports all of them.
  int* fds = calloc(n, sizeof(int));
  struct pollfd* pfds = calloc(n, sizeof(struct pollfd));
  struct epoll_event* evs = calloc(n, sizeof(struct epoll_event));
  int ep = epoll_create1(EPOLL_CLOEXEC);
  for (int i = 0; i < n; ++i) {
    fds[i] = eventfd(1, EFD_CLOEXEC);
    pfds[i] = (struct pollfd){fds[i], POLLIN, 0};
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
    if (fds[i] < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) != 0) return 1;
  }
  int calls = iters / 4 > 0 ? iters / 4 : 1;
  for (int kind = 0; kind < 2; ++kind) {
    for (int b = 0; b < 5; ++b) {
      double t0 = bench_now_us();
      for (int i = 0; i < calls; ++i) {
        int got = kind == 0 ? poll(pfds, n, 0) : epoll_wait(ep, evs, n, 0);
        if (got != n) {
          fprintf(stderr, "ready: got %d, want %d\n", got, n);
          return 1;
        }
      }
      batch[b] = (bench_now_us() - t0) / calls;
    }
    printf("%s_ready%d_us=%.2f\n", kind == 0 ? "poll" : "epoll_wait", n,
           bench_median(batch, 5));
  }
  return 0;
}
