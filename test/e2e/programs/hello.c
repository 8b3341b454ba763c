// Prints a greeting, its arguments and selected environment variables, and
// exits with the status given by E2E_EXIT (default 0).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  printf("hello, world\n");
  printf("argc=%d\n", argc);
  for (int i = 0; i < argc; ++i) printf("argv[%d]=%s\n", i, argv[i]);
  const char* v = getenv("E2E_VALUE");
  printf("E2E_VALUE=%s\n", v ? v : "(unset)");
  printf("pid=%d ppid=%d uid=%d\n", getpid(), getppid(), getuid());
  char cwd[4096];
  printf("cwd=%s\n", getcwd(cwd, sizeof(cwd)) ? cwd : "(error)");
  fflush(stdout);
  fprintf(stderr, "to stderr\n");
  const char* code = getenv("E2E_EXIT");
  return code ? atoi(code) : 0;
}
