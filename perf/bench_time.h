/* Timing helpers shared by the static C benchmark programs in perf/ (they
 * run natively and under `runsc do`, so they use nothing but libc).
 *
 * bench_now_ns() / bench_now_us(): CLOCK_MONOTONIC.
 * bench_median(v, n): the median of n doubles (sorts v).
 * bench_per_op_us(op, ctx, n, before, after, &us): the programs' common
 *   measurement: op(ctx) n times in each of BENCH_BATCHES (5) batches, each
 *   batch timed alone; *us = the median batch's microseconds per operation.
 *   A program keeps its operations as static functions over a context struct
 *   and prints one "name_us=MEDIAN" line per call. */
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

/* The number of timed batches behind every figure (the median one counts). */
#define BENCH_BATCHES 5

/* One step of a measurement over the caller's context; returns 0, or
 * nonzero on failure (after printing the error, if any). */
typedef int (*bench_fn)(void* ctx);

/* Runs op(ctx) n times (n > 0) in each of BENCH_BATCHES batches and stores
 * in *median_us the median over the batches of the batch's time divided by
 * n, in microseconds. Only the n calls of op are timed (bench_now_us()
 * before the first and after the last). before_batch and after_batch, when
 * not NULL, run untimed before and after every batch (e.g. to start and
 * join a peer thread). The first callback that returns nonzero stops the
 * measurement at once (no other callback runs, *median_us is left
 * unchanged) and its value is returned, so the caller can print its error
 * and exit; returns 0 otherwise. */
static inline int bench_per_op_us(bench_fn op, void* ctx, long n,
                                  bench_fn before_batch, bench_fn after_batch,
                                  double* median_us) {
  double batch[BENCH_BATCHES];
  for (int b = 0; b < BENCH_BATCHES; ++b) {
    int err = before_batch != NULL ? before_batch(ctx) : 0;
    if (err != 0) return err;
    const double start = bench_now_us();
    for (long i = 0; i < n; ++i) {
      err = op(ctx);
      if (err != 0) return err;
    }
    batch[b] = (bench_now_us() - start) / n;
    err = after_batch != NULL ? after_batch(ctx) : 0;
    if (err != 0) return err;
  }
  *median_us = bench_median(batch, BENCH_BATCHES);
  return 0;
}

#endif /* PERF_BENCH_TIME_H_ */
