// Signal delivery cost: a signal the thread sends itself (tgkill, the
// handler's frame, rt_sigreturn), the same blocked then taken with
// sigtimedwait, a ping-pong between two threads (tgkill + sigwaitinfo
// each way), and a job-control round trip with a child (SIGSTOP, wait for
// the stop, SIGCONT, wait for the continue; ITERS/4 a batch). Prints
// "name_us=MEDIAN" (microseconds per operation, the median of 5 batches).
// Usage: signal_bench [ITERS_PER_BATCH]
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf/bench_time.h"

static volatile long handled;
static void Handler(int sig) { (void)sig; handled++; }

static pid_t main_tid, peer_tid;

static void* Peer(void* arg) {
  long n = (long)arg;
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR2);
  peer_tid = (pid_t)syscall(SYS_gettid);
  for (long i = 0; i < n; ++i) {
    int sig;
    sigwait(&s, &sig);
    syscall(SYS_tgkill, getpid(), main_tid, SIGUSR2);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 2000;
  if (iters <= 0) iters = 2000;
  struct sigaction sa = {0};
  sa.sa_handler = Handler;
  sigaction(SIGUSR1, &sa, NULL);
  main_tid = (pid_t)syscall(SYS_gettid);
  const pid_t pid = getpid();
  const char* names[] = {"handler_roundtrip_us", "sigtimedwait_pending_us",
                         "thread_pingpong_us"};
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  sigprocmask(SIG_BLOCK, &usr2, NULL);  // inherited by the peer thread
  for (int kind = 0; kind < 3; ++kind) {
    double batch[5];
    for (int b = 0; b < 5; ++b) {
      pthread_t th;
      peer_tid = 0;
      if (kind == 2) {
        pthread_create(&th, NULL, Peer, (void*)(long)iters);
        while (__atomic_load_n(&peer_tid, __ATOMIC_ACQUIRE) == 0) usleep(100);
      }
      double t0 = bench_now_us();
      for (int i = 0; i < iters; ++i) {
        if (kind == 0) {
          syscall(SYS_tgkill, pid, main_tid, SIGUSR1);
        } else if (kind == 1) {
          syscall(SYS_tgkill, pid, main_tid, SIGUSR2);
          struct timespec zero = {0, 0};
          if (sigtimedwait(&usr2, NULL, &zero) != SIGUSR2) return 1;
        } else {
          syscall(SYS_tgkill, pid, peer_tid, SIGUSR2);
          int sig;
          sigwait(&usr2, &sig);
        }
      }
      batch[b] = (bench_now_us() - t0) / iters;
      if (kind == 2) pthread_join(th, NULL);
    }
    printf("%s=%.2f\n", names[kind], bench_median(batch, 5));
  }
  // Stop/continue round trip: the child sleeps in pause(); each round
  // stops it (every thread parks in the Sentry), waits for the stop
  // report, continues it and waits for the continue report.
  pid_t child = fork();
  if (child == 0) {
    for (;;) pause();
  }
  if (child < 0) return 1;
  int rounds = iters / 4 > 10 ? iters / 4 : 10;
  double batch[5];
  for (int b = 0; b < 5; ++b) {
    double t0 = bench_now_us();
    for (int i = 0; i < rounds; ++i) {
      int st;
      kill(child, SIGSTOP);
      if (waitpid(child, &st, WUNTRACED) != child || !WIFSTOPPED(st)) return 1;
      kill(child, SIGCONT);
      if (waitpid(child, &st, WCONTINUED) != child || !WIFCONTINUED(st)) {
        return 1;
      }
    }
    batch[b] = (bench_now_us() - t0) / rounds;
  }
  printf("stop_continue_roundtrip_us=%.2f\n", bench_median(batch, 5));
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  if (handled != 5L * iters) {
    fprintf(stderr, "handler ran %ld times, want %ld\n", handled, 5L * iters);
    return 1;
  }
  return 0;
}
