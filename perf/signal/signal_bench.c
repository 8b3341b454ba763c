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

// What the operations use.
struct Ctx {
  pid_t pid;
  sigset_t usr2;   // {SIGUSR2}, blocked in both threads
  long iters;      // the peer's round trips per batch
  pthread_t peer;  // thread ping-pong
  pid_t child;     // stop/continue: a child sleeping in pause()
};

// tgkill(SIGUSR1) to itself: the handler runs before the syscall returns.
static int HandlerRoundtrip(void* arg) {
  struct Ctx* c = arg;
  syscall(SYS_tgkill, c->pid, main_tid, SIGUSR1);
  return 0;
}

// tgkill(SIGUSR2) (blocked) to itself, then sigtimedwait takes it.
static int SigtimedwaitPending(void* arg) {
  struct Ctx* c = arg;
  syscall(SYS_tgkill, c->pid, main_tid, SIGUSR2);
  struct timespec zero = {0, 0};
  if (sigtimedwait(&c->usr2, NULL, &zero) != SIGUSR2) return 1;
  return 0;
}

// Before a ping-pong batch (untimed): the peer, once it has its tid.
static int StartPeer(void* arg) {
  struct Ctx* c = arg;
  peer_tid = 0;
  pthread_create(&c->peer, NULL, Peer, (void*)c->iters);
  while (__atomic_load_n(&peer_tid, __ATOMIC_ACQUIRE) == 0) usleep(100);
  return 0;
}

// SIGUSR2 to the peer, then its SIGUSR2 back.
static int ThreadPingpong(void* arg) {
  struct Ctx* c = arg;
  syscall(SYS_tgkill, c->pid, peer_tid, SIGUSR2);
  int sig;
  sigwait(&c->usr2, &sig);
  return 0;
}

// After a ping-pong batch (untimed).
static int JoinPeer(void* arg) {
  struct Ctx* c = arg;
  pthread_join(c->peer, NULL);
  return 0;
}

// Stops the child, waits for the stop report, continues it and waits for
// the continue report.
static int StopContinue(void* arg) {
  struct Ctx* c = arg;
  int st;
  kill(c->child, SIGSTOP);
  if (waitpid(c->child, &st, WUNTRACED) != c->child || !WIFSTOPPED(st)) {
    return 1;
  }
  kill(c->child, SIGCONT);
  if (waitpid(c->child, &st, WCONTINUED) != c->child || !WIFCONTINUED(st)) {
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 2000;
  if (iters <= 0) iters = 2000;
  struct sigaction sa = {0};
  sa.sa_handler = Handler;
  sigaction(SIGUSR1, &sa, NULL);
  main_tid = (pid_t)syscall(SYS_gettid);
  struct Ctx c = {0};
  c.pid = getpid();
  c.iters = iters;
  const char* names[] = {"handler_roundtrip_us", "sigtimedwait_pending_us",
                         "thread_pingpong_us"};
  sigemptyset(&c.usr2);
  sigaddset(&c.usr2, SIGUSR2);
  sigprocmask(SIG_BLOCK, &c.usr2, NULL);  // inherited by the peer thread
  const bench_fn ops[] = {HandlerRoundtrip, SigtimedwaitPending,
                          ThreadPingpong};
  for (int kind = 0; kind < 3; ++kind) {
    double us;
    if (bench_per_op_us(ops[kind], &c, iters, kind == 2 ? StartPeer : NULL,
                        kind == 2 ? JoinPeer : NULL, &us) != 0) {
      return 1;
    }
    printf("%s=%.2f\n", names[kind], us);
  }
  // Stop/continue round trip: the child sleeps in pause(); each round
  // stops it (every thread parks in the Sentry), waits for the stop
  // report, continues it and waits for the continue report.
  pid_t child = fork();
  if (child == 0) {
    for (;;) pause();
  }
  if (child < 0) return 1;
  c.child = child;
  int rounds = iters / 4 > 10 ? iters / 4 : 10;
  double us;
  if (bench_per_op_us(StopContinue, &c, rounds, NULL, NULL, &us) != 0) return 1;
  printf("stop_continue_roundtrip_us=%.2f\n", us);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  if (handled != 5L * iters) {
    fprintf(stderr, "handler ran %ld times, want %ld\n", handled, 5L * iters);
    return 1;
  }
  return 0;
}
