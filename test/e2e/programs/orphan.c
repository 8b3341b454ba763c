// An orphan is re-parented to init (PID 1 in the sandbox): getppid() = 1.
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(void) {
  pid_t c = fork();
  if (c == 0) {
    pid_t g = fork();
    if (g == 0) {
      // Wait until the middle process is gone, then report our parent.
      for (int i = 0; i < 200 && getppid() != 1; ++i) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, 0);
      }
      _exit(getppid() == 1 ? 42 : 43);
    }
    _exit(0);
  }
  int st;
  waitpid(c, &st, 0);
  // The grandchild is now ours (we are init): reap it.
  pid_t r = wait(&st);
  printf("orphan %s\n", r > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 42
                            ? "ok" : "FAIL");
  return 0;
}
