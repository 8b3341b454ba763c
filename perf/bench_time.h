/* Timing helpers shared by the static C benchmark programs in perf/ (they
 * run natively and under `runsc do`, so they use nothing but libc). */
#ifndef PERF_BENCH_TIME_H_
#define PERF_BENCH_TIME_H_

#include <stddef.h>
#include <stdlib.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds and in microseconds. */
static inline double bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}
static inline double bench_now_us(void) { return bench_now_ns() / 1e3; }

static inline int bench_cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Sorts v[0..n) and returns its median (the upper one for even n). */
static inline double bench_median(double* v, size_t n) {
  qsort(v, n, sizeof(double), bench_cmp_double);
  return v[n / 2];
}

#endif /* PERF_BENCH_TIME_H_ */
