// fork_cycles N: N rounds of fork, child exit, wait (every fourth child
// also starts and joins a thread through clone), then prints "done N".
// The jobctl e2e test runs it twice to see that the Sentry's memory does
// not grow with the number of processes that came and went.
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int ThreadBody(void* arg) {
  (void)arg;
  return 0;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 100;
  for (int i = 0; i < n; ++i) {
    pid_t c = fork();
    if (c < 0) {
      printf("fork failed at %d\n", i);
      return 1;
    }
    if (c == 0) {
      if (i % 4 == 0) {
        const size_t kStack = 64 * 1024;
        char* stack = mmap(NULL, kStack, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (stack == MAP_FAILED) _exit(2);
        // A thread (CLONE_THREAD) that exits at once; the child exits
        // after it.
        int t = clone(ThreadBody, stack + kStack,
                      CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
                          CLONE_THREAD | CLONE_SYSVSEM,
                      NULL);
        if (t < 0) _exit(3);
        usleep(1000);
      }
      _exit(0);
    }
    int st = 0;
    if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      printf("child %d: status %#x\n", i, st);
      return 1;
    }
  }
  printf("done %d\n", n);
  return 0;
}
