// Times N getppid() round trips (argv[1], default 200000) and prints the
// mean in ns: "getppid_ns=<x>".
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 200000;
  for (int i = 0; i < 1000; ++i) syscall(SYS_getppid);
  double t0 = now_ns();
  for (long i = 0; i < n; ++i) syscall(SYS_getppid);
  double t1 = now_ns();
  printf("getppid_ns=%.1f\n", (t1 - t0) / n);
  return 0;
}
