// Process creation cost: fork, vfork and posix_spawn of this program, each
// followed by the child's _exit and the parent's waitpid. Prints
// "name_us=MEDIAN" (microseconds per create+exit+wait, the median of 5
// batches). Usage: spawn_bench [ITERS_PER_BATCH]
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf/bench_time.h"

extern char** environ;

static char* self_path;

static void Once(int kind) {
  pid_t pid;
  if (kind == 0) {
    pid = fork();
    if (pid == 0) _exit(0);
  } else if (kind == 1) {
    pid = vfork();
    if (pid == 0) _exit(0);
  } else {
    char* argv[] = {self_path, "child", NULL};
    if (posix_spawn(&pid, self_path, NULL, NULL, argv, environ) != 0) {
      fprintf(stderr, "posix_spawn failed\n");
      exit(1);
    }
  }
  if (pid < 0 || waitpid(pid, NULL, 0) != pid) {
    fprintf(stderr, "create/wait failed\n");
    exit(1);
  }
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) return 0;
  int iters = argc > 1 ? atoi(argv[1]) : 200;
  if (iters <= 0) iters = 200;
  static char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return 1;
  path[n] = '\0';
  self_path = path;
  const char* names[] = {"fork_exit_wait_us", "vfork_exit_wait_us",
                         "posix_spawn_exec_wait_us"};
  for (int kind = 0; kind < 3; ++kind) {
    double batch[5];
    for (int b = 0; b < 5; ++b) {
      double start = bench_now_us();
      for (int i = 0; i < iters; ++i) Once(kind);
      batch[b] = (bench_now_us() - start) / iters;
    }
    printf("%s=%.1f\n", names[kind], bench_median(batch, 5));
  }
  return 0;
}
