// Per-call cost of the clock reads glibc answers from the vDSO, and of the
// raw clock_gettime syscall for reference. Prints NAME=ns lines: the best
// of 5 batches of ITERS calls each (the machine is shared: the best batch
// is the one least disturbed).
// Usage: clock_bench [ITERS]   (default 200000)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int64_t Now(void) {
  struct timespec ts;
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static volatile int64_t sink;

static double Best(int which, long iters) {
  double best = 1e18;
  for (int batch = 0; batch < 5; ++batch) {
    const int64_t t0 = Now();
    for (long i = 0; i < iters; ++i) {
      struct timespec ts;
      struct timeval tv;
      switch (which) {
        case 0:
          clock_gettime(CLOCK_MONOTONIC, &ts);
          sink += ts.tv_nsec;
          break;
        case 1:
          clock_gettime(CLOCK_REALTIME, &ts);
          sink += ts.tv_nsec;
          break;
        case 2:
          gettimeofday(&tv, NULL);
          sink += tv.tv_usec;
          break;
        case 3:
          sink += time(NULL);
          break;
        case 4:
          syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
          sink += ts.tv_nsec;
          break;
      }
    }
    const double ns = (double)(Now() - t0) / (double)iters;
    if (ns < best) best = ns;
  }
  return best;
}

int main(int argc, char** argv) {
  const long iters = argc > 1 ? atol(argv[1]) : 200000;
  static const char* const kNames[] = {
      "clock_gettime_monotonic_ns", "clock_gettime_realtime_ns",
      "gettimeofday_ns", "time_ns", "syscall_clock_gettime_ns"};
  for (int i = 0; i < 5; ++i) {
    // The raw syscall is a round trip each in the sandbox: fewer calls.
    const long n = i == 4 ? (iters / 20 > 0 ? iters / 20 : 1) : iters;
    printf("%s=%.1f\n", kNames[i], Best(i, n));
  }
  return 0;
}
