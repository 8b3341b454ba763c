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

// What the operations use.
struct Ctx {
  char* self_path;  // this program, run with "child" by posix_spawn
};

// Waits for `pid` (the child just created, or -1 if that failed).
static int Wait(pid_t pid) {
  if (pid < 0 || waitpid(pid, NULL, 0) != pid) {
    fprintf(stderr, "create/wait failed\n");
    return 1;
  }
  return 0;
}

static int ForkExitWait(void* arg) {
  (void)arg;
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  return Wait(pid);
}

static int VforkExitWait(void* arg) {
  (void)arg;
  pid_t pid = vfork();
  if (pid == 0) _exit(0);
  return Wait(pid);
}

static int PosixSpawnExecWait(void* arg) {
  struct Ctx* c = arg;
  pid_t pid;
  char* argv[] = {c->self_path, "child", NULL};
  if (posix_spawn(&pid, c->self_path, NULL, NULL, argv, environ) != 0) {
    fprintf(stderr, "posix_spawn failed\n");
    return 1;
  }
  return Wait(pid);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) return 0;
  int iters = argc > 1 ? atoi(argv[1]) : 200;
  if (iters <= 0) iters = 200;
  static char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return 1;
  path[n] = '\0';
  struct Ctx c = {path};
  const char* names[] = {"fork_exit_wait_us", "vfork_exit_wait_us",
                         "posix_spawn_exec_wait_us"};
  const bench_fn ops[] = {ForkExitWait, VforkExitWait, PosixSpawnExecWait};
  for (int kind = 0; kind < 3; ++kind) {
    double us;
    if (bench_per_op_us(ops[kind], &c, iters, NULL, NULL, &us) != 0) return 1;
    printf("%s=%.1f\n", names[kind], us);
  }
  return 0;
}
