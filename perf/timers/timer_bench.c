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

// What the operations use.
struct Ctx {
  sigset_t s;  // {SIGRTMIN}, blocked
  int timer;   // a POSIX timer on CLOCK_MONOTONIC that sends SIGRTMIN
};

// setitimer(ITIMER_REAL) to 1 h, then to 0.
static int SetitimerArmDisarm(void* arg) {
  (void)arg;
  struct itimerval on = {{0, 0}, {3600, 0}}, off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &on, NULL);
  setitimer(ITIMER_REAL, &off, NULL);
  return 0;
}

static int Getitimer(void* arg) {
  (void)arg;
  struct itimerval cur;
  getitimer(ITIMER_REAL, &cur);
  return 0;
}

static int ClockGettimeProcessCputime(void* arg) {
  (void)arg;
  struct timespec ts;
  syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, &ts);
  return 0;
}

// timer_settime of a 100 us one-shot timer, then sigwaitinfo for its signal.
static int TimerSettimeToSignal(void* arg) {
  struct Ctx* c = arg;
  struct itimerspec v = {{0, 0}, {0, 100000}};
  syscall(SYS_timer_settime, c->timer, 0, &v, NULL);
  siginfo_t info;
  if (sigwaitinfo(&c->s, &info) != SIGRTMIN) {
    perror("sigwaitinfo");
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 2000;
  if (iters <= 0) iters = 2000;
  const char* names[] = {"setitimer_arm_disarm_us", "getitimer_us",
                         "clock_gettime_process_cputime_us",
                         "timer_settime_to_signal_us"};
  const bench_fn ops[] = {SetitimerArmDisarm, Getitimer,
                          ClockGettimeProcessCputime, TimerSettimeToSignal};
  struct Ctx c;
  sigemptyset(&c.s);
  sigaddset(&c.s, SIGRTMIN);
  sigprocmask(SIG_BLOCK, &c.s, NULL);
  struct sigevent ev = {0};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGRTMIN;
  c.timer = -1;
  if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &c.timer) != 0) {
    perror("timer_create");
    return 1;
  }
  for (int kind = 0; kind < 4; ++kind) {
    const int n = kind == 3 ? (iters / 20 > 0 ? iters / 20 : 1) : iters;
    double us;
    if (bench_per_op_us(ops[kind], &c, n, NULL, NULL, &us) != 0) return 1;
    printf("%s=%.2f\n", names[kind], us);
  }
  return 0;
}
