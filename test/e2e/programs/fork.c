// fork + wait4: exit codes, a killed child, copy-on-write memory, getppid.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int shared_value = 1;

int main(void) {
  int bad = 0;
  pid_t self = getpid();
  fflush(stdout);
  pid_t c = fork();
  if (c < 0) {
    printf("fork failed\n");
    return 1;
  }
  if (c == 0) {
    shared_value = 2;  // Copy-on-write: the parent keeps 1.
    if (getppid() != self || getpid() == self) _exit(99);
    _exit(7);
  }
  int st = 0;
  if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 7) {
    printf("child 1: status %#x\n", st);
    bad++;
  }
  if (shared_value != 1) bad++;

  c = fork();
  if (c == 0) {
    *(volatile int*)8 = 1;
    _exit(0);
  }
  if (waitpid(c, &st, 0) != c || !WIFSIGNALED(st) || WTERMSIG(st) != 11) {
    printf("child 2: status %#x\n", st);
    bad++;
  }

  enum { kKids = 5 };
  for (int i = 0; i < kKids; ++i) {
    if (fork() == 0) _exit(i);
  }
  int seen = 0;
  for (int i = 0; i < kKids; ++i) {
    if (wait(&st) > 0 && WIFEXITED(st)) seen |= 1 << WEXITSTATUS(st);
  }
  if (seen != (1 << kKids) - 1) bad++;
  if (wait(&st) != -1) bad++;  // ECHILD: none left.
  printf("fork %s\n", bad ? "FAIL" : "ok");
  return bad;
}
