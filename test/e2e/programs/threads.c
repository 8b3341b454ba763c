// Threads: distinct TIDs in one process, a contended mutex (futex), join
// (CLONE_CHILD_CLEARTID), and thread-local storage (CLONE_SETTLS).
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { kThreads = 4, kIters = 20000 };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static __thread long tls_value;
static long tids[kThreads];

static void* Work(void* arg) {
  long i = (long)arg;
  tls_value = i * 100;
  tids[i] = syscall(SYS_gettid);
  for (int k = 0; k < kIters; ++k) {
    pthread_mutex_lock(&mu);
    counter++;
    pthread_mutex_unlock(&mu);
  }
  return (void*)(tls_value + 1);
}

int main(void) {
  pthread_t th[kThreads];
  for (long i = 0; i < kThreads; ++i) {
    if (pthread_create(&th[i], NULL, Work, (void*)i) != 0) {
      printf("pthread_create failed\n");
      return 1;
    }
  }
  int bad = 0;
  for (long i = 0; i < kThreads; ++i) {
    void* ret;
    pthread_join(th[i], &ret);
    if ((long)ret != i * 100 + 1) bad++;
  }
  for (int i = 0; i < kThreads; ++i) {
    if (tids[i] == getpid() || tids[i] <= 0) bad++;
    for (int j = 0; j < i; ++j) bad += tids[i] == tids[j];
  }
  if (counter != (long)kThreads * kIters) bad++;
  printf("threads %s counter=%ld\n", bad ? "FAIL" : "ok", counter);
  return bad;
}
