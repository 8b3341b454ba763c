// timerfd and signalfd costs: timerfd_settime of a 100 us one-shot timer
// then the blocking read of its expiration (ITERS/20 a batch; 100 us of it
// is the timer's value), timerfd_gettime (one syscall), and the signalfd
// round trip: kill(getpid(), SIGUSR1) (blocked) then read(2) of its
// signalfd_siginfo (two syscalls). Prints "name_us=MEDIAN" (microseconds
// per operation, the median of 5 batches).
// Usage: fd_notify_bench [ITERS_PER_BATCH]
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "perf/bench_time.h"

// What the operations use.
struct Ctx {
  int tfd;  // a timerfd on CLOCK_MONOTONIC
  int sfd;  // a signalfd for SIGUSR1 (blocked)
  pid_t self;
};

// timerfd_settime of a 100 us one-shot timer, then the read of its expiration.
static int TimerfdSettimeToRead(void* arg) {
  struct Ctx* c = arg;
  struct itimerspec v = {{0, 0}, {0, 100000}};
  timerfd_settime(c->tfd, 0, &v, NULL);
  uint64_t ticks = 0;
  if (read(c->tfd, &ticks, sizeof(ticks)) != 8 || ticks != 1) {
    perror("timerfd read");
    return 1;
  }
  return 0;
}

static int TimerfdGettime(void* arg) {
  struct Ctx* c = arg;
  struct itimerspec cur;
  timerfd_gettime(c->tfd, &cur);
  return 0;
}

// kill(self, SIGUSR1), then the read of its signalfd_siginfo.
static int SignalfdKillToRead(void* arg) {
  struct Ctx* c = arg;
  kill(c->self, SIGUSR1);
  struct signalfd_siginfo info;
  if (read(c->sfd, &info, sizeof(info)) != sizeof(info) ||
      info.ssi_signo != SIGUSR1) {
    perror("signalfd read");
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 2000;
  if (iters <= 0) iters = 2000;
  const char* names[] = {"timerfd_settime_to_read_us", "timerfd_gettime_us",
                         "signalfd_kill_to_read_us"};
  const bench_fn ops[] = {TimerfdSettimeToRead, TimerfdGettime,
                          SignalfdKillToRead};
  struct Ctx c;
  c.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  if (c.tfd < 0) {
    perror("timerfd_create");
    return 1;
  }
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  sigprocmask(SIG_BLOCK, &s, NULL);
  c.sfd = signalfd(-1, &s, SFD_CLOEXEC);
  if (c.sfd < 0) {
    perror("signalfd");
    return 1;
  }
  c.self = getpid();
  for (int kind = 0; kind < 3; ++kind) {
    const int n = kind == 0 ? (iters / 20 > 0 ? iters / 20 : 1) : iters;
    double us;
    if (bench_per_op_us(ops[kind], &c, n, NULL, NULL, &us) != 0) return 1;
    printf("%s=%.2f\n", names[kind], us);
  }
  return 0;
}
