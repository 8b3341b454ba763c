// Timer costs: setitimer (arm a 1 h ITIMER_REAL, then disarm: two calls),
// getitimer, clock_gettime(CLOCK_PROCESS_CPUTIME_ID) (a syscall in both
// worlds: the vDSO does not serve CPU clocks), and the latency from
// timer_settime of a 100 us one-shot POSIX timer to its signal taken by
// sigwaitinfo (ITERS/20 a batch; the figure is the whole wait, 100 us of
// it the timer's value). Prints "name_us=MEDIAN" (microseconds per
// operation, the median of 5 batches).
// Usage: timer_bench [ITERS_PER_BATCH]
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "perf/bench_time.h"

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 2000;
  if (iters <= 0) iters = 2000;
  const char* names[] = {"setitimer_arm_disarm_us", "getitimer_us",
                         "clock_gettime_process_cputime_us",
                         "timer_settime_to_signal_us"};
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGRTMIN);
  sigprocmask(SIG_BLOCK, &s, NULL);
  struct sigevent ev = {0};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGRTMIN;
  int timer = -1;
  if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &timer) != 0) {
    perror("timer_create");
    return 1;
  }
  for (int kind = 0; kind < 4; ++kind) {
    const int n = kind == 3 ? (iters / 20 > 0 ? iters / 20 : 1) : iters;
    double batch[5];
    for (int b = 0; b < 5; ++b) {
      const double start = bench_now_us();
      for (int i = 0; i < n; ++i) {
        switch (kind) {
          case 0: {
            struct itimerval on = {{0, 0}, {3600, 0}}, off = {{0, 0}, {0, 0}};
            setitimer(ITIMER_REAL, &on, NULL);
            setitimer(ITIMER_REAL, &off, NULL);
            break;
          }
          case 1: {
            struct itimerval cur;
            getitimer(ITIMER_REAL, &cur);
            break;
          }
          case 2: {
            struct timespec ts;
            syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, &ts);
            break;
          }
          case 3: {
            struct itimerspec v = {{0, 0}, {0, 100000}};
            syscall(SYS_timer_settime, timer, 0, &v, NULL);
            siginfo_t info;
            if (sigwaitinfo(&s, &info) != SIGRTMIN) {
              perror("sigwaitinfo");
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
