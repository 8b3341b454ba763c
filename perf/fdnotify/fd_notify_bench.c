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

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 2000;
  if (iters <= 0) iters = 2000;
  const char* names[] = {"timerfd_settime_to_read_us", "timerfd_gettime_us",
                         "signalfd_kill_to_read_us"};
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  if (tfd < 0) {
    perror("timerfd_create");
    return 1;
  }
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  sigprocmask(SIG_BLOCK, &s, NULL);
  int sfd = signalfd(-1, &s, SFD_CLOEXEC);
  if (sfd < 0) {
    perror("signalfd");
    return 1;
  }
  const pid_t self = getpid();
  for (int kind = 0; kind < 3; ++kind) {
    const int n = kind == 0 ? (iters / 20 > 0 ? iters / 20 : 1) : iters;
    double batch[5];
    for (int b = 0; b < 5; ++b) {
      const double start = bench_now_us();
      for (int i = 0; i < n; ++i) {
        switch (kind) {
          case 0: {
            struct itimerspec v = {{0, 0}, {0, 100000}};
            timerfd_settime(tfd, 0, &v, NULL);
            uint64_t ticks = 0;
            if (read(tfd, &ticks, sizeof(ticks)) != 8 || ticks != 1) {
              perror("timerfd read");
              return 1;
            }
            break;
          }
          case 1: {
            struct itimerspec cur;
            timerfd_gettime(tfd, &cur);
            break;
          }
          case 2: {
            kill(self, SIGUSR1);
            struct signalfd_siginfo info;
            if (read(sfd, &info, sizeof(info)) != sizeof(info) ||
                info.ssi_signo != SIGUSR1) {
              perror("signalfd read");
              return 1;
            }
            break;
          }
        }
      }
      batch[b] = (bench_now_us() - start) / n;
    }
    printf("%s=%.2f\n", names[kind], bench_median(batch, 5));
  }
  return 0;
}
