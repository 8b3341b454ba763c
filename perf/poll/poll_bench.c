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

// What the operations use.
struct Ctx {
  // Ping-pong: the main side's epoll on ba[0] (-1: poll) and the peer.
  int ep;
  pthread_t peer;
  // Ready descriptors: n eventfds, as pollfds and in the epoll `ready_ep`.
  int n;
  struct pollfd* pfds;
  struct epoll_event* evs;
  int ready_ep;
};

// Before a ping-pong batch (untimed): the main side's epoll and the peer.
static int StartPeer(void* arg) {
  struct Ctx* c = arg;
  c->ep = use_epoll ? NewEpollOn(ba[0]) : -1;
  pthread_create(&c->peer, NULL, Peer, NULL);
  return 0;
}

// One round trip: a byte to the peer, then its byte back.
static int PingPong(void* arg) {
  struct Ctx* c = arg;
  if (write(ab[1], "x", 1) != 1) exit(2);
  if (WaitAndRead(ba[0], c->ep) != 0) exit(2);
  return 0;
}

// After a ping-pong batch (untimed).
static int JoinPeer(void* arg) {
  struct Ctx* c = arg;
  pthread_join(c->peer, NULL);
  if (c->ep >= 0) close(c->ep);
  return 0;
}

static int CheckReady(int got, int n) {
  if (got != n) {
    fprintf(stderr, "ready: got %d, want %d\n", got, n);
    return 1;
  }
  return 0;
}

static int PollReady(void* arg) {
  struct Ctx* c = arg;
  return CheckReady(poll(c->pfds, c->n, 0), c->n);
}

static int EpollWaitReady(void* arg) {
  struct Ctx* c = arg;
  return CheckReady(epoll_wait(c->ready_ep, c->evs, c->n, 0), c->n);
}

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 2000;
  int n = argc > 2 ? atoi(argv[2]) : 100;
  if (iters <= 0) iters = 2000;
  if (n <= 0 || n > 1000) n = 100;
  if (pipe2(ab, O_CLOEXEC) != 0 || pipe2(ba, O_CLOEXEC) != 0) return 1;
  struct Ctx c = {0};
  double us;
  rounds = iters;
  for (use_epoll = 0; use_epoll < 2; ++use_epoll) {
    if (bench_per_op_us(PingPong, &c, iters, StartPeer, JoinPeer, &us) != 0) {
      return 1;
    }
    printf("%s=%.2f\n", use_epoll ? "epoll_pingpong_us" : "poll_pingpong_us",
           us);
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
  c.n = n;
  c.pfds = pfds;
  c.evs = evs;
  c.ready_ep = ep;
  int calls = iters / 4 > 0 ? iters / 4 : 1;
  const bench_fn ops[] = {PollReady, EpollWaitReady};
  for (int kind = 0; kind < 2; ++kind) {
    if (bench_per_op_us(ops[kind], &c, calls, NULL, NULL, &us) != 0) return 1;
    printf("%s_ready%d_us=%.2f\n", kind == 0 ? "poll" : "epoll_wait", n, us);
  }
  return 0;
}
